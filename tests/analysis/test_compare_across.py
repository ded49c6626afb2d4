"""``kvsim compare A B`` of runs that share no point but differ in a setting alone: two
one-point runs (workers=1 against 4), a real run against a model run of its points. Both
were refused ("nothing to compare"); now a table that names the difference (issue 42)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sim.cli import main
from tests.model.test_driver import write_calibration


def _run(write_config, tmp_path: Path, name: str, *sets: str) -> Path:
    cfg = write_config({"repeats": 2}, name="base.yaml")
    out = tmp_path / name
    args = ["run", "-q", str(cfg), "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return out


def _table(b: Path, a: Path) -> list[dict[str, str]]:
    with (b / f"compare_vs_{a.name}.csv").open() as f:
        return list(csv.DictReader(f))


def test_two_one_point_runs_at_different_workers_are_compared(
    write_config, tmp_path: Path, capsys
) -> None:
    a = _run(write_config, tmp_path, "w1", "connector.workers=1")
    b = _run(write_config, tmp_path, "w4", "connector.workers=4")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--fail-if", "gil_hold_mean_ms>+900%"]) == 0
    out = capsys.readouterr().out
    assert "Compared across a setting: A: workers=1, B: workers=4" in out
    assert "## variant=numpy, mode=real" in out and "| w4 | 16 |" in out
    rows = _table(b, a)
    assert {r["run"] for r in rows} == {"w1", "w4"}
    p99 = [r for r in rows if r["run"] == "w4" and r["metric"] == "latency_p99_ms"]
    assert len(p99) == 1 and p99[0]["ratio_ci_low"] not in ("", "nan")  # with its interval
    assert "gate: passed" in out


def test_a_real_run_against_its_model_run_is_a_table_and_names_validate_model(
    write_config, tmp_path: Path, capsys
) -> None:
    cal = write_calibration(tmp_path / "cal.json")
    same = (
        "connector.variant=synthetic",
        "connector.options.hold_ms=1.0",
        f"machine.calibration={cal}",
    )
    real = _run(write_config, tmp_path, "run", *same)
    model = _run(write_config, tmp_path, "run-model", *same, "mode=model")
    capsys.readouterr()
    assert main(["compare", str(real), str(model)]) == 0
    out = capsys.readouterr().out
    assert "Compared across a setting: A: mode=real, B: mode=model" in out
    assert "`kvsim validate-model CONFIG`" in out
    assert {r["run"] for r in _table(model, real)} == {"run", "run-model"}


@pytest.mark.parametrize("by_mode", [False, True])
def test_runs_of_several_points_apart_are_still_refused(
    write_config, tmp_path: Path, capsys, by_mode: bool
) -> None:
    """Two points each, at workers 1 and 4: no pair is meant; the refusal says why, and
    for runs apart by mode too, which command compares a real run with a model run."""
    cal = write_calibration(tmp_path / "cal.json")
    base = ("connector.variant=synthetic", f"machine.calibration={cal}")
    a = _run(write_config, tmp_path, "a", *base, "sweep.connector.options.hold_ms=[0.5,1.0]")
    b_sets = [*base, "sweep.connector.options.hold_ms=[0.5,1.0]", "connector.workers=4"]
    if by_mode:
        b_sets.append("mode=model")
    b = _run(write_config, tmp_path, "b", *b_sets)
    capsys.readouterr()
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "nothing to compare" in err and "workers: 2 in A, 4 in B" in err, err
    assert ("kvsim validate-model" in err) == by_mode
