"""Every column of requests.csv and summary.csv: its name, its unit and what it means.

The one catalogue (docs/design.md §6): the code that fills a column takes its name
from here (``sim.point.records`` and ``sim.point.metrics`` for the request
and the point, the instruments and the store for theirs, the benches for what
they read back), and ``docs/columns.md`` is generated from it
(``python -m sim.columns > docs/columns.md``; tests/test_columns.py keeps it
true). A new column is one entry here plus the code that measures it; a request
column computed from the request's other columns is one entry here alone (its
``derive``: both modes' requests.csv then carry it, tests/e2e/test_column_edit.py).
It sits on the ground floor, beside ``sim.errors``: it imports nothing of kvsim,
so every package may name a column without importing the package that measures it.

Summary columns are grouped by what measures them; ``SUMMARY`` lists them in
the order summary.csv has them, after the axis columns. Latency percentiles
beyond p50/p90/p99 (``output.percentiles``) add ``latency_p<q>_ms`` columns
next to these; every metric gets a ``<metric>_std`` column over repeats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ARRIVAL",
    "AUDIT",
    "AUDIT_STATUS",
    "BOTH_BUILDS",
    "ENGINE",
    "GC",
    "GIL",
    "HEAP",
    "HOLD_STAGES",
    "LATENCY",
    "NOISE",
    "PLANNED",
    "PROBE",
    "REQUESTS",
    "STAGES",
    "STORE",
    "SUMMARY",
    "THREADS",
    "Column",
    "holds_whole_numbers",
    "names",
    "render",
    "stage_summary",
]


@dataclass(frozen=True)
class Column:
    """One column: the name it has in the CSV file, its unit, one line on what it is."""

    name: str
    unit: str
    meaning: str
    #: A request column computed from the request's finished record (its other columns,
    #: as sim.point.records.RequestRecord holds them) when its row is made, in either
    #: mode; None: a column the record holds (a field that the modes fill).
    derive: Callable[[Any], object] | None = None


#: Units read from a name's suffix (the names carry their units: docs/design.md §6).
_SUFFIX_UNITS = (
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_s", "s"),
    ("_rps", "req/s"),
    ("_gbps", "GB/s"),
    ("_frac", "fraction"),
)


def _unit(name: str) -> str:
    for suffix, unit in _SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    return "count"


def _c(
    name: str, meaning: str, unit: str | None = None, derive: Callable[[Any], object] | None = None
) -> Column:
    return Column(name, unit if unit is not None else _unit(name), meaning, derive)


#: Units whose values are whole numbers; every other unit is a measure (a float).
_WHOLE_UNITS = frozenset({"count", "bytes", "line", "flag"})


def holds_whole_numbers(name: str) -> bool:
    """Whether column ``name`` holds whole numbers (a count, bytes, a line number).

    Why readers ask: a table writes a latency of exactly 38 ms as ``38``; read back by
    its text it would become an int in one row and a float in the next. A column's unit,
    not its cell, says what it holds. A ``_std`` over repeats is always a measure.
    """
    if name.endswith("_std"):
        return False
    unit = _UNITS.get(name)
    return (unit if unit is not None else _unit(name)) in _WHOLE_UNITS


def names(columns: tuple[Column, ...]) -> tuple[str, ...]:
    """The names of ``columns``, in order."""
    return tuple(c.name for c in columns)


#: The columns that split ``gil_hold_ms`` by stage (sim.instruments.stages); they sum to it.
HOLD_STAGES = (
    HOLD_KEYS_MS := _c("hold_keys_ms", "GIL hold of the chunk list and the store keys"),
    HOLD_ADDRESSES_MS := _c("hold_addresses_ms", "GIL hold of the variant computing the addresses"),
    HOLD_FREE_MS := _c("hold_free_ms", "GIL hold of the hand-off (the results dropped)"),
    HOLD_GC_MS := _c("hold_gc_ms", "GIL hold of the collections that ran inside the CPU stages"),
)

#: requests.csv, one row per request, after the axis columns and ``repeat``
#: (sim.point.records.RequestRecord fills them, in both modes).
REQUESTS = (
    REQUEST_ID := _c("request_id", "the request's number within the point"),
    _c("tokens", "tokens whose KV blocks the request loads"),
    _c("chunks", "chunks of block_size tokens the load is cut into"),
    _c("bytes", "bytes the load moves", "bytes"),
    ARRIVAL_S := _c(
        "arrival_s", "planned arrival, from the start of the load (latency counts from it)"
    ),
    INJECTED_S := _c(
        "injected_s",
        "when the harness handed the request to the pipeline, or its planned arrival where "
        "it was handed over ahead (an open loop over the modelled store: its load thread "
        "keeps it until then)",
    ),
    INJECT_LAG_MS := _c(
        "inject_lag_ms",
        "injected_s minus arrival_s: how late the harness was (0 for a request handed over ahead)",
    ),
    START_S := _c("start_s", "when a load thread started the request's CPU stages"),
    _c("cpu_done_s", "when its CPU stages ended"),
    _c("done_s", "when its transfer ended"),
    QUEUE_MS := _c("queue_ms", "from the planned arrival to the start of its CPU stages"),
    STAGE_WALL_MS := _c(
        "stage_wall_ms", "wall time of the CPU stages: GIL hold plus GIL wait, not CPU time"
    ),
    GIL_HOLD_MS := _c(
        "gil_hold_ms", "thread CPU time of the CPU stages minus declared GIL-free sections"
    ),
    GIL_WAIT_MS := _c(
        "gil_wait_ms", "time the load thread waited for the GIL during its CPU stages"
    ),
    *HOLD_STAGES,
    THREAD_CPU_MS := _c(
        "thread_cpu_ms",
        "the load thread's CPU time over the CPU stages (both builds; with the GIL on, "
        "gil_hold_ms plus declared GIL-free CPU)",
    ),
    _c(
        "core_wait_ms",
        "time the load thread was runnable but waiting for a core during its CPU stages "
        "(/proc schedstat run delay, read without handing the GIL over; with the GIL on, "
        "the part of gil_wait_ms that was a wait for a core; empty off Linux)",
    ),
    GC_GEN0 := _c(
        "gc_gen0", "generation-0 collections on the request's thread during its CPU stages"
    ),
    GC_GEN1 := _c(
        "gc_gen1", "generation-1 collections on the request's thread during its CPU stages"
    ),
    GC_GEN2 := _c(
        "gc_gen2", "generation-2 collections on the request's thread during its CPU stages"
    ),
    _c("gc_addresses", "of those collections, the ones inside the addresses stage"),
    _c("store_wait_ms", "time waiting for a free store slot"),
    TRANSFER_MS := _c(
        "transfer_ms", "the store's transfer (a real store: the get, timed in the load thread)"
    ),
    _c("attempts", "times the transfer was tried"),
    TRANSFER_BYTES := _c("transfer_bytes", "bytes the store reported moving", "bytes"),
    VERIFIED_BLOCKS := _c(
        "verified_blocks", "blocks whose content was checked after a real store's get"
    ),
    LATENCY_MS := _c("latency_ms", "from the planned arrival to the end of the transfer"),
    _c("thread", "the load thread that ran the CPU stages", "text"),
    _c("status", "ok, failed or pending", "text"),
    _c("error", "why the request failed (empty when ok)", "text"),
    TRACE_LINE := _c(
        "trace_line", "1-based line of the trace file replayed (empty: not a replay)", "line"
    ),
)

#: Requests and their latency (sim.point.metrics); latency counts finished requests.
LATENCY = (
    _c("requests", "requests the point ran"),
    _c("ok", "requests that finished"),
    _c("failed", "requests that failed (their error column says why)"),
    _c("errors", "failed requests by kind of error", "text"),
    ELAPSED_S := _c("elapsed_s", "wall time of the load"),
    THROUGHPUT_RPS := _c("throughput_rps", "finished requests over elapsed_s"),
    LATENCY_MEAN_MS := _c("latency_mean_ms", "mean latency of the finished requests"),
    LATENCY_P50_MS := _c("latency_p50_ms", "median latency"),
    LATENCY_P90_MS := _c("latency_p90_ms", "90th percentile of latency"),
    LATENCY_P99_MS := _c("latency_p99_ms", "99th percentile of latency"),
    LATENCY_MAX_MS := _c("latency_max_ms", "longest latency"),
)

#: The arrivals as planned and as achieved, and what the harness cost (sim.point.metrics).
ARRIVAL = (
    OFFERED_RPS := _c("offered_rps", "rate of the planned arrivals over their span"),
    ACHIEVED_RPS := _c(
        "achieved_rps", "rate at which the harness handed requests over, over their span"
    ),
    INJECT_LAG_P50_MS := _c("inject_lag_p50_ms", "median of inject_lag_ms"),
    INJECT_LAG_P99_MS := _c(
        "inject_lag_p99_ms",
        "99th percentile of inject_lag_ms (above 1 ms plus the noise floor: the end "
        "table's lag p99 column)",
    ),
    HARNESS_US_PER_REQUEST := _c(
        "harness_us_per_request", "the simulation thread's GIL time per request", "µs"
    ),
    HARNESS_CPU_US_PER_REQUEST := _c(
        "harness_cpu_us_per_request", "all its CPU per request, sleeps and wake-ups", "µs"
    ),
    HARNESS_WAKES_PER_REQUEST := _c(
        "harness_wakes_per_request", "times it slept for the next event, per request"
    ),
)

#: The GIL as the meter sees it (sim.instruments.gilmeter, docs/gil-method.md).
GIL = (
    GIL_HOLD_MEAN_MS := _c("gil_hold_mean_ms", "mean GIL hold per request"),
    GIL_HOLD_P50_MS := _c("gil_hold_p50_ms", "median GIL hold per request"),
    GIL_HOLD_P99_MS := _c("gil_hold_p99_ms", "99th percentile of GIL hold per request"),
    GIL_WAIT_MEAN_MS := _c("gil_wait_mean_ms", "mean GIL wait per request"),
    GIL_WAIT_P99_MS := _c("gil_wait_p99_ms", "99th percentile of GIL wait per request"),
)

#: The thread's own costs, under either build (sim.instruments.threadtime); with the GIL
#: off they take the place of the GIL columns, which are then empty.
THREADS = (
    GIL_ENABLED := _c("gil_enabled", "1: the GIL was on in the point's process, 0: off", "flag"),
    GIL_NOTE := _c("gil_note", "empty, or why the GIL columns are empty (the GIL was off)", "text"),
    THREAD_CPU_MEAN_MS := _c("thread_cpu_mean_ms", "mean of thread_cpu_ms"),
    THREAD_CPU_P99_MS := _c("thread_cpu_p99_ms", "99th percentile of thread_cpu_ms"),
    CORE_WAIT_MEAN_MS := _c("core_wait_mean_ms", "mean of core_wait_ms"),
    CORE_WAIT_P99_MS := _c("core_wait_p99_ms", "99th percentile of core_wait_ms"),
)


def _stage_name(stage: Column, stat: str) -> str:
    return f"{stage.name.removesuffix('_ms')}_{stat}_ms"


#: Mean and p99 of each stage's hold per request.
STAGES = tuple(
    _c(
        _stage_name(col, stat),
        f"{'mean' if stat == 'mean' else '99th percentile'} of {col.name} per request",
    )
    for col in HOLD_STAGES
    for stat in ("mean", "p99")
)


def stage_summary(stage: Column, stat: str) -> Column:
    """The summary column of one stage's hold (a HOLD_STAGES entry): ``stat`` is
    ``mean`` or ``p99`` per request."""
    name = _stage_name(stage, stat)
    return next(c for c in STAGES if c.name == name)


#: Collections, stages, queue and transfer (sim.point.metrics).
_PIPELINE = (
    GC_PER_REQUEST := _c(
        "gc_per_request", "collections on a request's thread during its CPU stages, mean"
    ),
    STAGE_WALL_MEAN_MS := _c("stage_wall_mean_ms", "mean of stage_wall_ms"),
    QUEUE_P50_MS := _c("queue_p50_ms", "median of queue_ms"),
    QUEUE_P99_MS := _c("queue_p99_ms", "99th percentile of queue_ms"),
    TRANSFER_P50_MS := _c("transfer_p50_ms", "median transfer of the finished requests"),
)

#: The harness's own latency: a request that does nothing (sim.runtime.noise).
NOISE = (
    NOISE_FLOOR_P50_MS := _c("noise_floor_p50_ms", "median latency of a request that does nothing"),
    NOISE_FLOOR_P99_MS := _c(
        "noise_floor_p99_ms", "its 99th percentile: no figure below it means anything"
    ),
)

#: The sentinel probe and the GIL-busy cross-check (sim.instruments.probe), gil.probe.
PROBE = (
    STALL_P50_MS := _c("stall_p50_ms", "median lateness of the probe thread's wake-ups"),
    STALL_P99_MS := _c(
        "stall_p99_ms", "99th percentile of that lateness: the stall a Python thread suffers"
    ),
    STALL_MAX_MS := _c("stall_max_ms", "the longest stall"),
    GIL_BUSY_PROBE := _c(
        "gil_busy_probe", "fraction of the window the probe found the GIL busy", "fraction"
    ),
    GIL_BUSY_PROBE_CORE := _c(
        "gil_busy_probe_core", "part of it that may be the probe's wait for a core", "fraction"
    ),
    GIL_BUSY_REQUESTS := _c(
        "gil_busy_requests", "summed request holds over the window", "fraction"
    ),
    GIL_BUSY_HARNESS := _c(
        "gil_busy_harness", "the simulation thread's CPU over the window", "fraction"
    ),
    GIL_BUSY_ENGINE := _c(
        "gil_busy_engine",
        "the engine's step holds over the window (NaN: no engine)",
        "fraction",
    ),
    GIL_BUSY_AGREEMENT := _c(
        "gil_busy_agreement", "probe over requests + harness + engine (1: they agree)", "ratio"
    ),
    CORE_WAIT_FRAC := _c(
        "core_wait_frac", "time other threads were runnable but waited for a core"
    ),
    PROBE_HOLD_BUSY_US := _c(
        "probe_hold_busy_us",
        "the probe's GIL time per wake-up that found the GIL busy, from the wake-up to its "
        "next sleep (real mode; the model's mechanism replay takes it)",
        "µs",
    ),
)

#: The py-spy GIL audit (sim.instruments.audit), gil.audit: pyspy; NaN when it did not run.
AUDIT = (
    _c("audit_busy_requests", "load threads' share of GIL samples", "fraction"),
    _c("audit_busy_harness", "the simulation thread's share of GIL samples", "fraction"),
    _c("audit_busy_engine", "the engine thread's share of GIL samples", "fraction"),
    _c("audit_busy_probe", "the probe thread's share of GIL samples", "fraction"),
    AUDIT_VS_METER := _c(
        "audit_vs_meter",
        "audited GIL time of the load threads over their metered holds",
        "ratio",
    ),
    AUDIT_OFFCORE_FRAC := _c("audit_offcore_frac", "load threads' off-core time over the window"),
    AUDIT_VS_METER_ONCORE := _c(
        "audit_vs_meter_oncore", "audit_vs_meter with the off-core time taken off", "ratio"
    ),
    AUDIT_SAMPLES := _c("audit_samples", "py-spy samples kept"),
    AUDIT_PYSPY_CPU_FRAC := _c("audit_pyspy_cpu_frac", "py-spy's own CPU over the window"),
)
#: Why the audit did not run, or ``ok``.
AUDIT_STATUS = _c("audit_status", "ok, or why py-spy could not attach and how to allow it", "text")

#: The engine step loop (sim.instruments.engine), engine.enabled.
ENGINE = (
    ENGINE_STEPS := _c("engine_steps", "engine steps while the load ran"),
    ENGINE_STEP_P50_MS := _c("engine_step_p50_ms", "median step time under load"),
    ENGINE_STEP_P99_MS := _c("engine_step_p99_ms", "99th percentile of step time under load"),
    ENGINE_ALONE_P50_MS := _c(
        "engine_alone_p50_ms", "median step time before the load (the baseline)"
    ),
    ENGINE_ALONE_P99_MS := _c(
        "engine_alone_p99_ms", "99th percentile of step time before the load"
    ),
    ENGINE_P50_INFLATION := _c(
        "engine_p50_inflation", "engine_step_p50_ms over engine_alone_p50_ms", "ratio"
    ),
    ENGINE_P99_INFLATION := _c(
        "engine_p99_inflation", "engine_step_p99_ms over engine_alone_p99_ms", "ratio"
    ),
    ENGINE_BUILD_P50_US := _c("engine_build_p50_us", "median time to build a step's token index"),
    ENGINE_STALL_P99_MS := _c(
        "engine_stall_p99_ms",
        "99th percentile of the engine's wake-up and GIL take-back after a forward",
    ),
)

#: Collections on every thread while the load ran (sim.instruments.gc_meter).
GC = (
    GC_COLLECTIONS := _c("gc_collections", "collections on every thread"),
    GC_GEN2_COLLECTIONS := _c("gc_gen2_collections", "of those, generation 2"),
    GC_WALL_MS := _c(
        "gc_wall_ms",
        "wall time between the collector's callbacks (a stall for every thread; at a "
        "contended GIL also the stop callback's own wait for the GIL: an upper bound)",
    ),
    GC_MAX_MS := _c(
        "gc_max_ms", "the longest collection by its thread CPU time (the GIL held throughout)"
    ),
    _c("gc_load_ms", "CPU time in collections on the load threads"),
    _c("gc_engine_ms", "CPU time in collections on the engine thread"),
    _c("gc_simulation_ms", "CPU time in collections on the simulation thread"),
)

#: The production-like heap (sim.instruments.heap), engine.heap.
HEAP = (
    _c("heap_objects", "containers built to stand in for an engine's heap"),
    _c("heap_frozen_objects", "of those, moved to the permanent generation (gc.freeze)"),
    _c("heap_tracked_objects", "objects the collector tracked while measuring"),
    _c("heap_build_s", "time to build the heap (not part of any measurement)"),
)

#: Known from the workload plan alone (sim.workload.replay); NaN unless a trace replay.
PLANNED = (
    TRACE_REQUESTS := _c("trace_requests", "requests replayed from the trace"),
    SKIPPED_REQUESTS := _c("skipped_requests", "trace requests with nothing to load"),
    HIT_RATIO := _c("hit_ratio", "tokens found in the store memory over tokens asked", "fraction"),
    _c("block_hit_ratio", "blocks found in the store memory over blocks asked", "fraction"),
)

#: The store behind the load path (sim.store); NaN where a figure does not apply to it.
STORE = (
    STORE_KIND := _c("store_kind", "which store served the loads", "text"),
    _c("store_get_p50_ms", "median get time the store measured"),
    _c("store_get_p99_ms", "99th percentile of its get time"),
    _c("store_get_gbps", "bytes got over the time spent getting them"),
    _c("store_bytes", "bytes the store moved in its gets", "bytes"),
    _c("store_put_s", "time to fill the store before the load"),
    _c("store_verified_blocks", "blocks checked after a get"),
    _c("store_netns", "1 when the store ran in a private network namespace", "flag"),
)

#: summary.csv, one row per point, after the axis columns, in order.
SUMMARY = (
    *LATENCY,
    *ARRIVAL,
    *GIL,
    *STAGES,
    *THREADS,
    *_PIPELINE,
    *NOISE,
    *PROBE,
    *AUDIT,
    AUDIT_STATUS,
    *ENGINE,
    *GC,
    *HEAP,
    *PLANNED,
    *STORE,
)


#: The columns whose meaning depends on the build: (columns, with the GIL on, with it off).
#: ``interpreter.gil`` (sim.config.interpreter) and docs/columns.md §GIL off.
BOTH_BUILDS = (
    (
        "gil_hold_ms, gil_hold_*, hold_*_ms and their summaries",
        "thread CPU time outside declared GIL-free sections (docs/gil-method.md)",
        "empty: no GIL exists to hold; thread_cpu_ms is the request's CPU time",
    ),
    (
        "gil_wait_ms, gil_wait_*",
        "wall time ready to run Python but not running: the GIL's wait and any core wait",
        "empty: no GIL exists to wait for; core_wait_ms is the wait left",
    ),
    (
        "thread_cpu_ms, thread_cpu_*",
        "the thread's CPU time over the request: the GIL hold plus GIL-free CPU",
        "the thread's CPU time over the request, run in parallel with the others'",
    ),
    (
        "core_wait_ms, core_wait_*",
        "the part of gil_wait_ms that was a wait for a core (model mode: empty, its GIL "
        "wait holds it)",
        "all the wait there is: runnable threads beyond the cores take turns",
    ),
    (
        "stage_wall_ms",
        "hold + wait + GIL-free wall time",
        "thread_cpu_ms + core_wait_ms + time blocked (I/O, locks)",
    ),
    (
        "gil_enabled, gil_note",
        "1 and empty",
        "0 and why the GIL columns are empty; a point that asked for the GIL off but ran "
        "with it on fails instead",
    ),
)


#: Every catalogued column's unit, by name.
_UNITS = {c.name: c.unit for group in (REQUESTS, SUMMARY) for c in group}


def _table(columns: tuple[Column, ...]) -> list[str]:
    lines = ["| column | unit | what it is |", "|---|---|---|"]
    lines += [f"| `{c.name}` | {c.unit} | {c.meaning} |" for c in columns]
    return lines


def render() -> str:
    """docs/columns.md: both files' columns, from this catalogue."""
    lines = [
        "# Result columns",
        "",
        "Generated from `sim/columns.py` (`python -m sim.columns > docs/columns.md`);",
        "edit the catalogue, not this file. Every table starts with the sweep's axis",
        "columns (`variant`, `workers`, …). Units are in the names (docs/design.md §6).",
        "",
        "## requests.csv",
        "",
        "One row per request of every finished point run, after the axis columns and",
        "`repeat`. Both modes write the same columns.",
        "",
        *_table(REQUESTS),
        "",
        "## summary.csv",
        "",
        "One row per point: the mean over repeats of each metric, `<metric>_std` beside it",
        "when `repeats > 1`, then `status` and `error`; `summary_repeats.csv` has one row",
        "per point × repeat, with its `round` and `started_s` (when it ran: seconds from the",
        "run's first start). `output.percentiles` adds `latency_p<q>_ms` columns.",
        "",
        *_table(SUMMARY),
        "",
        "## GIL off",
        "",
        "On a free-threaded build (`interpreter: {python: freethreaded, gil: off}`,",
        "`make freethreaded`) no GIL exists: the columns that measure one are empty (and",
        "`gil_note` says so), and what takes their place is the thread's CPU time and its",
        "wait for a core. Each column under both builds:",
        "",
        "| columns | GIL on | GIL off |",
        "|---|---|---|",
        *[f"| {cols} | {on} | {off} |" for cols, on, off in BOTH_BUILDS],
        "",
        "Every point's `status.json` names its interpreter (`interpreter`: path, version,",
        "build, the GIL asked for and what `sys._is_gil_enabled()` said at both ends).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
