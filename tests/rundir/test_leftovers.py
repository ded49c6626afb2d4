"""Run directories at the edges (issue 43, the leftovers): a symbolic link for points/,
a directory where a point's requests.csv goes, a FIFO for summary.csv, the temporary a
point's child leaves when it dies mid-write."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

import sim
from sim.cli import main
from sim.errors import RunDirError
from sim.rundir.layout import point_rep_dirs
from tests.conftest import TINY, deep_merge

#: Ends its point's child at its first request (the parent's plug-in check, with one-chunk
#: and short requests, passes): requests.csv is half written.
EXITS = """
import os
from connectors.base import AddressVariant
from connectors.registry import register


@register
class Exits(AddressVariant):
    name = "exits"

    def prepare_values(self, chunks, block_ids):
        if os.environ.get("KVSIM_PARENT_PID") and len(chunks) > 1:
            os._exit(3)
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, Path]:
    """(config, a finished run of it)."""
    root = tmp_path_factory.mktemp("leftovers")
    cfg = root / "exp.yaml"
    cfg.write_text(yaml.safe_dump(deep_merge(TINY, {"output": {"dir": str(root / "run")}})))
    assert main(["run", "-q", str(cfg)]) == 0
    return cfg, root / "run"


def _copy(run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(run, dest, symlinks=True)
    (dest / ".kvsim.lock").unlink(missing_ok=True)
    return dest


def _resume(cfg: Path, run: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["run", "-q", str(cfg), "--out", str(run), "--resume"])
    return code, capsys.readouterr().err


def test_a_linked_points_directory_is_not_followed(made, tmp_path: Path, capsys) -> None:
    cfg, done = made
    run = _copy(done, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (run / "points").rename(elsewhere)
    (run / "points").symlink_to(elsewhere)
    code, err = _resume(cfg, run, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{run / 'points'}: is a symbolic link" in err
    slug = next(elsewhere.iterdir()).name
    assert point_rep_dirs(run, slug) == []  # the readers do not go through it either
    assert point_rep_dirs(done, slug)  # where it is a directory, they do


def test_a_directory_named_like_a_points_file_stops_a_resume_once(
    made, tmp_path: Path, capsys
) -> None:
    cfg, done = made
    run = _copy(done, tmp_path)
    rep = next((run / "points").glob("*/rep-0"))
    (rep / "requests.csv").unlink()
    (rep / "requests.csv").mkdir()
    (rep / "requests.csv" / "mine.txt").write_text("a user's file")
    code, err = _resume(cfg, run, capsys)
    assert code == 2 and f"{rep / 'requests.csv'}: is a directory" in err, err
    assert (rep / "requests.csv" / "mine.txt").read_text() == "a user's file"  # kept


def test_a_fifo_summary_is_named_as_such(made, tmp_path: Path) -> None:
    _cfg, done = made
    run = _copy(done, tmp_path)
    (run / "summary.csv").unlink()
    os.mkfifo(run / "summary.csv")
    with pytest.raises(RunDirError, match=r"summary\.csv: not a regular file") as info:
        sim.open_run(run)  # returns at once: nothing opens the FIFO
    assert "no summary.csv yet" not in str(info.value)


def test_a_child_that_dies_mid_write_leaves_no_temporary(write_config, tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text(EXITS)
    cfg = write_config({"plugins": ["exits.py"], "connector": {"variant": "exits"}})
    assert main(["run", "-q", str(cfg)]) != 0
    reps = list((tmp_path / "out" / "points").glob("*/rep-*"))
    assert reps and (reps[0] / "status.json").is_file()  # the point failed, and says so
    left = [p.name for r in reps for p in r.iterdir() if p.name.endswith(".tmp")]
    assert left == []
