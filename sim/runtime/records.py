"""Per-request records: the rows of requests.csv, with units in the column names."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["HOLD_STAGE_COLUMNS", "REQUEST_COLUMNS", "RequestRecord"]

#: The columns that split ``gil_hold_ms`` by stage; they sum to it.
HOLD_STAGE_COLUMNS = ("hold_keys_ms", "hold_addresses_ms", "hold_free_ms", "hold_gc_ms")


@dataclass
class RequestRecord:
    request_id: int
    tokens: int
    chunks: int
    bytes: int
    arrival_s: float
    start_s: float = float("nan")
    cpu_done_s: float = float("nan")
    done_s: float = float("nan")
    queue_ms: float = float("nan")
    cpu_ms: float = float("nan")
    gil_hold_ms: float = float("nan")
    gil_wait_ms: float = float("nan")
    #: gil_hold_ms by stage (sim.instruments.stages): chunk list and store keys, the
    #: variant's addresses, the hand-off (results dropped), every collection inside.
    hold_keys_ms: float = float("nan")
    hold_addresses_ms: float = float("nan")
    hold_free_ms: float = float("nan")
    hold_gc_ms: float = float("nan")
    #: Collections that ran on the request's thread during its CPU stages, by generation.
    gc_gen0: int = 0
    gc_gen1: int = 0
    gc_gen2: int = 0
    store_wait_ms: float = float("nan")
    transfer_ms: float = float("nan")
    attempts: int = 1
    latency_ms: float = float("nan")
    thread: str = ""
    status: str = "pending"
    error: str = ""
    #: 1-based line of the trace file the request replays (empty when not a trace replay).
    trace_line: int | None = None

    def as_row(self) -> dict[str, object]:
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        if row["trace_line"] is None:
            row["trace_line"] = ""  # an empty CSV cell, not the text "None"
        return row


REQUEST_COLUMNS = [f.name for f in fields(RequestRecord)]
