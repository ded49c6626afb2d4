"""Read a Mooncake-format request trace (JSON lines) into flat arrays.

Each line is one request: ``timestamp`` (ms since the trace began, never
decreasing), ``input_length`` (prompt tokens), ``output_length`` (generated
tokens; 0 when absent) and ``hash_ids`` (one id per ``block_tokens``-token
block of the prompt; equal ids at equal positions mean a shared prefix). Other
keys are ignored, blank lines skipped. Anything else is a :class:`TraceError`
naming the file and line, because the user's next move is to open it there.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim.errors import TraceError
from sim.files.read import MAX_DATA_BYTES, open_bounded

__all__ = ["Trace", "TraceError", "read_trace", "write_trace"]

MAX_LINE_CHARS = 1 << 20


@dataclass(frozen=True, eq=False)
class Trace:
    """Requests of a trace in file order; ``hash_ids[offsets[i]:offsets[i+1]]`` are request i's."""

    path: str
    timestamps_ms: np.ndarray
    input_length: np.ndarray
    output_length: np.ndarray
    offsets: np.ndarray
    hash_ids: np.ndarray
    #: 1-based line of each request in the file (blank lines are skipped, so not i + 1).
    lines: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.input_length)

    def blocks(self, i: int) -> np.ndarray:
        return self.hash_ids[self.offsets[i] : self.offsets[i + 1]]

    @property
    def duration_ms(self) -> float:
        return float(self.timestamps_ms[-1] - self.timestamps_ms[0])


def _bad(path: Path, lineno: int, msg: str) -> TraceError:
    return TraceError(f"{path}:{lineno}: {msg}")


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(rec: dict[str, Any], key: str, path: Path, lineno: int, least: int) -> int:
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise _bad(path, lineno, f"{key}: expected an integer >= {least} (got {_show(v)})")
    return v


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    raw = open_bounded(path, what="trace", limit=MAX_DATA_BYTES, error=TraceError)
    with io.TextIOWrapper(raw, encoding="utf-8") as fh:
        lineno = 0
        while True:
            try:
                line = fh.readline(MAX_LINE_CHARS + 1)
            except UnicodeDecodeError:
                raise _bad(path, lineno + 1, "not UTF-8 text") from None
            if not line:
                return
            lineno += 1
            if len(line) > MAX_LINE_CHARS:
                raise _bad(path, lineno, "line longer than 1 MiB; is this a JSON-lines trace?")
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                msg = f"not valid JSON ({exc.msg} at column {exc.colno})"
                raise _bad(path, lineno, msg) from None
            except (ValueError, RecursionError):  # an integer of 4,300+ digits, deep nesting
                msg = "a number too long or nesting too deep to be a trace record"
                raise _bad(path, lineno, msg) from None
            if not isinstance(rec, dict):
                raise _bad(path, lineno, f"expected a JSON object, got {type(rec).__name__}")
            yield lineno, rec


def read_trace(path: str | Path, limit: int | None = None) -> Trace:
    """The first ``limit`` requests of the trace at ``path`` (all when None)."""
    path = Path(path)
    times: list[float] = []
    inputs: list[int] = []
    outputs: list[int] = []
    offsets = [0]
    ids: list[int] = []
    lines: list[int] = []
    last_t = -math.inf
    for lineno, rec in _records(path):
        t = rec.get("timestamp")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise _bad(path, lineno, f"timestamp: expected milliseconds >= 0 (got {_show(t)})")
        if t < last_t:
            raise _bad(
                path,
                lineno,
                f"timestamp {t} is earlier than the line before ({last_t}); "
                "sort the trace by timestamp",
            )
        inputs.append(_count(rec, "input_length", path, lineno, 1))
        outputs.append(
            _count(rec, "output_length", path, lineno, 0) if "output_length" in rec else 0
        )
        hashes = rec.get("hash_ids")
        if not isinstance(hashes, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) and 0 <= h < 2**63 for h in hashes
        ):
            raise _bad(
                path, lineno, f"hash_ids: expected a list of integers >= 0 (got {_show(hashes)})"
            )
        ids.extend(hashes)
        offsets.append(len(ids))
        times.append(float(t))
        lines.append(lineno)
        last_t = t
        if limit is not None and len(times) >= limit:
            break
    if not times:
        raise TraceError(f"{path}: the trace has no requests")
    return Trace(
        str(path),
        np.asarray(times, dtype=np.float64),
        np.asarray(inputs, dtype=np.int64),
        np.asarray(outputs, dtype=np.int64),
        np.asarray(offsets, dtype=np.int64),
        np.asarray(ids, dtype=np.int64),
        np.asarray(lines, dtype=np.int64),
    )


def write_trace(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as a JSON-lines trace with the keys in Mooncake's order."""
    keys = ("timestamp", "input_length", "output_length", "hash_ids")
    lines = [json.dumps({k: r[k] for k in keys}, separators=(", ", ": ")) for r in rows]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
