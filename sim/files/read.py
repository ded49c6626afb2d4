"""The one way kvsim opens a file to read it: bounded, regular, never blocking, never via a link.

A path in a config (a trace, a calibration, an empirical distribution, a model's
``config.json``) or a file inside a run directory is read only after:

* the path is usable: a NUL byte or an over-long name is a one-line error, not a
  ``ValueError`` traceback;
* it is opened with ``O_NONBLOCK`` and then ``fstat``-checked, so a FIFO is
  refused at once instead of blocking ``open`` until a writer comes;
* it is a regular file: ``/dev/zero`` (never ends), a pipe, a socket or a
  directory is refused. kvsim has no mode that reads a special file on purpose:
  the message says to copy the data into a regular file, which also makes the
  run repeatable (its hash is recorded);
* it is no larger than the caller's cap, checked on ``st_size`` and again while
  reading (a file that grows while read is cut off with the same error);
* inside a run directory (``within``), no part of the path below the run's root
  is a symbolic link (docs/design.md §6: kvsim never follows a link there).

Every refusal is the caller's error class (``ConfigError``, ``TraceError``,
``RunDirError``, …) with one line naming the file and what it was for.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from sim.errors import ConfigError

__all__ = [
    "MAX_DATA_BYTES",
    "MAX_RUN_FILE_BYTES",
    "excerpt",
    "first_link",
    "open_bounded",
    "read_bounded",
    "read_tail",
    "shown_path",
]

#: Cap on a data file a config names (a trace, an empirical distribution): large
#: traces stream, but a file past this is not a trace anyone meant.
MAX_DATA_BYTES = 16 << 30
#: Cap on a table or record kvsim wrote into a run directory.
MAX_RUN_FILE_BYTES = 64 << 30
#: Longest path shown in a message (the rest is elided).
_PATH_CHARS = 240

ErrorClass = Callable[[str], Exception]


def excerpt(value: object, limit: int = 60, *, quote: bool = True) -> str:
    """``repr(value)`` (``str`` without ``quote``) cut to ``limit`` characters, saying how
    long it was: what an error message may echo of a value the user gave (never
    megabytes on one line)."""
    if isinstance(value, int) and value.bit_length() > 4000:  # repr would raise past 4300 digits
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        text = repr(value) if quote else str(value).replace("\n", " ")
    except (ValueError, RecursionError):  # an object too large or deep to show
        return f"a {type(value).__name__} too large to show"
    if len(text) <= limit:
        return text
    return f"{text[: max(limit - 1, 1)]}… ({len(text)} characters)"


def shown_path(path: object) -> str:
    """A path as a message shows it: NUL and newlines escaped, at most ``_PATH_CHARS``."""
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    text = text.replace("\x00", "\\0").replace("\n", "\\n").replace("\r", "\\r")
    if len(text) > _PATH_CHARS:
        return f"{text[: _PATH_CHARS - 1]}…"
    return text


def first_link(root: Path, path: Path) -> Path | None:
    """The first component of ``path`` below ``root`` that is a symbolic link, if any
    (``path`` itself when it is not below ``root``)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return path
    cur = root
    for part in rel.parts:
        cur = cur / part
        try:
            if stat.S_ISLNK(os.lstat(cur).st_mode):
                return cur
        except (FileNotFoundError, NotADirectoryError):
            return None
    return None


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"


class _CappedReader(io.RawIOBase):
    """A raw file over ``fd`` that raises ``error`` once more than ``limit`` bytes came."""

    def __init__(self, fd: int, limit: int, too_large: Callable[[], Exception]) -> None:
        super().__init__()
        self._fd = fd
        self._left = limit
        self._too_large = too_large

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._left + 1)
        data = os.read(self._fd, want)
        if len(data) > self._left:
            raise self._too_large()
        self._left -= len(data)
        view[: len(data)] = data
        return len(data)

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self._fd)
            finally:
                super().close()


