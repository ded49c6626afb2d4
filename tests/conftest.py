"""Shared fixtures: tiny configs that run in well under a second."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

# The Ctrl-C tests send SIGINT to kvsim processes and to this one. A suite started in the
# background of a non-interactive shell (`cmd &`, nohup) inherits SIGINT ignored, which
# Python then keeps and passes on to every child: Ctrl-C would do nothing and those tests
# would fail for a reason that is not kvsim's. Put Python's own Ctrl-C handler back (its
# children get the default disposition again, as a terminal gives them).
signal.signal(signal.SIGINT, signal.default_int_handler)

# The suite tests the source: model mode's compiled core (sim.native) would not see the
# spies and patches some tests put on its classes. tests/test_native.py runs the
# compiled core in child processes and checks it gives the very same results.
os.environ["KVSIM_NATIVE"] = "0"

# The suite starts hundreds of Python processes (a point child per real point run, kvsim
# commands, benches). Where the shell sets PYTHONDONTWRITEBYTECODE (this project's
# development machine does) each of them compiled kvsim's modules from source, ~0.1 s of
# CPU apiece (kvsim bench startup); a user's install reads cached bytecode. The children
# get the cache a user has, kept in a directory of its own so no source tree is written.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), f"kvsim-pycache-{os.getuid()}")
    )

TINY: dict[str, Any] = {
    "name": "tiny",
    "seed": 3,
    # One run a point (the default is 3, for verdicts): the tests check the machinery, and
    # those about repeats set their own.
    "repeats": 1,
    "model": {"regions": 4, "block_len": [1024, 2048], "block_size": 16, "num_blocks": 256},
    "workload": {"requests": 8, "arrival": {"kind": "poisson", "rate_rps": 400}, "tokens": 160},
    "connector": {"variant": "numpy", "workers": 2},
    "store": {"bandwidth_gb_per_s": 50, "latency_ms": 0.2, "concurrency": 2},
}


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        tagged = isinstance(v, dict) and ("kind" in v or "dist" in v)  # a union member replaces
        if isinstance(v, dict) and isinstance(out.get(k), dict) and not tagged:
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


@pytest.fixture
def write_config(tmp_path: Path):
    """write_config(overrides=None, text=None, name="exp.yaml") -> path of a config file."""

    def _write(
        overrides: dict[str, Any] | None = None, text: str | None = None, name: str = "exp.yaml"
    ) -> Path:
        path = tmp_path / name
        if text is None:
            data = deep_merge(TINY, overrides or {})
            data.setdefault("output", {"dir": str(tmp_path / "out")})
            text = yaml.safe_dump(data, sort_keys=False)
        path.write_text(text)
        return path

    return _write


def slow_config(write_config) -> Path:
    """Two point runs of about three seconds each, for the tests that signal a run.

    A test sends its signal once a point has started (its child handles SIGTERM, or its
    log exists); the point must still be running when the signal lands. At 1.5 s a point,
    a loaded machine (load 5 on 2 cores) let the first point finish first, now and then,
    and the run ended complete: the test measured its own lateness, not kvsim.
    """
    return write_config(
        {
            "workload": {"requests": 24, "arrival": {"kind": "poisson", "rate_rps": 8}},
            "sweep": {"seed": [1, 2]},
        }
    )
