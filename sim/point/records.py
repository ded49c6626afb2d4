"""Per-request records: the rows of requests.csv, with units in the column names.

Times ending in ``_s`` are run time: seconds since the load started (the first
planned arrival is at zero). ``arrival_s`` is when the workload planned the
request (not when the harness got round to it: that is ``injected_s``), and
``queue_ms`` and ``latency_ms`` count from it, so a harness that falls behind
shows as ``inject_lag_ms`` and in the latency instead of hiding (coordinated
omission).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol

from sim import columns

__all__ = [
    "DERIVED_COLUMNS",
    "HOLD_STAGE_COLUMNS",
    "RECORD_FIELDS",
    "REQUEST_COLUMNS",
    "TIME_COLUMNS",
    "RequestRecord",
    "TransferResult",
    "end_record",
    "error_line",
]

#: The columns that split ``gil_hold_ms`` by stage; they sum to it.
HOLD_STAGE_COLUMNS = columns.names(columns.HOLD_STAGES)


@dataclass(slots=True)  # a fifth of the memory, half the construction time
class RequestRecord:
    request_id: int
    tokens: int
    chunks: int
    bytes: int
    arrival_s: float
    injected_s: float = float("nan")
    inject_lag_ms: float = float("nan")
    start_s: float = float("nan")
    cpu_done_s: float = float("nan")
    done_s: float = float("nan")
    queue_ms: float = float("nan")
    #: Wall time of the CPU stages on the load thread: GIL hold plus GIL wait (and any
    #: GIL-free work), not CPU time. Called cpu_ms before.
    stage_wall_ms: float = float("nan")
    gil_hold_ms: float = float("nan")
    gil_wait_ms: float = float("nan")
    #: gil_hold_ms by stage (sim.instruments.stages): chunk list and store keys, the
    #: variant's addresses, the hand-off (results dropped), every collection inside.
    hold_keys_ms: float = float("nan")
    hold_addresses_ms: float = float("nan")
    hold_free_ms: float = float("nan")
    hold_gc_ms: float = float("nan")
    #: The load thread's CPU time over the CPU stages, and its time runnable but off-core
    #: (schedstat): what takes the GIL hold's and wait's place with the GIL off.
    thread_cpu_ms: float = float("nan")
    core_wait_ms: float = float("nan")
    #: Collections that ran on the request's thread during its CPU stages, by generation.
    gc_gen0: int = 0
    gc_gen1: int = 0
    gc_gen2: int = 0
    #: Of those, the ones that ran inside the addresses stage (the variant's allocations
    #: set them off). gc_gen0 + gc_gen1 + gc_gen2 is what ``kvsim bench connectors``
    #: reports per request as sustained GCs (tests/e2e/test_gc_agreement.py).
    gc_addresses: int = 0
    store_wait_ms: float = float("nan")
    transfer_ms: float = float("nan")
    attempts: int = 1
    #: Bytes the store reported moving (a modelled store: the request's bytes when ok).
    transfer_bytes: int = 0
    #: Blocks whose content was checked after a real store's get (0: modelled or not checked).
    verified_blocks: int = 0
    latency_ms: float = float("nan")
    thread: str = ""
    status: str = "pending"
    error: str = ""
    #: 1-based line of the trace file the request replays (empty when not a trace replay).
    trace_line: int | None = None

    def as_row(self) -> dict[str, object]:
        """The request's requests.csv row: the catalogue's columns, in its order."""
        row = {
            name: derive(self) if (derive := DERIVED_COLUMNS.get(name)) else getattr(self, name)
            for name in REQUEST_COLUMNS
        }
        if row[columns.TRACE_LINE.name] is None:
            row[columns.TRACE_LINE.name] = ""  # an empty CSV cell, not the text "None"
        for name in TIME_COLUMNS:
            # To the nanosecond: six significant digits would blur a planned schedule
            # (0.0166667 for 1/60) and hide microseconds after the first second.
            v = row[name]
            row[name] = "" if v != v else f"{v:.9f}"
        return row


#: requests.csv's columns, in order: the catalogue's (sim.columns.REQUESTS).
REQUEST_COLUMNS = list(columns.names(columns.REQUESTS))
#: The columns computed from the finished record when its row is made (name -> how).
DERIVED_COLUMNS = {c.name: c.derive for c in columns.REQUESTS if c.derive is not None}
#: The columns the record holds: the rest of the catalogue's, in the same order
#: (tests/test_columns.py).
RECORD_FIELDS = [f.name for f in fields(RequestRecord)]
#: Run-time columns (seconds), written with nanosecond resolution.
TIME_COLUMNS = tuple(c for c in REQUEST_COLUMNS if c.endswith("_s"))


class TransferResult(Protocol):
    """What the store says of a transfer (``sim.store.model.TransferOutcome``)."""

    @property
    def waited_s(self) -> float: ...
    @property
    def attempts(self) -> int: ...
    @property
    def error(self) -> BaseException | None: ...
    @property
    def transfer_ms(self) -> float | None: ...
    @property
    def transfer_bytes(self) -> int | None: ...
    @property
    def verified_blocks(self) -> int: ...


def error_line(err: BaseException) -> str:
    """An error as one requests.csv cell: its type and first line, at most 300 characters."""
    return f"{type(err).__name__}: {err}".splitlines()[0][:300]


def end_record(
    rec: RequestRecord,
    done_s: float,
    latency_ms: float,
    xfer: TransferResult | None,
    cpu_error: str = "",
    admit_wait_s: float = 0.0,
) -> None:
    """Finish a request's record: the one place both modes do it (real mode's pipeline,
    model mode's driver), so that a new requests.csv column is one edit here.

    ``rec`` holds what the CPU stages noted (``cpu_done_s`` among them). ``done_s`` and
    ``latency_ms`` are the end the mode's clock fixed, from the planned arrival.
    ``cpu_error`` says the CPU stages failed (no transfer: ``xfer`` is None); else
    ``xfer`` is the store's outcome, modelled (``transfer_ms`` None: the transfer is
    the time from the CPU stages' end) or measured by a real store in the load thread.
    """
    rec.done_s = done_s
    rec.latency_ms = latency_ms
    if xfer is None:
        rec.status = "failed"
        rec.error = cpu_error
        rec.attempts = 0
        return
    rec.store_wait_ms = (admit_wait_s + xfer.waited_s) * 1e3
    rec.attempts = xfer.attempts
    rec.verified_blocks = xfer.verified_blocks
    if xfer.error is None:
        rec.status = "ok"
    else:
        rec.status = "failed"
        rec.error = error_line(xfer.error)
    if xfer.transfer_ms is None:  # modelled: from the end of the CPU stages
        rec.transfer_ms = (done_s - rec.cpu_done_s) * 1e3
        rec.transfer_bytes = rec.bytes if xfer.error is None else 0
    else:  # real: the get, measured in the load thread (part of its job)
        rec.transfer_ms = xfer.transfer_ms
        rec.stage_wall_ms -= xfer.transfer_ms
        rec.transfer_bytes = xfer.transfer_bytes or 0
