"""``kvsim validate``'s workflow: a config checked as a run would check it, running nothing.

What it would run is said line by line: the points and their requests, a real
store's memory, rounding of token counts, each trace replay's planned workload, the
budget, model-mode time, and where the modelled store cannot keep up. (Model
validation is another thing: sim.api.validate_model.)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim import columns
from sim.api.cli_args import namespace_fields, set_items
from sim.api.experiments import open_config
from sim.config.experiment import ExperimentConfig, Point
from sim.config.workload import FixedTokens, TraceArrival, UniformTokens
from sim.preflight import budget
from sim.preflight.budget import human_seconds
from sim.preflight.machine import check_covered, check_runnable
from sim.preflight.model_time import estimate_model_time
from sim.rundir.guard import normalize_dir
from sim.workload.plan import WorkloadPreview, preview_workload

if TYPE_CHECKING:
    import argparse

__all__ = ["ValidateConfigArgs", "requests_phrase", "validate_config"]


@dataclass(frozen=True)
class ValidateConfigArgs:
    """What ``kvsim validate`` was asked: a config, its ``--set`` items (``--mode`` and
    ``--audit`` among them) and ``--plugin`` files."""

    config: str
    sets: tuple[str, ...]
    plugins: tuple[str, ...]

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> ValidateConfigArgs:
        return cls(**namespace_fields(cls, args, sets=set_items(args), plugins=tuple(args.plugin)))


def validate_config(args: ValidateConfigArgs) -> Iterator[str]:
    """Check the config of ``args`` as a run would, running nothing; the lines that say
    what it would run (its points, their requests, notes, the budget), each as soon as
    it is known. One-line ConfigErrors where it cannot run."""
    with open_config(args.config, args.sets, args.plugins, conformance=False) as exp:
        yield from _lines(args.config, exp.config, list(exp.points))


def _lines(config: str, cfg: ExperimentConfig, points: list[Point]) -> Iterator[str]:
    # a real store's memory, a GPU an engine asks for, then the calibration of model points
    memory_lines = check_runnable(config, points)
    check_covered(points)
    memo: dict[str, Any] = {}  # points sharing a trace replay it once
    previews = [preview_workload(p.config, memo) for p in points]
    counts = [w.requests for w in previews]
    stats = [w.stats for w in previews]
    yield (
        f"{config}: ok — experiment '{cfg.name}', {len(points)} point(s) × "
        f"{cfg.repeats} repeat(s), {requests_phrase(counts, stats)}, "
        f"output {normalize_dir(cfg.output_dir).absolute()}"
    )
    varies = len(set(counts)) > 1
    for p, n, s in zip(points, counts, stats, strict=True):
        line = f"  {p.index:3d}  {p.label}"
        if varies:
            line += f"  ({n} requests"
            if not math.isnan(s.get(columns.TRACE_REQUESTS.name, math.nan)):
                read, skipped = s[columns.TRACE_REQUESTS.name], s[columns.SKIPPED_REQUESTS.name]
                line += f"; {read:.0f} read, {skipped:.0f} skipped"
            line += ")"
        yield line
    yield from memory_lines
    yield from rounding_notes(points)
    yield from trace_lines(points, previews)
    yield budget_line(cfg, points, previews)
    line = model_time_line(cfg, points, counts)
    if line:
        yield line
    yield from store_bound_lines(points, previews)


def requests_phrase(counts: Sequence[int], stats: Sequence[Mapping[str, float]]) -> str:
    """How many requests each point runs, e.g. ``40 requests each`` or, for a trace
    replay, ``212 requests each (from trace: 250 read, 38 with nothing to load)``.

    A trace decides its own count (``arrival.limit``, requests with no stored
    prefix skipped), so ``workload.requests`` would be wrong there; the count
    printed is the one the run will really plan.
    """
    lo, hi = min(counts), max(counts)
    text = f"{lo} requests each" if lo == hi else f"{lo}–{hi} requests per point"
    read = [s.get(columns.TRACE_REQUESTS.name, math.nan) for s in stats]
    if all(math.isnan(r) for r in read):
        return text
    skipped = [s.get(columns.SKIPPED_REQUESTS.name, math.nan) for s in stats]
    if len({*read}) == 1 and len({*skipped}) == 1:
        detail = f"{read[0]:.0f} read, {skipped[0]:.0f} with nothing to load"
    else:
        detail = "read and skipped per point below"
    return f"{text} (from trace: {detail})"


def store_bound_lines(points: Sequence[Point], loads: Sequence[WorkloadPreview]) -> list[str]:
    """A hint where the modelled store cannot move what the arrivals ask for: its queue
    then grows through the run, so every variant's latency is the store's and their
    ratios read 1.00× (docs/your-connector.md, section 4)."""
    estimates = budget.check_points("", points, loads)
    bound = [p.label for p, e in zip(points, estimates, strict=True) if e.store_bound_why]
    if not bound:
        return []
    why = next(e.store_bound_why for e in estimates if e.store_bound_why)
    which = "every point" if len(bound) == len(points) else f"{len(bound)} point(s) ({bound[0]}, …)"
    return [
        f"hint: on {which} the store needs longer than the arrivals take: {why}; its queue "
        "grows through the run and load latency is mostly that queue's, whatever the variant "
        "(raise store.bandwidth_gb_per_s, or lower workload.arrival.rate_rps or workload.tokens)"
    ]


def rounding_notes(points: Sequence[Point]) -> list[str]:
    """Token counts the run will round down to the chunk granularity, said before it runs
    (``tokens: 1000`` with 128-token chunks loads 896 tokens)."""
    notes: dict[str, None] = {}
    for p in points:
        tokens, gran = p.config.workload.tokens, p.config.model.chunk_granularity
        what = f"a multiple of {gran} tokens, the chunk granularity of the model section"
        if isinstance(tokens, FixedTokens) and tokens.value % gran:
            got = max(tokens.value // gran, 1) * gran
            notes[f"note: workload.tokens {tokens.value} is rounded down to {got} ({what})"] = None
        elif isinstance(tokens, UniformTokens) and (tokens.low % gran or tokens.high % gran):
            notes[f"note: workload.tokens draws are rounded down to {what}"] = None
    return list(notes)


#: Below this share of measured trace requests loading anything, validate says the
#: window mostly measures a cold store (the first 300 lines of the Mooncake "Synthetic"
#: trace after 100 warm lines: 10 of 300 load, hit ratio 0.060; after 3,000: 231, 0.884).
COLD_SHARE = 0.25


def trace_lines(points: Sequence[Point], previews: Sequence[WorkloadPreview]) -> list[str]:
    """The planned workload of each distinct trace replay: requests, span, hit ratio and
    tokens loaded, so that a replay measuring almost nothing is seen before it runs."""
    out: dict[str, None] = {}
    for p, w in zip(points, previews, strict=True):
        arr = p.config.workload.arrival
        if w.span_s is None or not isinstance(arr, TraceArrival):  # a span: a trace's alone
            continue
        warm = w.warm_lines or 0
        out[
            f"trace: {w.requests} requests load something (of "
            f"{w.stats[columns.TRACE_REQUESTS.name]:.0f} measured"
            + (f", after {warm} lines warming the store untimed" if warm else ", cold store")
            + f"), span {human_seconds(w.span_s)} at speed-up {arr.speedup:g}; hit ratio "
            f"{w.stats[columns.HIT_RATIO.name]:.3f} of prompt tokens; tokens loaded "
            f"(load: {arr.load}) "
            f"mean {w.mean_tokens:,.0f}, p50 {w.tokens_p50:,.0f}, p99 {w.tokens_p99:,.0f}"
        ] = None
        measured = w.stats[columns.TRACE_REQUESTS.name]
        if measured and w.requests < COLD_SHARE * measured:
            out[
                f"hint: {measured - w.requests:.0f} of {measured:.0f} measured requests find "
                "nothing stored; a production store is warm: replay more lines into it first "
                f"(workload.arrival.cache.warm.share or .requests; now {warm} lines), or load "
                "the whole prompt (workload.arrival.load: prompt)"
            ] = None
    return list(out)


def model_time_line(cfg: ExperimentConfig, points: list[Point], counts: list[int]) -> str:
    """What model-mode points will take, from samples of them simulated here
    (sim.preflight.model_time); empty where no point is in model mode."""
    est = estimate_model_time(points, counts)
    if est is None:
        return ""
    return (
        f"model time: ≈ {human_seconds(max(est.point_s))} per point, ≈ "
        f"{human_seconds(est.total_s(cfg.repeats))} in all ({est.basis()})"
    )


def budget_line(cfg: ExperimentConfig, points: list[Point], loads: list[WorkloadPreview]) -> str:
    """What the run will cost: requests in all, memory per point, and wall time per point
    (the bound ``limits.max_point_s`` is checked against, and the expected time with a
    point's start-up: sim.preflight.budget)."""
    estimates = budget.check_points("", points, loads)  # parse_checked already refused past limits
    runs = len(points) * cfg.repeats
    total = sum(w.requests for w in loads) * cfg.repeats
    mem = max((e.memory_bytes for e in estimates), default=0.0)
    real = [e for p, e in zip(points, estimates, strict=True) if p.config.mode != "model"]
    wall = (
        f"; wall time ≥ {human_seconds(max(e.wall_s for e in real))} per point (expected "
        f"≈ {human_seconds(max(e.expected_s for e in real))} with its start-up), ≈ "
        f"{human_seconds(sum(e.expected_s for e in real) * cfg.repeats)} in all "
        "(modelled time is wall time)"
        if real
        else ""
    )
    return (
        f"budget: {runs} point run(s), {total} requests in all; memory ≈ "
        f"{budget.human_bytes(mem)} per point{wall} (limits.max_points {cfg.limits.max_points}, "
        f"limits.max_point_s {cfg.limits.max_point_s:g})"
    )
