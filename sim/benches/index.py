"""``kvsim bench index``: the token-to-request index variants, µs per engine step.

One step is what the engine pays for the index: a fresh metadata object (as
each step has) and the index of every one of K components. ``query_start_loc``
and its device copy are prepared once per batch shape, because the model runner
makes them for every variant alike. All variants run in one process, their order
rotated every repeat so drift on a shared machine hits them alike; each figure
is the median over repeats of the mean over ``iters`` steps, with the p10 and p90
of those repeats beside it (a median that jumps between runs shows as a wide
spread). Warm-up — one untimed block of ``iters`` steps per variant and case, so
first-touch allocations and lazy initialisation stay out — precedes timing. The
ratio is a time ratio, as everywhere in kvsim: the variant's time ÷ the
baseline's (below 1 is faster), plus "× faster" in words. On
CUDA the device is synchronised at the end of each timed block, so queued copies
and kernels are paid for. Ratios are printed, never a pass/fail threshold.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from connectors import registry
from connectors.token_index import MetadataFactory, StepMetadata, reference_index
from sim.config.engine import EngineConfig
from sim.console import output_console

__all__ = ["HELP", "BenchCase", "add_arguments", "default_cases", "main", "run_bench"]

HELP = "token-to-request index variants: µs per engine step and ratio to per_component"

BASELINE = "per_component"
CSV_COLUMNS = [
    "case",
    "batch_size",
    "tokens",
    "padded_tokens",
    "variant",
    "components",
    "device",
    "us_per_step",
    "us_p10",
    "us_p90",
    "time_ratio_vs_per_component",
    "repeats",
    "iters",
    "torch",
    "cpu_model",
]


@dataclass(frozen=True)
class BenchCase:
    """One batch shape: its name and each request's query length."""

    name: str
    query_lens: tuple[int, ...]

    @property
    def tokens(self) -> int:
        return sum(self.query_lens)


def default_cases(
    decode: Sequence[int] = (32, 256, 512), prefill: Sequence[int] = (512,)
) -> list[BenchCase]:
    """Decode batches of N one-token requests, and prefill chunks of one N-token request."""
    cases = [BenchCase(f"decode-{n}", (1,) * n) for n in decode]
    cases += [BenchCase(f"prefill-{n}", (n,)) for n in prefill]
    return cases


def _sizes(text: str, most: int) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if any(n < 1 or n > most for n in out):
        raise argparse.ArgumentTypeError(f"sizes must be 1 to {most:,}, got {text!r}")
    return out


def _upto(most: int) -> Callable[[str], int]:
    """An int of 1 to ``most``: the engine config's own bound on the same thing (1e9
    components or tokens ran out of memory, with a traceback, instead of an error)."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not 1 <= n <= most:
            raise argparse.ArgumentTypeError(f"must be 1 to {most:,}, got {text!r}")
        return n

    return parse


def _engine_bound(field: str) -> int:
    """The engine config's own upper bound on ``field`` (sim.config.engine), read from it."""
    return next(int(m.le) for m in EngineConfig.model_fields[field].metadata if hasattr(m, "le"))


