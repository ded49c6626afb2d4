"""The Python API: build or load, plan, run (child processes, resume), open, compare, plot."""

from __future__ import annotations

import json
import os
import pydoc
import subprocess
import sys
from pathlib import Path

import pytest

import sim
from sim.rundir.outputs import read_csv

pytestmark = pytest.mark.realthreads

ROOT = Path(__file__).resolve().parents[2]

TINY = {
    "name": "tiny",
    "seed": 3,
    "repeats": 1,  # one run a point (the default is 3, for verdicts)
    "model": {"regions": 4, "block_len": [1024, 2048], "block_size": 16, "num_blocks": 256},
    "workload": {"requests": 8, "arrival": {"kind": "poisson", "rate_rps": 400}, "tokens": 160},
    "connector": {"variant": "numpy", "workers": 2},
    "store": {"bandwidth_gb_per_s": 50, "latency_ms": 0.2, "concurrency": 2},
}


def test_the_public_names_are_pinned() -> None:
    assert sim.__all__ == [
        "ConfigError",
        "Experiment",
        "KvsimError",
        "Report",
        "Run",
        "RunDirError",
        "SearchResult",
        "SweepEvents",
        "UsageError",
        "Validation",
        "Verdict",
        "__version__",
        "build",
        "calibrate",
        "check",
        "compare",
        "load",
        "open_run",
        "plot",
        "ratio_verdict",
        "search",
        "validate_model",
    ]
    for name in sim.__all__:
        obj = getattr(sim, name)
        assert name == "__version__" or (obj.__doc__ or "").strip(), name


