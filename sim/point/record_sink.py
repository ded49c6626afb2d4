"""Where a point's finished requests go: one path for both modes, in bounded memory.

Both drivers (real mode's pipeline and model mode's simulated threads) hand every
finished request's record to a :class:`RecordSink`, whatever order they finish in.
The sink puts them back in request-id order through a reorder buffer that holds only
the requests finished ahead of an earlier one still in flight, and every
``BATCH`` records it

* feeds the point's summary (sim.point.summary_stream: exact up to its limit,
  bounded beyond),
* hands the rows ``output.requests`` keeps (all, none, or every k-th id) to the
  writer, which appends them to the point's requests.csv (sim.sweep.point_tables),
* and, only when asked (the Python API, tests), keeps the records in a list.

So a model-mode point of ten million requests holds its requests in flight and a
batch, not ten million records (docs/design.md §6). Real mode adds its records after
the load, not while it measures (the bookkeeping would be the simulation thread's GIL
time); until then a finished request keeps only its notes (sim.runtime.pipeline), and
its row is made and passed here one at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from sim import columns
from sim.config.experiment import ExperimentConfig
from sim.point.records import RequestRecord
from sim.point.summary_stream import SummaryStream, WindowTable

__all__ = ["BATCH", "RecordSink", "RowWriter", "point_sink"]

#: Records handled at once (summary columns, rows formatted and written).
BATCH = 4096

#: Appends records' rows to the point's requests.csv.
RowWriter = Callable[[Sequence[RequestRecord]], None]


class RecordSink:
    """Finished records in (any order), in request-id order out to the summary, the rows
    kept and, when ``keep``, a list."""

    def __init__(
        self,
        extra_percentiles: Sequence[float] = (),
        write: RowWriter | None = None,
        stride: int = 1,
        keep: bool = True,
        window_s: float | None = None,
    ) -> None:
        self.stream = SummaryStream(extra_percentiles)
        self.windows = WindowTable(window_s) if window_s else None
        self._write = write
        self._stride = stride
        self._keep = keep
        self.records: list[RequestRecord] = []
        self._pending: dict[int, RequestRecord] = {}
        self._next = 0
        self._batch: list[RequestRecord] = []
        #: Sum of the gil_hold_ms that are not NaN (the model add-ons' GIL-busy figures).
        self.hold_ms = 0.0
        self.finished = 0

    def add(self, rec: RequestRecord) -> None:
        """A request finished: its record is complete."""
        self.finished += 1
        if rec.request_id != self._next:
            self._pending[rec.request_id] = rec
            return
        batch, pending = self._batch, self._pending
        batch.append(rec)
        nxt = self._next + 1
        while nxt in pending:
            batch.append(pending.pop(nxt))
            nxt += 1
        self._next = nxt
        if len(batch) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        batch = self._batch
        if not batch:
            return
        self._batch = []
        cols = self.stream.add(batch)
        hold = cols[columns.GIL_HOLD_MS.name]
        self.hold_ms += math.fsum(hold[hold == hold].tolist())  # the ones not NaN
        if self.windows is not None:
            self.windows.add(batch, cols)
        if self._write is not None and self._stride:
            step = self._stride
            rows = batch if step == 1 else [r for r in batch if r.request_id % step == 0]
            if rows:
                self._write(rows)
        if self._keep:
            self.records.extend(batch)

    def close(self) -> None:
        """Flush what is left; records whose earlier ids never came go in id order."""
        if self._pending:
            self._batch.extend(self._pending[k] for k in sorted(self._pending))
            self._pending.clear()
        self._flush()

    def tables(self) -> dict[str, list[dict[str, float]]]:
        """The sink's own tables: windows.csv when ``output.window_s`` is set."""
        return {"windows": self.windows.rows()} if self.windows is not None else {}

    def summary(self, elapsed_s: float) -> dict[str, float]:
        """The point's request metrics (sim.point.metrics), over every request added."""
        return self.stream.summary(elapsed_s)


def point_sink(cfg: ExperimentConfig, total: int, write_rows: RowWriter | None) -> RecordSink:
    """A point's sink (both modes): rows to ``write_rows`` when given (every k-th id by
    ``output.requests``), else every record kept for the result."""
    return RecordSink(
        cfg.output.percentiles,
        write_rows,
        cfg.output.request_stride(total),
        keep=write_rows is None,
        window_s=cfg.output.window_s,
    )