def _open_fd(path: Path, what: str, error: ErrorClass, nofollow: bool, missing: str) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags)
    except ValueError:  # "embedded null byte"
        raise error(f"{shown_path(path)}: a path may not contain a NUL byte ({what})") from None
    except FileNotFoundError:
        hint = f"; {missing}" if missing else ""
        raise error(f"{shown_path(path)}: cannot read {what} (no such file){hint}") from None
    except OSError as exc:
        shown = shown_path(path)
        if exc.errno == errno.ELOOP and nofollow:
            raise error(
                f"{shown}: is a symbolic link inside a run directory; kvsim never follows "
                "a link there (docs/design.md §6)"
            ) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise error(f"{shown}: path too long ({what})") from None
        raise error(f"{shown}: cannot read {what} ({exc.strerror or exc})") from None


def _check_open(fd: int, path: Path, what: str, limit: int, error: ErrorClass) -> int:
    """The size of the regular file open at ``fd``; ``error`` if it is not one, or too large."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_size <= limit:
        return st.st_size
    shown = shown_path(path)
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{shown}: is a directory, expected a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise error(
            f"{shown}: {what} is not a regular file (a pipe, device or socket); kvsim "
            "reads only regular files: copy the data into one"
        )
    if st.st_size > limit:
        raise error(f"{shown}: {what} is larger than {_size_text(limit)}; refused")
    # O_NONBLOCK stays set: Linux ignores it for a regular file's reads.
    return st.st_size


def _open_checked(
    path: str | Path,
    what: str,
    limit: int,
    error: ErrorClass,
    within: Path | None,
    missing: str,
) -> tuple[int, int]:
    """(fd, size) of the regular file at ``path``, opened and checked (see the module doc)."""
    p = Path(path)
    if within is not None:
        link = first_link(within, p.parent)
        if link is not None:
            raise error(
                f"{shown_path(link)}: is a symbolic link inside a run directory; kvsim "
                "never follows a link there (docs/design.md §6)"
            )
    fd = _open_fd(p, what, error, within is not None, missing)
    try:
        return fd, _check_open(fd, p, what, limit, error)
    except BaseException:
        os.close(fd)
        raise


def _grew(path: str | Path, what: str, limit: int, error: ErrorClass) -> Exception:
    return error(f"{shown_path(path)}: {what} grew past {_size_text(limit)} while read; refused")


def open_bounded(
    path: str | Path,
    *,
    what: str,
    limit: int,
    error: ErrorClass = ConfigError,
    within: Path | None = None,
    missing: str = "",
) -> BinaryIO:
    """The regular file at ``path`` opened for binary reading (close it: use ``with``);
    reading past ``limit`` bytes raises ``error``. ``within``: a run directory that
    ``path`` lies in, where no link is followed. ``missing``: a hint for a missing file."""
    fd, _size = _open_checked(path, what, limit, error, within, missing)
    raw = _CappedReader(fd, limit, lambda: _grew(path, what, limit, error))
    return io.BufferedReader(raw, buffer_size=1 << 18)  # type: ignore[return-value]


def read_bounded(
    path: str | Path,
    *,
    what: str,
    limit: int,
    error: ErrorClass = ConfigError,
    within: Path | None = None,
    missing: str = "",
) -> bytes:
    """Every byte of the regular file at ``path`` (see :func:`open_bounded`): read straight
    from the descriptor, in as few reads as its size allows."""
    fd, size = _open_checked(path, what, limit, error, within, missing)
    chunks: list[bytes] = []
    total = 0
    try:
        while True:
            want = min(limit + 1 - total, max(size + 1 - total, 1 << 16))
            block = os.read(fd, want)
            chunks.append(block)
            total += len(block)
            if total > limit:
                raise _grew(path, what, limit, error)
            if len(block) < want:  # a regular file's short read: its end
                break
    except OSError as exc:
        raise error(f"{shown_path(path)}: cannot read {what} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_tail(
    path: str | Path,
    nbytes: int,
    *,
    what: str,
    error: ErrorClass = ConfigError,
    within: Path | None = None,
) -> bytes:
    """The last ``nbytes`` of the regular file at ``path`` (a log's final lines, however
    long the log grew)."""
    with open_bounded(path, what=what, limit=MAX_RUN_FILE_BYTES, error=error, within=within) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            os.lseek(fh.fileno(), max(size - nbytes, 0), os.SEEK_SET)
            return fh.read(nbytes)
        except OSError as exc:
            raise error(f"{shown_path(path)}: cannot read {what} ({exc.strerror or exc})") from None
