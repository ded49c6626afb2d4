"""Whether this machine can run a config's points: a real store's memory, a GPU, a calibration.

Checked before the run directory is touched, by ``kvsim validate`` (all three, in
this order) and by the sweep session (sim.sweep.session: the calibration when the
sweep is planned, the rest when its directory is opened), so a point that cannot run
here is refused once, in one line naming the config and the point, not found failing
minutes into the sweep.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim.config.experiment import Point
from sim.errors import ConfigError
from sim.instruments.engine import check_device
from sim.model.coverage import check_points as check_calibration
from sim.store.memory import check_real_store, memory_plan
from sim.store.mooncake import mooncake_missing

__all__ = ["check_covered", "check_real_store_points", "check_runnable"]


def check_real_store_points(source: str, points: Sequence[Point]) -> list[str]:
    """Refuse (ConfigError naming the file, point and arithmetic) a real-store point that
    cannot run; otherwise the memory line of each real-store point, for ``kvsim validate``.

    The Mooncake store itself is asked once, at the first real-store point: where its
    package, a system library it links (libibverbs1) or its master binary is missing,
    every point failed alike ("mooncake_master exited with code 127"), one by one."""
    lines = []
    for p in points:
        if p.config.store.kind != "mooncake":
            continue
        plan = memory_plan(p.config)
        problems = check_real_store(p.config, plan)
        if problems:
            raise ConfigError(f"{source}: point {p.index} ({p.label}): {problems[0]}")
        if not lines:
            _check_mooncake_here(source, p)
        lines.append(f"  {p.index:3d}  real store memory: {plan.arithmetic()}")
    return lines


def _check_mooncake_here(source: str, point: Point) -> None:
    why = mooncake_missing()
    if why is not None:
        swept = f" (point {point.index}, {point.label})" if point.axes else ""
        raise ConfigError(
            f"{source}: store.kind: mooncake{swept} cannot run on this machine: {why}; "
            "store.kind: model needs none of it"
        )


def check_runnable(source: str, points: Sequence[Point]) -> list[str]:
    """A real store's memory (its lines, for ``kvsim validate``), then a GPU an engine
    asks for where torch sees none (``engine.device: cuda``)."""
    lines = check_real_store_points(source, points)
    check_device(source, points)
    return lines


def check_covered(points: Sequence[Point]) -> None:
    """Refuse a model-mode point the calibration does not cover (CalibrationError)."""
    if any(p.config.mode == "model" for p in points):
        check_calibration(points)
