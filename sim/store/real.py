"""The real Mooncake store behind the load path: computed addresses move real bytes.

Before the clock starts (untimed) every planned request's chunks are put into the
store, each block filled with its key's pattern (:mod:`sim.store.kv_buffers`).
At arrival a request gets a slot of ``max_chunks`` physical blocks of its own (no
two requests in flight share a block, as an engine's block manager guarantees)
and the probed words of its blocks are poisoned. The load thread then computes
keys and addresses with the configured variant and calls the store's batch get
with them; the simulation thread checks the return codes and the probed words.
A wrong address, a short get or an error code fails the request with a message
that says which.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import simpy

from connectors.base import AddressVariant, LoadJob, gil_free, mark_stage
from connectors.token_database import TokenDatabase
from sim.config.experiment import ExperimentConfig
from sim.config.sections import StoreConfig
from sim.errors import RunError
from sim.stats import percentiles
from sim.store.base import check_result, nan_store_summary
from sim.store.kv_buffers import KVBuffers, key_tags
from sim.store.memory import MemoryPlan, check_real_store, memory_plan
from sim.store.model import StoreError, TransferOutcome
from sim.store.mooncake import MooncakeSession, describe
from sim.store.netns import in_private_netns, say_once

__all__ = ["KVVerifyError", "MooncakeStore", "Staged"]


class KVVerifyError(RunError, RuntimeError):
    """The bytes a get left in the KV buffers are not the ones that were put there."""


@dataclass(frozen=True)
class Staged:
    """What a load thread's get returned."""

    keys: list[str]
    codes: list[int]
    expected: list[int]
    get_ns: int


def _as_lists(x: Any) -> list[Any]:
    return x.tolist() if isinstance(x, np.ndarray) else list(x)


