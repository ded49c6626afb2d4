"""Things that run beside the load pipeline during a point: probes, the engine loop.

An add-on is built from the point's config (or not, when disabled), attached to
the point's clock before the run starts and detached after the last request; it
contributes summary columns and, optionally, extra per-row tables (``steps.csv``).
Both modes' add-ons keep this one contract (:class:`AddOn`): real mode's attach
to the HybridEnvironment (the factories below), model mode's (sim.model.engine,
sim.model.probe) to the model's loop, and whatever else they read they are given
when built, so that both point drivers collect them the same way
(sim.runtime.result.point_result). Keeping them behind it lets the drivers stay
the same as the set of instruments grows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from sim.config.experiment import ExperimentConfig
    from sim.runtime.env import HybridEnvironment

__all__ = ["ADDON_FACTORIES", "AddOn", "StartsUp", "build_addons", "start_up"]


#: The clock an add-on attaches to: real mode's HybridEnvironment, model mode's Loop.
ClockT_contra = TypeVar("ClockT_contra", contravariant=True)


class AddOn(Protocol[ClockT_contra]):
    def attach(self, clock: ClockT_contra) -> None:
        """Start threads/processes; called on the simulation thread before the run."""

    def detach(self) -> None:
        """Stop and join everything started by attach; must not raise."""

    def summary(self) -> dict[str, Any]:
        """Summary columns this add-on contributes (names in the catalogue, sim.columns),
        once detached."""

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Extra long-format tables: file stem -> rows (e.g. {"steps": [...]})."""


@runtime_checkable
class StartsUp(Protocol):
    """An add-on with a start-up of its own (imports, buffers, a warm-up): the engine.

    It runs before the point's heap is settled (``sim.instruments.heap``), as a serving
    engine initialises before it freezes its heap: its objects then live where start-up
    objects do, in the oldest generation or frozen, instead of arriving mid-load.
    """

    def prepare(self) -> None:
        """Do the start-up; attach calls it when nobody did (idempotent)."""


def start_up(addons: list[Any]) -> None:
    """Every add-on's start-up that has one, in attach order."""
    for addon in addons:
        if isinstance(addon, StartsUp):
            addon.prepare()


#: Factories in attach order; each returns an AddOn or None when disabled by the config.
ADDON_FACTORIES: list[Callable[[ExperimentConfig], AddOn[HybridEnvironment] | None]] = []


def _engine(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """The engine step loop, imported only when a point builds its add-ons."""
    from sim.instruments.engine import engine_addon

    return engine_addon(cfg)


ADDON_FACTORIES.append(_engine)


def _probe(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """The sentinel probe: stalls and the GIL-busy cross-check, when gil.probe."""
    from sim.instruments.probe import probe_addon

    return probe_addon(cfg)


ADDON_FACTORIES.append(_probe)


def _gc(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """Every collection by thread and generation (gc.csv); attached last, after the
    engine's baseline, so it covers the load."""
    from sim.instruments.gc_meter import gc_addon

    return gc_addon(cfg)


ADDON_FACTORIES.append(_gc)


def _audit(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """The py-spy GIL audit, when gil.audit is pyspy. Last: it attaches after every other
    add-on (after an engine-alone baseline) and detaches first, so that its window is the
    load's."""
    from sim.instruments.audit import audit_addon

    return audit_addon(cfg)


ADDON_FACTORIES.append(_audit)


def build_addons(cfg: ExperimentConfig) -> list[AddOn[HybridEnvironment]]:
    out = []
    for factory in ADDON_FACTORIES:
        addon = factory(cfg)
        if addon is not None:
            out.append(addon)
    return out
