"""Which setting measures an objective's metric: a search refuses, before any point runs,
an objective on a figure its config does not measure.

Without the refusal every point "misses" (its value is empty), and the search reports
that the variant misses the objective even at the lowest rate tried: a statement about
the variant that nothing measured. The metrics here are those whose instrument a config
turns off (sim.columns groups them by what measures them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sim import columns
from sim.config import ExperimentConfig

__all__ = ["unmeasured"]


@dataclass(frozen=True)
class _Instrument:
    #: The metrics it alone fills.
    metrics: frozenset[str]
    #: Whether a point's config runs it.
    on: Callable[[ExperimentConfig], bool]
    #: The setting that turns it on, as `--set` takes it.
    setting: str


_STALLS = frozenset(c.name for c in columns.PROBE if c.name.startswith("stall_"))

_INSTRUMENTS = (
    _Instrument(_STALLS, lambda c: c.gil.probe, "gil.probe=true"),
    _Instrument(
        frozenset(c.name for c in columns.ENGINE), lambda c: c.engine.enabled, "engine.enabled=true"
    ),
    _Instrument(
        frozenset(c.name for c in columns.AUDIT),
        lambda c: c.gil.audit != "off" and c.mode == "real",
        "gil.audit=pyspy (real mode)",
    ),
)


def unmeasured(metric: str, configs: Sequence[ExperimentConfig]) -> str:
    """Why ``metric`` cannot be judged on points of these configs ("" when every one
    measures it): how many do not, and the setting that would measure it."""
    for inst in _INSTRUMENTS:
        off = sum(not inst.on(c) for c in configs) if metric in inst.metrics else 0
        if off:
            return (
                f"{metric} is not measured at {off} of the {len(configs)} point(s) of this "
                f"config: it needs {inst.setting} (e.g. --set {inst.setting.split()[0]})"
            )
    return ""
