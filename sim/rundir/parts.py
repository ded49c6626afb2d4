"""A combined table joined from the point runs' own files, without re-parsing their rows.

The top-level ``requests.csv`` is every finished run's ``requests.csv`` rows, in
point order, under one header that unites their columns. Parsing every row and
formatting it again costs tens of microseconds a row; when a run's file is
*canonical* — its columns are exactly the combined ones, and its text is what
``csv`` writes for the cells it holds (no quoting, no ``\\r``, every line with
one field per column) — its rows are copied as bytes instead, which is what
parsing and re-writing them would give. Any other file (an older kvsim's, a
quoted error message, a table whose columns differ from the union) goes through
the parse-and-write path, row by row, so the result is the same either way:
``tests/rundir/test_csv_cells.py`` checks it against the reference.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from sim.rundir.csv_cells import csv_text, header_line, rows_to_cells
from sim.rundir.outputs import atomic_write_bytes
from sim.rundir.verify import file_blocks

__all__ = ["IN_MEMORY_BYTES", "Part", "join_parts", "write_joined"]

#: A run's table larger than this is not held: its rows are copied from its file when the
#: combined table is written (a model point of millions of requests: docs/design.md §6).
IN_MEMORY_BYTES = 8 << 20


def _canonical_lines(lines: bytes, commas: int) -> bool:
    """Whole lines of a canonical file's body: no quote, CR or blank line, ``commas``
    commas on each."""
    return (
        b'"' not in lines
        and b"\r" not in lines
        and not lines.startswith(b"\n")
        and b"\n\n" not in lines
        and _fields_per_line(lines, commas)
    )


def _fields_per_line(body: bytes, commas: int) -> bool:
    """Every line of ``body`` (each ends with a newline) has exactly ``commas`` commas."""
    if body.count(b",") != body.count(b"\n") * commas:
        return False
    return all(line.count(b",") == commas for line in body.split(b"\n")[:-1])


@dataclass
class Part:
    """One run's file of a table: its header's columns and its rows, as bytes."""

    #: Column names of its header (parsed; for a non-canonical file, its rows' keys).
    columns: list[str]
    #: Everything after the header line (canonical files only; else b"").
    body: bytes
    #: The body can be copied as it is under a header of exactly ``columns``.
    canonical: bool
    _text: str = ""
    _rows: list[dict[str, Any]] | None = field(default=None, repr=False)
    #: A canonical part left on disk: its file and where its body starts (else None).
    source: Path | None = None
    body_start: int = 0
    body_size: int = 0

    @classmethod
    def from_file(cls, path: Path) -> Part:
        """A part read from ``path`` a block at a time, its body left on disk when the file
        is canonical (checked block by block as :meth:`from_bytes` does); a file that is
        not is read whole (the parse-and-write path needs its rows)."""
        blocks = file_blocks(path)
        head = b""
        for block in blocks:
            head += block
            if b"\n" in head:
                break
        first, _, rest = head.partition(b"\n")
        columns = first.decode("utf-8").split(",")
        start = len(first) + 1
        ok = len(columns) >= 2 and all(columns) and len(set(columns)) == len(columns)
        size, last, carry = len(rest), b"", rest
        # the rest of what was read first, then the file: a block at a time (unpacking the
        # generator, ``(b"", *blocks)``, read the whole file in: 236 MB for a 222 MB one)
        for block in chain((b"",), blocks):
            carry += block
            size += len(block)
            cut = carry.rfind(b"\n") + 1
            whole, carry = carry[:cut], carry[cut:]
            if whole:
                last = whole[-1:]
                whole.decode("utf-8")  # UnicodeDecodeError, as from_bytes raises
            if ok and not _canonical_lines(whole, len(columns) - 1):
                ok = False
        if not ok or carry or (size and last != b"\n"):
            data = b"".join(file_blocks(path))
            return cls.from_bytes(data)
        return cls(columns, b"", True, source=path, body_start=start, body_size=size)

    def body_chunks(self) -> Iterator[bytes]:
        """Its body, from memory or a block at a time from its file."""
        if self.source is None:
            yield self.body
        else:
            yield from file_blocks(self.source, self.body_start)

    @classmethod
    def from_bytes(cls, data: bytes) -> Part:
        """Raises UnicodeDecodeError (or csv.Error) on a file that is not UTF-8 CSV."""
        text = data.decode("utf-8")
        head, _, body = data.partition(b"\n")
        columns = head.decode("utf-8").split(",")
        canonical = (
            b'"' not in data
            and b"\r" not in data
            and b"\n\n" not in data
            and data.endswith(b"\n")
            and len(columns) >= 2
            and all(columns)
            and len(set(columns)) == len(columns)
            and _fields_per_line(body, len(columns) - 1)
        )
        if canonical:
            return cls(columns, body, True)
        part = cls([], b"", False, text)
        part.columns = [c for c in part.row_keys() if c is not None]
        return part

    @property
    def has_rows(self) -> bool:
        if self.source is not None:
            return self.body_size > 0
        return bool(self.body) if self.canonical else bool(self.rows())

    def rows(self) -> list[dict[str, Any]]:
        """Its rows as ``csv.DictReader`` reads the file."""
        if self._rows is None:
            text = self._text
            if self.canonical:
                body = b"".join(self.body_chunks())  # rows asked of a part on disk: read
                text = header_line(self.columns) + body.decode("utf-8")
            self._rows = list(csv.DictReader(io.StringIO(text, newline="")))
        return self._rows

    def row_keys(self) -> list[Any]:
        """The keys its rows hold, in first-seen order (what a union of columns takes)."""
        if self.canonical:
            return list(self.columns) if self.has_rows else []
        keys: dict[Any, None] = {}
        for row in self.rows():
            keys.update(dict.fromkeys(row))
        return list(keys)


def join_parts(lead: Sequence[str], parts: Sequence[Part]) -> Iterator[bytes]:
    """The combined table's bytes, in pieces: a header of ``lead`` then every column any
    row holds (first seen first), and the rows of ``parts`` in order (a part left on disk
    is copied from its file a block at a time)."""
    cols: dict[Any, None] = dict.fromkeys(lead)
    for part in parts:
        cols.update(dict.fromkeys(part.row_keys()))
    union = list(cols)
    yield header_line(union).encode("utf-8")
    for part in parts:
        if not part.has_rows:
            continue
        if part.canonical and part.columns == union:
            yield from part.body_chunks()
        else:
            text = csv_text(union, rows_to_cells(union, part.rows()), header=False)
            yield text.encode("utf-8")


def write_joined(path: Path, lead: Sequence[str], parts: Sequence[Part]) -> dict[str, Any]:
    """Write the combined table atomically, streaming; return its ``{"size", "sha256"}``
    record (``sim.rundir.verify``), computed from the bytes written."""
    h = hashlib.sha256()
    size = 0

    def counted() -> Iterator[bytes]:
        nonlocal size
        for chunk in join_parts(lead, parts):
            h.update(chunk)
            size += len(chunk)
            yield chunk

    atomic_write_bytes(path, counted())
    return {"size": size, "sha256": h.hexdigest()}
