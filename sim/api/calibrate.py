"""``sim.calibrate``: measure on this machine the costs model mode simulates.

The same calibration as ``kvsim calibrate`` (which parses its arguments, calls
:func:`calibrate` and prints the fits): the holds of each variant over a grid of
geometries, the harness's own costs, and the engine step (``sim.calibration.measure``),
written to one file that model runs name as ``machine.calibration`` and record in
their manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["HANDLERS", "calibrate"]

#: How a variant may handle a request's groups: one call per group, or per chunk.
HANDLERS = ("per_group", "per_chunk")


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
) -> dict[str, Any]:
    """Measure and write the calibration file ``out``; return its document.

    ``variants`` default to every registered address variant; ``chunks``,
    ``regions`` and ``groups`` to ``sim.calibration.measure``'s grid; ``reps`` requests
    are measured per geometry (median); ``engine=False`` skips the engine step.
    ``out`` is replaced only with ``force``. ``say`` hears what is being measured
    (a calibration takes minutes). Bad names are one-line ConfigErrors.
    """
    from connectors import registry
    from sim.calibration.measure import DEFAULT_CHUNKS, DEFAULT_GROUPS, DEFAULT_REGIONS, check_grid
    from sim.calibration.measure import calibrate as measure_all
    from sim.config import ConfigError
    from sim.rundir.claim import claim_outputs
    from sim.rundir.outputs import write_json

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
