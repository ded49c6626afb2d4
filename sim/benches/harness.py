"""``kvsim bench harness``: what the harness itself costs per request, with ``noop``.

With the ``noop`` variant a request's CPU stage and transfer cost (almost)
nothing, so what remains is the harness: the simulation thread planning,
injecting and completing each request. The bench runs real points in this
process (constant arrivals, one load thread, no probe, no engine) and prints,
per rate: the simulation thread's CPU time per request outside its waits for
the next event (it holds the GIL whenever it runs Python, so this is its GIL
time) and all of its CPU time (with the kernel's cost of each sleep and wake,
spent with the GIL released), injection lag p50/p99 and the rate achieved;
then the highest rate at which injection lag p99 stays under 1 ms, found by
doubling and then bisecting. Figures move with the machine's load: run
it on a quiet machine and read them beside ``noise_floor_p99_ms``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from sim import columns
from sim.console import output_console

__all__ = ["HELP", "add_arguments", "harness_point", "main", "measure_rate", "sustained_rate"]

HELP = "the harness's own cost with the noop variant: µs per request, lag, sustained rate"

#: Injection lag p99 (ms) under which a rate counts as sustained.
SUSTAINED_LAG_MS = 1.0

#: The simulation thread's GIL time per request the harness should stay under, at
#: TARGET_RATE_RPS (issue: "target ≤ 50 µs per request at 1,000 req/s on this machine").
TARGET_US = 50.0
TARGET_RATE_RPS = 1000.0

#: An offered rate far past what the harness sustains: every request is overdue when the
#: thread gets to it, so it never sleeps and the figure is its Python alone.
HOT_RATE_RPS = 100_000.0


def harness_point(rate_rps: float, requests: int, workers: int = 1) -> Any:
    """A point of tiny noop requests at a constant rate (no probe, no engine)."""
    from sim.config import ExperimentConfig, Point

    cfg = ExperimentConfig.model_validate(
        {
            "name": "bench-harness",
            "seed": 1,
            "model": {"regions": 2, "block_len": [1024], "block_size": 16, "num_blocks": 256},
            "workload": {
                "requests": requests,
                "arrival": {"kind": "constant", "rate_rps": rate_rps},
                "tokens": 160,
            },
            "connector": {"variant": "noop", "workers": workers},
            "store": {"latency_ms": 0.05, "concurrency": 64},
            "gil": {"probe": False},
        }
    )
    return Point(index=0, axes={}, config=cfg)


def measure_rate(rate_rps: float, seconds: float, min_requests: int = 200) -> dict[str, float]:
    """Run ``noop`` at ``rate_rps`` for about ``seconds``; the summary figures that matter."""
    from sim.runtime.point import run_point

    n = max(min_requests, int(rate_rps * seconds))
    s = run_point(harness_point(rate_rps, n)).summary
    # the arrivals and the harness's cost, and its noise floor (sim.columns)
    keys = (*columns.names(columns.ARRIVAL), "noise_floor_p99_ms")
    return {"rate_rps": rate_rps, "requests": n, **{k: float(s[k]) for k in keys}}


def _sustained(row: dict[str, float]) -> bool:
    return (
        row["inject_lag_p99_ms"] < SUSTAINED_LAG_MS
        and row["achieved_rps"] >= 0.98 * row["offered_rps"]
    )


def sustained_rate(
    seconds: float, start_rps: float = 250.0, limit_rps: float = 64000.0, bisect: int = 3
) -> tuple[float, list[dict[str, float]]]:
    """Highest rate tried whose lag p99 < 1 ms (0 when none), and every trial."""
    trials = []
    good, bad = 0.0, math.inf
    rate = start_rps
    while rate <= limit_rps:
        row = measure_rate(rate, seconds)
        trials.append(row)
        if not _sustained(row):
            bad = rate
            break
        good = rate
        rate *= 2
    for _ in range(bisect if math.isfinite(bad) and good > 0 else 0):
        mid = (good + bad) / 2
        row = measure_rate(mid, seconds)
        trials.append(row)
        good, bad = (mid, bad) if _sustained(row) else (good, mid)
    return good, trials


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rates", default="100,1000", help="comma-separated rates to report (req/s)")
    p.add_argument("--seconds", type=float, default=2.0, help="load per rate (default 2 s)")
    p.add_argument(
        "--no-search", action="store_true", help="skip the search for the sustained rate"
    )


def main(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    console = output_console()
    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        console.print(f"kvsim bench harness: --rates: not a list of numbers: {args.rates!r}")
        return 2
    if not rates or any(r <= 0 for r in rates) or args.seconds <= 0:
        console.print("kvsim bench harness: --rates and --seconds must be positive")
        return 2
    table = Table(
        title="kvsim bench harness · noop variant, 1 load thread, constant arrivals",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    heads = (
        "offered\nreq/s",
        "achieved\nreq/s",
        "sim GIL\nµs/req",
        "sim CPU\nµs/req",
        "wake-ups\n/req",
        "lag p50\nms",
        "lag p99\nms",
    )
    for head in heads:
        table.add_column(head, justify="right")
    floor = 0.0
    at_target: dict[str, float] | None = None
    for rate in rates:
        row = measure_rate(rate, args.seconds)
        if rate == TARGET_RATE_RPS:
            at_target = row
        floor = max(floor, row["noise_floor_p99_ms"])
        table.add_row(
            f"{row['offered_rps']:.0f}",
            f"{row['achieved_rps']:.1f}",
            f"{row['harness_us_per_request']:.1f}",
            f"{row['harness_cpu_us_per_request']:.1f}",
            f"{row['harness_wakes_per_request']:.2f}",
            f"{row['inject_lag_p50_ms']:.3f}",
            f"{row['inject_lag_p99_ms']:.3f}",
        )
    console.print(table)
    console.print(
        "sim GIL µs/req: the simulation thread's CPU time per request outside its waits for "
        "the next event (it holds the GIL whenever it runs Python); sim CPU µs/req: all its "
        "CPU, with the kernel's cost of putting it to sleep and waking it (GIL released); "
        f"harness noise floor p99 ≤ {floor:.3f} ms; wake-ups /req: times the simulation "
        "thread slept for the next event, per request (the Python run after each is slower)"
    )
    hot = measure_rate(HOT_RATE_RPS, 0.05, min_requests=5000)
    console.print(
        f"run hot (offered {HOT_RATE_RPS:,.0f} req/s: requests overdue, the thread never "
        f"sleeps): {hot['harness_us_per_request']:.1f} µs per request — the Python a request "
        "costs; what a row above has beyond it is the cost of its wake-ups"
    )
    if at_target is not None:
        got = at_target["harness_us_per_request"]
        verdict = "met" if got <= TARGET_US else "NOT met"
        console.print(
            f"target: ≤ {TARGET_US:g} µs of simulation-thread GIL time per request at "
            f"{TARGET_RATE_RPS:,.0f} req/s — {verdict}: {got:.1f} µs, "
            f"{got / TARGET_US:.2f}× the target"
        )
    if not args.no_search:
        best, trials = sustained_rate(min(args.seconds, 1.0))
        tried = ", ".join(f"{t['rate_rps']:.0f} ({t['inject_lag_p99_ms']:.2f} ms)" for t in trials)
        if best > 0:
            verdict = f"{best:.0f} req/s"
        else:
            verdict = f"none of the rates tried (noise floor p99 here: {floor:.3f} ms)"
        console.print(
            f"highest rate sustained with injection lag p99 < {SUSTAINED_LAG_MS:g} ms: "
            f"{verdict} (tried, with lag p99: {tried})"
        )
    return 0
