"""``kvsim bench connectors``: address variants side by side, per request, against the floor.

One request is the address stage of one load: for every KV-cache group, one
``prepare_values`` call over all chunks (``--handler per_group``) or one
``prepare_value`` call per chunk (``per_chunk``). Store keys (``chunk_list``) are
left out: they cost every variant the same and would only blur the ratios.

Each variant gets its inputs in the form it declares natively, prepared
outside the measured region for every variant alike: lists of ``(start, end)``
tuples and block tables as lists (the upstream contract), or int64 arrays for a
``buffer_inputs`` what-if (``array``), marked ``arrays`` in the output. Every
repeat draws fresh block tables; the order of the rows rotates each repeat so
drift on a shared machine hits all alike. Figures are medians over
``--repeats`` requests after warm-up, and the median of three sustained runs of ``--repeats``
requests back to back per row (see :mod:`.connector_timing`).

Modules: :mod:`.connector_args` (geometry and variant specs),
:mod:`.connector_floor` (the list-building floor), :mod:`.connector_timing`
(hold, GC and sustained timing), :mod:`.connector_report` (rows, ratios, table).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connectors import registry
from connectors.token_database import TokenDatabase
from sim.benches.connector_args import (
    SEED_CHUNKS,
    BenchGeometry,
    VariantSpec,
    bench_geometry,
    int_list,
    parse_variant_spec,
)
from sim.benches.connector_floor import FLOOR, FLOOR_PROMOTE, Floor
from sim.benches.connector_report import (
    BASELINE,
    CSV_COLUMNS,
    LEGEND,
    RowMeasure,
    result_rows,
    table,
)
from sim.conformance.check import first_difference
from sim.conformance.corpus import Case, Geometry
from sim.console import output_console

__all__ = [
    "CSV_COLUMNS",
    "HELP",
    "BenchGeometry",
    "VariantSpec",
    "add_arguments",
    "bench_geometry",
    "main",
    "parse_variant_spec",
    "run_bench",
]

HELP = "address variants: GIL hold and wall per request vs scalar and the list-building floor"

#: Listed first, in this order, when no --variants are given; any other registered variant follows.
_PREFERRED = ("scalar", "numpy", "numba", "rows", "array")
#: Block-table sets cycled through by a sustained run.
_SUSTAINED_TABLES = 4
#: Sustained runs of --repeats requests per row (rotated order); their median is reported.
_SUSTAINED_BLOCKS = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", type=Path, help="take the geometry (and fixed tokens) from this YAML"
    )
    p.add_argument("--regions", type=int, help="KV-cache regions (default 61, the seed's)")
    p.add_argument("--chunks", type=int, help=f"chunks per request (default {SEED_CHUNKS})")
    p.add_argument("--block-size", type=int, help="tokens per chunk (default 128)")
    p.add_argument("--block-len", type=int_list, help="bytes per block, comma-separated, repeats")
    p.add_argument("--groups", type=int, help="KV-cache groups (default 1)")
    p.add_argument("--handler", choices=["per_group", "per_chunk"], default="per_group")
    p.add_argument("--repeats", type=int, default=21, help="measured requests per variant")
    p.add_argument(
        "--variants",
        help="comma-separated variants, each NAME or NAME:key=value (default: every "
        "registered variant that computes addresses)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the block tables")
    p.add_argument(
        "--csv", type=Path, default=Path("results/bench-connectors.csv"), help="CSV to write"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the --csv file when it exists (without it an existing file is a "
        "reason to refuse, before anything is measured)",
    )


def _as_lists(part: Any) -> Any:
    """Arrays (the ``array`` what-if) as lists, so that every variant compares with scalar."""
    if isinstance(part, (list, tuple)):
        return [x if isinstance(x, int) else _as_lists(x) for x in part]

    return np.asarray(part).tolist()


class _Candidate:
    """One row: ``prepare`` (untimed) turns list inputs into its native payload, ``request``
    (timed) is one request on that payload."""

    def __init__(
        self,
        inputs: str,
        floor: str,
        prepare: Callable[[list[Any]], Any],
        request: Callable[[Any], Any],
    ) -> None:
        self.inputs, self.floor, self.prepare, self.request = inputs, floor, prepare, request


def _variant_candidate(insts: list[Any], chunks: list[tuple[int, int]], handler: str) -> _Candidate:
    buffers = bool(type(insts[0]).buffer_inputs)
    native_chunks: Any = np.asarray(chunks, dtype=np.int64).reshape(-1, 2) if buffers else chunks

    def prepare(tables: list[Any]) -> list[Any]:
        return [np.asarray(t, dtype=np.int64) for t in tables] if buffers else tables

    def request(tables: list[Any]) -> list[Any]:
        return [v.addresses(native_chunks, t, handler) for v, t in zip(insts, tables, strict=True)]

    floor = FLOOR_PROMOTE if getattr(insts[0], "promotes_young", False) else FLOOR
    return _Candidate("arrays" if buffers else "lists", floor, prepare, request)


def _check_against_scalar(
    candidates: dict[str, _Candidate], dbs: Sequence[Any], chunks: list[Any], tables: list[Any]
) -> None:
    """Refuse to time a variant whose addresses differ from scalar's (on its native inputs)."""
    ref = registry.get_address_variant(BASELINE)
    want = [ref(db).prepare_values(chunks, t) for db, t in zip(dbs, tables, strict=True)]
    for label, cand in candidates.items():
        payload = cand.prepare(tables)
        for _ in range(2):
            got = cand.request(payload)
        if cand.inputs == "arrays":  # a buffer what-if (``array``): arrays out, by design
            if [_as_lists(g) for g in got] != [_as_lists(w) for w in want]:
                raise RuntimeError(f"variant {label!r} computed addresses that differ from scalar")
            continue
        # The list contract, value by value and type by type: equal values in NumPy
        # arrays or numpy.int64 are not what the bindings take, and are not listed as lists.
        for g, (db, t) in enumerate(zip(dbs, tables, strict=True)):
            case = Case(
                Geometry(f"the bench's geometry (group {g})", db),
                f"{len(chunks)} chunks",
                tuple(chunks),
                tuple(t),
                "the bench's handler",
            )
            found = first_difference(case, want[g], got[g])
            if found:
                raise RuntimeError(f"variant {label!r} is not timed: {found}")


