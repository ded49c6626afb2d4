"""What the GIL itself costs each point: latency with the GIL on and off, side by side.

A run that sweeps ``interpreter.gil: [on, off]`` on one free-threaded binary
(configs/gil_on_off.yaml) differs between its two sides by the GIL alone. At each
point (variant × workers × whatever else was swept) this sets the latency p50 and p99
with the GIL on beside those with it off, the ratio off ÷ on with its 95 % interval
over the repeats (sim.analysis.compare, paired by round as any comparison of one
sweep), and the GIL's cost: the part of the GIL-on latency that goes when the GIL
does, ``1 - off/on``. It also says how many cores the machine has, because with the
GIL off more workers than cores compete for the cores instead of for the GIL.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sim import columns
from sim.analysis.compare import KNOWN_METRICS, Comparison, compare, metric_available
from sim.errors import KvsimError
from sim.rundir.reader import RunResults, load_results

__all__ = ["GIL_AXES", "gil_axis", "gil_onoff_lines", "gil_onoff_report"]

#: The axis label ``interpreter.gil`` gets (sim.config.experiment.axis_label).
GIL_AXES = ("gil", "interpreter_gil")
_METRICS = (columns.LATENCY_P50_MS.name, columns.LATENCY_P99_MS.name)


def gil_axis(res: RunResults) -> str | None:
    """The run's GIL axis when it swept the GIL both on and off, else None."""
    for axis in GIL_AXES:
        if axis in res.axes:
            values = {str(r.get(axis)) for r in res.summary}
            if {"on", "off"} <= values:
                return axis
    return None


def _cores(res: RunResults) -> int | None:
    machine: dict[str, Any] = res.manifest.get("machine") or {}
    cores = machine.get("cpu_affinity") or machine.get("cpu_count")
    return int(cores) if cores else None


def _ratio(cmp: Comparison, level: tuple[str, ...], metric: str) -> tuple[str, str]:
    """(off ÷ on [interval], the GIL's cost 1 - off/on [interval]) as text."""
    cell = cmp.cells.get((level, "off", metric))
    if cell is None or cell.ratio is None or math.isnan(cell.ratio.value):
        return "—", "—"
    r = cell.ratio
    if math.isnan(r.low):
        return f"{r.value:.2f}", _pct(1 - r.value)
    mark = "*" if r.excludes_one else ""
    return (
        f"{r.value:.2f} [{r.low:.2f}, {r.high:.2f}]{mark}",
        f"{_pct(1 - r.value)} [{_pct(1 - r.high)}, {_pct(1 - r.low)}]",
    )


def _pct(x: float) -> str:
    """A share as whole percent, never "-0%"."""
    return f"{round(x * 100) + 0:d}%"


def _value(cmp: Comparison, level: tuple[str, ...], side: str, metric: str) -> str:
    cell = cmp.cells.get((level, side, metric))
    return "—" if cell is None or math.isnan(cell.value) else f"{cell.value:.1f}"


def _ratio_only(cmp: Comparison, level: tuple[str, ...], metric: str) -> str:
    """off ÷ on of ``metric`` alone (no interval), or "—"."""
    cell = cmp.cells.get((level, "off", metric))
    if cell is None or cell.ratio is None or math.isnan(cell.ratio.value):
        return "—"
    return f"{cell.ratio.value:.2f}"


def gil_onoff_lines(res: RunResults, n_boot: int = 2000, seed: int = 0) -> list[str]:
    """The on/off table of ``res`` as text lines; [] when it did not sweep the GIL."""
    axis = gil_axis(res)
    if axis is None:
        return []
    cpu = columns.THREAD_CPU_MEAN_MS.name
    # runs made before thread CPU was a column have none: their table has no CPU column
    has_cpu = metric_available(KNOWN_METRICS[cpu], res)
    metrics = [*_METRICS, cpu] if has_cpu else list(_METRICS)
    cmp = compare(res, "on", metrics, n_boot=n_boot, seed=seed, by=axis)
    # Axes with one value at every point (mode: real) say nothing in a row: left out.
    cols = [i for i, _ in enumerate(cmp.level_axes) if len({lv[i] for lv in cmp.levels}) > 1]
    heads = [*(cmp.level_axes[i] for i in cols), "p50 on", "p50 off", "off÷on p50", "GIL cost p50"]
    heads += ["p99 on", "p99 off", "off÷on p99", "GIL cost p99"]
    if cpu in metrics:
        heads.append("CPU/req off÷on")
    rows = []
    for level in cmp.levels:
        row = [level[i] for i in cols]
        for metric in _METRICS:
            ratio, cost = _ratio(cmp, level, metric)
            row += [_value(cmp, level, "on", metric), _value(cmp, level, "off", metric)]
            row += [ratio, cost]
        if cpu in metrics:
            row.append(_ratio_only(cmp, level, cpu))
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    lines = [f"the GIL's own cost · {res.name} · latency ms, GIL on and off on one binary"]
    lines.append("  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip())
    lines.append("─" * len(lines[-1]))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(
        "off÷on: latency with the GIL off over with it on, 95 % interval over the repeats "
        "(* excludes 1) · GIL cost: 1 - off÷on, the share of the GIL-on latency the GIL "
        f"itself costs (negative: the GIL-off side is slower) · repeats: {cmp.repeats}"
    )
    if cpu in metrics:
        lines.append(
            "CPU/req off÷on: a request's thread CPU with the GIL off over with it on (above 1: "
            "with no GIL, threads running at once slow each other, taking back part of the gain)"
        )
    cores = _cores(res)
    workers = [int(float(r["workers"])) for r in res.summary if r.get("workers")]
    if cores is not None:
        note = f"this machine: {cores} cores"
        if workers and max(workers) > cores:
            note += (
                f"; with the GIL off, {max(workers)} workers compete for {cores} cores "
                "(core_wait_ms), so the GIL-off side cannot run them all at once either"
            )
        lines.append(note)
    return lines


def gil_onoff_report(run_dir: Path, n_boot: int = 2000, seed: int = 0) -> list[str]:
    """:func:`gil_onoff_lines` of the run in ``run_dir`` (what `kvsim run` and `kvsim
    compare` print after their own tables); [] when it did not sweep the GIL on and off,
    and one line saying why when its results cannot be compared."""
    try:
        return gil_onoff_lines(load_results(run_dir), n_boot, seed)
    except (OSError, ValueError, KvsimError) as exc:
        return [f"the GIL's own cost: not computed ({str(exc).splitlines()[0][:200]})"]
