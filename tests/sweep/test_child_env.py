"""A point's child environment (sim.sweep.runner.child_environment): one OpenBLAS thread
unless the user's environment names a pool, and then the user's value."""

from __future__ import annotations

import sys

import pytest

from sim.sweep.runner import CHILD_ENV_DEFAULTS, child_environment, start_child

_PRINT = "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"


def _seen_by_child() -> str:
    """What a child started as the runner starts one sees for OPENBLAS_NUM_THREADS."""
    proc = start_child([sys.executable, "-c", _PRINT], sys.stderr)
    out, _ = proc.communicate(timeout=60)
    return out.strip()


def test_a_child_gets_one_openblas_thread_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert _seen_by_child() == CHILD_ENV_DEFAULTS["OPENBLAS_NUM_THREADS"] == "1"


def test_a_users_openblas_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert _seen_by_child() == "3"
    assert child_environment({"OPENBLAS_NUM_THREADS": "2"})["OPENBLAS_NUM_THREADS"] == "2"
