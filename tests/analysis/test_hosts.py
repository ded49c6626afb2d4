"""compare and plot keep hosts apart: hardware mixed in a ratio is said, other code refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main
from sim.rundir.reader import load_results

pytestmark = pytest.mark.realthreads


@pytest.fixture
def run_dir(write_config, tmp_path: Path) -> Path:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "-q"]) == 0
    return out


def _edit_host(run: Path, variant: str, **fields: str) -> None:
    (status_path,) = run.glob(f"points/*variant-{variant}*/rep-0/status.json")
    status = json.loads(status_path.read_text())
    status["host"].update(fields)
    status_path.write_text(json.dumps(status))


def test_one_host_gives_no_warning(run_dir: Path, capsys) -> None:
    from sim.analysis.hosts import host_warnings, point_hosts

    res = load_results(run_dir)
    assert len(point_hosts(res)) == 2 and host_warnings(res) == []
    assert main(["compare", str(run_dir)]) == 0
    assert "hardware" not in capsys.readouterr().err


def test_ratios_across_hardware_are_said(run_dir: Path, capsys) -> None:
    _edit_host(run_dir, "numpy", name="big-box", cpu_model="Other CPU 9000")
    assert main(["compare", str(run_dir)]) == 0
    err = capsys.readouterr().err
    assert "2 kinds of hardware" in err
    assert "the ratios mix hardware" in err and "variant=numpy rep 0 on big-box" in err
    assert "the ratios mix hardware" in (run_dir / "compare.md").read_text()


def test_points_of_different_code_are_refused(run_dir: Path, capsys) -> None:
    _edit_host(run_dir, "numpy", code_hash="sha256:" + "f" * 64)
    for command in ("compare", "plot"):
        assert main([command, str(run_dir)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "2 versions of kvsim's code" in err[0], err
