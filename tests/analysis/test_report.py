"""The end-of-run table: probe and engine columns when they ran, readable at 100 columns."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console

from sim.analysis.report import comparison_table


def _rows(stall: float = math.nan, step: float = math.nan, infl: float = math.nan) -> list:
    rows = []
    for variant in ("scalar", "numpy", "rows"):
        for workers in (1, 4):
            rows.append(
                {
                    "variant": variant,
                    "workers": workers,
                    "status": "ok",
                    "ok": 160,
                    "requests": 160,
                    "latency_p50_ms": 123.4,
                    "latency_p99_ms": 1500.2,
                    "gil_hold_mean_ms": 35.12,
                    "gil_wait_mean_ms": 10.5,
                    "stall_p99_ms": stall,
                    "engine_step_p99_ms": step,
                    "engine_p99_inflation": infl,
                    "repeats": 3,
                    "latency_p99_ms_std": 5.1,
                    "stall_p99_ms_std": 1.2,
                    "engine_step_p99_ms_std": 0.4,
                }
            )
    return rows


def _render(rows: list[dict[str, Any]], width: int) -> str:
    console = Console(width=width, record=True)
    console.print(comparison_table(rows, ["variant", "workers"], "scalar", "kvsim · t"))
    return console.export_text()


def _header(text: str) -> str:
    """The header lines (above the rule), joined: wrapped headers read top to bottom."""
    lines = text.splitlines()
    rule = next(i for i, ln in enumerate(lines) if "───" in ln)
    return " ".join(" ".join(ln.split()) for ln in lines[1:rule])


def test_probe_and_engine_columns_show_when_they_ran_and_fit_100_columns() -> None:
    text = _render(_rows(stall=31.8, step=48.2, infl=3.21), 100)
    head = _header(text)
    for word in ("stall", "step", "×alone"):
        assert word in head
    body = next(ln for ln in text.splitlines() if ln.strip().startswith("scalar"))
    assert body.split()[-3:] == ["31.8", "48.2", "3.21×"]
    assert "…" not in text  # no header or value cut
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 100
    assert "stall:" in text and "×alone:" in text  # the caption spells them out


def test_columns_absent_when_probe_and_engine_did_not_run() -> None:
    text = _render(_rows(), 100)
    assert "stall" not in text and "step" not in text and "alone" not in text


def test_stall_only_when_the_engine_was_off() -> None:
    text = _render(_rows(stall=4.7), 100)
    assert "stall" in _header(text) and "step" not in text
    body = next(ln for ln in text.splitlines() if ln.strip().startswith("numpy"))
    assert body.split()[-1] == "4.7"
