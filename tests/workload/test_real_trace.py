"""The shipped replay config measures a warm store on a real Mooncake trace (issue 28).

The trace is the Mooncake FAST'25 "Synthetic" trace (3,993 lines), which CI keeps in
``shared/`` beside the checkout (../shared/data/mooncake/README.md); users do not have
it, so these tests skip without it. With the first 100 lines warming the store only 10
of the 300 lines after them loaded anything (hit ratio 0.06, ~765 tokens a request):
configs/trace_replay.yaml warms with a share of the trace's lines instead, so the same
config warms the shipped 323-line sample and a real trace alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.cli import main
from sim.config import parse_config
from sim.workload.replay import replay_trace

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "data" / "mooncake" / "synthetic_trace.jsonl"
SHIPPED = ROOT / "configs" / "trace_replay.yaml"
#: What a user measures: the shipped config, its path pointed at the real trace.
SETS = [f"workload.arrival.path={REAL}", "workload.arrival.limit=300"]

needs_trace = pytest.mark.skipif(
    not REAL.is_file(), reason=f"the real Mooncake trace is not here ({REAL}; CI's shared/)"
)


@needs_trace
def test_the_shipped_warm_loads_thousands_of_tokens_on_a_real_trace() -> None:
    cfg, _ = parse_config(SHIPPED, SETS)
    replay = replay_trace(cfg.workload.arrival, cfg.model)
    assert replay.stats["trace_requests"] == 300  # the measured window, after the warm lines
    assert replay.warm_lines > 100
    mean = replay.tokens.sum() / 300  # over every measured request; those skipped load 0
    assert mean >= 3000, f"mean {mean:.0f} tokens loaded over the 300 measured requests"
    assert len(replay.tokens) >= 150  # most of the window loads something
    assert replay.stats["hit_ratio"] > 0.5


@needs_trace
def test_validate_states_the_real_traces_hit_ratio(capsys) -> None:
    cfg, _ = parse_config(SHIPPED, SETS)
    hit = replay_trace(cfg.workload.arrival, cfg.model).stats["hit_ratio"]
    argv = ["validate", str(SHIPPED)]
    for s in SETS:
        argv += ["--set", s]
    assert main(argv) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("trace: "))
    assert f"hit ratio {hit:.3f} of prompt tokens" in line
    assert "of 300 measured, after " in line and "lines warming the store" in line


def test_the_shipped_warm_leaves_the_sample_trace_a_window() -> None:
    cfg, _ = parse_config(SHIPPED)
    replay = replay_trace(cfg.workload.arrival, cfg.model)
    assert 0 < replay.warm_lines < 323
    assert replay.stats["trace_requests"] == 323 - replay.warm_lines
    assert len(replay.tokens) > 0.5 * replay.stats["trace_requests"]
