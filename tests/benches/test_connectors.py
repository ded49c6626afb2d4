"""``kvsim bench connectors`` on a tiny geometry: table, CSV, ratios from measured numbers."""

from __future__ import annotations

import gc
import math
from pathlib import Path
from typing import Any

import pytest

from connectors.base import AddressVariant
from connectors.registry import ADDRESS_VARIANTS
from sim.benches import connectors as bench
from sim.cli import main
from sim.rundir.outputs import read_csv

TINY = ["--regions", "4", "--chunks", "12", "--block-size", "16", "--repeats", "3"]


def _run(tmp_path: Path, capsys, *extra: str) -> tuple[int, list[dict[str, str]], str]:
    """Run the bench; returns (exit code, CSV rows, stdout + stderr)."""
    csv = tmp_path / "bench.csv"
    rc = main(["bench", "connectors", *TINY, "--csv", str(csv), *extra])
    cap = capsys.readouterr()
    return rc, (read_csv(csv) if csv.exists() else []), cap.out + cap.err


def test_bench_writes_every_variant_and_the_floor(tmp_path: Path, capsys) -> None:
    rc, rows, out = _run(tmp_path, capsys)
    assert rc == 0
    assert list(rows[0]) == bench.CSV_COLUMNS
    names = [r["variant"] for r in rows]
    assert names[0] == "scalar" and names[-2:] == ["floor", "floor:promote"]
    assert {"numpy", "numba", "rows", "array"} <= set(names)
    assert "noop" not in names and "synthetic" not in names  # they compute no addresses
    for r in rows:
        assert (r["regions"], r["chunks"], r["block_size"], r["repeats"]) == ("4", "12", "16", "3")
        assert float(r["gil_hold_ms"]) > 0 and float(r["wall_ms"]) > 0
        assert float(r["gc_debt_ms"]) >= 0 and float(r["free_cpu_ms"]) >= 0
        assert float(r["sustained_hold_ms"]) > 0 and float(r["sustained_gc_ms"]) >= 0
        # Only a buffer_inputs what-if is handed arrays; every other row gets lists.
        assert r["inputs"] == ("arrays" if r["variant"] == "array" else "lists")
    for name in names:
        assert name in out
    assert "÷scalar" in out and "÷floor" in out and "GC debt" in out


def test_ratios_are_the_measured_medians_divided(tmp_path: Path, capsys) -> None:
    promoted = "rows:promote_young=true"
    rc, rows, _ = _run(tmp_path, capsys, "--variants", f"scalar,rows,{promoted},array")
    assert rc == 0
    by = {r["variant"]: {k: _num(v) for k, v in r.items()} for r in rows}
    assert list(by) == ["scalar", "rows", promoted, "array", "floor", "floor:promote"]
    s = by["scalar"]
    # A promoting variant is compared with the floor that promotes too.
    assert by[promoted]["floor"] == "floor:promote" and by["rows"]["floor"] == "floor"
    for r in by.values():
        f = by[r["floor"]]
        assert math.isclose(r["hold_vs_scalar"], r["gil_hold_ms"] / s["gil_hold_ms"], rel_tol=1e-4)
        assert math.isclose(r["hold_vs_floor"], r["gil_hold_ms"] / f["gil_hold_ms"], rel_tol=1e-4)
        sus = r["sustained_hold_ms"]
        assert math.isclose(r["sustained_vs_scalar"], sus / s["sustained_hold_ms"], rel_tol=1e-4)
        assert math.isclose(r["sustained_vs_floor"], sus / f["sustained_hold_ms"], rel_tol=1e-4)
        assert math.isclose(r["wall_vs_scalar"], r["wall_ms"] / s["wall_ms"], rel_tol=1e-4)
        both = (r["gil_hold_ms"] + r["gc_debt_ms"]) / (s["gil_hold_ms"] + s["gc_debt_ms"])
        assert math.isclose(r["hold_plus_debt_vs_scalar"], both, rel_tol=1e-3)
    assert by["scalar"]["hold_vs_scalar"] == 1.0
    # The kernel variants declare GIL-free time; scalar and the floor declare none.
    assert by["array"]["free_cpu_ms"] > 0 and by["scalar"]["free_cpu_ms"] == 0
    assert by["floor"]["free_cpu_ms"] == 0


def _num(v: str) -> float | str:
    try:
        return float(v)
    except ValueError:
        return v


@pytest.mark.parametrize("handler", ["per_chunk", "per_group"])
def test_bench_leaves_the_gc_as_it_found_it(tmp_path: Path, capsys, handler: str) -> None:
    callbacks = list(gc.callbacks)
    variants = "rows,rows:promote_young=true,array"
    rc, _, _ = _run(tmp_path, capsys, "--variants", variants, "--handler", handler)
    assert rc == 0
    assert gc.isenabled() and gc.get_freeze_count() == 0 and gc.callbacks == callbacks


