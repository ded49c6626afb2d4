"""Tracebacks where one line belongs (issue 30 items 13 and 16).

Each case was a traceback (or a silent oddity) on main: a calibrate grid out of
range, an integer too long to print in the API, an over-long ``--out``, … Each is
now a KvsimError with one line that names the argument or field.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sim
from sim.cli import main


def _one_error(capsys) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("kvsim: error: "), err
    return err[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--chunks", "1000000000"], "--chunks 1000000000: out of range"),
        (["--regions", "1000000000"], "--regions 1000000000: out of range"),
        (["--groups", "100000"], "--groups 100000: out of range"),
        (["--reps", "0"], "--reps 0"),
    ],
)
def test_calibrate_refuses_a_grid_out_of_range_before_measuring(
    tmp_path: Path, capsys, args: list[str], needle: str
) -> None:
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--out", str(out), "--variants", "numpy", *args]) == 2
    assert needle in _one_error(capsys)
    assert not out.exists()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "x", "seed": 10**5000},
        {"name": "x", "overrides": {"seed": 10**5000}},
        {"name": "x", "overrides": {"seed": object()}},
        {"name": "x" * 1_000_000},
    ],
    ids=["seed-5000-digits", "override-5000-digits", "override-not-json", "name-megabyte"],
)
def test_the_api_raises_one_line_config_errors(kwargs) -> None:
    with pytest.raises(sim.ConfigError) as info:
        sim.build(**kwargs)
    msg = str(info.value)
    assert "\n" not in msg and len(msg) < 400, msg


def test_an_over_long_out_path_is_exit_2(tmp_path: Path, write_config, capsys) -> None:
    cfg = write_config()
    long_dir = tmp_path / ("d" * 300) / "run"
    assert main(["run", "-q", str(cfg), "--out", str(long_dir)]) == 2
    assert "too long" in _one_error(capsys)
    deep = tmp_path.joinpath(*(["e" * 200] * 25))  # > PATH_MAX in all
    assert main(["run", "-q", str(cfg), "--out", str(deep)]) == 2
    assert "too long" in _one_error(capsys)


def test_a_low_memory_limit_at_start_up_is_one_line(tmp_path: Path) -> None:
    """``ulimit -v`` so low that numpy cannot map its library: one line, no traceback."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (60 << 20, 60 << 20))\n"
        "from sim.cli import main\n"
        "sys.exit(main(['validate', sys.argv[1]]))\n"
    )
    cfg = Path(__file__).resolve().parent.parent / "configs" / "quickstart.yaml"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(cfg)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode != 0 and len(lines) == 1, (proc.returncode, lines)
    assert "memory" in lines[0]
