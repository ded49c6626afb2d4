"""The order a sweep makes its point runs in: interleaved rounds (the default) or the grid's."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.config import parse_config
from sim.errors import ConfigError
from sim.rundir.guard import prepare_run_dir
from sim.rundir.layout import in_run_order, rep_runs
from sim.rundir.outputs import read_csv
from sim.sweep.experiment import run_experiment

THREE_POINTS = {"sweep": {"connector.variant": ["scalar", "numpy", "rows"]}, "repeats": 3}


def _reps(write_config, over=None):
    cfg, points = parse_config(write_config({**THREE_POINTS, **(over or {})}))
    return cfg, points, rep_runs(Path("/nonexistent"), points, cfg.repeats)


def test_interleaved_runs_in_rounds_each_a_seeded_permutation(write_config) -> None:
    cfg, _points, reps = _reps(write_config)
    assert cfg.sweep_order == "interleaved"
    ordered = in_run_order(reps, "interleaved", cfg.seed)
    assert sorted(ordered, key=lambda r: (r.point.index, r.repeat)) == reps
    assert [r.repeat for r in ordered] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    rounds = [[r.point.index for r in ordered if r.repeat == k] for k in range(3)]
    assert all(sorted(rnd) == [0, 1, 2] for rnd in rounds)
    # Seeded: the same seed gives the same order, and some seed shuffles differently.
    assert in_run_order(reps, "interleaved", cfg.seed) == ordered
    others = {tuple(r.point.index for r in in_run_order(reps, "interleaved", s)) for s in range(8)}
    assert len(others) > 1
    assert in_run_order(reps, "grid", cfg.seed) == reps


def test_a_resume_keeps_the_order_of_what_is_left(write_config) -> None:
    cfg, _, reps = _reps(write_config)
    full = in_run_order(reps, "interleaved", cfg.seed)
    left = [r for i, r in enumerate(reps) if i % 2]  # some runs finished before
    assert in_run_order(left, "interleaved", cfg.seed) == [r for r in full if r in left]


def test_sweep_order_is_written_under_sweep_and_checked(write_config) -> None:
    cfg, points = parse_config(write_config({"sweep": {"order": "grid", "connector.workers": [1]}}))
    assert cfg.sweep_order == "grid" and list(cfg.sweep) == ["connector.workers"]
    assert len(points) == 1 and "order" not in points[0].axes
    cfg, _ = parse_config(write_config(THREE_POINTS), ["sweep.order=grid"])
    assert cfg.sweep_order == "grid"
    # named as the user wrote it, with its line (or the --set that gave it)
    path = write_config(text="name: x\nworkload: {requests: 10}\nsweep:\n  order: random\n")
    with pytest.raises(ConfigError, match=r"exp\.yaml:4: sweep\.order: ") as err:
        parse_config(path)
    assert "\n" not in str(err.value) and "'interleaved' or 'grid'" in str(err.value)
    with pytest.raises(ConfigError, match=r"exp\.yaml \(--set sweep\.order\): sweep\.order: "):
        parse_config(path, ["sweep.order=Grid"])


@pytest.mark.realthreads
@pytest.mark.parametrize("order", ["interleaved", "grid"])
def test_two_points_repeats_alternate_in_summary_repeats(write_config, tmp_path, order) -> None:
    path = write_config(
        {"sweep": {"connector.variant": ["scalar", "numpy"], "order": order}, "repeats": 3}
    )
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    prepare_run_dir(out, force=False)
    run_experiment(cfg, points, path, out, isolate=False)
    rows = read_csv(out / "summary_repeats.csv")
    assert [(r["variant"], r["repeat"]) for r in rows] == [
        (v, str(k)) for v in ("scalar", "numpy") for k in range(3)
    ]  # the table's own order does not change
    assert all(r["round"] == r["repeat"] for r in rows)
    made = sorted(rows, key=lambda r: float(r["started_s"]))
    assert float(made[0]["started_s"]) == 0.0
    variants = [r["variant"] for r in made]
    if order == "interleaved":
        assert [r["round"] for r in made] == ["0", "0", "1", "1", "2", "2"]
        # Neither point runs twice before the other has run as often: they alternate.
        assert all(set(variants[i : i + 2]) == {"scalar", "numpy"} for i in (0, 2, 4))
    else:
        assert variants == ["scalar"] * 3 + ["numpy"] * 3
    summary = read_csv(out / "summary.csv")
    assert "round" not in summary[0] and "started_s" not in summary[0]


def test_kvsim_run_says_what_the_repeats_add(write_config, capsys) -> None:
    from sim.cli import main

    path = write_config({**THREE_POINTS})
    assert main(["run", "--dry-run", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "3 repeats a point, in interleaved order: ≈" in out
    assert "of which the repeats beyond the first add ≈" in out
    one = write_config({**THREE_POINTS, "repeats": 1}, name="one.yaml")
    assert main(["run", "--dry-run", str(one)]) == 0
    assert "repeats a point" not in capsys.readouterr().out


def test_the_dry_run_lists_the_runs_in_the_order_they_run(write_config, capsys) -> None:
    """Interleaved, the table listed every repeat of a point together (the grid's order)
    while the run goes round by round: it lists them as they will run."""
    from sim.cli import main

    path = write_config({**THREE_POINTS})
    cfg, _points, reps = _reps(write_config)
    assert main(["run", "--dry-run", str(path)]) == 0
    rows = [
        line.split()[:4]
        for line in capsys.readouterr().out.splitlines()
        if line.split()[:1] and line.split()[0].isdigit() and "variant=" in line
    ]
    expected = in_run_order(reps, "interleaved", cfg.seed)
    assert [(int(r[0]), int(r[2])) for r in rows] == [
        (rep.point.index, rep.repeat) for rep in expected
    ]
    assert [int(r[2]) for r in rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    grid = write_config(
        {**THREE_POINTS, "sweep": {**THREE_POINTS["sweep"], "order": "grid"}}, name="grid.yaml"
    )
    assert main(["run", "--dry-run", str(grid)]) == 0
    rows = [
        line.split()[:4]
        for line in capsys.readouterr().out.splitlines()
        if line.split()[:1] and line.split()[0].isdigit() and "variant=" in line
    ]
    assert [(int(r[0]), int(r[2])) for r in rows] == [(p, k) for p in range(3) for k in range(3)]