#: Requests a step (decode), tokens of a prefill step, components (K), padding multiple.
_MOST_DECODE = _engine_bound("batch_size")
_MOST_PREFILL = _engine_bound("prefill_tokens")
_MOST_COMPONENTS = _engine_bound("components")
_MOST_PAD = _engine_bound("pad_multiple")
#: Timed blocks and steps a block: the defaults' 21 and 200 take seconds; these bounds,
#: hours at the largest batch.
_MOST_REPEATS = 1000
_MOST_ITERS = 100_000


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--components",
        type=_upto(_MOST_COMPONENTS),
        default=3,
        help="components per step, K (default 3)",
    )
    p.add_argument(
        "--decode",
        type=lambda t: _sizes(t, _MOST_DECODE),
        default=[32, 256, 512],
        help="decode batch sizes",
    )
    p.add_argument(
        "--prefill",
        type=lambda t: _sizes(t, _MOST_PREFILL),
        default=[512],
        help="prefill chunk token counts",
    )
    p.add_argument("--variants", help="comma-separated index variants (default: all)")
    # bounded as --components is: 10^9 steps a block ran for days with no word
    p.add_argument(
        "--repeats",
        type=_upto(_MOST_REPEATS),
        default=21,
        help=f"timed blocks per variant and case (1 to {_MOST_REPEATS:,})",
    )
    p.add_argument(
        "--iters",
        type=_upto(_MOST_ITERS),
        default=200,
        help=f"steps per timed block (1 to {_MOST_ITERS:,})",
    )
    p.add_argument(
        "--pad-multiple",
        type=_upto(_MOST_PAD),
        default=8,
        help="pad token counts to a multiple",
    )
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--csv", type=Path, help="also write the results to this CSV file")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the --csv file when it exists (without it an existing file is a "
        "reason to refuse, before anything is measured)",
    )


def _order(names: Sequence[str]) -> list[str]:
    """The baseline first, then the rest as given."""
    return sorted(names, key=lambda n: n != BASELINE)


def _time_block(variant: Any, make_meta: Any, iters: int) -> float:
    step = variant.step
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        step(make_meta())
    variant.synchronize()
    return (time.perf_counter_ns() - t0) / iters / 1e3


def _check(variant: Any, meta: Any) -> None:
    """Refuse to report a figure for a variant that builds a wrong index."""
    want = reference_index(meta.query_start_loc_cpu.numpy(), meta.num_tokens)
    for k, got in enumerate(variant.step(meta)):
        if not np.array_equal(got.cpu().numpy(), want):
            raise RuntimeError(
                f"index variant {variant.name!r} built a wrong index (component {k})"
            )


