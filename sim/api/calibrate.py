"""``sim.calibrate``: measure on this machine the costs model mode simulates.

The same calibration as ``kvsim calibrate`` (which parses its arguments, calls
:func:`calibrate` and prints the fits): the holds of each variant over a grid of
geometries, the harness's own costs, and the engine step (``sim.calibration.measure``),
written to one file that model runs name as ``machine.calibration`` and record in
their manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.cli_args import namespace_fields

if TYPE_CHECKING:
    import argparse

    from sim.analysis.store_fit import StoreFit

__all__ = ["HANDLERS", "CalibrateArgs", "GilArgs", "StoreFitArgs", "calibrate", "fit_store"]

#: How a variant may handle a request's groups: one call per group, or per chunk.
HANDLERS = ("per_group", "per_chunk")


@dataclass(frozen=True)
class GilArgs:
    """What ``kvsim calibrate [gil]`` was asked: :func:`calibrate`'s arguments, with the
    ``--plugin`` files whose variants are calibrated as built-in ones are."""

    out: str
    variants: tuple[str, ...] | None
    handlers: tuple[str, ...]
    chunks: tuple[int, ...]
    regions: tuple[int, ...]
    groups: tuple[int, ...]
    reps: int
    engine: bool
    force: bool
    plugins: tuple[str, ...]

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> GilArgs:
        variants = tuple(v.strip() for v in args.variants.split(",")) if args.variants else None
        handlers = tuple(h.strip() for h in args.handlers.split(",") if h.strip())
        return cls(
            **namespace_fields(
                cls,
                args,
                variants=variants,
                handlers=handlers,
                engine=not args.no_engine,
                plugins=tuple(args.plugin),
            )
        )


@dataclass(frozen=True)
class StoreFitArgs:
    """What ``kvsim calibrate store`` was asked: :func:`fit_store`'s run and worker count,
    and whether to print the fit as JSON."""

    run_dir: str
    workers: int | None
    json: bool

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> StoreFitArgs:
        return cls(**namespace_fields(cls, args))


@dataclass(frozen=True)
class CalibrateArgs:
    """What ``kvsim calibrate`` was asked: one target's arguments (``gil`` by default)."""

    gil: GilArgs | None = None
    store: StoreFitArgs | None = None

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> CalibrateArgs:
        if getattr(args, "target", None) == "store":
            return cls(store=StoreFitArgs.from_cli_args(args))
        return cls(gil=GilArgs.from_cli_args(args))


def fit_store(run_dir: str | Path, workers: int | None = None) -> StoreFit:
    """The modelled store's latency and bandwidth fitted to the gets of a real-store
    (``store.kind: mooncake``) run's points with ``workers`` load threads (default: the
    fewest in the run); RunDirError, one line, when it cannot."""
    from sim.analysis.store_fit import fit_store as fit  # numpy: not at import sim

    return fit(run_dir, workers)


def calibrate(
    out: str | Path,
    *,
    variants: Sequence[str] | None = None,
    handlers: Sequence[str] = HANDLERS,
    chunks: Sequence[int] | None = None,
    regions: Sequence[int] | None = None,
    groups: Sequence[int] | None = None,
    reps: int = 5,
    engine: bool = True,
    force: bool = False,
    say: Callable[[str], None] | None = None,
    plugins: Sequence[str] = (),
) -> dict[str, Any]:
    """Measure and write the calibration file ``out``; return its document.

    ``variants`` default to every registered address variant; ``chunks``,
    ``regions`` and ``groups`` to ``sim.calibration.measure``'s grid; ``reps`` requests
    are measured per geometry (median); ``engine=False`` skips the engine step.
    ``out`` is replaced only with ``force``. ``say`` hears what is being measured
    (a calibration takes minutes). ``plugins``: files whose variants are calibrated as
    built-in ones are (``--plugin``). Bad names are one-line ConfigErrors.
    """
    from connectors import registry  # the variants' registry: not at import sim
    from sim.api.plugin_files import command_plugins  # pydantic: not at import sim

    # the measurements: only when they run
    from sim.calibration.measure import DEFAULT_CHUNKS, DEFAULT_GROUPS, DEFAULT_REGIONS, check_grid

    # the measurements: only when they run
    from sim.calibration.measure import calibrate as measure_all
    from sim.config import ConfigError  # pydantic: not at import sim
    from sim.rundir.claim import claim_outputs  # the run directory's code: not at import sim
    from sim.rundir.outputs import write_json  # the run directory's code: not at import sim

    with command_plugins(plugins):  # a plug-in's variants are calibrated as built-in ones
        path = Path(out)
        claim_outputs([path], force)  # before minutes of measuring
        names = registry.address_variant_names()
        wanted = list(variants) if variants else names
        unknown = [v for v in wanted if v not in names]
        if unknown:
            raise ConfigError(
                f"--variants: unknown variant {unknown[0]!r}; allowed: {', '.join(names)}"
            )
        bad = [h for h in handlers if h not in HANDLERS]
        if bad or not handlers:
            raise ConfigError(
                f"--handlers: {bad[0] if bad else '(none)'}; allowed: {', '.join(HANDLERS)}"
            )
        if not 1 <= reps <= 1000:
            raise ConfigError(f"--reps {reps}: allowed 1 to 1000 requests per geometry")
        grid = (list(chunks or DEFAULT_CHUNKS), list(regions or DEFAULT_REGIONS))
        grid_groups = list(groups or DEFAULT_GROUPS)
        check_grid(*grid, grid_groups)
        doc = measure_all(
            wanted,
            list(handlers),
            *grid,
            grid_groups,
            reps,
            engine=engine,
            say=say or (lambda _msg: None),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, doc)
        return doc
