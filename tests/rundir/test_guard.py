"""Output safety: kvsim writes only into its own run directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.rundir.guard import RunDirError, is_kvsim_run, prepare_run_dir
from sim.rundir.outputs import atomic_write_text, write_csv, write_json


def _fake_run(path: Path) -> None:
    write_json(path / "manifest.json", {"tool": "kvsim", "status": "complete"})
    (path / "summary.csv").write_text("old\n")


def test_new_and_empty_directories_are_accepted(tmp_path: Path) -> None:
    prepare_run_dir(tmp_path / "a" / "b", force=False)
    assert (tmp_path / "a" / "b").is_dir()
    prepare_run_dir(tmp_path / "a" / "b", force=False)  # still empty


def test_foreign_directory_is_refused_even_with_force(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    for force in (False, True):
        with pytest.raises(RunDirError, match="holds no kvsim run"):
            prepare_run_dir(tmp_path, force=force)
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_previous_run_needs_force_and_force_keeps_foreign_files(tmp_path: Path) -> None:
    _fake_run(tmp_path)
    (tmp_path / "my-notes.md").write_text("mine")
    with pytest.raises(RunDirError, match="--force"):
        prepare_run_dir(tmp_path, force=False)
    assert is_kvsim_run(tmp_path)
    prepare_run_dir(tmp_path, force=True)
    assert not (tmp_path / "summary.csv").exists()
    assert not (tmp_path / "manifest.json").exists()
    assert (tmp_path / "my-notes.md").read_text() == "mine"


def test_unwritable_destination_is_a_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RunDirError) as info:
        prepare_run_dir(blocker / "sub", force=False)
    assert "\n" not in str(info.value) and "cannot write" in str(info.value)
    with pytest.raises(RunDirError, match="not a directory"):
        prepare_run_dir(blocker, force=False)


def test_atomic_write_leaves_old_file_whole_when_interrupted(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "summary.csv"
    write_csv(target, ["a", "b"], [{"a": 1, "b": 2.5}])
    before = target.read_text()

    def boom(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr("sim.rundir.outputs.os.replace", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "half")
    assert target.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["summary.csv"]  # no temp file left