def run_bench(
    cases: Sequence[BenchCase],
    variant_names: Sequence[str],
    components: int = 3,
    repeats: int = 21,
    iters: int = 200,
    device: str = "auto",
    pad_multiple: int = 8,
) -> list[dict[str, Any]]:
    """One row per case and variant: median µs per step and speedup over per_component."""
    import torch  # heavy: torch loads only when the index bench runs

    if repeats < 1 or iters < 1 or components < 1 or pad_multiple < 1:
        raise ValueError("repeats, iters, components and pad-multiple must be >= 1")
    names = _order(variant_names)
    pad = lambda n: -(-n // pad_multiple) * pad_multiple  # noqa: E731
    max_tokens = max(pad(c.tokens) for c in cases)
    max_reqs = max(len(c.query_lens) for c in cases)
    variants = [registry.get_index_variant(n)(components, max_tokens, device) for n in names]
    for v in variants:
        v.warm_up()
    dev = variants[0].device
    rows: list[dict[str, Any]] = []
    for case in cases:
        factory = MetadataFactory(max_reqs, max_tokens, dev, pad_multiple)
        meta = factory.make(case.query_lens)
        qcpu, qdev, mapped, padded = (
            meta.query_start_loc_cpu,
            meta.query_start_loc,
            meta.num_mapped,
            meta.num_tokens,
        )

        def make_meta() -> StepMetadata:
            return StepMetadata(qcpu, qdev, mapped, padded)  # noqa: B023

        for v in variants:
            _check(v, make_meta())
            _time_block(v, make_meta, iters)  # warm-up: untimed
        samples: dict[str, list[float]] = {n: [] for n in names}
        for rep in range(repeats):
            shift = rep % len(variants)
            for v in variants[shift:] + variants[:shift]:
                samples[v.name].append(_time_block(v, make_meta, iters))
        medians = {n: statistics.median(s) for n, s in samples.items()}
        spread = {n: _p10_p90(s) for n, s in samples.items()}
        base = medians.get(BASELINE, float("nan"))
        for n in names:
            rows.append(
                {
                    "case": case.name,
                    "batch_size": len(case.query_lens),
                    "tokens": mapped,
                    "padded_tokens": padded,
                    "variant": n,
                    "components": components,
                    "device": dev,
                    "us_per_step": medians[n],
                    "us_p10": spread[n][0],
                    "us_p90": spread[n][1],
                    "time_ratio_vs_per_component": medians[n] / base if base > 0 else float("nan"),
                    "repeats": repeats,
                    "iters": iters,
                    "torch": torch.__version__,
                }
            )
    return rows


def _p10_p90(samples: Sequence[float]) -> tuple[float, float]:
    lo, hi = np.percentile(np.asarray(samples, dtype=float), [10, 90])
    return float(lo), float(hi)


def _ratio_text(ratio: float) -> str:
    """``0.25× (4.0× faster)``: the time ratio, then what it means."""
    if ratio != ratio:
        return "—"
    if ratio == 1.0:
        return "1.00×"
    words = f"{1 / ratio:.1f}× faster" if ratio < 1 else f"{ratio:.1f}× slower"
    return f"{ratio:.2f}× ({words})"


def _table(rows: Sequence[dict[str, Any]], title: str) -> Any:
    from rich import box  # rich loads only when the table is printed
    from rich.table import Table  # rich loads only when the table is printed

    # No vertical rules: the widest case (233.52× (233.5× slower)) fits 100 columns.
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("case")
    table.add_column("reqs", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("variant")
    table.add_column("µs/step", justify="right")
    table.add_column("p10–p90 µs", justify="right")
    table.add_column(f"time ÷ {BASELINE}", justify="right")
    previous = None
    for r in rows:
        new_case = r["case"] != previous
        if new_case and previous is not None:
            table.add_section()
        previous = r["case"]
        table.add_row(
            r["case"] if new_case else "",
            str(r["batch_size"]) if new_case else "",
            str(r["padded_tokens"]) if new_case else "",
            r["variant"],
            f"{r['us_per_step']:.2f}",
            f"{r['us_p10']:.2f}–{r['us_p90']:.2f}",
            _ratio_text(r["time_ratio_vs_per_component"]),
        )
    return table


def main(args: argparse.Namespace) -> int:
    # the run directory's guard: only when results are written
    from sim.rundir.claim import claim_outputs
    from sim.rundir.manifest import machine_info  # the run directory: only when results are written
    from sim.rundir.outputs import write_csv  # the run directory: only when results are written

    if args.csv is not None:
        claim_outputs([args.csv], args.force, option="--csv")  # before minutes of measuring

    known = registry.index_variant_names()
    wanted = [v.strip() for v in args.variants.split(",")] if args.variants else known
    unknown = [v for v in wanted if v not in known]
    console = output_console()
    if unknown or not wanted:
        console.print(
            f"kvsim bench index: unknown variant(s) {unknown}; known: {', '.join(known)} "
            "(one of your own: --plugin FILE)"
        )
        return 2
    cases = default_cases(args.decode, args.prefill)
    try:
        rows = run_bench(
            cases, wanted, args.components, args.repeats, args.iters, args.device, args.pad_multiple
        )
    except ValueError as exc:
        console.print(f"kvsim bench index: {exc}")
        return 2
    machine = machine_info()
    for r in rows:
        r["cpu_model"] = machine["cpu_model"]
    title = (
        f"index variants · K={args.components} · device {rows[0]['device']} · "
        f"median (and p10–p90) of {args.repeats} blocks × {args.iters} steps, after warm-up"
    )
    console.print(_table(rows, title))
    console.print(
        f"[dim]{machine['cpu_model']} · {machine['cpu_affinity']} CPUs · torch "
        f"{rows[0]['torch']} · timings are noisy on a shared machine[/dim]"
    )
    if args.csv is not None:
        write_csv(args.csv, CSV_COLUMNS, rows)
        console.print(f"wrote {args.csv}")
    return 0
