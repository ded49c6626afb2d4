"""kvsim search on a figure its config does not measure is refused before any point runs
(it said "misses even at 200 req/s"), and search.json is JSON (it held bare NaN)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main

CRASH = """
import os
from connectors.base import AddressVariant
from connectors.registry import register


@register
class Crash(AddressVariant):
    name = "crash"

    def prepare_values(self, chunks, block_ids):
        if os.environ.get("KVSIM_PARENT_PID"):  # a point's child, not the parent's check
            raise RuntimeError("crash")
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
"""


@pytest.mark.parametrize(
    ("over", "slo", "setting"),
    [
        ({"gil": {"probe": False}}, "stall_p99_ms<=5", "gil.probe=true"),
        ({}, "engine_stall_p99_ms<=2", "engine.enabled=true"),
        ({}, "audit_vs_meter<=2", "gil.audit=pyspy"),
    ],
)
def test_an_objective_nothing_measures_is_refused(
    write_config, tmp_path: Path, capsys, over, slo: str, setting: str
) -> None:
    cfg = write_config(over)
    out = tmp_path / "search"
    over_rate = ["--over", "workload.arrival.rate_rps", "--out", str(out)]
    code = main(["search", str(cfg), "--slo", slo, *over_rate])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"--slo '{slo}'" in err and "is not measured" in err and setting in err
    assert not out.exists()  # refused before anything was made


def test_search_json_holds_null_not_nan(write_config, tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(CRASH)
    cfg = write_config({"plugins": ["crash.py"], "connector": {"variant": "crash"}})
    out = tmp_path / "search"
    args = ["search", "-q", str(cfg), "--slo", "latency_p99_ms<=100"]
    main([*args, "--over", "workload.arrival.rate_rps", "--max-runs", "1", "--out", str(out)])
    text = (out / "search.json").read_text()

    def refuse(constant: str) -> None:
        raise AssertionError(f"search.json holds {constant}, which is not JSON")

    data = json.loads(text, parse_constant=refuse)
    tried = data["series"][0]["tried"]
    assert tried and tried[0]["meets"] is False
    assert tried[0]["values"] == {"latency_p99_ms": None}
