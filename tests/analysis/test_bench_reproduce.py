"""``kvsim report --bench``: the bench's reproduce line carries the run's plug-ins only
where the bench timed a variant that is not built in (it named them for scalar, numpy)."""

from __future__ import annotations

import shlex

from sim.analysis.pr_report import bench_command

ROW = {
    "regions": "4",
    "block_len": "1024",
    "block_size": "16",
    "hash_block_size": "16",
    "groups": "1",
    "chunks": "8",
    "handler": "per_group",
    "repeats": "3",
}


def _argv(variants: list[str], plugins: list[str]) -> list[str]:
    rows = [{**ROW, "variant": v} for v in variants]
    return shlex.split(bench_command(rows, plugins, "bench.csv"))


def test_a_bench_of_builtins_names_no_plugin() -> None:
    argv = _argv(["scalar", "numpy", "floor_noop"], ["/runs/mine.py"])
    assert "--plugin" not in argv and argv[argv.index("--variants") + 1] == "scalar,numpy"


def test_a_bench_of_a_plugin_variant_names_the_runs_plugins() -> None:
    argv = _argv(["scalar", "mine"], ["/runs/mine.py"])
    assert argv[argv.index("--plugin") + 1] == "/runs/mine.py"
