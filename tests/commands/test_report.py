"""``kvsim report RUN``: one Markdown page for a PR, its figures those of the run."""

from __future__ import annotations

import csv
import shlex
from pathlib import Path

import pytest

from sim.cli import main
from sim.rundir.reader import load_results


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    import yaml

    from tests.conftest import TINY, deep_merge

    tmp = tmp_path_factory.mktemp("report")
    out = tmp / "run"
    cfg = deep_merge(
        TINY,
        {
            "repeats": 2,
            "workload": {"requests": 6},
            "sweep": {"connector.variant": ["scalar", "numpy"], "connector.workers": [1, 2]},
            "output": {"dir": str(out)},
        },
    )
    path = tmp / "rep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", "-q", str(path), "--set", "seed=5"]) == 0
    return out


def _mean(rows: list[dict[str, str]], variant: str, workers: str, col: str) -> float:
    vals = [float(r[col]) for r in rows if r["variant"] == variant and r["workers"] == workers]
    return sum(vals) / len(vals)


def test_the_page_has_every_point_its_ratios_and_how_to_reproduce(run_dir: Path, capsys) -> None:
    assert main(["report", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    page = (run_dir / "report.md").read_text()
    assert page in printed
    lines = page.splitlines()
    assert lines[0] == "## kvsim: numpy against scalar"
    assert "kvsim 0.1.0 @ " in lines[2] and "CPUs" in lines[2]
    head = next(ln for ln in lines if ln.startswith("| variant |"))
    assert head.startswith("| variant | workers | GIL hold / request | p50 load latency |")
    assert "mode" not in head  # one value everywhere: not a column
    rows = [ln for ln in lines if ln.startswith("| numpy |")]
    assert [r.split(" | ")[1] for r in rows] == ["1", "2"]
    for r in rows:
        cells = r.split(" | ")[2:]
        assert all("×** [" in c for c in cells), r  # two repeats: every ratio has an interval
        assert all(
            c.rstrip(" |").endswith(("lower", "higher", "no difference shown")) for c in cells
        )
    reps = load_results(run_dir).table("summary_repeats")
    hold = _mean(reps, "scalar", "1", "gil_hold_mean_ms")
    assert f"| scalar (baseline) | 1 | {hold:.3g} ms |" in page
    i = lines.index("```bash")
    assert lines[i + 1].startswith("kvsim run ") and "rep.yaml --set seed=5" in lines[i + 1]
    assert "Harness noise floor" in page


def test_the_reproduce_lines_write_where_the_page_reads(tmp_path: Path, monkeypatch) -> None:
    from sim.analysis.pr_report import reproduce_command
    from sim.rundir.reader import RunResults

    monkeypatch.chdir(tmp_path)
    man = {"config_path": "mine.yaml", "overrides": [], "config": {"name": "mine"}}
    # `kvsim run mine.yaml --out results/base`: the manifest does not record --out.
    elsewhere = RunResults(Path("results/base"), man, [], [])
    assert reproduce_command(elsewhere) == "kvsim run mine.yaml --out results/base"
    default = RunResults(Path("results/mine"), man, [], [])
    assert reproduce_command(default) == "kvsim run mine.yaml"
    model = {**man, "config": {"name": "mine", "mode": "model", "output": None}}
    assert reproduce_command(RunResults(Path("results/mine-model"), model, [], [])) == (
        "kvsim run mine.yaml"
    )


def test_a_bench_csv_joins_the_page(run_dir: Path, tmp_path: Path, capsys) -> None:
    bench = tmp_path / "bench.csv"
    argv = ["bench", "connectors", "--regions", "4", "--chunks", "8", "--repeats", "3"]
    assert main([*argv, "--variants", "scalar,numpy", "--csv", str(bench)]) == 0
    out = tmp_path / "page.md"
    assert main(["report", str(run_dir), "--bench", str(bench), "--out", str(out)]) == 0
    page = out.read_text()
    rows = list(csv.DictReader(bench.open()))
    numpy_row = next(r for r in rows if r["variant"] == "numpy")
    assert f"| numpy | {float(numpy_row['gil_hold_ms']):.3g} ms | " in page
    # The reproduce lines remake the bench table too: its command, then the report with it.
    lines = page.splitlines()
    block = lines[lines.index("```bash") + 1 : lines.index("```", lines.index("```bash"))]
    assert block[-1] == f"kvsim report {run_dir} --bench {bench}"
    again = shlex.split(block[-2])
    assert again[:3] == ["kvsim", "bench", "connectors"] and again[-2:] == ["--csv", str(bench)]
    remade = tmp_path / "again.csv"
    assert main([*again[1:-1], str(remade)]) == 0
    same = ("variant", "regions", "block_len", "block_size", "groups", "chunks", "handler")
    twin = list(csv.DictReader(remade.open()))
    assert [[r[c] for c in same] for r in twin] == [[r[c] for c in same] for r in rows]
    assert [r["repeats"] for r in twin] == [r["repeats"] for r in rows]
    (tmp_path / "not.csv").write_text("a,b\n1,2\n")
    capsys.readouterr()
    assert main(["report", str(run_dir), "--bench", str(tmp_path / "not.csv")]) == 2
    assert "not a `kvsim bench connectors` CSV" in capsys.readouterr().err


def test_one_repeat_says_in_one_line_there_is_no_verdict(tmp_path: Path, capsys) -> None:
    # The page promised 'the 95 % interval ... and the verdict' where there was none.
    from tests.analysis.test_compare import write_run

    run = write_run(tmp_path / "one", repeats=1)
    assert main(["report", str(run)]) == 0
    page = (run / "report.md").read_text()
    head = next(ln for ln in page.splitlines() if ln.startswith("1 repeat(s) per point."))
    assert "interval from the spread" not in head
    assert "one repeat per point cannot show the run-to-run spread" in head
    assert "]*" not in page and " higher" not in page and " lower" not in page
