"""The modelled KV store: a fixed latency, then the bytes over a link the transfers share.

At most ``concurrency`` transfers hold a slot (FIFO hand-over); each pays the fixed
latency (plus a stall when one is drawn), then moves its bytes over one link shared
by processor sharing (:class:`sim.store.link.SharedLink`), so a store that is busy
is slower for everyone, as a real NIC is.

Faults can be injected (a failed attempt, a stalled attempt) with a retry policy,
so that a run shows what a flaky store does to load latency. A failed attempt costs
its full time (the failure is noticed at the end) and is retried after a back-off
without a slot. Fault draws come from a generator derived from the request's planned
seed, so the same config and seed fail the same requests however threads interleave.

The rules are written as callbacks on a :class:`~sim.store.clock.Clock`, not as SimPy
processes: real mode and model mode run this one implementation, and a transfer
costs a few timer entries rather than a process and its generator resumes (the
harness's cost per request, sim.benches.harness).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from sim import columns
from sim.config.sections import StoreConfig
from sim.errors import StoreError
from sim.store.clock import Clock
from sim.store.link import SharedLink

__all__ = ["StoreError", "StoreModel", "TransferOutcome"]


class TransferOutcome:
    """What became of one transfer; read-only by convention. A plain class, not a frozen
    dataclass: one is made per request, and the compiled model core (sim.native) builds
    a plain class natively, where a dataclass's ``__init__`` stays interpreted."""

    __slots__ = (
        "attempts",
        "error",
        "stalls",
        columns.TRANSFER_BYTES.name,
        columns.TRANSFER_MS.name,
        columns.VERIFIED_BLOCKS.name,
        "waited_s",
    )

    def __init__(
        self,
        waited_s: float,
        attempts: int,
        stalls: int,
        error: BaseException | None = None,
        transfer_ms: float | None = None,
        transfer_bytes: int | None = None,
        verified_blocks: int = 0,
    ) -> None:
        self.waited_s = waited_s
        self.attempts = attempts
        self.stalls = stalls
        self.error = error
        #: Measured by a real store in the load thread (None: the transfer was modelled).
        self.transfer_ms = transfer_ms
        #: Bytes a real get reported moving (None: modelled).
        self.transfer_bytes = transfer_bytes
        #: Blocks whose content was checked after a real get.
        self.verified_blocks = verified_blocks

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (
            f"TransferOutcome(waited_s={self.waited_s}, attempts={self.attempts}, "
            f"stalls={self.stalls}, error={self.error!r})"
        )


class _Transfer:
    """One transfer's attempts, step by step: slot, pause, link, then done or retry."""

    __slots__ = (
        "attempt",
        "attempts",
        "done",
        "fail",
        "faults",
        "nbytes",
        "stall",
        "stalls",
        "store",
        "t0",
        "waited",
    )

    def __init__(
        self,
        store: StoreModel,
        nbytes: int,
        faults: np.random.Generator | None,
        done: Callable[[TransferOutcome], None],
    ) -> None:
        self.store = store
        self.nbytes = nbytes
        self.faults = faults
        self.done = done
        self.waited = 0.0
        self.stalls = 0
        self.attempt = 0
        self.attempts = 0
        self.fail = self.stall = 1.0
        self.t0 = 0.0

    def begin(self, _arg: Any = None) -> None:
        store = self.store
        self.attempts = self.attempt + 1
        if self.faults is not None:
            self.fail, self.stall = self.faults.random(2)
        if store.busy < store.concurrency:
            store.busy += 1
            self._go()
        else:
            self.t0 = store.clock.now
            store.waiting.append(self)

    def granted(self, _arg: Any = None) -> None:
        self.waited += self.store.clock.now - self.t0
        self._go()

    def _go(self) -> None:
        store = self.store
        pause = store.latency_s
        if self.stall < store.stall_prob:
            pause += store.stall_s
            self.stalls += 1
        self.store.link.send(self.nbytes, self._sent, pause)  # one timer for both

    def _sent(self, _arg: Any = None) -> None:
        store, cfg = self.store, self.store.cfg
        store.release()
        if self.fail >= store.fail_prob:
            self.done(TransferOutcome(self.waited, self.attempts, self.stalls))
            return
        if self.attempt < store.retries:
            self.attempt += 1
            if cfg.retry_backoff_ms:
                store.clock.after(cfg.retry_backoff_ms / 1e3, self.begin)
            else:
                self.begin()
            return
        err = StoreError(f"transfer of {self.nbytes} bytes failed after {self.attempts} attempt(s)")
        self.done(TransferOutcome(self.waited, self.attempts, self.stalls, err))


class StoreModel:
    """Slots, latency, the shared link and faults, on any :class:`Clock`."""

    def __init__(self, clock: Clock, cfg: StoreConfig) -> None:
        self.clock = clock
        self.cfg = cfg
        # The config's figures a transfer reads, held here: from compiled code a field of
        # this class is a load, a field of the (interpreted, pydantic) config a dictionary
        # look-up (~350 instructions; docs/model-mode.md, A day). The same values.
        self.concurrency = cfg.concurrency
        self.latency_s = cfg.latency_ms / 1e3
        self.stall_prob = cfg.stall_prob
        self.stall_s = cfg.stall_ms / 1e3
        self.fail_prob = cfg.fail_prob
        self.retries = cfg.retries
        # Slots as a count and a FIFO of waiters: a transfer that finds a slot free costs
        # no timer at all.
        self.busy = 0
        self.waiting: deque[_Transfer] = deque()
        cap = cfg.per_transfer_gb_per_s
        self.link = SharedLink(clock, cfg.bandwidth_gb_per_s * 1e9, cap * 1e9 if cap else None)

    @property
    def config(self) -> StoreConfig:
        return self.cfg

    def transfer_time_s(self, nbytes: int) -> float:
        """How long a transfer of ``nbytes`` takes alone on the link."""
        return self.cfg.latency_ms / 1e3 + nbytes / self.link.rate(1)

    def release(self) -> None:
        """Give a finished attempt's slot to the longest waiter (resuming now), or free it."""
        if self.waiting:
            self.clock.after(0.0, self.waiting.popleft().granted)
        else:
            self.busy -= 1

    def transfer(
        self,
        nbytes: int,
        faults: np.random.Generator | None,
        done: Callable[[TransferOutcome], None],
    ) -> None:
        """Up to ``1 + retries`` attempts; ``done(outcome)`` once it succeeded or gave up."""
        _Transfer(self, nbytes, faults, done).begin()