class MooncakeStore:
    """One point's real store. :meth:`start` allocates, starts and fills; :meth:`close` ends."""

    immediate: ClassVar[bool] = False  # its slots and buffers are taken and given back

    def __init__(self, cfg: ExperimentConfig, workload: Any) -> None:
        self._env: simpy.Environment | None = None
        self._cfg = cfg
        self._workload = workload
        self._geo = cfg.model
        self._mc = cfg.store.mooncake
        self._kv = KVBuffers(cfg.model)
        self._session: MooncakeSession | None = None
        self._plan: MemoryPlan | None = None
        self._slots: simpy.Store | None = None
        self._held: dict[int, int] = {}
        self._refdbs: list[TokenDatabase] = []
        self._get_ms: list[float] = []
        self._bytes = 0
        self._verified = 0
        self._put_s = float("nan")
        self._netns = False

    @property
    def config(self) -> StoreConfig:
        return self._cfg.store

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> MooncakeStore:
        self._netns = in_private_netns()
        if not self._netns:
            if self._mc.network == "namespace":
                raise StoreError(
                    "store.mooncake.network is namespace, but this point does not run in a "
                    "private network namespace (needs root, unshare and ip; use "
                    "network: auto to fall back to loopback)"
                )
            say_once(
                "no private network namespace for the Mooncake store: master bound to "
                "127.0.0.1; the client's transfer listeners may bind every interface"
            )
        chunks = np.fromiter(
            (r.chunks(self._geo) for r in self._workload), dtype=np.int64, count=len(self._workload)
        )
        self._plan = memory_plan(self._cfg, chunks)
        problems = check_real_store(self._cfg, self._plan)
        if problems:
            raise StoreError("; ".join(problems))
        self._kv.allocate()
        self._refdbs = [
            replace(
                TokenDatabase.from_geometry(self._geo, g),
                kv_caches_base_addr=tuple(self.base_addrs(g)),
            )
            for g in range(self._geo.kv_groups)
        ]
        self._session = MooncakeSession(
            self._plan.segment_bytes, self._plan.local_bytes, self._mc.ready_timeout_s
        )
        try:
            self._session.start()
            self._session.register(self._kv.ptr, self._kv.nbytes)
            t0 = time.perf_counter()
            last = None
            for req in self._workload:
                last = req.job(self._geo)
                self._put(last)
            self._put_s = time.perf_counter() - t0
            if last is not None:
                self._warm_up(last)
        except BaseException:
            self.close()
            raise
        return self

    def attach(self, env: simpy.Environment) -> None:
        """Bind to the point's clock (made after the puts, so they do not make it late)."""
        assert self._plan is not None
        self._env = env
        self._slots = simpy.Store(env)
        self._slots.items.extend(range(self._plan.slots))

    def _warm_up(self, job: LoadJob) -> None:
        """One untimed get: the first one sets up the transfer connections (~100 ms here)."""
        assert self._session is not None
        n = len(self._ends(job.tokens))
        keys, addrs, sizes = self._reference(0, job, list(range(n)))
        if self._mc.api == "per_region":
            codes = self._session.get_flat(*self._flatten(keys, addrs, sizes))
        else:
            codes = self._session.get(keys, addrs, sizes)
        bad = [c for c in codes if c < 0]
        if bad:
            raise StoreError(f"warm-up get returned {describe(bad[0])}")

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def __enter__(self) -> MooncakeStore:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def base_addrs(self, group: int) -> list[int]:
        """Real pointers of the regions of ``group``: the variants compute from these."""
        return self._kv.base_addrs(group)

    @property
    def master_pid(self) -> int | None:
        return None if self._session is None else self._session.master_pid

    # -- keys and blocks -------------------------------------------------------------------
    def _ends(self, tokens: int) -> np.ndarray:
        bs = self._geo.block_size
        starts = np.arange(0, tokens, bs, dtype=np.int64)
        return np.minimum(starts + bs, tokens)

    def _ktags(self, job: LoadJob) -> np.ndarray:
        return key_tags(
            job.block_hashes, job.hash_len, self._ends(job.tokens), self._geo.chunk_granularity
        )

    def _reference(self, group: int, job: LoadJob, block_ids: Sequence[int]):
        """Keys, address lists and size lists by the scalar reference (for puts)."""
        db = self._refdbs[group]
        keyed = db.chunk_list(job.tokens, job.block_hashes, job.hash_len)
        addrs, sizes = [], []
        for s, e, _k in keyed:
            a, z, _b = db.prepare_value(s, e, block_ids)
            addrs.append(a)
            sizes.append(z)
        return [k for _s, _e, k in keyed], addrs, sizes

    def _flatten(self, keys: list[str], addrs: list[Any], sizes: list[Any]):
        """per_region: one object per (chunk, region)."""
        fk = [f"{k}@r{r}" for k in keys for r in range(len(addrs[0]) if addrs else 0)]
        fa = [a for row in addrs for a in row]
        fs = [z for row in sizes for z in row]
        return fk, fa, fs

    def _put(self, job: LoadJob) -> None:
        assert self._session is not None
        n = len(self._ends(job.tokens))
        ktags = self._ktags(job)
        staging = list(range(n))  # staged in the first blocks, then put from there
        for g in range(self._geo.kv_groups):
            self._kv.fill(g, np.arange(n, dtype=np.int64), ktags)
            keys, addrs, sizes = self._reference(g, job, staging)
            if self._mc.api == "per_region":
                codes = self._session.put_flat(*self._flatten(keys, addrs, sizes))
            else:
                codes = self._session.put(keys, addrs, sizes)
            bad = [c for c in codes if c != 0]
            if bad:
                raise StoreError(
                    f"put of request {job.request_id}'s chunks returned {describe(bad[0])} "
                    f"({len(bad)} of {len(codes)} keys); store segment "
                    f"{self._plan.segment_bytes if self._plan else 0} bytes"
                )

    # -- the pipeline's calls --------------------------------------------------------------
    def admit(self, job: LoadJob, then: Callable[[LoadJob, float], None]) -> None:
        """A slot of the KV buffers for the request: at once when one is free, else when
        a request releases one (FIFO)."""
        assert self._slots is not None
        if self._slots.items and not self._slots.get_queue:
            then(self._assign(job, self._slots.items.pop(0)), 0.0)  # free: no event, no wait
            return
        t0 = time.perf_counter()
        turn = self._slots.get()
        turn.callbacks.append(
            lambda ev: then(self._assign(job, ev.value), time.perf_counter() - t0)
        )

    def _assign(self, job: LoadJob, slot: int) -> LoadJob:
        """The job with its blocks in ``slot``'s part of the buffers (poisoned to verify)."""
        assert self._plan is not None
        self._held[job.request_id] = slot
        first = slot * self._plan.max_chunks
        tables = []
        for g, planned in enumerate(job.block_ids):
            order = np.argsort(np.asarray(planned, dtype=np.int64), kind="stable")
            ids = first + order
            if self._mc.verify:
                self._kv.poison(g, ids)
            tables.append(ids.tolist())
        return replace(job, block_ids=tuple(tables))

    def release(self, job: LoadJob) -> None:
        slot = self._held.pop(job.request_id, None)
        if slot is not None and self._slots is not None:
            self._slots.put(slot)

    def stage(self, variants: Sequence[AddressVariant], handler: str, job: LoadJob) -> Staged:
        """In the load thread: keys and addresses by the variant, then the batch get."""
        keys: list[str] = []
        addrs: list[Any] = []
        sizes: list[Any] = []
        mark_stage("keys")
        for group, variant in enumerate(variants):
            k, values = variant.run(job, group, handler)
            check_result(variant, values, len(k), job, group)
            keys += k
            addrs += _as_lists(values[0])
            sizes += _as_lists(values[1])
        mark_stage("free")  # the hand-off: range check, the call into the store client
        self._check_range(job, addrs, sizes)
        session = self._session
        if session is None:
            raise StoreError("the store is closed")
        if self._mc.api == "per_region":
            keys, flat_a, flat_s = self._flatten(keys, addrs, sizes)
            expected = flat_s
            with gil_free():
                g0 = time.perf_counter_ns()
                codes = session.get_flat(keys, flat_a, flat_s)
                g1 = time.perf_counter_ns()
        else:
            expected = [sum(row) for row in sizes]
            with gil_free():
                g0 = time.perf_counter_ns()
                codes = session.get(keys, addrs, sizes)
                g1 = time.perf_counter_ns()
        return Staged(keys, codes, expected, g1 - g0)

    def _check_range(self, job: LoadJob, addrs: list[Any], sizes: list[Any]) -> None:
        """Refuse a get that would write outside the KV buffers (before any byte moves)."""
        if not addrs:
            return
        lo = min(map(min, addrs))
        hi = max(map(max, addrs)) + max(map(max, sizes))
        if not self._kv.contains(lo, hi):
            end = self._kv.ptr + self._kv.nbytes
            raise KVVerifyError(
                f"request {job.request_id}: computed addresses span [{lo:#x}, {hi:#x}), outside "
                f"the registered KV buffers [{self._kv.ptr:#x}, {end:#x}); the variant "
                "computes wrong addresses"
            )

    def transfer(
        self,
        nbytes: int,
        staged: Staged,
        job: LoadJob,
        faults: np.random.Generator | None,
        then: Callable[[TransferOutcome], None],
    ) -> None:
        error = self._get_error(job, staged)
        verified = 0
        if error is None and self._mc.verify:
            error, verified = self._verify(job)
        moved = sum(c for c in staged.codes if c > 0)
        if error is None:
            self._get_ms.append(staged.get_ns / 1e6)
            self._bytes += moved
        self._verified += verified
        then(
            TransferOutcome(
                0.0,
                1,
                0,
                error,
                transfer_ms=staged.get_ns / 1e6,
                transfer_bytes=moved,
                verified_blocks=verified,
            )
        )

    def _get_error(self, job: LoadJob, staged: Staged) -> StoreError | None:
        bad = [i for i, c in enumerate(staged.codes) if c < 0]
        if bad:
            i = bad[0]
            msg = (
                f"request {job.request_id}: get returned {describe(staged.codes[i])} for "
                f"{len(bad)} of {len(staged.codes)} keys (first {staged.keys[i]})"
            )
            code = self._session.master_exit_code() if self._session else None
            if code is not None:
                msg += f"; the mooncake master exited with code {code}"
            return StoreError(msg)
        short = [
            i for i, (c, e) in enumerate(zip(staged.codes, staged.expected, strict=True)) if c != e
        ]
        if short:
            i = short[0]
            return StoreError(
                f"request {job.request_id}: get moved {staged.codes[i]} bytes for key "
                f"{staged.keys[i]}, expected {staged.expected[i]}"
            )
        return None

    def _verify(self, job: LoadJob) -> tuple[KVVerifyError | None, int]:
        ktags = self._ktags(job)
        checked = 0
        for g, table in enumerate(job.block_ids):
            rep = self._kv.verify(g, np.asarray(table, dtype=np.int64), ktags)
            checked += rep.checked
            if rep.bad and rep.first is not None:
                c, r, want, got = rep.first
                what = (
                    "poison: no byte arrived there" if got == 0xDEADBEEFDEADBEEF else "other bytes"
                )
                return KVVerifyError(
                    f"request {job.request_id}: {rep.bad} of {rep.checked} blocks hold the wrong "
                    f"bytes after the get (first: group {g}, chunk {c}, region {r}, block "
                    f"{table[c]}: expected {want:#018x}, found {got:#018x}, {what}); the "
                    "computed address is wrong"
                ), checked
        return None, checked

    def summary(self) -> dict[str, Any]:
        out = nan_store_summary("mooncake")
        if self._get_ms:
            p50, p99 = percentiles(self._get_ms, (50, 99))
            total_s = sum(self._get_ms) / 1e3
            out.update(
                store_get_p50_ms=float(p50),
                store_get_p99_ms=float(p99),
                store_get_gbps=self._bytes / total_s / 1e9 if total_s > 0 else float("nan"),
            )
        out.update(
            store_bytes=self._bytes,
            store_put_s=self._put_s,
            store_verified_blocks=self._verified,
            store_netns=int(self._netns),
        )
        return out
