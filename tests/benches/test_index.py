"""``kvsim bench index`` on tiny sizes: structure of the rows, the table and the CSV."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from sim.benches.index import CSV_COLUMNS, _check, default_cases, run_bench
from sim.cli import main as cli_main
from sim.rundir.outputs import read_csv


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_default_cases_are_the_issue_shapes() -> None:
    cases = {c.name: c for c in default_cases()}
    assert list(cases) == ["decode-32", "decode-256", "decode-512", "prefill-512"]
    assert cases["decode-256"].query_lens == (1,) * 256
    assert cases["prefill-512"].query_lens == (512,) and cases["prefill-512"].tokens == 512


def test_run_bench_rows_side_by_side() -> None:
    cases = default_cases(decode=[3], prefill=[9])
    rows = run_bench(cases, ["cached", "device", "per_component"], repeats=2, iters=3, device="cpu")
    assert [(r["case"], r["variant"]) for r in rows] == [
        (case, v)
        for case in ("decode-3", "prefill-9")
        for v in ("per_component", "cached", "device")
    ]
    for r in rows:
        assert set(CSV_COLUMNS) - {"cpu_model"} <= set(r)
        assert r["us_per_step"] > 0 and r["device"] == "cpu" and r["components"] == 3
    by = {(r["case"], r["variant"]): r for r in rows}
    assert by[("decode-3", "per_component")]["time_ratio_vs_per_component"] == 1.0
    base = by[("prefill-9", "per_component")]["us_per_step"]
    cached = by[("prefill-9", "cached")]
    assert cached["time_ratio_vs_per_component"] == pytest.approx(cached["us_per_step"] / base)
    for r in rows:  # the spread brackets the median of the same blocks
        assert r["us_p10"] <= r["us_per_step"] <= r["us_p90"]
    assert (
        by[("prefill-9", "device")]["tokens"],
        by[("prefill-9", "device")]["padded_tokens"],
    ) == (
        9,
        16,
    )


def test_without_the_baseline_ratios_are_nan() -> None:
    rows = run_bench(default_cases([2], []), ["cached"], repeats=1, iters=2, device="cpu")
    assert len(rows) == 1 and math.isnan(rows[0]["time_ratio_vs_per_component"])


def test_cli_prints_a_table_and_writes_the_csv(tmp_path: Path, capsys) -> None:
    out = tmp_path / "index.csv"
    argv = ["bench", "index", "--decode", "2,4", "--prefill", "8", "--repeats", "2"]
    rc = cli_main(
        [*argv, "--iters", "3", "--components", "2", "--device", "cpu", "--csv", str(out)]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "decode-4" in text and "time ÷" in text and "p10–p90" in text
    rows = read_csv(out)
    assert list(rows[0]) == CSV_COLUMNS
    assert len(rows) == 3 * 3
    assert {r["components"] for r in rows} == {"2"}


def test_cli_refuses_unknown_variants_and_bad_sizes(capsys) -> None:
    assert cli_main(["bench", "index", "--variants", "cachd", "--repeats", "1"]) == 2
    assert "known:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main(["bench", "index", "--decode", "a,b"])
    with pytest.raises(SystemExit) as info:  # --iters 0 is refused when the flags are read
        cli_main(["bench", "index", "--decode", "2", "--prefill", "", "--iters", "0"])
    assert info.value.code == 2


def test_a_wrong_index_is_refused_rather_than_timed() -> None:
    import torch

    from connectors.token_index import MetadataFactory

    class Wrong:
        name = "wrong"

        def step(self, meta: Any) -> list[Any]:
            return [torch.ones(meta.num_tokens, dtype=torch.int32)]

    meta = MetadataFactory(4, 16, "cpu").make([2, 2])
    with pytest.raises(RuntimeError, match="wrong index"):
        _check(Wrong(), meta)


@pytest.mark.cuda
@pytest.mark.skipif(
    not _cuda(), reason="CUDA is absent: torch.cuda.is_available() is False on this machine"
)
def test_run_bench_on_cuda() -> None:
    rows = run_bench(
        default_cases([4], [16]),
        ["per_component", "cached", "device"],
        repeats=2,
        iters=3,
        device="cuda",
    )
    assert {r["device"] for r in rows} == {"cuda"} and all(r["us_per_step"] > 0 for r in rows)


def test_warm_up_is_not_timed(monkeypatch) -> None:
    """A slow first block per variant (first touch, lazy init) must not reach the figures."""
    from sim.benches import index

    seen: set[tuple[str, int]] = set()

    def fake_block(variant, make_meta, iters):
        key = (variant.name, make_meta().num_tokens)
        first = key not in seen
        seen.add(key)
        return 5000.0 if first else 10.0

    monkeypatch.setattr(index, "_time_block", fake_block)
    rows = run_bench(default_cases(decode=[3], prefill=[]), ["per_component", "cached"], 5, 4)
    assert all(r["us_per_step"] == 10.0 and r["us_p90"] == 10.0 for r in rows)


@pytest.mark.parametrize(
    "argv",
    [
        ["--components", "1000000000"],
        ["--prefill", "512,1000000000"],
        ["--decode", "1000000000"],
        ["--pad-multiple", "0"],
        ["--iters", "1000000000"],
        ["--iters", "0"],
        ["--repeats", "1000000"],
    ],
)
def test_sizes_past_the_engine_configs_bounds_are_refused_at_the_door(argv, capsys) -> None:
    """10^9 components or tokens went on to allocate (a std::bad_alloc traceback, or gigabytes
    taken); the engine config's own bounds apply, checked when the flags are read."""
    import argparse

    from sim.benches.index import add_arguments

    parser = argparse.ArgumentParser(prog="kvsim bench index")
    add_arguments(parser)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(argv)
    assert info.value.code == 2
    assert f"argument {argv[0]}: " in capsys.readouterr().err
    ok = parser.parse_args(["--components", "64", "--prefill", "1048576", "--decode", "8192"])
    assert (ok.components, ok.prefill, ok.decode) == (64, [1048576], [8192])
    ok = parser.parse_args(["--iters", "100000", "--repeats", "1000"])
    assert (ok.iters, ok.repeats) == (100000, 1000)
