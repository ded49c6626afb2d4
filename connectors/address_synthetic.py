"""``synthetic``: a request that holds the GIL for exactly ``hold_ms``, then lets it go.

It answers "what if the GIL hold per request were X ms?" without any address
code, and it gives the GIL meter known answers (docs/gil-method.md). Per request
(not per KV-cache group: only group 0 does the work) it

1. runs pure Python until this thread has used ``hold_ms`` of CPU time — spinning
   on the thread's CPU clock, not the wall clock, so a thread that loses the GIL
   to others still holds it for the full ``hold_ms`` in total;
2. spends ``free_ms`` in a section declared GIL-free: a sleep (``free_kind:
   sleep``) or a C kernel that hashes a buffer with the GIL released
   (``free_kind: kernel``, about ``free_ms`` of CPU time, calibrated in warm-up);
3. fails with probability ``fail_prob``, decided by the request's planned draw
   from the run's seeded generator, so that failures are reproducible.

The store transfer is still modelled from the geometry by the pipeline.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import AddressVariant, LoadJob, gil_free, mark_stage
from .registry import register

__all__ = ["SyntheticFailure", "SyntheticOptions", "SyntheticVariant", "spin_cpu"]

#: Python-bytecode iterations between two reads of the thread's CPU clock: small
#: enough to overshoot ``hold_ms`` by microseconds, large enough that the loop is
#: mostly bytecode rather than clock system calls.
_SPIN_BATCH = 64
#: Buffer hashed to calibrate the GIL-free kernel (hashlib releases the GIL above 2 KiB).
_CALIBRATION_BYTES = 1 << 20


class SyntheticFailure(RuntimeError):
    """The failure the synthetic variant injects."""


class SyntheticOptions(BaseModel):
    """connector.options of the synthetic variant."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    hold_ms: float = Field(
        5.0, ge=0, le=60_000, description="CPU time per request spent holding the GIL."
    )
    free_ms: float = Field(
        0.0, ge=0, le=60_000, description="Time per request spent without the GIL, after the hold."
    )
    free_kind: Literal["sleep", "kernel"] = Field(
        "sleep",
        description="sleep: a GIL-free wait (no CPU); kernel: GIL-free C work "
        "(hashing) of about free_ms CPU time.",
    )
    fail_prob: float = Field(
        0.0, ge=0, le=1, description="Probability that a request fails (after its work)."
    )


def spin_cpu(ns: int) -> int:
    """Run pure Python on this thread until it has used ``ns`` of CPU time; returns loop count.

    The GIL is held throughout (except when CPython hands it to a waiting thread
    at a switch interval, which stops this thread's CPU clock too).
    """
    clock = time.thread_time_ns
    end = clock() + ns
    n = 0
    while clock() < end:
        for _ in range(_SPIN_BATCH):
            n += 1
    return n


@register
class SyntheticVariant(AddressVariant):
    name = "synthetic"
    description = "Holds the GIL hold_ms per request, then free_ms without it; fails at fail_prob."
    Options = SyntheticOptions
    computes_addresses = False

    def __init__(self, db: Any, options: SyntheticOptions | None = None) -> None:
        super().__init__(db, options if options is not None else SyntheticOptions())
        self._kernel_buf: memoryview | None = None

    @property
    def opts(self) -> SyntheticOptions:
        return self.options

    def warm_up(self) -> None:
        """Let the interpreter specialise the spin loop; size the kernel's buffer."""
        spin_cpu(200_000)
        if self.opts.free_kind == "kernel" and self.opts.free_ms > 0:
            self._kernel_buf = memoryview(bytes(self._kernel_bytes(self.opts.free_ms)))
            hashlib.sha256(self._kernel_buf[:4096]).digest()

    @staticmethod
    def _kernel_bytes(ms: float) -> int:
        """Bytes whose SHA-256 takes about ``ms`` of CPU time on this machine (best of 3)."""
        buf = bytes(_CALIBRATION_BYTES)
        best = None
        for _ in range(3):
            c0 = time.thread_time_ns()
            hashlib.sha256(buf).digest()
            dt = max(1, time.thread_time_ns() - c0)
            best = dt if best is None else min(best, dt)
        assert best is not None
        return max(4096, int(_CALIBRATION_BYTES * ms * 1e6 / best))

    def prepare_values(self, chunks: Any, block_ids: Any) -> Any:
        raise NotImplementedError("synthetic computes no addresses (computes_addresses = False)")

    def run(self, job: LoadJob, group: int, handler: str) -> tuple[list[str], Any]:
        if group != 0:
            return [], None
        mark_stage("addresses")  # the configured hold stands in for the address stage
        opts = self.opts
        spin_cpu(round(opts.hold_ms * 1e6))
        if opts.free_ms > 0:
            if opts.free_kind == "kernel":
                buf = self._kernel_buf
                if buf is None:
                    raise RuntimeError("synthetic kernel used before warm_up()")
                with gil_free():
                    hashlib.sha256(buf).digest()
            else:
                with gil_free():
                    time.sleep(opts.free_ms / 1e3)
        if job.draw < opts.fail_prob:
            raise SyntheticFailure(
                f"injected failure: draw {job.draw:.4f} < fail_prob {opts.fail_prob:g}"
            )
        return [], None
