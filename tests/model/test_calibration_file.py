"""A calibration file of another version or kind is refused in one line that names what
it found and what this kvsim reads (version 999 was accepted; a file of another kind was
named by the kind expected only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.model.calibration import CALIBRATION_VERSION, CalibrationError, load_calibration
from tests.model.test_driver import write_calibration


def _with(tmp_path: Path, **change) -> Path:
    path = write_calibration(tmp_path / "cal.json")
    data = {**json.loads(path.read_text()), **change}
    path.write_text(json.dumps(data))
    return path


def test_the_supported_version_and_none_load(tmp_path: Path) -> None:
    load_calibration(_with(tmp_path, version=CALIBRATION_VERSION))
    path = write_calibration(tmp_path / "old.json")
    data = json.loads(path.read_text())
    data.pop("version", None)  # written before the field existed
    path.write_text(json.dumps(data))
    load_calibration(path)


@pytest.mark.parametrize("version", [999, 0, "1", 1.0, None])
def test_another_version_is_refused(tmp_path: Path, version) -> None:
    path = _with(tmp_path, version=version)
    with pytest.raises(CalibrationError) as info:
        load_calibration(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: calibration version ") and "\n" not in msg
    assert f"this kvsim reads version {CALIBRATION_VERSION}" in msg


def test_another_kind_is_named_by_the_kind_found(tmp_path: Path) -> None:
    path = _with(tmp_path, kind="kvsim-store-fit")
    with pytest.raises(CalibrationError) as info:
        load_calibration(path)
    msg = str(info.value)
    assert "kind 'kvsim-store-fit', expected 'kvsim-calibration'" in msg, msg


def test_a_calibration_from_before_the_gil_hand_offs_were_timed_gives_the_wake_up(
    tmp_path: Path,
) -> None:
    """The GIL's hand-offs (gil_handoff, gil_forced, gil_back: since 7 Dec 2026) fall back
    to the queue wake-up in a file written before, which the model drew them from then;
    a file that has them gives its own."""
    path = write_calibration(tmp_path / "cal.json")
    data = json.loads(path.read_text())
    data["harness"]["wake_samples_ms"] = [0.01, 0.02]
    path.write_text(json.dumps(data))
    old = load_calibration(path)
    for name in ("gil_handoff", "gil_forced", "gil_back"):
        assert old.samples_ms(name, fallback="wake") == [0.01, 0.02]
    data["harness"].update(gil_handoff_samples_ms=[0.04], gil_forced_ms=0.03)
    path.write_text(json.dumps(data))
    new = load_calibration(path)
    assert new.samples_ms("gil_handoff", fallback="wake") == [0.04]
    assert new.samples_ms("gil_forced", fallback="wake") == [0.03]  # the median alone
