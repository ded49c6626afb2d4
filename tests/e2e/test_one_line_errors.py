"""Tracebacks where one line belongs (issue 30 items 13 and 16).

Each case was a traceback (or a silent oddity) on main: a calibrate grid out of
range, an integer too long to print in the API, an over-long ``--out``, … Each is
now a KvsimError with one line that names the argument or field.
"""

from __future__ import annotations

import os
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
    cfg = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"
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


@pytest.mark.parametrize(
    ("where", "value", "needle"),
    [
        (("harness", "wake_ms"), -0.05, "harness.wake_ms: -0.05 is out of range"),
        (("harness", "sim_cpu_per_request_ms"), 1e300, "out of range"),
        (("harness", "timer_late_ms"), float("nan"), "out of range"),
        (("variants", "synthetic", "overhead_ms"), -1.0, "variants.synthetic.overhead_ms"),
        (("variants", "numpy/per_group", "hold", "per_chunk"), 1e300, "hold.per_chunk"),
        (("engine", "cached", "build_ms"), -0.03, "engine.cached.build_ms"),
        (("machine", "cores"), 0, "machine.cores"),
    ],
)
def test_calibration_figures_out_of_range_are_refused(
    tmp_path: Path, where: tuple[str, ...], value: float, needle: str
) -> None:
    import json

    from sim.model.calibration import CalibrationError, load_calibration
    from tests.model.test_driver import write_calibration

    path = write_calibration(tmp_path / "cal.json")
    data = json.loads(path.read_text())
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=needle.replace(".", r"\.").replace("-", r"\-")):
        load_calibration(path)


def test_a_fits_negative_coefficient_is_a_measurement(tmp_path: Path) -> None:
    """A least-squares fit may have a negative term (calibrate prints '− 3.39 µs·groups')."""
    import json

    from sim.model.calibration import load_calibration
    from tests.model.test_driver import write_calibration

    path = write_calibration(tmp_path / "cal.json")
    data = json.loads(path.read_text())
    data["variants"]["numpy/per_group"]["hold"]["per_group"] = -0.003
    path.write_text(json.dumps(data))
    assert load_calibration(path).variant("numpy", "per_group")["hold"]["per_group"] == -0.003


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.skipif(_has_cuda(), reason="this machine has a GPU: engine.device cuda is valid")
def test_validate_and_run_refuse_a_cuda_engine_without_a_gpu(
    tmp_path: Path, write_config, capsys
) -> None:
    cfg = write_config({"engine": {"enabled": True, "device": "cuda"}})
    assert main(["validate", str(cfg)]) == 2
    assert "engine.device: cuda, but this machine has none" in _one_error(capsys)
    out = tmp_path / "never"
    assert main(["run", "-q", str(cfg), "--out", str(out)]) == 2
    _one_error(capsys)
    assert not out.exists()  # refused before the run directory was made
    # without the engine the device is never used: nothing to refuse
    off = write_config({"engine": {"device": "cuda"}}, name="off.yaml")
    assert main(["validate", str(off)]) == 0
    capsys.readouterr()


def test_a_dead_ray_workers_scratch_directories_are_removed(tmp_path: Path) -> None:
    """A Ray worker killed mid-task (its node gone) never ran its TemporaryDirectory's
    cleanup; the next task on that host removes what it left, and nothing else."""
    from sim.files.scratch import pid_namespace, remove_stale
    from sim.sweep.executors.ray_host import POINT_SCRATCH

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=60)  # its pid now runs nothing (reuse within the test is not expected)
    ns = pid_namespace()
    prefix = f"kvsim-{POINT_SCRATCH}-"
    stale = tmp_path / f"{prefix}{ns}-{dead.pid}-abcd_123"
    live = tmp_path / f"{prefix}{ns}-{os.getpid()}-efgh_456"
    other_ns = tmp_path / f"{prefix}{ns + 1}-{dead.pid}-ijkl_789"
    mine = tmp_path / f"{prefix}notes"
    other_kind = tmp_path / f"kvsim-bench-model-{ns}-{dead.pid}-mnop_012"
    for d in (stale, live, other_ns, mine, other_kind):
        (d / "rep").mkdir(parents=True)
        (d / "rep" / "requests.csv").write_text("x\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("k")
    (stale / "link").symlink_to(outside)
    assert remove_stale(tmp_path, POINT_SCRATCH) == [stale]
    assert not stale.exists()
    assert live.is_dir() and other_ns.is_dir() and mine.is_dir() and other_kind.is_dir()
    assert (outside / "keep").read_text() == "k"  # a link inside is removed, not followed
    # a new scratch directory of a kind first removes what killed owners of that kind left
    from sim.files.scratch import scratch_dir

    with scratch_dir("bench-model", root=tmp_path) as made:
        assert not other_kind.exists()
        assert made.name.startswith(f"kvsim-bench-model-{ns}-{os.getpid()}-")
        assert live.is_dir() and other_ns.is_dir()
    assert not made.exists()


def test_an_unknown_tilde_user_is_refused_not_made_a_directory(
    tmp_path: Path, write_config, capsys, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write_config({"output": {"dir": "~no_such_user_kvsim/x"}})
    assert main(["validate", str(cfg)]) == 2
    assert "names no user here" in _one_error(capsys)
    assert (
        main(["run", "-q", str(write_config(name="b.yaml")), "--out", "~no_such_user_kvsim/y"]) == 2
    )
    assert "names no user here" in _one_error(capsys)
    assert not (tmp_path / "~no_such_user_kvsim").exists()


@pytest.mark.parametrize("out", ["a\x00b", "/tmp/" + "z" * 300 + "/run"], ids=["nul", "long"])
def test_the_api_refuses_an_unusable_out_path(out: str) -> None:
    with pytest.raises(sim.RunDirError) as info:
        sim.build(name="x").plan(out)
    assert "\n" not in str(info.value) and "\x00" not in str(info.value)