def test_promoting_leaves_no_young_collection_behind(tmp_path: Path, capsys) -> None:
    """The per-call GC debt of a promoting run is a small fraction of the pausing one's."""
    rc, rows, _ = _run(
        tmp_path, capsys, "--variants", "rows,rows:promote_young=true", "--chunks", "400"
    )
    assert rc == 0
    by = {r["variant"]: float(r["gc_debt_ms"]) for r in rows}
    assert by["rows:promote_young=true"] < by["rows"] / 3
    assert by["floor:promote"] < by["floor"] / 3


def test_geometry_from_a_config(tmp_path: Path, capsys, write_config) -> None:
    path = write_config({"model": {"kv_groups": 2}})  # tiny: 4 regions, [1024, 2048], 160 tokens
    csv = tmp_path / "cfg.csv"
    argv = ["bench", "connectors", "--config", str(path), "--repeats", "2", "--csv", str(csv)]
    assert main([*argv, "--variants", "scalar,numba"]) == 0
    rows = read_csv(csv)
    r = rows[0]
    assert (r["regions"], r["block_len"], r["block_size"]) == ("4", "1024,2048", "16")
    assert (r["groups"], r["tokens"], r["chunks"]) == ("2", "160", "10")
    capsys.readouterr()


def test_variant_options_in_the_spec(tmp_path: Path, capsys) -> None:
    rc, rows, _ = _run(tmp_path, capsys, "--variants", "scalar,rows:share_size_rows=true")
    assert rc == 0
    assert [r["variant"] for r in rows] == [
        "scalar",
        "rows:share_size_rows=true",
        "floor",
        "floor:promote",
    ]
    assert bench.parse_variant_spec("rows:pause_gc=false").options == {"pause_gc": False}


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        ("scalar,nope", "unknown variant 'nope'"),
        ("noop", "computes no addresses"),
        ("rows:bogus=1", "bogus"),
        ("rows:oops", "expected NAME:key=value"),
    ],
)
def test_bad_variants_are_one_line_errors(tmp_path: Path, capsys, variants, message) -> None:
    rc, _, out = _run(tmp_path, capsys, "--variants", variants)
    assert rc == 2
    assert message in out and "Traceback" not in out


def test_bad_geometry_names_the_field(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "x.csv"
    rc = main(["bench", "connectors", "--regions", "2", "--block-len", "1,2,3", "--csv", str(csv)])
    err = capsys.readouterr().err
    assert rc == 2 and "block_len" in err and not csv.exists()


class _Wrong(AddressVariant):
    name = "test-wrong-addresses"
    description = "test only: off by one"

    def prepare_values(self, chunks: Any, block_ids: Any) -> Any:
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [[a + 1 for a in o[0]] for o in out], [o[1] for o in out], [o[2] for o in out]


def test_a_variant_with_wrong_addresses_gets_no_figure(tmp_path: Path, capsys) -> None:
    with ADDRESS_VARIANTS.temporary(_Wrong):
        rc, rows, out = _run(tmp_path, capsys, "--variants", f"scalar,{_Wrong.name}")
    assert rc == 1 and rows == []
    assert "variant 'test-wrong-addresses' is not timed: the bench's geometry (group 0)" in out
    assert "chunk 0, region 0: address expected 0x" in out


class _NumpyOut(AddressVariant):
    name = "test-numpy-out"
    description = "test only: the right values, as NumPy arrays (what the bindings reject)"

    def prepare_values(self, chunks: Any, block_ids: Any) -> Any:
        import numpy as np

        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [np.array(o[0]) for o in out], [o[1] for o in out], [o[2] for o in out]


def test_a_variant_returning_arrays_is_not_timed_as_a_list_variant(tmp_path: Path, capsys) -> None:
    with ADDRESS_VARIANTS.temporary(_NumpyOut):
        rc, rows, out = _run(tmp_path, capsys, "--variants", f"scalar,{_NumpyOut.name}")
    assert rc == 1 and rows == []
    assert "variant 'test-numpy-out' is not timed: " in out
    assert "chunk 0: the addresses are a numpy.ndarray, not a list" in out


def test_a_request_past_the_configs_token_bound_is_refused_before_it_is_built() -> None:
    """``--chunks 1000000000`` (128 G tokens) went on building the request until memory
    ran out; the config's own bound on a request's tokens applies (checked, not run)."""
    import argparse

    from sim.benches.connector_args import bench_geometry

    flags = dict(config=None, regions=None, block_size=None, block_len=None, groups=None)
    with pytest.raises(ValueError, match=r"--chunks 1000000000: .* out of range"):
        bench_geometry(argparse.Namespace(**flags, chunks=10**9))
    assert bench_geometry(argparse.Namespace(**flags, chunks=100)).tokens == 100 * 128
