"""Things that run beside the load pipeline during a point: probes, the engine loop.

An add-on is built from the point's config (or not, when disabled), attached to
the point's clock before the run starts and detached after the last request; it
contributes summary columns and, optionally, extra per-row tables (``steps.csv``).
Both modes' add-ons keep this one contract (:class:`AddOn`): real mode's attach
to the HybridEnvironment (sim.runtime.addons), model mode's (sim.model.engine,
sim.model.probe) to the model's loop, and whatever else they read they are given
when built, so that both point drivers collect them the same way
(sim.point.result.point_result). Keeping them behind it lets the drivers stay
the same as the set of instruments grows.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["AddOn", "StartsUp", "start_up"]


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
