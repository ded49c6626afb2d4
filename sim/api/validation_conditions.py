"""The machine's conditions around a validation's real runs, handed to its model runs.

A shared machine is part of the conditions a real point meets: other processes'
runnable threads (the background load), thread wake-up and timer latencies, the load
average. validate-model measures them before and after the real runs; this module
pools the two measurements and writes the calibration the model runs are given
(``calibration-conditions.json``), and reads back the JSON records a validation
keeps beside its runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.errors import RunDirError

__all__ = ["loadavg", "loadavg_note", "merge_conditions", "read_json", "write_conditions"]


def write_conditions(
    cal: Any,
    cal_file: Path,
    before: dict[str, Any],
    after: dict[str, Any],
    loadavg_before: list[float] | None,
    loadavg_after: list[float] | None,
    events: Any,
) -> None:
    """The calibration with the conditions measured around the real runs, for the model."""
    import json  # stdlib, on this path only: not at import sim

    from sim.rundir.outputs import write_json  # the run directory's code: not at import sim

    cond = merge_conditions(before, after)
    data = json.loads(json.dumps(cal.data))
    data["harness"].update(cond)
    data["conditions"] = {
        "note": "harness latencies and background load re-measured around the real runs "
        "of kvsim validate-model",
        "from": cal.path,
        "background_load_before": before["background_load"],
        "background_load_after": after["background_load"],
        # the machine's load average (1, 5, 15 min) around the real runs: a shared
        # machine's figures are read beside it (docs/model-mode.md, Validation)
        "loadavg_before": loadavg_before,
        "loadavg_after": loadavg_after,
    }
    write_json(cal_file, data)
    events.note(
        f"machine conditions: background load {before['background_load']:.1f} before "
        f"the real runs, {after['background_load']:.1f} after; wake-up p50 "
        f"{cond['wake_ms'] * 1e3:.0f} µs"
    )


def loadavg() -> list[float] | None:
    import os  # stdlib, on this path only: not at import sim

    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def loadavg_note(cal_file: Path) -> str:
    """The load average around the real runs, as recorded in ``cal_file`` ('' if not)."""
    cond = read_json(cal_file).get("conditions", {})
    before, after = cond.get("loadavg_before"), cond.get("loadavg_after")
    if not before or not after:
        return ""

    def fmt(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    return (
        f" Load average (1, 5, 15 min) before the real runs {fmt(before)}, after them {fmt(after)}."
    )


def merge_conditions(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Conditions measured before and after the real runs, pooled."""
    import statistics  # stdlib, on this path only: not at import sim

    out: dict[str, Any] = {
        "background_load": (a["background_load"] + b["background_load"]) / 2,
        "probe_hold_ms": (a["probe_hold_ms"] + b["probe_hold_ms"]) / 2,
    }
    # measured only where a wake-up found the GIL busy (sim.calibration.measure_harness)
    busy = [x["probe_hold_busy_ms"] for x in (a, b) if "probe_hold_busy_ms" in x]
    if busy:
        out["probe_hold_busy_ms"] = statistics.fmean(busy)
    for key, value in a.items():
        if key.endswith("_samples_ms"):
            pooled = sorted([*value, *b[key]])
            out[key] = pooled
            out[key.replace("_samples_ms", "_ms")] = statistics.median(pooled)
    return out


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object validate-model wrote beside its runs (RunDirError if it is not one)."""
    import json  # stdlib, on this path only: not at import sim

    from sim.files.read import read_bounded  # read only on this path: not at import sim

    raw = read_bounded(path, what="record", limit=16 << 20, error=RunDirError, within=path.parent)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: not the JSON object validate-model wrote; rerun it")
    return data
