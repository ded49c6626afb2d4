"""``compare`` and ``plot`` of a run that is still being written: what they write says
it is a partial result, and the sweep removes it when it ends, so nothing made from
the partial run outlives it looking final (sim.rundir.derived)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sim
from sim.cli import main
from sim.rundir.outputs import read_csv

pytestmark = pytest.mark.realthreads


def test_compare_and_plot_during_a_sweep_say_partial_and_go_with_its_end(
    write_config, tmp_path, capsys
) -> None:
    path = write_config(
        {
            "workload": {"requests": 4},
            "sweep": {"connector.variant": ["scalar", "numpy"], "seed": [1, 2]},
        }
    )
    out = tmp_path / "out"
    made: dict[str, object] = {}

    def started(rep, host) -> None:  # type: ignore[no-untyped-def]
        summary = out / "summary.csv"
        if made or not summary.is_file():
            return
        if len({r["variant"] for r in read_csv(summary)}) < 2:
            return  # compare needs both variants: wait for a later point
        assert main(["compare", str(out)]) == 0
        made["compare"] = (out / "compare.md").read_text()
        assert main(["plot", str(out)]) == 0
        made["figures"] = sorted((out / "figures").glob("*.png"))
        made["err"] = capsys.readouterr().err

    run = sim.load(path).run(out, isolate=False, events=sim.SweepEvents(started=started))
    assert made, "the sweep never had both variants before its last point"
    assert "made while the run was still being written" in str(made["compare"])
    assert "still being written" in str(made["err"])
    assert made["figures"], "plot wrote no figure"
    assert run.outcome is not None and run.outcome.ok
    # The sweep's end removed what the partial run made, and says so.
    assert not (out / "compare.md").exists() and not (out / "compare.csv").exists()
    assert not any((out / "figures").glob("*.png")) if (out / "figures").exists() else True
    removed = {Path(p).name for p in run.outcome.removed}
    assert {"compare.md", "compare.csv"} <= removed
    # Made again from the finished run, compare says nothing of a partial run.
    capsys.readouterr()
    assert main(["compare", str(out)]) == 0
    assert "still being written" not in (out / "compare.md").read_text()


def test_derived_files_made_before_a_sweep_are_not_its_to_remove(tmp_path) -> None:
    from sim.rundir.derived import remove_derived_since
    from sim.rundir.guard import record_owned

    run = tmp_path / "run"
    run.mkdir()
    (run / "compare.md").write_text("old\n")
    record_owned(run, "compare.md")
    import time

    assert remove_derived_since(run, time.time() + 5) == []
    assert (run / "compare.md").exists()
    assert remove_derived_since(run, 0.0) == [run / "compare.md"]


def test_a_partial_report_written_elsewhere_does_not_promise_to_go(
    write_config, tmp_path, capsys
) -> None:
    """``compare --out`` outside the run: the sweep never removes it (nothing outside its
    directory is its to remove), so its warning must not say it will."""
    path = write_config(
        {
            "workload": {"requests": 4},
            "sweep": {"connector.variant": ["scalar", "numpy"], "seed": [1, 2]},
        }
    )
    out, elsewhere = tmp_path / "out", tmp_path / "mine" / "report"
    elsewhere.parent.mkdir()
    made: dict[str, str] = {}

    def started(rep, host) -> None:  # type: ignore[no-untyped-def]
        summary = out / "summary.csv"
        if made or not summary.is_file():
            return
        if len({r["variant"] for r in read_csv(summary)}) < 2:
            return  # compare needs both variants: wait for a later point
        assert main(["compare", str(out), "--out", str(elsewhere)]) == 0
        made["compare"] = elsewhere.with_suffix(".md").read_text()

    run = sim.load(path).run(out, isolate=False, events=sim.SweepEvents(started=started))
    assert made, "the sweep never had both variants before its last point"
    assert run.outcome is not None and run.outcome.ok
    assert "made while the run was still being written" in made["compare"]
    assert elsewhere.with_suffix(".md").exists()  # outside the run: it stays
    assert "the run removes this" not in made["compare"]
    assert "an --out elsewhere stays" in made["compare"]
