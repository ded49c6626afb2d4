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

What it keeps of a request until its batch is done is its *cells* (the numeric fields
the summary and windows read: sim.point.metrics.CELL_COLUMNS), status and error, and
its record only where a row or the list needs it (:meth:`RecordSink.wants_record`):
model mode makes no record for the others (sim.model.driver: a record per request,
built and read back field by field, was a quarter of a day's instructions).

So a model-mode point of ten million requests holds its requests in flight and a
batch, not ten million records (docs/design.md §6). Real mode adds its records after
the load, not while it measures (the bookkeeping would be the simulation thread's GIL
time); until then a finished request keeps only its notes (sim.runtime.pipeline), and
its row is made and passed here one at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from sim import columns
from sim.config.experiment import ExperimentConfig
from sim.point.metrics import CELL_COLUMNS, cell_table, record_cells, table_columns
from sim.point.records import RequestRecord
from sim.point.summary_stream import SummaryStream, WindowTable

__all__ = ["BATCH", "RecordSink", "RowWriter", "point_sink"]

#: Records handled at once (summary columns, rows formatted and written).
BATCH = 4096

#: Where a request's latency is among its cells.
_LATENCY = CELL_COLUMNS.index(columns.LATENCY_MS.name)

#: Appends records' rows to the point's requests.csv.
RowWriter = Callable[[Sequence[RequestRecord]], None]


#: What the sink keeps of a finished request until its batch is done: its id, its cells
#: (sim.point.metrics.CELL_COLUMNS), status and error, and its record when a row or the
#: list needs it (else None: model mode makes none then).
_Entry = tuple[int, tuple[float, ...], str, str, RequestRecord | None]


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
        self._stride = stride if write is not None else 0
        self._keep = keep
        self.records: list[RequestRecord] = []
        self._pending: dict[int, _Entry] = {}
        self._next = 0
        self._batch: list[_Entry] = []
        #: Sum of the gil_hold_ms that are not NaN (the model add-ons' GIL-busy figures).
        self.hold_ms = 0.0
        self.finished = 0

    def wants_record(self, request_id: int) -> bool:
        """Whether request ``request_id``'s record is needed (its row is kept, or every
        record is): else :meth:`add_cells` takes its cells alone."""
        step = self._stride
        return self._keep or (step > 0 and request_id % step == 0)

    def add(self, rec: RequestRecord) -> None:
        """A request finished: its record is complete."""
        cells: tuple[float, ...] = record_cells(rec)
        self.add_cells(rec.request_id, cells, rec.status, rec.error, rec)

    def add_cells(
        self,
        request_id: int,
        cells: tuple[float, ...],
        status: str,
        error: str,
        rec: RequestRecord | None = None,
    ) -> None:
        """A request finished: its cells (sim.point.metrics.CELL_COLUMNS, what
        ``record_cells`` of its record gives), status and error, and its record, which
        may be None unless :meth:`wants_record` says it is needed."""
        self.finished += 1
        entry = (request_id, cells, status, error, rec)
        if request_id != self._next:
            self._pending[request_id] = entry
            return
        batch, pending = self._batch, self._pending
        batch.append(entry)
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
        n = len(batch)
        table = cell_table([e[1] for e in batch])
        ok = np.array([e[2] == "ok" for e in batch], dtype=bool)
        cols = table_columns(table, ok)
        errors = [e[3] for e in batch if e[2] == "failed"]
        self.stream.add_columns(cols, n, errors)
        hold = cols[columns.GIL_HOLD_MS.name]
        self.hold_ms += math.fsum(hold[hold == hold].tolist())  # the ones not NaN
        if self.windows is not None:
            lat = cols[columns.LATENCY_MS.name]  # the ok requests' latencies
            if len(lat) < n:  # some did not end ok: NaN in their places
                lat = np.where(ok, table[_LATENCY], math.nan)
            self.windows.add(cols, lat)
        step = self._stride
        if step and self._write is not None:
            rows: list[RequestRecord] = []
            for e in batch:
                if e[0] % step == 0:
                    rec = e[4]
                    assert rec is not None, "a kept row's record (wants_record) was not given"
                    rows.append(rec)
            if rows:
                self._write(rows)
        if self._keep:
            self.records.extend([e[4] for e in batch if e[4] is not None])

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
