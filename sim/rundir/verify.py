"""Size and checksum of the files a run wrote, so that a damaged result is found, not used.

A finished point run records ``{name: {"size": bytes, "sha256": hex}}`` of every
file it wrote in its ``status.json``; the manifest records the same of the
top-level tables. ``--resume``, ``--dry-run``, ``compare`` and ``plot`` check
these records before they use a file: a truncated, deleted, garbled or replaced
file is a reason to re-run (a point) or to rebuild (a table), never data.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from sim.files.read import MAX_RUN_FILE_BYTES, first_link, open_bounded

__all__ = [
    "file_blocks",
    "file_record",
    "first_link",
    "read_verified",
    "record_files",
    "verify_files",
]

_BLOCK = 1 << 20


class UnreadableError(OSError):
    """A file of the run that cannot be read as a regular file (the message says why)."""


def _unreadable(msg: str) -> OSError:
    return UnreadableError(errno.EINVAL, msg)


def _open(path: Path) -> BinaryIO:
    """A file of a run, opened without following a link, blocking or reading past the cap."""
    return open_bounded(
        path,
        what="file of the run",
        limit=MAX_RUN_FILE_BYTES,
        error=_unreadable,
        within=path.parent,
    )


def file_blocks(path: Path, start: int = 0) -> Iterator[bytes]:
    """A run's file from byte ``start``, a block at a time (the bounded reader's rules)."""
    with _open(path) as fh:
        while start > 0:  # the bounded reader's stream does not seek: read past the start
            skipped = fh.read(min(start, _BLOCK))
            if not skipped:
                return
            start -= len(skipped)
        yield from iter(lambda: fh.read(_BLOCK), b"")


def file_record(path: Path) -> dict[str, Any]:
    """``{"size", "sha256"}`` of a regular file (not followed when it is a link)."""
    h = hashlib.sha256()
    size = 0
    with _open(path) as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
            size += len(block)
    return {"size": size, "sha256": h.hexdigest()}


def record_files(base: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Records of ``names`` (relative to ``base``), in name order."""
    return {name: file_record(base / name) for name in sorted(set(names))}


def _check_names(records: Any) -> str:
    """ "" when ``records`` is a usable record of file names, else why not."""
    if not isinstance(records, Mapping) or not records:
        return "no file sizes and checksums recorded (made by an older kvsim?)"
    for name, rec in records.items():
        if not isinstance(name, str) or "/" in name or name.startswith(".") or not name:
            return f"bad file name {name!r} in the record"
        if not isinstance(rec, Mapping):
            return f"{name}: no size and checksum recorded"
    return ""


def _stat_regular(path: Path, name: str, rec: Mapping[str, Any]) -> str:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{name} is missing"
    except OSError as exc:
        return f"{name}: cannot read ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return f"{name} is not a regular file"
    if st.st_size != rec.get("size"):
        return f"{name} has {st.st_size} bytes, {rec.get('size')} were written"
    return ""


def verify_files(base: Path, records: Any) -> str:
    """ "" when every recorded file is there, regular, and has its recorded size and
    checksum; else the first reason it is not (one line, naming the file)."""
    why = _check_names(records)
    if why:
        return why
    for name, rec in records.items():
        path = base / name
        why = _stat_regular(path, name, rec)
        if why:
            return why
        try:
            digest = file_record(path)["sha256"]
        except OSError as exc:
            return f"{name}: cannot read ({exc.strerror})"
        if digest != rec.get("sha256"):
            return f"{name} was changed after it was written (checksum differs)"
    return ""


def read_verified(base: Path, records: Any) -> tuple[str, dict[str, bytes]]:
    """(why, contents): :func:`verify_files` and the verified files' bytes, each file
    read once — what is checked is what is used. ``why`` is "" when all verified;
    otherwise the contents are empty."""
    why = _check_names(records)
    if why:
        return why, {}
    out: dict[str, bytes] = {}
    for name, rec in records.items():
        path = base / name
        why = _stat_regular(path, name, rec)
        if why:
            return why, {}
        try:
            with _open(path) as fh:
                data = fh.read()
        except OSError as exc:
            return f"{name}: cannot read ({exc.strerror})", {}
        if len(data) != rec.get("size"):
            return f"{name} has {len(data)} bytes, {rec.get('size')} were written", {}
        if hashlib.sha256(data).hexdigest() != rec.get("sha256"):
            return f"{name} was changed after it was written (checksum differs)", {}
        out[name] = data
    return "", out
