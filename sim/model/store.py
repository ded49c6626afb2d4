"""The modelled KV store on model mode's loop: the same rules as sim.store.model, as callbacks.

Real mode keeps :class:`sim.store.model.StoreModel` (SimPy, beside its real
threads); model mode runs on :class:`sim.model.loop.Loop`, where a SimPy process
per transfer would cost more than the rest of the request. The rules are the
same, step for step: at most ``concurrency`` transfers hold a slot (FIFO hand-over),
each pays the fixed latency (plus a stall when one is drawn), then moves its
bytes over one link shared by processor sharing (``min(bandwidth / n, cap)``
each); a failed attempt costs its full time and is retried after a back-off
without a slot. tests/test_model_store.py checks that both give the same
transfer times and outcomes for the same transfers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from sim.config import StoreConfig
from sim.errors import StoreError
from sim.model.loop import Loop
from sim.store.model import TransferOutcome

__all__ = ["LoopLink", "LoopStore"]

#: A transfer with fewer bytes than this left is done (float residue of the updates).
_DONE_BYTES = 0.5


class LoopLink:
    """One link shared by the transfers in flight (sim.store.link.SharedLink, as callbacks)."""

    def __init__(self, loop: Loop, bytes_per_s: float, cap_bytes_per_s: float | None = None):
        self._loop = loop
        self._bw = bytes_per_s
        self._cap = cap_bytes_per_s
        self._left: dict[int, float] = {}
        self._done: dict[int, Callable[[Any], None]] = {}
        self._ids = 0
        self._since = 0.0
        self._timer_gen = 0

    @property
    def in_flight(self) -> int:
        return len(self._left)

    def rate(self, n: int) -> float:
        """Bytes per second each of ``n`` transfers in flight moves."""
        share = self._bw / n
        return share if self._cap is None else min(share, self._cap)

    def send(self, nbytes: float, done: Callable[[Any], None]) -> None:
        """Start moving ``nbytes``; ``done(None)`` is called when the last byte has moved."""
        if nbytes <= 0:
            self._loop.after(0.0, done)
            return
        self._catch_up()
        self._ids += 1
        self._left[self._ids] = float(nbytes)
        self._done[self._ids] = done
        self._arm()

    def _catch_up(self) -> None:
        now = self._loop.now
        if self._left:
            moved = (now - self._since) * self.rate(len(self._left))
            for key in self._left:
                self._left[key] -= moved
        self._since = now

    def _arm(self) -> None:
        self._timer_gen += 1
        if not self._left:
            return
        wait = max(0.0, min(self._left.values())) / self.rate(len(self._left))
        self._loop.after(wait, self._on_timer, self._timer_gen)

    def _on_timer(self, gen: int) -> None:
        if gen != self._timer_gen:
            return  # the set changed since this timer was set
        self._catch_up()
        finished = [key for key, left in self._left.items() if left < _DONE_BYTES]
        calls = []
        for key in finished:
            del self._left[key]
            calls.append(self._done.pop(key))
        self._arm()
        for done in calls:
            done(None)


class _Transfer:
    """One transfer's attempts (the body of StoreModel.transfer, step by step)."""

    __slots__ = ("attempt", "attempts", "done", "fail", "faults", "nbytes", "stall")
    __slots__ += ("stalls", "store", "t0", "waited")

    def __init__(self, store: LoopStore, nbytes: int, faults: Any, done: Any) -> None:
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
        if store.busy < store.cfg.concurrency:
            store.busy += 1
            self._go()
        else:
            self.t0 = store.loop.now
            store.waiting.append(self)

    def granted(self, _arg: Any = None) -> None:
        self.waited += self.store.loop.now - self.t0
        self._go()

    def _go(self) -> None:
        cfg = self.store.cfg
        pause = cfg.latency_ms / 1e3
        if self.stall < cfg.stall_prob:
            pause += cfg.stall_ms / 1e3
            self.stalls += 1
        if pause > 0:
            self.store.loop.after(pause, self._send)
        else:
            self._send()

    def _send(self, _arg: Any = None) -> None:
        self.store.link.send(self.nbytes, self._sent)

    def _sent(self, _arg: Any = None) -> None:
        store, cfg = self.store, self.store.cfg
        store.release()
        if self.fail >= cfg.fail_prob:
            self.done(TransferOutcome(self.waited, self.attempts, self.stalls))
            return
        if self.attempt < cfg.retries:
            self.attempt += 1
            if cfg.retry_backoff_ms:
                store.loop.after(cfg.retry_backoff_ms / 1e3, self.begin)
            else:
                self.begin()
            return
        err = StoreError(f"transfer of {self.nbytes} bytes failed after {self.attempts} attempt(s)")
        self.done(TransferOutcome(self.waited, self.attempts, self.stalls, err))


class LoopStore:
    """The store model of sim.store.model.StoreModel on a :class:`Loop`."""

    def __init__(self, loop: Loop, cfg: StoreConfig) -> None:
        self.loop = loop
        self.cfg = cfg
        self.busy = 0
        self.waiting: deque[_Transfer] = deque()
        cap = cfg.per_transfer_gb_per_s
        self.link = LoopLink(loop, cfg.bandwidth_gb_per_s * 1e9, cap * 1e9 if cap else None)

    def release(self) -> None:
        """Give a finished attempt's slot to the longest waiter (resuming now), or free it."""
        if self.waiting:
            self.loop.after(0.0, self.waiting.popleft().granted)
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
