"""kvsim compare RUN_A RUN_B: points paired by axes, unmatched ones refused, manifest
differences shown; and warnings on interrupted or partial runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.analysis.crossrun import pair_runs
from sim.analysis.manifest_diff import manifest_differences
from sim.cli import main
from sim.rundir.outputs import read_csv, write_csv, write_json
from sim.rundir.reader import load_results
from tests.analysis.test_compare import write_run


def _machine(commit: str, numpy: str = "2.0") -> dict:
    return {"git_commit": commit, "cpu_model": "X", "packages": {"numpy": numpy}}


def _two(tmp_path: Path) -> tuple[Path, Path]:
    # Three repeats each: a ratio's interval comes from the runs' repeats.
    a = write_run(tmp_path / "before", repeats=3)
    b = write_run(tmp_path / "after", repeats=3)
    for path, commit in ((a, "aaa111"), (b, "bbb222")):
        m = json.loads((path / "manifest.json").read_text())
        m.update(machine=_machine(commit), status="complete")
        write_json(path / "manifest.json", m)
    return a, b


def test_one_repeat_on_either_side_is_why_there_is_no_verdict(tmp_path, capsys) -> None:
    a = write_run(tmp_path / "one", repeats=1)
    b = write_run(tmp_path / "three", repeats=3)
    for before, after in ((a, b), (b, a)):
        assert main(["compare", str(before), str(after), "--bootstrap", "200", "--force"]) == 0
        out = capsys.readouterr().out
        assert "1 repeat(s) per point" in out, out
        assert "one repeat per point cannot show the run-to-run spread" in out, out
    assert main(["compare", str(b), str(write_run(tmp_path / "3b", repeats=3))]) == 0
    out = capsys.readouterr().out  # intervals, from repeats made close together
    assert "not a change of the machine between the runs" in out, out


def _drop_point(run: Path, workers: str) -> None:
    """Make ``run`` a run without the workers=``workers`` points (as if swept otherwise)."""
    for stem in ("summary", "summary_repeats", "requests"):
        rows = [r for r in read_csv(run / f"{stem}.csv") if r["workers"] != workers]
        write_csv(run / f"{stem}.csv", list(rows[0]), rows)


def test_points_pair_by_axes_and_the_rest_is_refused(tmp_path, capsys) -> None:
    a, b = _two(tmp_path)
    _drop_point(b, "4")
    rows = read_csv(b / "summary.csv")
    for r in read_csv(a / "summary.csv"):
        if r["workers"] == "1":
            rows.append({**r, "workers": "2"})  # a point A does not have
    write_csv(b / "summary.csv", list(rows[0]), rows)
    pairing = pair_runs(load_results(a), load_results(b))
    assert pairing.paired == [("scalar", "1"), ("numpy", "1")]
    assert ("scalar", "4") in pairing.only_a and ("scalar", "2") in pairing.only_b

    assert main(["compare", str(a), str(b), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert "commit: aaa111 → bbb222" in out
    assert "only in before: variant=scalar, workers=4" in out
    assert "only in after: variant=numpy, workers=2" in out
    assert "## variant=scalar, workers=1" in out and "workers=4" not in out.split("```")[-1]
    csv = read_csv(b / "compare_vs_before.csv")
    assert {r["run"] for r in csv} == {"before", "after"}
    # the same data in both runs: every ratio is 1 and its interval contains 1
    ratios = [r for r in csv if r["run"] == "after" and r["metric"] == "latency_p99_ms"]
    assert ratios and all(float(r["ratio"]) == pytest.approx(1.0) for r in ratios)
    assert all(float(r["ratio_ci_low"]) <= 1.0 <= float(r["ratio_ci_high"]) for r in ratios)


def test_nothing_in_common_is_an_error_that_says_why(tmp_path, capsys) -> None:
    a, b = _two(tmp_path)
    _drop_point(a, "4")
    _drop_point(b, "1")
    assert main(["compare", str(a), str(b)]) == 2
    cap = capsys.readouterr()
    assert "no point of before has the same axis values (variant, workers" in cap.err
    assert "workers: 1 in A, 4 in B" in cap.err and "--set sweep.connector.workers=" in cap.err
    assert "only in after: variant=scalar, workers=4" in cap.out
    assert main(["compare", str(a), str(a)]) == 2
    assert "same directory" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), str(b)]) == 2


def test_an_axis_one_run_does_not_sweep_is_said_so(tmp_path, capsys) -> None:
    a, b = _two(tmp_path)
    m = json.loads((b / "manifest.json").read_text())
    write_json(b / "manifest.json", {**m, "axes": ["variant"]})  # B swept no workers
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "workers: 1, 4 in A, (not swept) in B" in err, err  # was '1, 4 in A,  in B'


def test_manifest_differences_list_commit_machine_versions_and_config() -> None:
    a = {"machine": _machine("c1"), "config": {"name": "q", "connector": {"workers": 1}}}
    b = {
        "machine": {**_machine("c2", numpy="2.1"), "cpu_model": "Y"},
        "config": {"name": "q", "connector": {"workers": 2}},
        "overrides": ["connector.workers=2"],
    }
    diffs = {what: (x, y) for what, x, y in manifest_differences(a, b)}
    assert diffs["commit"] == ("c1", "c2")
    assert diffs["machine.cpu_model"] == ("'X'", "'Y'")
    assert diffs["version of numpy"] == ("2.0", "2.1")
    assert diffs["config connector.workers"] == ("1", "2")
    assert diffs["--set"] == ("(none)", "connector.workers=2")
    assert manifest_differences(a, a) == []


def test_a_local_and_a_ray_run_say_their_executor_and_hosts_differ(tmp_path, capsys) -> None:
    a, b = _two(tmp_path)
    for path, executor, host in ((a, "local", "devbox"), (b, "ray", "node-7")):
        m = json.loads((path / "manifest.json").read_text())
        m.update(machine=_machine("same"), sessions=[{"executor": executor}])
        write_json(path / "manifest.json", m)
        rows = [{**r, "host": host} for r in read_csv(path / "summary_repeats.csv")]
        write_csv(path / "summary_repeats.csv", list(rows[0]), rows)
    assert main(["compare", str(a), str(b), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert "- executor: local → ray" in out and "- hosts: devbox → node-7" in out
    assert "commit" not in out.split("```")[1]  # the same commit is not listed
    assert "agree" not in out
    # Two runs share no rounds: their repeats are set side by side unpaired.
    assert "the two runs' repeats, unpaired" in out


def test_compare_warns_about_an_interrupted_or_partial_run(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run", repeats=3)
    m = json.loads((run / "manifest.json").read_text())
    m.update(status="interrupted", runs={"done": 10, "total": 12}, config_path="/x/q.yaml")
    write_json(run / "manifest.json", m)
    rows = read_csv(run / "summary.csv")
    rows[0]["repeats"] = "2"
    write_csv(run / "summary.csv", list(rows[0]), rows)
    assert main(["compare", str(run), "--bootstrap", "200"]) == 0
    cap = capsys.readouterr()
    assert "the run was interrupted (10 of 12 point runs finished)" in cap.err
    assert "--resume` finishes it" in cap.err and "kvsim run /x/q.yaml" in cap.err
    assert "fewer repeats than planned: variant=scalar, workers=1 (2 of 3)" in cap.err
    md = (run / "compare.md").read_text()
    assert "**Warning:**" in md and "interrupted" in md


def test_pooled_and_per_repeat_p99_are_labelled(tmp_path) -> None:
    from rich.console import Console

    from sim.analysis.report import comparison_table

    run = write_run(tmp_path / "run", repeats=2)
    assert main(["compare", str(run), "--bootstrap", "100"]) == 0
    assert "pooled" in (run / "compare.md").read_text()
    rows = [
        {"variant": "scalar", "workers": 1, "repeats": 2, "latency_p99_ms": 30.5,
         "latency_p99_ms_std": 1.0, "ok": 10, "requests": 10}
    ]  # fmt: skip
    console = Console(width=200, record=True)
    console.print(comparison_table(rows, ["variant", "workers"], "scalar", "t"))
    assert "mean of per-repeat p99s" in " ".join(console.export_text().split())
