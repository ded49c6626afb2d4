"""Files written where the user pointed: new, kvsim's own, or --force (issue 30, 3 and 7).

``compare --out``, ``plot --out``, ``bench … --csv``, ``validate-model --out`` and
``calibrate --out`` follow one rule (``sim.rundir.claim``): a file there that no
kvsim run lists as its own is the user's; without ``--force`` the command refuses
in one line, before it writes (or measures) anything, and the file is unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.cli import main
from sim.errors import RunDirError
from sim.rundir.claim import claim_outputs
from sim.rundir.guard import owned_files, record_owned
from sim.rundir.layout import LEDGER_FILE
from tests.analysis.test_compare import write_run

MINE = "my own notes\n"


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    r = tmp_path / "run"
    r.mkdir()
    write_run(r)
    record_owned(r, "manifest.json", "summary.csv", "summary_repeats.csv", "requests.csv")
    return r


def test_claims_new_own_foreign_and_directories(tmp_path: Path, run: Path) -> None:
    claim_outputs([tmp_path / "new.md"], force=False)  # nothing there: fine
    (tmp_path / "mine.md").write_text(MINE)
    with pytest.raises(RunDirError, match=r"mine\.md: exists; pass --force"):
        claim_outputs([tmp_path / "new2.md", tmp_path / "mine.md"], force=False)
    claim_outputs([tmp_path / "mine.md"], force=True)
    (tmp_path / "adir").mkdir()
    with pytest.raises(RunDirError, match="is a directory"):
        claim_outputs([tmp_path / "adir"], force=True)
    # inside a run: what its ledger lists is kvsim's; the rest is the user's
    claim_outputs([run / "summary.csv"], force=False)
    (run / "analysis.md").write_text(MINE)
    with pytest.raises(RunDirError, match=r"analysis\.md"):
        claim_outputs([run / "analysis.md"], force=False)
    claim_outputs([run / "figures" / "x.png"], force=False)
    assert "figures/x.png" in owned_files(run)  # listed before it is written
    assert (run / "analysis.md").read_text() == MINE


def test_compare_out_does_not_replace_a_users_report(tmp_path: Path, run: Path, capsys) -> None:
    stem = tmp_path / "report"
    (tmp_path / "report.md").write_text(MINE)
    argv = ["compare", str(run), "--bootstrap", "200", "--out", str(stem)]
    assert main(argv) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "report.md: exists; pass --force" in err[0], err
    assert (tmp_path / "report.md").read_text() == MINE
    assert not (tmp_path / "report.csv").exists()  # nothing written at all
    assert main([*argv, "--force"]) == 0
    assert (tmp_path / "report.md").read_text() != MINE
    # the default, inside the run, is kvsim's own file: a second compare replaces it
    assert main(["compare", str(run), "--bootstrap", "200"]) == 0
    assert main(["compare", str(run), "--bootstrap", "200"]) == 0
    capsys.readouterr()


def test_compare_of_two_runs_follows_the_same_rule(tmp_path: Path, run: Path, capsys) -> None:
    other = tmp_path / "other"
    other.mkdir()
    write_run(other)
    (tmp_path / "both.csv").write_text(MINE)
    argv = ["compare", str(run), str(other), "--bootstrap", "200", "--out", str(tmp_path / "both")]
    assert main(argv) == 2
    assert "both.csv: exists" in _err_lines(capsys)[-1]
    assert (tmp_path / "both.csv").read_text() == MINE
    assert main([*argv, "--force"]) == 0
    capsys.readouterr()


def test_plot_out_does_not_replace_a_users_png(tmp_path: Path, run: Path, capsys) -> None:
    pytest.importorskip("matplotlib", reason="plot needs matplotlib")
    out = tmp_path / "mydir"
    out.mkdir()
    (out / "latency_cdf.png").write_text(MINE)
    assert main(["plot", str(run), "--out", str(out)]) == 2
    err = _err_lines(capsys)
    assert "latency_cdf.png: exists; pass --force" in err[-1], err
    assert sorted(p.name for p in out.iterdir()) == ["latency_cdf.png"]  # no figure written
    assert (out / "latency_cdf.png").read_text() == MINE
    assert main(["plot", str(run), "--out", str(out), "--force"]) == 0
    assert (out / "latency_cdf.png").read_bytes().startswith(b"\x89PNG")
    # the default, the run's figures/, is kvsim's: plotting again needs no --force
    assert main(["plot", str(run)]) == 0
    assert main(["plot", str(run)]) == 0
    capsys.readouterr()


def test_bench_csv_refuses_before_measuring(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "b.csv"
    csv.write_text(MINE)
    argv = ["bench", "connectors", "--variants", "numpy", "--repeats", "1", "--csv", str(csv)]
    assert main(argv) == 2
    assert "b.csv: exists; pass --force" in _err_lines(capsys)[-1]
    assert csv.read_text() == MINE
    argv = ["bench", "index", "--iters", "1", "--repeats", "1", "--csv", str(csv)]
    assert main([*argv, "--device", "cpu"]) == 2
    assert csv.read_text() == MINE
    capsys.readouterr()


def test_validate_model_out_keeps_a_users_files(tmp_path: Path, write_config, capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "validation.md").write_text(MINE)
    cfg = write_config()
    assert main(["validate-model", str(cfg), "--out", str(out), "--no-run"]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "validation.md: exists; pass --force" in err[0], err
    assert (out / "validation.md").read_text() == MINE
    assert not (out / LEDGER_FILE).exists()  # a directory of the user's is not taken over


def test_validate_model_makes_a_new_directory_its_own(tmp_path: Path) -> None:
    from sim.api.validate_model import TOP_FILES, _claim_base

    base = tmp_path / "v"
    _claim_base(base, force=False, create=True)
    assert set(TOP_FILES) <= set(owned_files(base))
    (base / "validation.md").write_text("written by kvsim\n")
    _claim_base(base, force=False, create=True)  # a second validate-model: its own files


def test_report_out_does_not_replace_a_users_page(tmp_path: Path, run: Path, capsys) -> None:
    page = tmp_path / "pr.md"
    page.write_text(MINE)
    assert main(["report", str(run), "--out", str(page)]) == 2
    assert "pr.md: exists; pass --force" in _err_lines(capsys)[-1]
    assert page.read_text() == MINE
    assert main(["report", str(run), "--out", str(page), "--force"]) == 0
    assert page.read_text() != MINE
    assert main(["report", str(run)]) == 0  # RUN/report.md: the run's own, twice
    assert main(["report", str(run)]) == 0
    capsys.readouterr()


def test_a_fifo_in_the_ledgers_place_is_refused_not_written(run: Path) -> None:
    """With a reader on the FIFO the open succeeds: the write must still not go there."""
    import os

    (run / LEDGER_FILE).unlink()
    os.mkfifo(run / LEDGER_FILE)
    reader = os.open(run / LEDGER_FILE, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OSError, match="not a regular file"):
            record_owned(run, "compare.md")
        assert os.read(reader, 100) == b""  # nothing was written into the pipe
    finally:
        os.close(reader)


def test_compare_with_a_fifo_ledger_and_no_reader_ends_in_one_line(run: Path) -> None:
    """Before the fix the ledger's open for writing waited for a reader for ever."""
    import os
    import subprocess
    import sys

    (run / LEDGER_FILE).unlink()
    os.mkfifo(run / LEDGER_FILE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "sim", "compare", str(run), "--bootstrap", "200"],
        capture_output=True,
        text=True,
        timeout=120,  # a cold start beside a CPU hog takes seconds; a hang takes for ever
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert [ln for ln in done.stderr.splitlines() if ln.strip()] == [
        f"kvsim: error: {run}: cannot write ({LEDGER_FILE} is not a regular file)"
    ]
    assert not (run / "compare.md").exists()


def test_a_device_pipe_or_link_to_one_is_never_replaced_even_with_force(tmp_path: Path) -> None:
    """``--csv /dev/null --force`` as root replaced the system's /dev/null with a regular
    file (and ``/dev/stdout``'s link with one); a FIFO the same."""
    import os

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    to_null = tmp_path / "null.csv"
    to_null.symlink_to(os.devnull)
    for path in (Path(os.devnull), fifo, to_null):
        with pytest.raises(RunDirError, match="is a device, pipe or socket"):
            claim_outputs([path], force=True)
    assert _stat_kind(fifo) == "fifo" and to_null.is_symlink()
    dangling = tmp_path / "gone.csv"
    dangling.symlink_to(tmp_path / "nowhere")
    claim_outputs([dangling], force=True)  # a link to nothing is replaced, as a file is


def _stat_kind(path: Path) -> str:
    import stat

    return "fifo" if stat.S_ISFIFO(path.lstat().st_mode) else "other"
