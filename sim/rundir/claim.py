"""One rule for every file kvsim writes where the user pointed it: new, kvsim's own, or --force.

``compare --out``, ``plot --out``, ``bench … --csv``, ``validate-model --out``,
``calibrate --out`` and the like write files at a path the user chose. Before
anything is written, every path is claimed here:

* a path where nothing exists is created;
* a file that a kvsim run directory lists as its own (its ledger, see
  ``sim.rundir.guard``) is replaced: it is kvsim's (a second ``kvsim compare RUN``
  rewrites ``RUN/compare.md``);
* any other existing file is the user's: it is replaced only with ``--force``,
  and otherwise the command refuses, in one line, before writing anything;
* a directory in a file's place is never replaced, nor is a device, pipe or socket, or
  a link to one (``--csv /dev/null --force`` as root would otherwise have replaced the
  system's /dev/null with a regular file, and ``/dev/stdout`` its link).

A claimed path inside a kvsim run directory is added to that run's ledger before
it is written, so that the run's ``--force`` may remove it later and a crash
between the two leaves it listed (docs/design.md §6).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sim.errors import RunDirError
from sim.files.read import first_link, shown_path
from sim.rundir.guard import is_kvsim_run, owned_files, record_owned

__all__ = ["claim_outputs"]

#: How far above a file its run directory may be (RUN/x.md, RUN/figures/x.png).
_LEVELS = 2


def _run_of(path: Path) -> tuple[Path, str] | None:
    """(run directory, name inside it) of the nearest kvsim run above ``path``, reached
    without a link; None when ``path`` is not inside one."""
    for run in list(path.parents)[:_LEVELS]:
        if is_kvsim_run(run) and first_link(run, path.parent) is None:
            return run, path.relative_to(run).as_posix()
    return None


def _special(path: Path, st: os.stat_result) -> bool:
    """Neither a regular file, nor a link to one or to nothing (a dangling link)."""
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            return False
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except ValueError:
        raise RunDirError(f"{shown_path(path)}: a path may not contain a NUL byte") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise RunDirError(f"{shown_path(path)}: path too long") from None
        if exc.errno == errno.ENOTDIR:
            raise RunDirError(f"{shown_path(path)}: part of the path is not a directory") from None
        raise RunDirError(f"{shown_path(path)}: cannot write ({exc.strerror or exc})") from None


def claim_outputs(paths: Iterable[str | Path], force: bool, *, option: str = "--out") -> None:
    """Check that each of ``paths`` may be written (see the module doc) and list those
    inside a kvsim run in its ledger; RunDirError (one line, nothing written) if not."""
    claimed = [Path(p).absolute() for p in paths]
    runs: dict[Path, list[str]] = {}
    for path in claimed:
        st = _lstat(path)
        inside = _run_of(path)
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                raise RunDirError(
                    f"{shown_path(path)}: is a directory; kvsim writes a file there only "
                    f"where none is: choose another {option}"
                )
            if _special(path, st):
                raise RunDirError(
                    f"{shown_path(path)}: is a device, pipe or socket (or a link to one); "
                    f"kvsim writes only regular files and never replaces these, even with "
                    f"--force: choose another {option}"
                )
            ours = inside is not None and inside[1] in owned_files(inside[0])
            if not ours and not force:
                raise RunDirError(
                    f"{shown_path(path)}: exists; pass --force to replace it, or choose "
                    f"another {option} (kvsim replaces unasked only its own run's files)"
                )
        if inside is not None:
            runs.setdefault(inside[0], []).append(inside[1])
    for run, names in runs.items():
        try:
            record_owned(run, *names)
        except OSError as exc:
            raise RunDirError(f"{shown_path(run)}: cannot write ({exc.strerror or exc})") from None
