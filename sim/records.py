"""Per-request records: the rows of requests.csv, with units in the column names."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["REQUEST_COLUMNS", "RequestRecord"]


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
    store_wait_ms: float = float("nan")
    transfer_ms: float = float("nan")
    attempts: int = 1
    latency_ms: float = float("nan")
    thread: str = ""
    status: str = "pending"
    error: str = ""

    def as_row(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


REQUEST_COLUMNS = [f.name for f in fields(RequestRecord)]
