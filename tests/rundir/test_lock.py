"""A run directory that cannot be mixed, lost or faked: one writer, verified points,
explicit ownership (--force removes only kvsim's files), recoverable after a crash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sim.cli import main
from sim.rundir.guard import open_run_dir, remove_owned
from sim.rundir.layout import LEDGER_FILE, MANIFEST_FILE, REQUESTS_FILE, SUMMARY_FILE
from sim.rundir.lock import RunLock, holder
from sim.rundir.outputs import read_csv

pytestmark = pytest.mark.realthreads

TWO_POINTS = {"sweep": {"connector.variant": ["scalar", "numpy"]}}


def _run(path: Path, *extra: str) -> int:
    return main(["run", "-q", "--in-process", str(path), *extra])


def _keys(rows: list[dict[str, str]]) -> list[tuple[str, ...]]:
    return [(r["variant"], r["workers"], r["repeat"], r["request_id"]) for r in rows]


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


def test_a_second_writer_is_refused_with_the_holders_pid(write_config, tmp_path, capsys) -> None:
    path = write_config()
    out = tmp_path / "out"
    out.mkdir()
    with RunLock(out):
        assert holder(out)["pid"] == os.getpid()
        for flags in ((), ("--force",), ("--resume",)):
            assert _run(path, *flags) == 2
            lines = _err_lines(capsys)
            assert len(lines) == 1 and f"pid {os.getpid()}" in lines[0], lines
            assert "another kvsim is writing" in lines[0]
        assert [p.name for p in out.iterdir()] == [".kvsim.lock"]  # nothing touched
    assert holder(out) is None
    assert _run(path) == 0


def test_a_reader_says_when_a_run_is_being_written(write_config, tmp_path, capsys) -> None:
    path = write_config()
    out = tmp_path / "out"
    assert _run(path) == 0
    capsys.readouterr()
    with RunLock(out):
        assert main(["compare", str(out), "--bootstrap", "100"]) == 0
        assert "still being written" in capsys.readouterr().err
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    manifest["status"] = "running"
    (out / MANIFEST_FILE).write_text(json.dumps(manifest))
    assert main(["run", "--dry-run", str(path)]) == 0
    assert "was interrupted: 1 of 1 point run(s) finished" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["truncate", "delete", "garble"])
def test_resume_reruns_a_damaged_point_and_rebuilds_the_tables(
    write_config, tmp_path, capsys, damage
) -> None:
    path = write_config(TWO_POINTS)
    out = tmp_path / "out"
    assert _run(path) == 0
    reference = read_csv(out / REQUESTS_FILE)
    victim = next((out / "points").glob("001_*/rep-0")) / REQUESTS_FILE
    data = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "delete":
        victim.unlink()
    else:
        victim.write_bytes(os.urandom(len(data)))
    capsys.readouterr()
    assert main(["run", "--dry-run", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "damaged" in shown and "1 of 2 point run(s) to do" in shown
    assert _run(path, "--resume") == 0
    rebuilt = read_csv(out / REQUESTS_FILE)
    assert _keys(rebuilt) == _keys(reference)
    summary = read_csv(out / SUMMARY_FILE)
    assert [r["requests"] for r in summary] == ["8", "8"]


def test_compare_refuses_a_table_changed_after_the_run(write_config, tmp_path, capsys) -> None:
    path = write_config()
    out = tmp_path / "out"
    assert _run(path) == 0
    (out / SUMMARY_FILE).write_text((out / SUMMARY_FILE).read_text().replace(",8,", ",9,", 1))
    capsys.readouterr()
    assert main(["compare", str(out)]) == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1 and "summary.csv" in lines[0] and "--resume" in lines[0]


def test_force_removes_only_what_kvsim_wrote(write_config, tmp_path) -> None:
    path = write_config()
    out = tmp_path / "out"
    assert _run(path) == 0
    mine = {
        "figures/my_plot.png": b"png",
        "points/NOTES.txt": b"notes",
        "compare_notes.md": b"md",
        "points/000_variant-numpy_workers-2/rep-0/mine.txt": b"mine",
        # issue 30 item 14: by exact name, not by pattern
        "points/000_variant-numpy_workers-2/rep-0/analysis.csv": b"a,b\n1,2\n",
        "points/000_variant-numpy_workers-2/rep-0/.gc.csv.mine.tmp": b"t",
        "points/000_variant-numpy_workers-2/rep-9/requests.csv": b"not this run's\n",
        "points/999_mine/rep-0/summary.csv": b"not this run's\n",
        ".summary.csv.mine.tmp": b"tmp of mine",
    }
    for rel, data in mine.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    assert _run(path, "--force") == 0
    for rel, data in mine.items():
        assert (out / rel).read_bytes() == data
    assert len(read_csv(out / REQUESTS_FILE)) == 8


def test_force_removes_kvsims_temporaries_by_their_exact_shape(write_config, tmp_path) -> None:
    """A write killed mid-way leaves ``.<name>.<8 random characters>.tmp``: those go,
    names of another shape stay."""
    from sim.rundir.guard import remove_owned
    from sim.rundir.outputs import is_temporary_of

    path = write_config()
    out = tmp_path / "out"
    assert _run(path) == 0
    rep = out / "points" / "000_variant-numpy_workers-2" / "rep-0"
    killed = [out / ".summary.csv.ab12_x9z.tmp", rep / ".requests.csv.q1w2e3r4.tmp"]
    for p in killed:
        p.write_text("half")
    assert is_temporary_of(killed[0].name, "summary.csv")
    assert not is_temporary_of(".summary.csv.mine.tmp", "summary.csv")
    assert not is_temporary_of(".summary.csv.ab12_x9z.tmp", "requests.csv")
    remove_owned(out)
    assert not any(p.exists() for p in killed)
    assert not (out / "points").exists()  # nothing else was there: all of it was kvsim's


def test_force_never_follows_a_link(write_config, tmp_path, capsys) -> None:
    path = write_config()
    out = tmp_path / "out"
    assert _run(path) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.png").write_text("x")
    (out / "figures").symlink_to(elsewhere)
    capsys.readouterr()
    assert _run(path, "--force") == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1 and "symbolic link" in lines[0]
    assert (elsewhere / "keep.png").read_text() == "x"
    assert (out / MANIFEST_FILE).is_file()  # nothing removed before refusing


def test_a_linked_rep_dir_on_resume_is_one_line(write_config, tmp_path, capsys) -> None:
    path = write_config(TWO_POINTS)
    out = tmp_path / "out"
    assert _run(path) == 0
    rep = next((out / "points").glob("001_*/rep-0"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("p")
    for name in os.listdir(rep):
        os.unlink(rep / name)
    rep.rmdir()
    rep.symlink_to(outside)
    capsys.readouterr()
    assert _run(path, "--resume") == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1 and "symbolic link" in lines[0], lines
    assert (outside / "precious").read_text() == "p"


def test_a_crash_before_the_manifest_is_recoverable(write_config, tmp_path, capsys) -> None:
    """Tables and a ledger but no manifest (a disk that filled up): --force and --resume work."""
    path = write_config()
    for flag in ("--force", "--resume"):
        out = tmp_path / f"out{flag}"
        out.mkdir()
        (out / LEDGER_FILE).write_text(f"{MANIFEST_FILE}\n{REQUESTS_FILE}\nsteps.csv\n")
        (out / REQUESTS_FILE).write_text("half,a,row\n1,2")
        (out / "steps.csv").write_text("x\n")
        (out / ".requests.csv.abc123de.tmp").write_text("partial")
        capsys.readouterr()
        assert _run(path, "--out", str(out)) == 2
        assert "previous kvsim run" in capsys.readouterr().err
        assert _run(path, "--out", str(out), flag) == 0
        assert len(read_csv(out / REQUESTS_FILE)) == 8
        assert not (out / ".requests.csv.abc123de.tmp").exists() or flag == "--resume"


def test_remove_owned_keeps_foreign_files_beside_tables(tmp_path) -> None:
    lock = open_run_dir(tmp_path / "r", force=False)
    run = tmp_path / "r"
    (run / "steps.csv").write_text("x")
    (run / "notes.csv").write_text("mine")
    (run / LEDGER_FILE).write_text("steps.csv\n../escape\n/abs\n")
    (tmp_path / "escape").write_text("outside")
    remove_owned(run)
    lock.release()
    assert not (run / "steps.csv").exists()
    assert (run / "notes.csv").read_text() == "mine"
    assert (tmp_path / "escape").read_text() == "outside"


def test_a_full_disk_is_one_line_and_recoverable(write_config, tmp_path, capsys, monkeypatch):
    import errno

    path = write_config()
    out = tmp_path / "out"
    real_fsync = os.fsync

    def full(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(out / ".requests.csv.")):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr("sim.rundir.outputs.os.fsync", full)
    assert _run(path) == 1
    lines = _err_lines(capsys)
    assert lines == [f"kvsim: error: {out / REQUESTS_FILE}: No space left on device"], lines
    monkeypatch.undo()
    assert _run(path, "--force") == 0  # the state it left is kvsim's and can be replaced
    assert len(read_csv(out / REQUESTS_FILE)) == 8
