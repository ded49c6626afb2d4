"""The modelled store behind the :class:`~sim.store.base.LoadStore` interface.

The load thread runs only the connector's CPU stages; the transfer is modelled
on the simulation clock by :class:`~sim.store.model.StoreModel`.

When nothing waits on the wall clock for a transfer's end (an open loop: the end is
only noted, at the time the model fixed), the model's timers are quiet ones
(:class:`~sim.store.quiet_clock.QuietClock`): real mode's simulation thread does not wake
for them, which spares it a wake-up per request. A closed loop's next request is due
at the end plus the think time, so there the timers wake it as any other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import simpy

from connectors.base import AddressVariant, LoadJob
from sim.config.sections import StoreConfig
from sim.store.base import cpu_stages, nan_store_summary
from sim.store.clock import Clock, SimpyClock
from sim.store.model import StoreModel, TransferOutcome
from sim.store.quiet_clock import QuietClock

__all__ = ["ModelledStore"]


class ModelledStore:
    immediate: ClassVar[bool] = True

    def __init__(self, cfg: StoreConfig, quiet_ends: bool = False) -> None:
        self._cfg = cfg
        self._quiet_ends = quiet_ends
        self._model: StoreModel | None = None

    @property
    def config(self) -> StoreConfig:
        return self._cfg

    def attach(self, env: simpy.Environment) -> None:
        # Real mode's HybridEnvironment schedules bare callbacks itself (cheaper than a
        # Timeout and a lambda); any other SimPy environment goes through the adapter.
        clock: Clock
        if self._quiet_ends and hasattr(env, "after_quietly"):
            clock = QuietClock(env)
        else:
            clock = env if isinstance(env, Clock) else SimpyClock(env)
        self._model = StoreModel(clock, self._cfg)

    def admit(self, job: LoadJob, then: Callable[[LoadJob, float], None]) -> None:
        then(job, 0.0)

    def stage(self, variants: Sequence[AddressVariant], handler: str, job: LoadJob) -> int:
        return cpu_stages(variants, handler, job)

    def transfer(
        self,
        nbytes: int,
        staged: Any,
        job: LoadJob,
        faults: np.random.Generator | None,
        then: Callable[[TransferOutcome], None],
    ) -> None:
        assert self._model is not None, "attach() first"
        self._model.transfer(nbytes, faults, then)

    def release(self, job: LoadJob) -> None:
        pass

    def summary(self) -> dict[str, Any]:
        return nan_store_summary("model")
