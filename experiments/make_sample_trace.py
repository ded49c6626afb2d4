"""Write the sample Mooncake-format trace that tests and configs/trace_replay.yaml replay.

    python experiments/make_sample_trace.py [--seed 0] [--out configs/traces/mooncake_sample.jsonl]

The trace is synthetic (see sim/workload/trace_synth.py); nothing is downloaded. With the
defaults the output is byte-identical to the committed file, which a test checks.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim.workload.trace import write_trace
from sim.workload.trace_synth import synthesize_trace

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "configs" / "traces" / "mooncake_sample.jsonl"
DEFAULT_SEED = 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args()
    rows = synthesize_trace(args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_trace(args.out, rows)
    print(f"wrote {len(rows)} requests to {args.out}")


if __name__ == "__main__":
    main()
