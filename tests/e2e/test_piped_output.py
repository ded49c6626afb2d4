"""Every command that prints a table prints it whole into a pipe; its tables fit 100 columns.

rich cut piped output at 80 columns with ``…`` (``kvsim bench index | cat`` showed
``per_compo…``). Each command here runs as a child whose stdout is a pipe, as under
``| cat`` or in CI, on the smallest inputs that still print its table. The width limit is
for the tables drawn for a terminal; the markdown of ``compare`` and ``validate-model``
(also their .md files, read in a viewer that lays tables out) is checked for cut cells only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim.console import TABLE_WIDTH
from tests.model.test_driver import write_calibration

ROOT = Path(__file__).resolve().parents[2]
#: Characters of the lines rich draws across a table's whole width (borders and the rule
#: under the header); such a line is as wide as its table.
_RULE = set("─━═┏┓┗┛┃┡┩┢┪╇╈┼┬┴├┤┌┐└┘│╋┳┻ ")


def _kvsim(*args: str, cwd: Path) -> str:
    return _kvsim_both(*args, cwd=cwd)[0]


def _kvsim_both(*args: str, cwd: Path) -> tuple[str, str]:
    """What ``kvsim ARGS`` writes to its stdout and its stderr, both pipes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVSIM_NATIVE": "0"}
    env.pop("COLUMNS", None)
    out = subprocess.run(
        [sys.executable, "-m", "sim", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, f"kvsim {' '.join(args)}: {out.stderr[-2000:]}"
    return out.stdout, out.stderr


def _table_widths(text: str) -> list[int]:
    widths = []
    for line in text.splitlines():
        body = line.rstrip()
        if body and set(body) <= _RULE and set(body) - {" "}:
            widths.append(len(body))
    return widths


def _whole_and_narrow(args: tuple[str, ...], text: str) -> None:
    assert text.strip(), f"kvsim {' '.join(args)} printed nothing"
    cut = [line for line in text.splitlines() if "…" in line]
    assert not cut, f"kvsim {' '.join(args)}: cut cells in piped output: {cut[:3]}"
    widths = _table_widths(text)
    assert all(w <= TABLE_WIDTH for w in widths), (
        f"kvsim {' '.join(args)}: a table {max(widths)} columns wide:\n{text}"
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("piped")


@pytest.fixture(scope="module")
def config(workdir: Path) -> Path:
    import yaml

    from tests.conftest import TINY, deep_merge

    data = deep_merge(
        TINY,
        {
            "name": "piped-with-a-long-name-to-fill-the-title",
            "output": {"dir": str(workdir / "out")},
            "sweep": {"connector.variant": ["scalar", "numpy"], "connector.workers": [1, 2]},
        },
    )
    path = workdir / "exp.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_run_and_what_reads_its_results(config: Path, workdir: Path) -> None:
    out = str(workdir / "out")
    for args in (
        ("validate", str(config)),
        ("run", str(config), "--dry-run"),
        ("run", str(config), "--force"),
        ("run", str(config), "--resume", "--all-rows"),
        ("run", str(config), "--dry-run"),
        ("compare", out),
    ):
        stdout, stderr = _kvsim_both(*args, cwd=workdir)
        _whole_and_narrow(args, stdout)
        # The progress bar's last state, on stderr: rich laid it out in 80 columns and cut
        # its end ("… 8/8 req 0:0… ETA 0:0…", issue 42 item 5); a pipe gets it whole.
        cut = [line for line in stderr.splitlines() if "…" in line]
        assert not cut, f"kvsim {' '.join(args)}: cut lines on stderr: {cut[:3]}"


def test_the_progress_line_is_whole_in_a_pipe(write_config, tmp_path: Path) -> None:
    """A four-digit request count and a swept axis in the label: the bar's last state is
    wider than 80 columns, where rich cut it on a pipe ("… 1000/1000 req 0… ETA 0…",
    issue 42 item 5); a pipe gets it whole, its end and all."""
    config = write_config(
        {
            "workload": {"requests": 1000, "arrival": {"kind": "poisson", "rate_rps": 20000}},
            "sweep": {"store.latency_ms": [0.2]},
        }
    )
    _stdout, stderr = _kvsim_both("run", str(config), "--in-process", cwd=tmp_path)
    bars = [line for line in stderr.splitlines() if " req " in line and "ETA" in line]
    assert len(bars) == 1, stderr
    assert "…" not in bars[0] and len(bars[0]) > 80, bars[0]
    assert re.search(r"latency_ms=0\.2 .* 1000/1000 req \d+:\d\d:\d\d ETA 0:00:00$", bars[0])


def test_search(config: Path, workdir: Path) -> None:
    args = (
        "search",
        str(config),
        "--slo",
        "latency_p99_ms<=1000",
        "--over",
        "workload.arrival.rate_rps",
        "--max-runs",
        "2",
        "--in-process",
        "--out",
        str(workdir / "search"),
        "--set",
        "sweep={connector.variant: [scalar, numpy]}",
    )
    _whole_and_narrow(args, _kvsim(*args, cwd=workdir))


@pytest.mark.parametrize(
    "args",
    [
        ("variants",),
        ("variants", "rows"),
        ("geometry", "deepseek-v3"),
        ("bench", "index", "--decode", "8", "--prefill", "512", "--repeats", "3", "--iters", "3"),
        ("bench", "harness", "--rates", "100", "--seconds", "0.2", "--no-search"),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_listing_and_benches(args: tuple[str, ...], workdir: Path) -> None:
    _whole_and_narrow(args, _kvsim(*args, cwd=workdir))


def test_bench_connectors(workdir: Path) -> None:
    args = ("bench", "connectors", "--chunks", "8", "--repeats", "3", "--csv", "c.csv")
    _whole_and_narrow(args, _kvsim(*args, cwd=workdir))


def test_bench_model(workdir: Path) -> None:
    cal = write_calibration(workdir / "cal.json")
    args = ("bench", "model", "--requests", "50", "--repeat", "1", "--sweep-points", "0")
    _whole_and_narrow(args, _kvsim(*args, "--calibration", str(cal), cwd=workdir))


def test_validate_model(config: Path, workdir: Path) -> None:
    cal = write_calibration(workdir / "cal-vm.json")
    args = (
        "validate-model",
        str(config),
        "--out",
        str(workdir / "vm"),
        "--boot",
        "50",
        "--repeats",
        "1",
        "--set",
        f"machine.calibration={cal}",
        "--set",
        "sweep={connector.variant: [numpy]}",
    )
    _whole_and_narrow(args, _kvsim(*args, cwd=workdir))


def test_the_end_table_of_a_busy_quickstart_fits_100_columns() -> None:
    """The quickstart's end table on a busy machine, with every column it can grow (lag,
    stall, spreads under the values, `behind`), laid out as a pipe gets it: 102 columns
    while it also had a column for the one mode of the run, now said in the title."""
    import io

    from rich.console import Console

    from sim.analysis.report import comparison_table

    rows = []
    for variant, p50, hold in (("scalar", 4778.1, 32.3), ("numpy", 144.2, 7.43)):
        for workers in (1, 4):
            rows.append(
                {"variant": variant, "workers": workers, "mode": "real", "repeats": 3,
                 "status": "ok", "ok": 180, "requests": 180,
                 "latency_p50_ms": p50, "latency_p50_ms_std": 1720.5,
                 "latency_p99_ms": 2 * p50, "latency_p99_ms_std": 3942.5,
                 "gil_hold_mean_ms": hold, "gil_hold_mean_ms_std": 1.61,
                 "gil_wait_mean_ms": 599.75, "inject_lag_p99_ms": 410.5,
                 "noise_floor_p99_ms": 13.4, "stall_p99_ms": 1109.1, "stall_p99_ms_std": 348.2,
                 "offered_rps": 29.8, "achieved_rps": 29.0}
            )  # fmt: skip
    table = comparison_table(rows, ["variant", "workers", "mode"], "scalar", "kvsim · quickstart")
    buf = io.StringIO()
    Console(file=buf, width=TABLE_WIDTH, soft_wrap=True).print(table)
    text = buf.getvalue()
    assert "…" not in text and "behind" in text
    grid = [ln for ln in text.splitlines() if ln.strip().startswith(("scalar", "numpy", "±"))]
    assert len(grid) == 8 and _table_widths(text)
    assert max(len(ln.rstrip()) for ln in grid) <= TABLE_WIDTH, text
    assert max(_table_widths(text)) <= TABLE_WIDTH, text
    assert text.splitlines()[0].strip() == "kvsim · quickstart · mode=real"


def test_the_hold_table_says_a_one_value_axis_in_its_title_as_the_end_table_does() -> None:
    import io

    from rich.console import Console

    from sim.analysis.stage_report import stage_table

    rows = [
        {"variant": v, "workers": 1, "mode": "real", "gil_hold_mean_ms": 2.0,
         "hold_keys_mean_ms": 0.5, "hold_addresses_mean_ms": 1.0, "hold_free_mean_ms": 0.25,
         "hold_gc_mean_ms": 0.25}
        for v in ("scalar", "numpy")
    ]  # fmt: skip
    buf = io.StringIO()
    Console(file=buf, width=TABLE_WIDTH, soft_wrap=True).print(
        stage_table(rows, ["variant", "workers", "mode"], "where the hold goes")
    )
    text = buf.getvalue()
    assert text.splitlines()[0].strip() == "where the hold goes · mode=real"
    header = next(ln for ln in text.splitlines() if "variant" in ln)
    assert "mode" not in header.split() and "workers" in header.split()
