"""``kvsim bench model --tree`` counts every process of a run (sim.benches.process_tree)."""

from __future__ import annotations

import sys

import pytest

from sim.benches.process_tree import sample_tree, tree_config
from sim.config import ExperimentConfig

#: A parent that holds 60 MB while its child holds 40 MB, both alive at once for a while.
_TWO = """
import subprocess, sys, time
held = bytearray(60 << 20); held[::4096] = b"x" * len(held[::4096])
child = "h = bytearray(40 << 20); h[::4096] = b'x' * len(h[::4096]); import time; time.sleep(1.5)"
subprocess.run([sys.executable, "-c", child], check=True)
"""


def test_the_peak_sums_the_processes_alive_at_once() -> None:
    peak = sample_tree([sys.executable, "-c", _TWO], timeout_s=120)
    assert peak.processes == 2
    own = sorted(mb for mb, _ in peak.each.values())
    assert own[0] >= 40 and own[1] >= 60, own  # each one's high-water mark, its own
    assert peak.rss_mb >= 100, peak  # both at once: the sum, not the larger
    assert peak.pss_mb > 0


def test_a_failed_run_is_said() -> None:
    code = "import sys; print('boom', file=sys.stderr); sys.exit(3)"
    with pytest.raises(RuntimeError, match="failed \\(3\\): boom"):
        sample_tree([sys.executable, "-c", code])


def test_the_tree_run_is_a_valid_config(tmp_path) -> None:
    cfg = ExperimentConfig.model_validate(tree_config("cal.json", 10_000, tmp_path))
    assert cfg.mode == "model" and cfg.gil.probe and cfg.output.requests == "all"
    assert cfg.repeats == 3 and cfg.model.regions == 61
