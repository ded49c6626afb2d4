"""The modelled KV store: a fixed latency, then the bytes over a link the transfers share.

At most ``concurrency`` transfers are in flight; they divide the link's bandwidth
between them (:class:`sim.store.link.SharedLink`), so a store that is busy is
slower for everyone, as a real NIC is.

Faults can be injected (a failed attempt, a stalled attempt) with a retry policy,
so that a run shows what a flaky store does to load latency. Fault draws come
from a generator derived from the request's planned seed, so the same config and
seed fail the same requests however the threads interleave.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from sim.config.sections import StoreConfig
from sim.errors import StoreError
from sim.store.link import SharedLink

__all__ = ["StoreError", "StoreModel", "TransferOutcome"]


@dataclass(frozen=True)
class TransferOutcome:
    waited_s: float
    attempts: int
    stalls: int
    error: BaseException | None = None
    #: Measured by a real store in the load thread (None: the transfer was modelled).
    transfer_ms: float | None = None
    #: Bytes a real get reported moving (None: modelled).
    transfer_bytes: int | None = None
    #: Blocks whose content was checked after a real get.
    verified_blocks: int = 0


class StoreModel:
    def __init__(self, env: simpy.Environment, cfg: StoreConfig) -> None:
        self._env = env
        self._cfg = cfg
        # Slots as a count and a FIFO of waiters rather than a simpy.Resource: a transfer
        # that finds a slot free costs no event at all (the harness's cost per request).
        self._busy = 0
        self._waiting: deque[simpy.Event] = deque()
        cap = cfg.per_transfer_gb_per_s
        self._link = SharedLink(env, cfg.bandwidth_gb_per_s * 1e9, cap * 1e9 if cap else None)

    @property
    def config(self) -> StoreConfig:
        return self._cfg

    @property
    def in_flight(self) -> int:
        """Transfers moving bytes on the link now."""
        return self._link.in_flight

    def transfer_time_s(self, nbytes: int) -> float:
        """How long a transfer of ``nbytes`` takes alone on the link."""
        return self._cfg.latency_ms / 1e3 + nbytes / self._link.rate(1)

    def _release(self) -> None:
        """Give a finished transfer's slot to the longest waiter, or free it."""
        if self._waiting:
            self._waiting.popleft().succeed()
        else:
            self._busy -= 1

    def transfer(
        self, nbytes: int, faults: np.random.Generator | None = None
    ) -> Generator[Any, Any, TransferOutcome]:
        """SimPy process body: up to ``1 + retries`` attempts, each holding a store slot.

        A failed attempt costs its full transfer time (the failure is noticed at the
        end), then the retry backs off without holding a slot.
        """
        cfg = self._cfg
        waited = 0.0
        stalls = 0
        attempts = 0
        for attempt in range(cfg.retries + 1):
            attempts = attempt + 1
            fail_draw, stall_draw = faults.random(2) if faults is not None else (1.0, 1.0)
            if self._busy < cfg.concurrency:
                self._busy += 1
            else:
                t0 = self._env.now
                turn = self._env.event()
                self._waiting.append(turn)
                yield turn  # a finishing transfer hands its slot over
                waited += self._env.now - t0
            try:
                pause = cfg.latency_ms / 1e3
                if stall_draw < cfg.stall_prob:
                    pause += cfg.stall_ms / 1e3
                    stalls += 1
                if pause > 0:
                    yield self._env.timeout(pause)
                yield self._link.send(nbytes)
            finally:
                self._release()
            if fail_draw >= cfg.fail_prob:
                return TransferOutcome(waited, attempts, stalls)
            if attempt < cfg.retries and cfg.retry_backoff_ms:
                yield self._env.timeout(cfg.retry_backoff_ms / 1e3)
        err = StoreError(f"transfer of {nbytes} bytes failed after {attempts} attempt(s)")
        return TransferOutcome(waited, attempts, stalls, err)
