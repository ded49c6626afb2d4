"""``kvsim bench connectors``: address variants side by side, per request, against the floor.

One request is the address stage of one load: for every KV-cache group, one
``prepare_values`` call over all chunks (``--handler per_group``) or one
``prepare_value`` call per chunk (``per_chunk``). Store keys (``chunk_list``) are
left out: they cost every variant the same and would only blur the ratios.

Per variant and request, measured with the GIL meter of the simulator
(``sim.gilmeter.measure``): GIL hold (thread CPU time minus the CPU time of
declared GIL-free sections), wall time, declared GIL-free CPU; and, timed with
``gc.callbacks``, the cyclic GC's CPU time inside the request (part of the hold)
and its **GC debt**: every collection after the request ended — one fires at
the next container allocation — plus a generation-0 collection run with the
result still alive. That is the scan of new containers the request left for
someone else to pay: large for variants that pause the GC, small for those that
let it run inside the call. Figures are medians over ``--repeats``
requests after warm-up; every repeat draws fresh block tables, and the order of
the variants rotates each repeat so drift on a shared machine hits all alike.

The **floor** is the cost of building the outputs the list contract requires
and nothing else: from int64 values computed beforehand (untimed), the address
rows by one ``ndarray.tolist()`` (each address is a distinct value, so each
needs a new int), one fresh ``list.copy()`` per chunk of the one size row per
distinct block count (equal rows share their ints), and the block-id list by
``tolist()``; with the GC paused, so that it is pure construction. It leaves the
same GC debt as any variant that builds the same lists with the GC paused.

Before each request the heap is collected, after ``gc.freeze()`` moved
everything that existed after warm-up out of the collector's sight: each
request starts from empty young generations, and a collection triggered inside
a request scans only what the bench and the request created (a lower bound of
what it would scan in a large engine process). The freeze is undone at the end.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

__all__ = [
    "CSV_COLUMNS",
    "HELP",
    "BenchGeometry",
    "VariantSpec",
    "add_arguments",
    "main",
    "parse_variant_spec",
    "run_bench",
]

HELP = "address variants: GIL hold and wall per request vs scalar and the list-building floor"

BASELINE = "scalar"
FLOOR = "floor"
#: Listed first, in this order, when no --variants are given; any other registered variant follows.
_PREFERRED = ("scalar", "numpy", "numba", "rows", "array")
SEED_CHUNKS = 2258

# fmt: off
CSV_COLUMNS = [
    "variant", "gil_hold_ms", "wall_ms", "free_cpu_ms", "gc_in_call_ms", "gc_debt_ms",
    "hold_vs_scalar", "hold_vs_floor", "wall_vs_scalar", "hold_plus_debt_vs_scalar",
    "regions", "block_len", "block_size", "hash_block_size", "groups", "chunks", "tokens",
    "handler", "repeats", "python", "numpy", "numba", "cpu_model",
]
# fmt: on


@dataclass(frozen=True)
class BenchGeometry:
    """What one bench request looks like."""

    geometry: Any  # sim.config.GeometryConfig
    tokens: int


@dataclass(frozen=True)
class VariantSpec:
    """``NAME`` or ``NAME:key=value:...`` from --variants; ``label`` names its row."""

    label: str
    name: str
    options: dict[str, Any]


def parse_variant_spec(text: str) -> VariantSpec:
    """``rows:share_size_rows=true`` -> VariantSpec; values are read as YAML scalars."""
    import yaml

    name, *pairs = (p.strip() for p in text.strip().split(":"))
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"variant spec {text!r}: expected NAME:key=value, got {pair!r}")
        options[key.strip()] = yaml.safe_load(value)
    return VariantSpec(text.strip(), name, options)


def _ints(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not out or any(v < 1 for v in out):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", type=Path, help="take the geometry (and fixed tokens) from this YAML"
    )
    p.add_argument("--regions", type=int, help="KV-cache regions (default 61, the seed's)")
    p.add_argument("--chunks", type=int, help=f"chunks per request (default {SEED_CHUNKS})")
    p.add_argument("--block-size", type=int, help="tokens per chunk (default 128)")
    p.add_argument("--block-len", type=_ints, help="bytes per block, comma-separated, repeats")
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


def bench_geometry(args: argparse.Namespace) -> BenchGeometry:
    """The geometry from --config and/or flags (flags win); ValueError with the field at fault."""
    from pydantic import ValidationError

    from ..config import GeometryConfig, load_config
    from ..config.workload import FixedTokens

    raw: dict[str, Any] = {}
    tokens = None
    if args.config is not None:
        cfg = load_config(args.config)
        raw = cfg.model.model_dump(exclude={"preset", "hf_config", "tp", "kv_dtype"})
        if isinstance(cfg.workload.tokens, FixedTokens):
            tokens = cfg.workload.tokens.value
    for flag, key in (
        ("regions", "regions"),
        ("block_size", "block_size"),
        ("block_len", "block_len"),
        ("groups", "kv_groups"),
    ):
        if getattr(args, flag) is not None:
            raw[key] = getattr(args, flag)
    if args.regions is not None and args.block_len is None and "block_len" in raw:
        raw["block_len"] = raw["block_len"][: args.regions]
    try:
        geo = GeometryConfig(**raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "geometry"
        raise ValueError(f"{field}: {err['msg']}") from None
    if args.chunks is not None or tokens is None:
        chunks = SEED_CHUNKS if args.chunks is None else args.chunks
        if chunks < 1:
            raise ValueError(f"--chunks must be >= 1, got {chunks}")
        tokens = chunks * geo.block_size
    gran = geo.chunk_granularity
    return BenchGeometry(geo, max(gran, tokens - tokens % gran))


def _as_lists(part: Any) -> Any:
    """Arrays (the ``array`` what-if) as lists, so that every variant compares with scalar."""
    if isinstance(part, (list, tuple)):
        return [x if isinstance(x, int) else _as_lists(x) for x in part]
    import numpy as np

    return np.asarray(part).tolist()


class _Floor:
    """Building exactly the outputs of one request from precomputed int64 values."""

    def __init__(self, dbs: Sequence[Any], chunks: list[tuple[int, int]]) -> None:
        import numpy as np

        self._np = np
        self._dbs = dbs
        self._chunks = chunks
        spans = np.array([e - s for s, e in chunks], dtype=np.int64)
        block_size = dbs[0].block_size
        self._idx = np.array([s // block_size for s, _e in chunks], dtype=np.int64)
        self._counts = ((spans + block_size - 1) // block_size).tolist()
        self._uniform = len(set(self._counts)) == 1
        self._prepared: list[tuple[Any, dict[int, list[int]], Any]] = []

    def prepare(self, tables: Sequence[list[int]]) -> None:
        """Untimed: every group's values as int64 arrays and its size-row prototypes."""
        np = self._np
        self._prepared = []
        for db, table in zip(self._dbs, tables, strict=True):
            bids = np.asarray(table, dtype=np.int64)[self._idx]
            base = np.asarray(db.kv_caches_base_addr, dtype=np.int64)
            blen = np.asarray(db.region_block_len(), dtype=np.int64)
            addrs = base[None, :] + bids[:, None] * blen[None, :]
            protos = {k: [b * k for b in db.region_block_len()] for k in set(self._counts)}
            self._prepared.append((addrs, protos, bids))

    def request(self) -> list[Any]:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            out = []
            n = len(self._chunks)
            for addrs, protos, bids in self._prepared:
                a = addrs.tolist()
                if self._uniform:
                    s = list(map(list.copy, repeat(protos[self._counts[0]], n)))
                else:
                    s = list(map(list.copy, map(protos.__getitem__, self._counts)))
                out.append((a, s, bids.tolist()))
            return out
        finally:
            if was_enabled:
                gc.enable()


