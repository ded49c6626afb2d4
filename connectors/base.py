"""What a connector variant is, and how it declares GIL-free sections.

An address variant turns chunks into ``(addr_lists, size_lists, block_ids)`` as
Python ints (docs/design.md §1.1). Sections that run without the GIL (a nogil kernel,
a GIL-free wait) are wrapped in :func:`gil_free`, so the GIL meter can subtract
their CPU time from the thread's.
"""

from __future__ import annotations

import difflib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .token_database import TokenDatabase

__all__ = [
    "AddressVariant",
    "FreeTime",
    "LoadJob",
    "PreparedValues",
    "free_time",
    "gil_free",
    "mark_stage",
    "stage_hook",
]

PreparedValues = tuple[list[list[int]], list[list[int]], list[int]]


class FreeTime(threading.local):
    """Per-thread totals of time spent in declared GIL-free sections."""

    cpu_ns: int = 0
    wall_ns: int = 0
    #: When a list: each section's (start, end) ``perf_counter_ns`` is appended to it
    #: (sim.calibration.measure_yields tells the variant's own GIL releases from these).
    spans: list[tuple[int, int]] | None = None


free_time = FreeTime()


class StageHook(threading.local):
    """Per-thread receiver of stage marks, set by whoever times the thread's job."""

    mark: Callable[[str], None] | None = None


stage_hook = StageHook()


def mark_stage(name: str) -> None:
    """Say that this thread's job now enters stage ``name`` (``keys``, ``addresses``, ``free``).

    The GIL meter then splits the job's hold at this point (sim.instruments.stages);
    with no meter timing the thread, this is a no-op costing one attribute read.
    """
    mark = stage_hook.mark
    if mark is not None:
        mark(name)


@contextmanager
def gil_free() -> Iterator[None]:
    """Declare that the enclosed code runs without the GIL (nogil kernel, blocking wait)."""
    c0 = time.thread_time_ns()
    w0 = time.perf_counter_ns()
    try:
        yield
    finally:
        w1 = time.perf_counter_ns()
        free_time.cpu_ns += time.thread_time_ns() - c0
        free_time.wall_ns += w1 - w0
        if free_time.spans is not None:
            free_time.spans.append((w0, w1))


@dataclass(frozen=True)
class LoadJob:
    """The CPU work of one request: what the worker thread receives.

    ``block_hashes`` is one flat blob of ``hash_len``-byte hashes per
    ``hash_block_size`` tokens, as the upstream connector receives it;
    ``block_ids`` has one block table per KV-cache group.
    """

    request_id: int
    tokens: int
    block_hashes: bytes
    block_ids: tuple[list[int], ...]
    hash_len: int = 32
    #: One uniform draw in [0, 1) from the run's generator, for variants that
    #: decide something at random (e.g. an injected failure), so runs stay seeded.
    draw: float = 0.0


class AddressVariant:
    """Base of address-computation variants; subclasses register with ``@register``.

    ``db`` carries the geometry of one KV-cache group. Construction must be cheap
    and side-effect free; heavy imports and JIT compilation belong in
    :meth:`warm_up`, which runs before anything is measured.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel] | None] = None
    #: Whether this variant computes addresses (False for synthetic/noop workloads).
    computes_addresses: ClassVar[bool] = True
    #: True for a what-if whose ``prepare_values``/``addresses`` natively take chunks as
    #: an ``(n, 2)`` int64 array and block tables as int64 arrays (as a buffer-accepting
    #: binding would); ``kvsim bench connectors`` then converts its inputs outside the
    #: measured region. Lists are still accepted.
    buffer_inputs: ClassVar[bool] = False
    #: Import names of the packages the variant needs at run time (numpy, numba...): a
    #: config that runs it under an interpreter without one is refused at validation.
    requires: ClassVar[tuple[str, ...]] = ()

    def __init__(self, db: TokenDatabase, options: Any = None) -> None:
        self.db = db
        self.options = options

    @classmethod
    def validate_options(cls, raw: dict[str, Any]) -> Any:
        """Options model instance from ``raw``; raises ValueError naming the field."""
        if cls.Options is None:
            if raw:
                raise ValueError(f"variant {cls.name!r} takes no options (got {sorted(raw)})")
            return None
        # pydantic: only a variant with options needs it (connectors.base imports no library)
        from pydantic import ValidationError

        try:
            return cls.Options.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"])
            allowed = list(cls.Options.model_fields)
            if err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(field, allowed, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ValueError(
                    f"{field}: not an option of variant {cls.name!r}; {hint}allowed: "
                    f"{', '.join(allowed)} (`kvsim variants {cls.name}` says what each does)"
                ) from None
            got = err.get("input")
            raise ValueError(
                f"{field}: {err['msg']} (got {got!r}; variant {cls.name!r}, "
                f"`kvsim variants {cls.name}` lists its options)"
            ) from None

    def warm_up(self) -> None:
        """Compile, import and touch caches so the first measured request is not special."""
        self.prepare_values([(0, self.db.block_size)], [0])

    def prepare_value(
        self, start: int, end: int, block_ids: Sequence[int]
    ) -> tuple[list[int], list[int], int]:
        addr_lists, size_lists, bids = self.prepare_values(((start, end),), block_ids)
        return addr_lists[0], size_lists[0], bids[0]

    def prepare_values(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> PreparedValues:
        raise NotImplementedError

    def run(self, job: LoadJob, group: int, handler: str) -> tuple[list[str], Any]:
        """CPU stages of one request for one group: chunk list with store keys, then
        addresses, one call per chunk (``per_chunk``) or one for the group (``per_group``).
        """
        mark_stage("keys")
        keyed = self.db.chunk_list(job.tokens, job.block_hashes, job.hash_len)
        keys = [k for _s, _e, k in keyed]
        chunks = [(s, e) for s, e, _k in keyed]
        mark_stage("addresses")
        return keys, self.addresses(chunks, job.block_ids[group], handler)

    def addresses(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int], handler: str
    ) -> Any:
        """The request handler's address stage: one ``prepare_value`` call per chunk
        (``per_chunk``, before PR #48531) or one ``prepare_values`` call (``per_group``)."""
        if handler != "per_chunk":
            return self.prepare_values(chunks, block_ids)
        out_a, out_s, out_b = [], [], []
        for s, e in chunks:
            a, sz, b = self.prepare_value(s, e, block_ids)
            out_a.append(a)
            out_s.append(sz)
            out_b.append(b)
        return out_a, out_s, out_b