def test_importing_sim_loads_nothing_heavy() -> None:
    code = (
        "import sys, sim; "
        "print(sorted(m for m in ('torch', 'numba', 'matplotlib', 'numpy', 'pydantic', 'rich') "
        "if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_help_shows_the_api() -> None:
    text = pydoc.render_doc(sim, renderer=pydoc.plaintext)
    for needle in ("sim.build(", "def build(", "def load(", "def open_run(", "class Experiment"):
        assert needle.replace("def ", "") in text, needle
    assert "Run every point × repeat, each in its own child process" in text


def test_build_validates_like_a_file_with_one_line_errors() -> None:
    with pytest.raises(sim.ConfigError, match=r"^<python>: workload\.requests: .*\(got -1\)$"):
        sim.build(TINY, workload={"requests": -1})
    with pytest.raises(sim.ConfigError, match=r"--set connector\.workers"):
        sim.build(TINY, overrides={"connector.workers": 0})
    exp = sim.build(TINY, overrides={"connector.workers": 3, "sweep.seed": [1, 2]})
    assert exp.source is None and exp.config.connector.workers == 3
    assert [p.axes for p in exp.points] == [
        {"variant": "numpy", "workers": 3, "mode": "real", "seed": 1},
        {"variant": "numpy", "workers": 3, "mode": "real", "seed": 2},
    ]
    assert exp.overrides == ("connector.workers=3", "sweep.seed=[1, 2]")


def test_load_takes_overrides_as_a_mapping(write_config) -> None:
    path = write_config({"sweep": {"connector.workers": [1, 4]}})
    exp = sim.load(path, {"connector.workers": 2})
    assert exp.source == path and [p.config.connector.workers for p in exp.points] == [2]


def test_plan_run_resume_open_compare_plot(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    exp = sim.build(TINY, sweep={"connector.variant": ["scalar", "numpy"]})
    out = tmp_path / "run"
    plan = exp.plan(out)
    assert [r.state for r in plan.runs] == ["pending", "pending"]
    assert plan.requests == {0: 8, 1: 8} and plan.planned_requests(False) == 16
    assert not out.exists()  # planning writes nothing

    started: list[str] = []
    run = exp.run(
        out, events=sim.SweepEvents(started=lambda rep, h: started.append(rep.point.label))
    )
    # Each point heard once; in an order shuffled from the seed (sweep.order: interleaved).
    assert sorted(started) == [
        "variant=numpy,workers=2,mode=real",
        "variant=scalar,workers=2,mode=real",
    ]
    assert run.outcome is not None and run.outcome.ok
    assert run.outcome.failed_requests == 0 and run.outcome.unfinished == []
    assert run.outcome.noise_floor_p99_ms >= 0
    assert run.complete and [p["variant"] for p in run.points] == ["scalar", "numpy"]
    assert len(run.requests()) == 16
    pids = {json.loads(p.read_text())["pid"] for p in out.glob("points/*/rep-0/status.json")}
    assert len(pids) == 2 and os.getpid() not in pids

    with pytest.raises(sim.RunDirError, match="holds a previous kvsim run"):
        exp.run(out)
    again = exp.run(out, resume=True)
    assert again.outcome is not None and again.outcome.result.skipped == 2
    other = sim.build(
        {**TINY, "sweep": {"connector.variant": ["scalar", "numpy"]}},
        overrides={"workload.requests": 9},
    )
    assert other.plan(out).difference.startswith("workload.requests: 8 → 9")
    with pytest.raises(sim.RunDirError, match=r"cannot resume.*workload\.requests: 8 → 9"):
        other.run(out, resume=True)

    opened = sim.open_run(out)
    assert opened.outcome is None and opened.axes == ["variant", "workers", "mode"]
    report = sim.compare(out, bootstrap=200)
    assert str(report).startswith("# kvsim compare · tiny")
    assert report.cell("scalar", "latency_p99_ms").ratio is None
    assert report.cell("numpy", "latency_p99_ms").ratio is not None
    md, csv = report.write(tmp_path / "cmp")
    assert md.read_text() == report.markdown and read_csv(csv)
    with pytest.raises(sim.UsageError, match="--by 'nope' is not an axis"):
        opened.compare(by="nope", bootstrap=200)
    with pytest.raises(sim.RunDirError, match="no such run directory"):
        sim.open_run(tmp_path / "absent")
    paths = opened.plot(tmp_path / "figs")
    assert paths and all(p.suffix == ".png" and p.stat().st_size > 0 for p in paths)


def test_the_example_builds_runs_and_compares_without_yaml(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = ROOT / "examples" / "python_sweep.py"
    out = subprocess.run(
        [sys.executable, str(script), "--requests", "6", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    # 2 variants × 2 worker counts × the default 3 repeats (for the ratios' intervals).
    assert "python-sweep: 12 point runs, 72 requests" in out.stdout
    assert "## workers=1" in out.stdout and "## workers=4" in out.stdout
    assert "| numpy | 18 |" in out.stdout
    assert not list(tmp_path.glob("*.yaml"))
    assert len(read_csv(tmp_path / "run" / "summary.csv")) == 4


def test_a_plan_prints_as_the_dry_run_table(tmp_path: Path, capsys) -> None:
    exp = sim.build(TINY, sweep={"connector.variant": ["scalar", "numpy"]})
    out = tmp_path / "run"
    plan = exp.plan(out)
    assert repr(plan) == f"<RunPlan 'tiny' into {str(out)!r}: 2 point run(s), 2 to do>"
    text = str(plan)
    assert len(text) < 2000  # the table, not every field of the config
    from sim.cli import main

    config = tmp_path / "tiny.yaml"
    config.write_text(json.dumps({**TINY, "sweep": {"connector.variant": ["scalar", "numpy"]}}))
    assert main(["run", str(config), "--dry-run", "--out", str(out)]) == 0
    printed = "\n".join(line.rstrip() for line in capsys.readouterr().out.splitlines())
    assert text == printed.strip("\n")
    assert "variant=scalar,workers=2,mode=real" in text and "2 point run(s) to do" in text


def test_points_carry_numbers_and_a_frame_when_a_library_is_there(
    tmp_path: Path, monkeypatch
) -> None:
    run = sim.build(TINY).run(tmp_path / "run")
    (point,) = sim.open_run(tmp_path / "run").points
    assert isinstance(point["latency_p99_ms"], float) and point["latency_p99_ms"] > 0
    assert point["requests"] == 8 and point["variant"] == "numpy" and point["workers"] == 2
    assert all(isinstance(r["latency_ms"], float) for r in run.requests())

    import types

    monkeypatch.setitem(sys.modules, "pandas", None)  # neither library: said in one line
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(sim.UsageError, match="needs pandas or polars"):
        run.frame()
    fake = types.ModuleType("polars")
    fake.DataFrame = lambda rows: ("frame", rows)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "polars", fake)
    assert run.frame() == ("frame", run.points)


def test_a_measure_written_as_a_whole_number_reads_back_as_a_float() -> None:
    # A table writes 38.0 ms as "38" (six significant digits, no trailing zeros); seen on
    # CI: one request of eight did, and the API handed out an int in a float column.
    from sim.rundir.numbers import typed_row

    row = typed_row(
        {"latency_ms": "38", "latency_p99_ms_std": "0", "requests": "8", "bytes": "1024"}
        | {"workers": "2", "variant": "numpy", "error": ""}
    )
    assert row == {
        "latency_ms": 38.0,
        "latency_p99_ms_std": 0.0,
        "requests": 8,
        "bytes": 1024,
        "workers": 2,
        "variant": "numpy",
        "error": None,
    }
    assert isinstance(row["latency_ms"], float) and isinstance(row["requests"], int)


def test_an_experiment_prints_as_one_line(write_config) -> None:
    """``print(sim.load(...))`` dumped ~5 KB of the whole config's repr (issue 29 item 5's
    sibling of ``print(exp.plan())``)."""
    path = write_config({"sweep": {"connector.workers": [1, 2]}})
    exp = sim.load(path, {"seed": 9})
    text = repr(exp)
    assert "\n" not in text and len(text) < 300, text
    assert text.startswith("Experiment('tiny', 2 point(s) × 1 repeat(s), mode='real'")
    assert str(path) in text and "seed=9" in text
    assert str(exp) == text
