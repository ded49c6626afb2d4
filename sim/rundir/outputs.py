"""Atomic writes of CSVs and JSON: a crash never leaves a half-written file that looks whole."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.errors import RunDirError
from sim.files.read import MAX_RUN_FILE_BYTES, open_bounded
from sim.process.proc_fields import proc_fields
from sim.rundir.csv_cells import csv_text, format_cell, rows_to_cells

__all__ = [
    "AtomicTextStream",
    "atomic_write_bytes",
    "atomic_write_text",
    "csv_table_text",
    "format_value",
    "is_temporary_of",
    "read_csv",
    "write_csv",
    "write_json",
]


#: What ``tempfile.mkstemp`` puts between a temporary's prefix and suffix.
_TEMP_MIDDLE = re.compile(r"[a-z0-9_]{8}")


def is_temporary_of(name: str, target: str) -> bool:
    """``name`` is a temporary that an atomic write of ``target`` (in the same directory)
    leaves when killed mid-way: ``.<target>.<8 random characters>.tmp``, exactly; a
    user's ``.summary.csv.mine.tmp`` is not one."""
    prefix = f".{target}."
    return (
        name.startswith(prefix)
        and name.endswith(".tmp")
        and _TEMP_MIDDLE.fullmatch(name[len(prefix) : -len(".tmp")]) is not None
    )


def atomic_write_text(path: Path, text: str, durable: bool = True) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it.

    ``durable=False`` leaves the fsync out: the file is still whole or absent after
    a crash of the process, but a power cut may lose it. Only for files whose loss
    is detected and repaired (a model-mode point run's files: their checksums are
    recorded, and a resume reruns the point), where fsync would cost more than
    the point.
    """
    with AtomicTextStream(path, durable) as out:
        out.write(text)
        out.commit()


class AtomicTextStream:
    """A text file written piece by piece and put in place whole: :func:`atomic_write_text`
    for text that comes a batch at a time (a model point's requests.csv, written as its
    requests finish, so that it never has to be held whole in memory).

    The pieces go to a temporary file beside ``path``; :meth:`commit` (fsync unless
    ``durable=False``) renames it over ``path``; :meth:`abort`, or an exception inside a
    ``with`` block, removes it, so a half-written file is never in place.
    """

    def __init__(self, path: Path, durable: bool = True) -> None:
        self.path = path
        self._durable = durable
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            self._fh = os.fdopen(fd, "w", encoding="utf-8", newline="")
        except BaseException:
            os.close(fd)
            Path(self._tmp).unlink(missing_ok=True)
            raise

    def write(self, text: str) -> None:
        try:
            self._fh.write(text)
        except OSError as exc:
            self.abort()
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None

    def commit(self) -> None:
        try:
            self._fh.flush()
            if self._durable:
                os.fsync(self._fh.fileno())
            self._fh.close()
            os.replace(self._tmp, self.path)
        except OSError as exc:
            self.abort()
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None

    def abort(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        Path(self._tmp).unlink(missing_ok=True)

    def __enter__(self) -> AtomicTextStream:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if kind is not None:
            self.abort()


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else set and restored."""
    try:
        return int(proc_fields("self", ("Umask",)).get("Umask", ""), 8)
    except ValueError:  # off Linux (no /proc): set and restored
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def format_value(v: Any) -> Any:
    """One cell as kvsim writes it (see ``sim.rundir.csv_cells.format_cell``)."""
    return format_cell(v)


def csv_table_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """The CSV text ``write_csv`` writes: a header, then each row's ``columns`` (a missing
    key is an empty cell, other keys are left out), cells as ``format_value`` makes them."""
    columns = list(columns)
    rows = list(rows)
    if not columns:  # csv's own idea of a row without fields: an empty line each
        return "\n" * (1 + len(rows))
    return csv_text(columns, rows_to_cells(columns, rows))


def write_csv(
    path: Path,
    columns: Sequence[str],
    rows: Iterable[Mapping[str, Any]],
    durable: bool = True,
) -> None:
    """Write a table atomically (see :func:`csv_table_text`, :func:`atomic_write_text`)."""
    atomic_write_text(path, csv_table_text(columns, rows), durable)


def atomic_write_bytes(path: Path, chunks: Iterable[bytes]) -> None:
    """:func:`atomic_write_text` for bytes given in pieces (a table joined from parts)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.writelines(chunks)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_csv(path: Path) -> list[dict[str, str]]:
    """Rows of a table in a run directory (a link, FIFO or device there: RunDirError)."""
    raw = open_bounded(
        path, what="table", limit=MAX_RUN_FILE_BYTES, error=RunDirError, within=path.parent
    )
    with io.TextIOWrapper(raw, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def write_json(path: Path, data: Any, durable: bool = True) -> None:
    text = json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"
    atomic_write_text(path, text, durable)
