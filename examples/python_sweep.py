"""A two-variant sweep built in Python — no YAML file — run in child processes and compared.

    python examples/python_sweep.py              # ~30 s: 2 variants x 2 workers x 3 repeats
    python examples/python_sweep.py --requests 400 --out results/py_sweep

Each point runs in its own process, which receives the resolved config itself
(nothing is read back from disk), and the comparison printed at the end is the
one ``kvsim compare`` writes: each variant against scalar, with the ratios' 95%
intervals drawn from the spread between the (default three) repeats.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import sim


def experiment(requests: int) -> sim.Experiment:
    """scalar vs numpy address computation, at 1 and 4 worker threads."""
    return sim.build(
        name="python-sweep",
        seed=7,
        model={"preset": "llama-3.1-8b", "block_size": 16},
        workload={
            "requests": requests,
            "arrival": {"kind": "poisson", "rate_rps": 200},
            "tokens": 2048,
        },
        store={"bandwidth_gb_per_s": 25, "latency_ms": 0.3, "concurrency": 4},
        sweep={"connector.variant": ["scalar", "numpy"], "connector.workers": [1, 4]},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60, help="requests per point (60)")
    parser.add_argument("--out", help="run directory (default: a fresh temporary one)")
    args = parser.parse_args(argv)

    exp = experiment(args.requests)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="kvsim-py-")) / "run"
    plan = exp.plan(out)
    print(f"{exp.name}: {len(plan.runs)} point runs, {plan.planned_requests(False)} requests")

    run = exp.run(
        out,
        force=True,
        events=sim.SweepEvents(
            finished=lambda rep, o: print(f"  {rep.label}: {o.status} ({o.elapsed_s:.1f} s)")
        ),
    )
    assert run.outcome is not None
    print(run.compare(bootstrap=500))
    print(f"harness noise floor: p99 ≤ {run.outcome.noise_floor_p99_ms:.3f} ms · results in {out}")
    return 0 if run.outcome.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
