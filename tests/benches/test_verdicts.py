"""``kvsim bench verdicts``: its structure and bookkeeping on a tiny trial (the rates it
prints depend on the machine and are not asserted)."""

from __future__ import annotations

import pytest

from sim.benches.verdicts import (
    HOLD_A,
    HOLD_B,
    METHODS,
    METRICS,
    NAME_A,
    NAME_B,
    run_trials,
    trial_config,
)
from sim.cli import main
from sim.config import parse_mapping


def test_a_trial_is_a_two_by_two_grid_whose_names_change_nothing_measured() -> None:
    cfg, points = parse_mapping(trial_config(3, "interleaved", 5, 20, 100.0))
    assert cfg.repeats == 3 and cfg.sweep_order == "interleaved" and len(points) == 4
    grid = {(p.axes["hold_ms"], p.axes["request_timeout_s"]) for p in points}
    assert grid == {(h, n) for h in (HOLD_A, HOLD_B) for n in (NAME_A, NAME_B)}
    a, b = (p.config for p in points if p.axes["hold_ms"] == HOLD_A)
    # The two names of one config differ in the watchdog only.
    assert a.model_dump(exclude={"limits"}) == b.model_dump(exclude={"limits"})
    assert a.limits.request_timeout_s != b.limits.request_timeout_s
    assert round(HOLD_B / HOLD_A, 6) == 1.1


@pytest.mark.realthreads
def test_a_tiny_run_counts_every_comparison_of_every_method(tmp_path) -> None:
    tally = run_trials(2, 2, 6, 400.0, seed=1, n_boot=100, work_dir=tmp_path, isolate=False)
    assert tally.trials == 2 and tally.runs == 2 * 4 * (2 + 1)
    for method in METHODS:
        # two comparisons of each kind per trial; across runs, from the second trial on
        per_trial = 1 if "two runs" in method else 2
        for kind in ("A/A", "A/B"):
            for label, _, _ in METRICS:
                key = (method, kind, label)
                assert tally.total[key] == 2 * per_trial
                assert 0 <= tally.marked[key] <= tally.total[key]
    assert list(tmp_path.iterdir()) == []  # its run directories are gone


def test_bad_arguments_are_one_line(capsys) -> None:
    assert main(["bench", "verdicts", "--trials", "0"]) == 2
    assert main(["bench", "verdicts", "--bootstrap", "5"]) == 2
    out = capsys.readouterr().out
    assert out.count("kvsim bench verdicts:") == 2


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--repeats", "0"], "--repeats: allowed 2 to 1000 (got 0)"),  # was: ran 3 repeats
        (["--repeats", "1"], "--repeats: allowed 2 to 1000 (got 1)"),  # was: 'moves nan%'
        (["--rate", "nan"], "--rate: allowed a finite number"),  # was: '<python>: workload…'
        (["--requests", "1"], "--requests: allowed 2 or more"),
        (["--seed", "-1"], "--seed: allowed a whole number, 0 or more"),
    ],
)
def test_each_bad_argument_is_named_before_anything_runs(argv, named, capsys) -> None:
    assert main(["bench", "verdicts", "--trials", "1", *argv]) == 2
    out = capsys.readouterr().out
    assert out.strip().count("\n") == 0 and named in out, out