def run_bench(
    bg: BenchGeometry,
    specs: Sequence[VariantSpec],
    repeats: int = 21,
    handler: str = "per_group",
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per variant and per floor; ratios from the medians measured here."""
    # the GIL meter (sim.instruments): not with `kvsim bench --help`
    from sim.benches.connector_timing import METRICS, gc_harness, measure_once, measure_sustained

    if repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {repeats}")
    geo = bg.geometry
    dbs = [TokenDatabase.from_geometry(geo, g) for g in range(geo.kv_groups)]
    chunks = list(dbs[0].chunk_spans(bg.tokens))
    rng = np.random.default_rng(seed)

    def draw_tables() -> list[list[int]]:
        return [
            rng.integers(0, geo.num_blocks, size=len(chunks), dtype=np.int64).tolist() for _ in dbs
        ]

    candidates: dict[str, _Candidate] = {}
    for spec in specs:
        cls = registry.get_address_variant(spec.name)
        if not cls.computes_addresses:
            raise ValueError(f"variant {spec.name!r} computes no addresses; nothing to bench")
        options = cls.validate_options(spec.options)
        insts = [cls(db, options) for db in dbs]
        for inst in insts:
            inst.warm_up()
        candidates[spec.label] = _variant_candidate(insts, chunks, handler)
    for label, promote in ((FLOOR, False), (FLOOR_PROMOTE, True)):
        floor = Floor(dbs, chunks, promote)
        candidates[label] = _Candidate("lists", label, floor.prepare, floor.request)

    tables = draw_tables()
    _check_against_scalar(
        {k: c for k, c in candidates.items() if k not in (FLOOR, FLOOR_PROMOTE)},
        dbs,
        chunks,
        tables,
    )
    labels = list(candidates)
    measures = {
        label: RowMeasure(c.inputs, c.floor, {k: [] for k in METRICS})
        for label, c in candidates.items()
    }
    sustained_tables = [draw_tables() for _ in range(_SUSTAINED_TABLES)]
    with gc_harness() as clock:
        for rep in range(repeats):
            tables = draw_tables()
            shift = rep % len(labels)
            for label in labels[shift:] + labels[:shift]:
                cand = candidates[label]
                payload = cand.prepare(tables)
                measure_once(lambda c=cand, p=payload: c.request(p), measures[label].samples, clock)
        sustained: dict[str, list[tuple[float, float, float]]] = {label: [] for label in labels}
        for block in range(_SUSTAINED_BLOCKS):
            shift = block % len(labels)
            for label in labels[shift:] + labels[:shift]:
                cand = candidates[label]
                payloads = [cand.prepare(t) for t in sustained_tables]
                sustained[label].append(
                    measure_sustained(
                        lambda i, c=cand, p=payloads: c.request(p[i % len(p)]), repeats, clock
                    )
                )
    for label, runs in sustained.items():
        m = measures[label]
        m.sustained_hold_ms = statistics.median(h for h, _g, _n in runs)
        m.sustained_gc_ms = statistics.median(g for _h, g, _n in runs)
        m.sustained_gc_count = statistics.median(n for _h, _g, n in runs)
    fixed = {
        "regions": geo.regions,
        "block_len": ",".join(str(b) for b in geo.block_len),
        "block_size": geo.block_size,
        "hash_block_size": geo.chunk_granularity,
        "groups": geo.kv_groups,
        "chunks": len(chunks),
        "tokens": bg.tokens,
        "handler": handler,
        "repeats": repeats,
    }
    return result_rows(measures, fixed)


def default_specs() -> list[VariantSpec]:
    names = [
        n
        for n in registry.address_variant_names()
        if registry.get_address_variant(n).computes_addresses
    ]
    names.sort(key=lambda n: (_PREFERRED.index(n) if n in _PREFERRED else len(_PREFERRED), n))
    return [VariantSpec(n, n, {}) for n in names]


def main(args: argparse.Namespace) -> int:
    # The run directory's modules load only when results are written, not with --help.
    from sim.rundir.claim import claim_outputs  # the run directory: not with --help
    from sim.rundir.manifest import machine_info, package_versions  # not with --help
    from sim.rundir.outputs import write_csv  # the run directory: not with --help

    claim_outputs([args.csv], args.force, option="--csv")  # before minutes of measuring
    console = output_console()
    try:
        bg = bench_geometry(args)
        specs = (
            [parse_variant_spec(v) for v in args.variants.split(",") if v.strip()]
            if args.variants
            else default_specs()
        )
        if not specs:
            raise ValueError("--variants names no variant")
        rows = run_bench(bg, specs, args.repeats, args.handler, args.seed)
    except (ValueError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"kvsim bench connectors: error: {msg}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # a variant that fails or computes wrong addresses
        print(f"kvsim bench connectors: error: {exc}", file=sys.stderr)
        return 1
    machine = machine_info()
    versions = package_versions()
    for r in rows:
        r.update(
            python=machine["python"],
            numpy=versions.get("numpy"),
            numba=versions.get("numba"),
            cpu_model=machine["cpu_model"],
        )
    geo = bg.geometry
    title = (
        f"address variants · {geo.regions} regions × {rows[0]['chunks']} chunks of "
        f"{geo.block_size} tokens · {geo.kv_groups} group(s) · {args.handler} · "
        f"median of {args.repeats} requests"
    )
    console.print(table(rows, title))
    console.print(
        f"[dim]{LEGEND} · {machine['cpu_model']} · {machine['cpu_affinity']} CPUs · "
        "timings are noisy on a shared machine[/dim]"
    )
    write_csv(args.csv, CSV_COLUMNS, rows)
    console.print(f"wrote {args.csv}")
    return 0
