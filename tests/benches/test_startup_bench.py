"""kvsim bench startup: it plans a one-request model point, times its child beside the bare
interpreter, splits the start-up into steps and gives the target verdict with the load."""

from __future__ import annotations

import re

from sim.cli import main


def test_bench_startup_prints_the_child_the_steps_and_the_verdict(capsys) -> None:
    assert main(["bench", "startup", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "python -c pass" in out and "the point child, a 1-request model point" in out
    for step in ("import sim.sweep.child", "config rebuilt", "checked", "sim.model.driver"):
        assert step in out, step
    assert re.search(r"≤ 0\.3 s before its point — (met|NOT met): \d+\.\d{3} s", out)
    assert "load average" in out
    child = re.search(r"a 1-request model point\s+(\d+\.\d+)\s+(\d+\.\d+)", out)
    bare = re.search(r"python -c pass\s+(\d+\.\d+)\s+(\d+\.\d+)", out)
    assert child and bare and float(child[1]) > float(bare[1]) > 0  # a child is more than python
