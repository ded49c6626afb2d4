"""A point under ``interpreter:``: its child runs the named python with PYTHON_GIL set,
records what it saw in status.json, and fails in one line when the GIL it ran with is
not the one it asked for (an extension module can switch it back on)."""

from __future__ import annotations

import json
import sys

import pytest

from sim.config.loader import read_mapping
from sim.errors import RunError
from sim.rundir.layout import read_status, rep_runs
from sim.sweep import child
from sim.sweep.runner import run_rep
from sim.sweep.spec import write_spec
from tests.conftest import TINY


def rep_of(tmp_path, interpreter: dict) -> object:
    parsed = read_mapping({**TINY, "interpreter": interpreter}, label="tiny.yaml")
    rep = rep_runs(tmp_path / "out", parsed.points, 1)[0]
    rep.dir.mkdir(parents=True)
    return rep


def test_a_point_that_asked_for_the_gil_off_but_ran_with_it_on_fails(tmp_path, monkeypatch) -> None:
    rep = rep_of(tmp_path, {"gil": "off"})
    write_spec(rep, ["variant", "workers"], "tiny.yaml")
    monkeypatch.setattr(child, "gil_enabled", lambda: True)  # as an extension module would
    with pytest.raises(RunError, match=r"^interpreter.gil: off, but sys._is_gil_enabled\(\)"):
        child.execute(rep.dir)
    assert not (rep.dir / "requests.csv").exists()  # no half-written result


def test_the_child_runs_under_the_switch_and_records_what_it_saw(tmp_path) -> None:
    rep = rep_of(tmp_path, {"python": sys.executable, "gil": "on"})
    out = run_rep(rep, tmp_path / "out", ["variant", "workers"])
    assert out.status == "ok", out.error
    seen = read_status(rep.dir)["interpreter"]
    assert seen["path"] == sys.executable and seen["python_gil_env"] == "1"
    assert seen["gil_requested"] == "on" and seen["gil_enabled"] is True
    assert seen["version"] == ".".join(map(str, sys.version_info[:3]))
    summary = (rep.dir / "summary.csv").read_text().splitlines()
    row = dict(zip(summary[0].split(","), summary[1].split(","), strict=False))
    assert row["gil_enabled"] == "1" and float(row["thread_cpu_mean_ms"]) > 0


def test_an_interpreter_point_is_not_run_in_process(tmp_path) -> None:
    rep = rep_of(tmp_path, {"gil": "on"})
    out = run_rep(rep, tmp_path / "out", ["variant", "workers"], isolate=False)
    assert out.status == "failed" and "needs a child process" in out.error


def test_a_default_interpreter_keeps_the_status_as_it_was_plus_what_it_saw(tmp_path) -> None:
    rep = rep_of(tmp_path, {})
    out = run_rep(rep, tmp_path / "out", ["variant", "workers"])
    assert out.status == "ok", out.error
    status = json.loads((rep.dir / "status.json").read_text())
    assert status["interpreter"]["gil_requested"] == "default"
    assert status["interpreter"]["python_gil_env"] == ""


def test_the_run_manifest_names_what_each_interpreter_resolved_to(tmp_path) -> None:
    from sim.sweep.run_manifest import RunManifest

    parsed = read_mapping({**TINY, "interpreter": {"python": sys.executable}}, label="t.yaml")
    data = RunManifest(parsed.config, "t.yaml", parsed.points, tmp_path, None).data
    entry = data["interpreters"][sys.executable]
    assert entry["path"] == sys.executable and entry["version"].startswith("3.")
    plain = read_mapping(TINY, label="t.yaml")
    assert (
        "interpreters" not in RunManifest(plain.config, "t.yaml", plain.points, tmp_path, None).data
    )


def test_kvsim_run_refuses_an_interpreter_it_could_not_honour(write_config, capsys) -> None:
    from sim.cli import main

    cfg = write_config({"interpreter": {"gil": "on"}})
    assert main(["run", str(cfg), "--in-process"]) == 2
    assert "needs a child process" in capsys.readouterr().err
    assert main(["run", str(cfg), "--executor", "ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert "run it with the local executor" in err and len(err.splitlines()) == 1
