"""Every file kvsim reads goes through one bounded reader (issue 30, items 2, 6 and 13).

A data file a config names (calibration, trace, empirical distribution, a model's
config.json) and every file kvsim reads back from a run directory is refused in
one line when it is a FIFO (which would block ``open``), a device such as
``/dev/zero`` (which never ends), a directory, a link inside the run, a path with
a NUL byte, or larger than its cap. Each case runs under an alarm, so a hang
fails the test instead of the suite.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sim.cli import main
from sim.errors import ConfigError, KvsimError, RunDirError, SpecError, TraceError
from sim.files.read import excerpt, open_bounded, read_bounded, read_tail, shown_path
from sim.model.calibration import CalibrationError, load_calibration
from sim.rundir.guard import owned_files
from sim.rundir.layout import LEDGER_FILE, MANIFEST_FILE, STATUS_FILE, read_status
from sim.rundir.lock import holder
from sim.rundir.manifest import read_manifest
from sim.rundir.verify import file_record, read_verified
from sim.sweep.spec import read_spec
from sim.workload.trace import read_trace

#: Seconds any one case may take (a guard against a hang, not a speed test).
GUARD_S = 30
#: Seconds a command that runs points may take (two tiny points, on a loaded machine).
RUN_GUARD_S = 240


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError("blocked past its guard (a FIFO opened without O_NONBLOCK?)")


@contextmanager
def bounded(seconds: int = GUARD_S) -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _special(tmp_path: Path, kind: str, name: str = "data") -> Path:
    """A path of ``kind``: fifo, zero (a link to /dev/zero), dir, nul, long."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "dir":
        path.mkdir()
    elif kind == "nul":
        return tmp_path / "a\x00b"
    elif kind == "long":
        return tmp_path / ("x" * 300)
    return path