class _GcClock:
    """``gc.callbacks`` entry: the wall start and thread CPU time of every collection."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int]] = []
        self._t0 = (0, 0)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = (time.perf_counter_ns(), time.thread_time_ns())
        else:
            self.runs.append((self._t0[0], time.thread_time_ns() - self._t0[1]))


_METRICS = ("hold", "wall", "free", "gc_in", "debt")


def _measure_once(fn: Callable[[], Any], samples: dict[str, list[float]], clock: _GcClock) -> None:
    """One request: its timing, the GC it ran inside, and the GC it left behind.

    The debt is every collection after the request ended (one may fire at the
    meter's own next allocation) plus an explicit generation-0 collection with
    the result still alive.
    """
    from ..gilmeter import measure

    gc.collect()
    clock.runs.clear()
    result, error, t = measure(fn)
    if error is not None:
        raise RuntimeError(f"{type(error).__name__}: {error}") from error
    gc.collect(0)
    del result
    gc_in = sum(cpu for start, cpu in clock.runs if start < t.end_ns)
    gc_after = sum(cpu for start, cpu in clock.runs if start >= t.end_ns)
    for key, ns in zip(
        _METRICS, (t.hold_ns, t.wall_ns, t.free_cpu_ns, gc_in, gc_after), strict=True
    ):
        samples[key].append(ns / 1e6)


def _warm_up_and_check(
    runners: dict[str, list[Any]],
    dbs: Sequence[Any],
    chunks: list[tuple[int, int]],
    tables: list[list[int]],
    handler: str,
) -> None:
    """Warm every variant up; refuse to time one whose addresses differ from scalar's."""
    from connectors import registry

    ref = registry.get_address_variant(BASELINE)
    want = [
        _as_lists(ref(db).addresses(chunks, t, handler)) for db, t in zip(dbs, tables, strict=True)
    ]
    for label, insts in runners.items():
        for inst in insts:
            inst.warm_up()
        for _ in range(2):
            got = [v.addresses(chunks, t, handler) for v, t in zip(insts, tables, strict=True)]
        if [_as_lists(g) for g in got] != want:
            raise RuntimeError(f"variant {label!r} computed addresses that differ from scalar")


def run_bench(
    bg: BenchGeometry,
    specs: Sequence[VariantSpec],
    repeats: int = 21,
    handler: str = "per_group",
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per variant and one for the floor; ratios from the medians measured here."""
    import numpy as np

    from connectors import registry
    from connectors.token_database import TokenDatabase

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

    runners: dict[str, list[Any]] = {}
    for spec in specs:
        cls = registry.get_address_variant(spec.name)
        if not cls.computes_addresses:
            raise ValueError(f"variant {spec.name!r} computes no addresses; nothing to bench")
        options = cls.validate_options(spec.options)
        runners[spec.label] = [cls(db, options) for db in dbs]
    floor = _Floor(dbs, chunks)

    tables = draw_tables()
    _warm_up_and_check(runners, dbs, chunks, tables, handler)
    floor.prepare(tables)
    floor.request()

    labels = [*runners, FLOOR]
    samples = {label: {k: [] for k in _METRICS} for label in labels}
    clock = _GcClock()
    frozen_before = gc.get_freeze_count()
    gc.collect()
    gc.freeze()
    gc.callbacks.append(clock)
    try:
        for rep in range(repeats):
            tables = draw_tables()
            floor.prepare(tables)
            shift = rep % len(labels)
            for label in labels[shift:] + labels[:shift]:
                if label == FLOOR:
                    fn = floor.request
                else:
                    insts = runners[label]

                    def fn(insts: list[Any] = insts, tables: list[list[int]] = tables) -> Any:
                        return [
                            v.addresses(chunks, t, handler)
                            for v, t in zip(insts, tables, strict=True)
                        ]

                _measure_once(fn, samples[label], clock)
    finally:
        gc.callbacks.remove(clock)
        if frozen_before == 0:
            gc.unfreeze()

    med = {label: {k: statistics.median(v) for k, v in samples[label].items()} for label in labels}
    base = med.get(BASELINE)
    fl = med[FLOOR]

    def ratio(num: float, den: float | None) -> float:
        return num / den if den and not math.isnan(den) else math.nan

    rows = []
    for label in labels:
        m = med[label]
        rows.append(
            {
                "variant": label,
                "gil_hold_ms": m["hold"],
                "wall_ms": m["wall"],
                "free_cpu_ms": m["free"],
                "gc_in_call_ms": m["gc_in"],
                "gc_debt_ms": m["debt"],
                "hold_vs_scalar": ratio(m["hold"], base and base["hold"]),
                "hold_vs_floor": ratio(m["hold"], fl["hold"]),
                "wall_vs_scalar": ratio(m["wall"], base and base["wall"]),
                "hold_plus_debt_vs_scalar": ratio(
                    m["hold"] + m["debt"], base and base["hold"] + base["debt"]
                ),
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
        )
    return rows


def default_specs() -> list[VariantSpec]:
    from connectors import registry

    names = [
        n
        for n in registry.address_variant_names()
        if registry.get_address_variant(n).computes_addresses
    ]
    names.sort(key=lambda n: (_PREFERRED.index(n) if n in _PREFERRED else len(_PREFERRED), n))
    return [VariantSpec(n, n, {}) for n in names]


def _cell(r: float) -> str:
    if math.isnan(r):
        return "—"
    return f"{r:.3f}" if r < 10 else f"{r:.2f}" if r < 100 else f"{r:.1f}"


def _table(rows: Sequence[dict[str, Any]], title: str) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("variant", no_wrap=True)
    cols = {
        "hold\nms": "gil_hold_ms",
        "wall\nms": "wall_ms",
        "free\nms": "free_cpu_ms",
        "GC in\nms": "gc_in_call_ms",
        "GC debt\nms": "gc_debt_ms",
        "hold\n÷scalar": "hold_vs_scalar",
        "hold\n÷floor": "hold_vs_floor",
        "+debt\n÷scalar": "hold_plus_debt_vs_scalar",
    }
    for col in cols:
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        if r["variant"] == FLOOR:
            table.add_section()
        table.add_row(r["variant"], *(_cell(r[k]) for k in cols.values()))
    return table


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..manifest import machine_info, package_versions
    from ..outputs import write_csv

    console = Console()
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
    console.print(_table(rows, title))
    console.print(
        "[dim]hold: GIL hold (thread CPU - declared GIL-free CPU); free: declared GIL-free "
        "CPU; GC in: collections inside the request (part of hold); GC debt: collections it "
        "left for the next allocation; +debt: (hold + GC debt) ratio; floor: building the "
        "required lists alone, GC paused; wall ratios in the CSV"
        f" · {machine['cpu_model']} · "
        f"{machine['cpu_affinity']} CPUs · timings are noisy on a shared machine[/dim]"
    )
    write_csv(args.csv, CSV_COLUMNS, rows)
    console.print(f"wrote {args.csv}")
    return 0
