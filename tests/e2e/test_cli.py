"""The kvsim command line as a user drives it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sim.cli import COMMANDS, main
from sim.rundir.outputs import read_csv


def test_validate_ok(write_config, capsys) -> None:
    assert main(["validate", str(write_config())]) == 0
    out = capsys.readouterr().out
    assert "ok" in out and "variant=numpy,workers=2" in out


def test_validate_bad_config_is_one_line_on_stderr(write_config, capsys) -> None:
    path = write_config({"connector": {"workers": -2}})
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0
    assert err.startswith("kvsim: error: ") and str(path) in err and "connector.workers" in err
    assert "Traceback" not in captured.err


def test_variants_lists_the_builtin_variants(capsys) -> None:
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    assert "scalar" in out and "numpy" in out


def test_no_command_prints_help_and_fails(capsys) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


@pytest.mark.realthreads
def test_run_writes_three_files_and_prints_table(write_config, tmp_path, capsys) -> None:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    out_dir = tmp_path / "out"
    assert main(["run", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "scalar" in printed and "numpy" in printed and "noise floor" in printed
    assert {"requests.csv", "summary.csv", "manifest.json"} <= {p.name for p in out_dir.iterdir()}
    summary = read_csv(out_dir / "summary.csv")
    assert [r["variant"] for r in summary] == ["scalar", "numpy"]
    assert all(r["ok"] == "8" for r in summary)
    requests = read_csv(out_dir / "requests.csv")
    assert len(requests) == 16
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["seed"] == 3
    assert manifest["machine"]["cpu_count"] >= 1
    assert manifest["config"]["connector"]["workers"] == 2
    assert not list(out_dir.glob(".*.tmp"))


@pytest.mark.realthreads
def test_rerun_needs_force_and_foreign_dirs_are_refused(write_config, tmp_path, capsys) -> None:
    path = write_config()
    assert main(["run", "-q", str(path)]) == 0
    assert main(["run", "-q", str(path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["run", "-q", "--force", str(path)]) == 0
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    assert main(["run", "-q", "--force", "--out", str(foreign), str(path)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (foreign / "thesis.tex").read_text() == "precious"


def test_help_does_not_import_torch_or_numba() -> None:
    code = (
        "import sys; from sim.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "main(['variants'])\n"
        "print(sorted(m for m in ('torch', 'numba') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_python_dash_m_sim_works(write_config) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sim", "validate", str(write_config())],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    "argv",
    [[name, "--help"] for name in COMMANDS]
    + [["bench", target, "--help"] for target in ("index", "connectors", "verdicts")],
    ids=lambda argv: " ".join(argv[:-1]),
)
def test_every_help_prints(argv: list[str], capsys) -> None:
    """argparse %-formats help texts: a bare '10%' once made `kvsim bench --help` a traceback."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    assert "usage: kvsim" in capsys.readouterr().out
