"""The modelled KV store: time = latency + bytes / bandwidth, a bounded number at once."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from .config import StoreConfig

__all__ = ["StoreModel"]


class StoreModel:
    def __init__(self, env: simpy.Environment, cfg: StoreConfig) -> None:
        self._env = env
        self._cfg = cfg
        self._slots = simpy.Resource(env, capacity=cfg.concurrency)

    def transfer_time_s(self, nbytes: int) -> float:
        return self._cfg.latency_ms / 1e3 + nbytes / (self._cfg.bandwidth_gbps * 1e9)

    def transfer(self, nbytes: int) -> Generator[Any, Any, float]:
        """SimPy process body: wait for a slot, then hold it for the transfer time.

        Returns the simulated seconds spent waiting for a slot.
        """
        t0 = self._env.now
        with self._slots.request() as slot:
            yield slot
            waited = self._env.now - t0
            yield self._env.timeout(self.transfer_time_s(nbytes))
        return waited
