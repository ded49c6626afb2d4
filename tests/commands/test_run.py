"""``kvsim run``: the dry-run listing and the progress bar count the requests a point
will really run (a trace replay decides its own count, not ``workload.requests``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sim.cli import main
from sim.workload.trace import write_trace

#: 5 trace requests; with 128-token chunks 3 of them load something.
ROWS = [
    {"timestamp": 10 * i, "input_length": n, "output_length": 1, "hash_ids": ids}
    for i, (n, ids) in enumerate(
        [(1200, [0, 1, 2]), (700, [0, 3]), (1100, [0, 1, 2]), (300, [9]), (2000, [0, 1, 7, 8])]
    )
]


def trace_config(write_config, tmp_path: Path) -> Path:
    write_trace(tmp_path / "trace.jsonl", ROWS)
    return write_config(
        {
            "model": {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256},
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": "trace.jsonl"},
            },
        }
    )


def test_dry_run_lists_the_replayed_count(write_config, tmp_path, capsys) -> None:
    path = trace_config(write_config, tmp_path)
    assert main(["run", "--dry-run", str(path)]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if "pending" in ln)
    assert row.split()[-2] == "3"  # requests column: 3 replayed, not workload.requests = 40


def test_progress_total_is_the_replayed_count(write_config, tmp_path, capsys, monkeypatch):
    """The bar's total is planned before any child reports: it must already say 3."""
    path = trace_config(write_config, tmp_path)

    def fake_run(cfg, points, config_path, out_dir, events, **kw) -> Any:
        for p in points:
            rep = SimpleNamespace(label=p.label, point=p, repeat=0)
            events.started(rep, "local")  # no progress report: the total stays what was planned
            events.finished(rep, SimpleNamespace(status="ok", elapsed_s=0.1, error=""))
        return SimpleNamespace(
            summary_rows=[],
            axes=[],
            skipped=0,
            crashed_points=[],
            empty_points=[],
            failed_points=[],
            incomplete=0,
        )

    monkeypatch.setattr("sim.sweep.experiment.run_experiment", fake_run)
    assert main(["run", str(path)]) == 0
    err = capsys.readouterr().err
    assert "3/3 req" in err and "/40 req" not in err


def test_the_last_line_after_a_data_file_changed_does_not_offer_a_resume_that_refuses() -> None:
    """A point run that found its data file changed since planning fails; --resume then
    refuses the run (the file differs from the manifest's), so "--resume runs them again"
    alone sent the user into a second error."""
    from sim.api.run_config import RunArgs
    from sim.commands.run_report import _unfinished_line
    from sim.sweep.spec import CHANGED_SINCE_PLANNED

    args = RunArgs(
        config="emp.yaml",
        sets=(),
        plugins=(),
        out=None,
        force=False,
        resume=False,
        dry_run=False,
        baseline=None,
        in_process=False,
        quiet=True,
        all_rows=False,
        executor="local",
        address=None,
        retries=0,
    )
    changed = f"SpecError: emp.yaml: point 0 {CHANGED_SINCE_PLANNED} (workload.tokens.path: …)"
    line = _unfinished_line(args, [(None, "failed", changed)])  # type: ignore[list-item]
    assert "a data file changed during the sweep; restore it" in line
    assert "`kvsim run emp.yaml --force` starts over" in line
    plain = _unfinished_line(args, [(None, "failed", "child exited with code -9")])  # type: ignore[list-item]
    assert plain.endswith("`kvsim run emp.yaml --resume` runs them again")
