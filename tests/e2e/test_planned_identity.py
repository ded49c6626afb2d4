"""A sweep is what was planned: data files are hashed once, at planning, and a point
whose files changed since refuses to run (the run fails); a resume counts a finished
point run only when its spec is the planned one (point, repeat, seed, point hash, run
hash): a rep directory copied from another run or another point is ``damaged``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import sim
from sim.cli import main
from sim.rundir.layout import MANIFEST_FILE, SPEC_FILE
from sim.rundir.outputs import read_csv
from sim.sweep import identity

pytestmark = pytest.mark.realthreads

ROWS = [
    {"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 3]},
    {"timestamp": 2.5, "input_length": 300, "output_length": 0, "hash_ids": [4]},
]


def _trace_config(write_config, tmp_path: Path) -> Path:
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    from tests.conftest import TINY, deep_merge

    raw = deep_merge(
        TINY,
        {
            "workload": {
                "arrival": {"kind": "trace", "path": "t.jsonl", "speedup": 100, "load": "prompt"}
            },
            "sweep": {"connector.variant": ["scalar", "numpy"]},
            "output": {"dir": str(tmp_path / "out")},
        },
    )
    del raw["workload"]["requests"], raw["workload"]["tokens"]  # the trace says both
    return write_config(text=yaml.safe_dump(raw, sort_keys=False))


def test_a_trace_replaced_while_point_0_ran_fails_point_1(write_config, tmp_path) -> None:
    path = _trace_config(write_config, tmp_path)
    exp = sim.load(path)

    first: list[int] = []

    def finished(rep, outcome) -> None:  # type: ignore[no-untyped-def]
        if not first:  # the first point run (whichever the sweep order put first) is done
            first.append(rep.point.index)
            (tmp_path / "t.jsonl").write_text(json.dumps(ROWS[1]) + "\n")

    run = exp.run(tmp_path / "out", events=sim.SweepEvents(finished=finished))
    assert run.outcome is not None and not run.outcome.ok
    rows = read_csv(tmp_path / "out" / "summary.csv")  # in point order
    ran, refused = rows[first[0]], rows[1 - first[0]]
    assert ran["status"] == "ok" and refused["status"] == "failed"
    assert "changed since the sweep was planned" in refused["error"]
    assert "workload.arrival.path: the file's contents changed" in refused["error"]
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert manifest["status"] == "failed"


def test_each_data_file_is_hashed_once_per_sweep(write_config, tmp_path, monkeypatch) -> None:
    path = _trace_config(write_config, tmp_path)
    read: list[Path] = []
    real = identity._file_digest

    def counting(p: Path) -> str:
        read.append(p)
        return real(p)

    monkeypatch.setattr(identity, "_file_digest", counting)
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    # Planning reads the trace once; the points (here in this process) check it once each.
    assert read.count(tmp_path / "t.jsonl") == 1 + 2, read


def _copy_rep(src: Path, dst: Path) -> None:
    shutil.rmtree(dst)
    shutil.copytree(src, dst)


def test_resume_reruns_a_rep_copied_from_another_point(write_config, tmp_path) -> None:
    path = write_config({"workload": {"requests": 4}, "sweep": {"seed": [1, 2]}})
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    out = tmp_path / "out"
    reps = sorted(out.glob("points/*/rep-0"))
    _copy_rep(reps[0], reps[1])  # point 0's finished run where point 1's belongs
    plan = sim.load(path).plan(out)
    state = {r.rep.point.index: (r.state, r.error) for r in plan.runs}
    assert state[0] == ("done", "")
    assert state[1][0] == "damaged" and "its spec is of point 0 repeat 0" in state[1][1]
    assert main(["run", "-q", "--in-process", "--resume", str(path)]) == 0
    spec = json.loads((reps[1] / SPEC_FILE).read_text())
    assert spec["index"] == 1 and spec["config"]["seed"] == 2  # run again, as planned
    assert len(read_csv(out / "requests.csv")) == 8


def test_resume_reruns_a_rep_copied_from_another_run(write_config, tmp_path) -> None:
    path = write_config({"workload": {"requests": 4}, "sweep": {"seed": [1, 2]}})
    other = write_config(
        {"workload": {"requests": 6}, "sweep": {"seed": [1, 2]}, "output": {"dir": "x"}},
        name="other.yaml",
    )
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    assert main(["run", "-q", "--in-process", str(other), "--out", str(tmp_path / "o")]) == 0
    out = tmp_path / "out"
    mine = sorted(out.glob("points/*/rep-0"))
    theirs = sorted((tmp_path / "o").glob("points/*/rep-0"))
    assert [p.name for p in mine] == [p.name for p in theirs]
    _copy_rep(theirs[1].parent / "rep-0", mine[1])  # 6 requests where 4 were planned
    plan = sim.load(path).plan(out)
    state = {r.rep.point.index: (r.state, r.error) for r in plan.runs}
    assert state[1][0] == "damaged" and "point hash" in state[1][1], state
    assert main(["run", "-q", "--in-process", "--resume", str(path)]) == 0
    assert len(read_csv(out / "requests.csv")) == 8  # 4 + 4, none of the copy's 6


def test_resume_reruns_a_rep_whose_run_hash_is_another_runs(write_config, tmp_path) -> None:
    path = write_config({"workload": {"requests": 4}, "sweep": {"seed": [1, 2]}})
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    rep = sorted((tmp_path / "out").glob("points/*/rep-0"))[0]
    spec = json.loads((rep / SPEC_FILE).read_text())
    spec["run_hash"] = "0" * 64  # the same point, from a run of another config
    (rep / SPEC_FILE).write_text(json.dumps(spec))
    plan = sim.load(path).plan(tmp_path / "out")
    states = [(r.state, r.error) for r in plan.runs]
    # status.json's checksums cover spec.json when recorded; either way it is not counted
    assert states[0][0] == "damaged", states
    assert states[1] == ("done", "")