KINDS = ["fifo", "zero", "dir", "nul", "long"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_reader_refuses_what_is_not_a_regular_file_in_one_line(
    tmp_path: Path, kind: str
) -> None:
    path = _special(tmp_path, kind)
    with bounded(), pytest.raises(ConfigError) as info:
        read_bounded(path, what="thing", limit=1 << 20)
    msg = str(info.value)
    assert "\n" not in msg and "\x00" not in msg and len(msg) < 400, msg


def test_the_reader_caps_size_and_says_so(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(ConfigError, match="larger than 1000 bytes"):
        read_bounded(big, what="thing", limit=1000)
    assert read_bounded(big, what="thing", limit=2000) == b"x" * 2000
    with open_bounded(big, what="thing", limit=2000) as fh:
        big.write_bytes(b"y" * 5000)  # grows while read (same inode: truncated, rewritten)
        with pytest.raises(ConfigError, match="grew past"):
            fh.read()
    assert read_tail(big, 3, what="log") == b"yyy"


def test_inside_a_run_no_link_is_followed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "real").mkdir(parents=True)
    (run / "real" / "f").write_text("ok")
    (run / "via").symlink_to(run / "real")
    (run / "g").symlink_to(run / "real" / "f")
    assert read_bounded(run / "real" / "f", what="x", limit=10, within=run) == b"ok"
    for path in (run / "via" / "f", run / "g"):
        with pytest.raises(RunDirError, match="symbolic link"):
            read_bounded(path, what="x", limit=10, error=RunDirError, within=run)
    # outside a run directory a link the user made is theirs to make
    assert read_bounded(run / "g", what="x", limit=10) == b"ok"


def test_messages_show_a_bounded_excerpt() -> None:
    assert len(excerpt("x" * 10**6)) < 100 and "1000002 characters" in excerpt("x" * 10**6)
    assert excerpt(5) == "5"
    assert shown_path("a\x00b\nc") == "a\\0b\\nc"
    assert len(shown_path("y" * 10**5)) <= 240


@pytest.mark.parametrize("kind", KINDS)
def test_a_calibration_that_is_not_a_file_is_refused(tmp_path: Path, kind: str) -> None:
    with bounded(), pytest.raises(CalibrationError):
        load_calibration(_special(tmp_path, kind))


def test_a_calibration_with_a_huge_integer_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text('{"kind": ' + "9" * 5000 + "}")
    with pytest.raises(CalibrationError, match="not a JSON calibration"):
        load_calibration(path)


@pytest.mark.parametrize("kind", KINDS)
def test_a_trace_that_is_not_a_file_is_refused(tmp_path: Path, kind: str) -> None:
    with bounded(), pytest.raises(TraceError):
        read_trace(_special(tmp_path, kind))


def test_a_trace_with_a_4300_digit_integer_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = '{"timestamp": 0, "input_length": 5, "hash_ids": [0]}\n'
    path.write_text(good + '{"timestamp": 1, "input_length": ' + "7" * 5000 + ', "hash_ids": []}\n')
    with pytest.raises(TraceError, match=r"t\.jsonl:2: a number too long"):
        read_trace(path)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize(
    "field",
    [
        "machine.calibration",
        "workload.arrival.path",
        "workload.tokens.path",
    ],
)
def test_validate_and_run_refuse_special_data_files_in_one_line(
    tmp_path: Path, capsys, write_config, kind: str, field: str
) -> None:
    path = _special(tmp_path, kind)
    over: dict[str, Any] = {
        "machine.calibration": {"mode": "model", "machine": {"calibration": str(path)}},
        "workload.arrival.path": {"workload": {"arrival": {"kind": "trace", "path": str(path)}}},
        "workload.tokens.path": {"workload": {"tokens": {"dist": "empirical", "path": str(path)}}},
    }[field]
    cfg = write_config(over)
    for argv in (["validate", str(cfg)], ["run", "-q", str(cfg), "--out", str(tmp_path / "o")]):
        with bounded():
            rc = main(argv)
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert rc == 2 and len(err) == 1 and err[0].startswith("kvsim: error: "), (argv, err)
        assert "Traceback" not in err[0]
    assert not (tmp_path / "o").exists()


# --- inside a run directory (item 6) ---------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_run_directory_records_that_are_special_are_not_read(tmp_path: Path, kind: str) -> None:
    run = tmp_path / "run"
    rep = run / "points" / "000_x" / "rep-0"
    rep.mkdir(parents=True)
    for name in (MANIFEST_FILE, LEDGER_FILE, ".kvsim.lock"):
        _special(run, kind, name)
    for name in (STATUS_FILE, "spec.json", "summary.csv"):
        _special(rep, kind, name)
    with bounded():
        assert read_manifest(run) is None
        assert owned_files(run) == []
        assert holder(run) is None
        assert read_status(rep) is None
        with pytest.raises(SpecError):
            read_spec(rep)
        why, blobs = read_verified(rep, {"summary.csv": {"size": 1, "sha256": "0"}})
        assert why and not blobs
        with pytest.raises(OSError):
            file_record(rep / "summary.csv")


def test_a_status_that_links_to_a_real_status_is_not_followed(tmp_path: Path) -> None:
    rep = tmp_path / "rep-0"
    rep.mkdir()
    (tmp_path / "elsewhere.json").write_text(json.dumps({"status": "ok"}))
    (rep / STATUS_FILE).symlink_to(tmp_path / "elsewhere.json")
    assert read_status(rep) is None  # docs/design.md §6: kvsim never follows a link there


def test_every_refusal_is_a_kvsim_error() -> None:
    """The CLI prints KvsimError subclasses as one line; the reader raises only those."""
    for cls in (ConfigError, RunDirError, TraceError, SpecError, CalibrationError):
        assert issubclass(cls, KvsimError)


def test_commands_on_a_run_with_special_files_end_in_bounded_time(
    tmp_path: Path, write_config, capsys
) -> None:
    """A FIFO in place of a point's summary.csv, its status.json a link to /dev/zero and
    a FIFO manifest in a copy: compare, plot, --dry-run and --resume each end (under the
    alarm), and never with a traceback."""
    import shutil

    cfg = write_config({"sweep": {"connector.workers": [1, 2]}})
    out = tmp_path / "out"
    with bounded(RUN_GUARD_S):
        assert main(["run", "-q", str(cfg), "--out", str(out)]) == 0
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, symlinks=True)
    (copy / MANIFEST_FILE).unlink()
    os.mkfifo(copy / MANIFEST_FILE)
    reps = sorted((out / "points").glob("*/rep-0"))
    (reps[0] / "summary.csv").unlink()
    os.mkfifo(reps[0] / "summary.csv")
    (reps[1] / STATUS_FILE).unlink()
    (reps[1] / STATUS_FILE).symlink_to("/dev/zero")
    capsys.readouterr()
    for argv in (
        ["compare", str(out), "--bootstrap", "200"],
        ["plot", str(out), "--out", str(tmp_path / "figs")],
        ["compare", str(copy), "--bootstrap", "200"],
        ["run", "--dry-run", str(cfg), "--out", str(out)],
        ["run", "-q", "--resume", str(cfg), "--out", str(out)],
    ):
        with bounded(RUN_GUARD_S):
            rc = main(argv)
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err, (argv, captured.err[-2000:])
        assert rc in (0, 1, 2), (argv, rc)
    # the resumed run redid both damaged points and wrote real files in their place
    assert (reps[0] / "summary.csv").is_file() and not (reps[1] / STATUS_FILE).is_symlink()
