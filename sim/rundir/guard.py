"""The run directory: what kvsim may write where, and how a previous run is recognised.

kvsim refuses to write into a directory that is not one of its own runs, and
replaces a previous run only when asked (``--force``), removing only the files
it wrote itself, by exact name: the ones its ledger (``.kvsim-files``, appended to
BEFORE each top-level write, so a crash at any moment leaves it complete) or its
manifest lists, under ``points/`` the files of the point runs the manifest planned
(``sim.rundir.rep_files.rep_file_names``: never a user's ``analysis.csv``, nor a
``rep-9`` of a run of three repeats), and the temporaries of those names that a
killed write leaves (``.<name>.<8 random characters>.tmp``, nothing looser). It
never follows a symbolic link and never removes a directory that still holds
anything else. ``--resume`` keeps a previous run so that its finished points are
not run again.

Every writer holds the run's lock (``sim.rundir.lock``) from before it looks at
the directory until it ends.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Any

from sim.errors import RunDirError
from sim.files.read import first_link, read_bounded, shown_path
from sim.rundir.layout import (
    FIGURES_DIR,
    LEDGER_FILE,
    LOCK_FILE,
    MANIFEST_FILE,
    POINTS_DIR,
    REP_PREFIX,
    REQUESTS_FILE,
    SUMMARY_FILE,
    SUMMARY_REPEATS_FILE,
)
from sim.rundir.lock import RunLock
from sim.rundir.manifest import read_manifest
from sim.rundir.outputs import is_temporary_of
from sim.rundir.rep_files import remove_rep_files

__all__ = [
    "CORE_FILES",
    "RunDirError",
    "is_kvsim_run",
    "normalize_dir",
    "open_run_dir",
    "owned_files",
    "prepare_run_dir",
    "record_owned",
    "remove_owned",
]


#: The ledger names each file kvsim wrote at the top of a run: a few hundred lines.
MAX_LEDGER_BYTES = 16 << 20

#: Tables every run writes (a run of an older kvsim may not list them in its manifest).
CORE_FILES = (REQUESTS_FILE, SUMMARY_FILE, SUMMARY_REPEATS_FILE)


#: Longest path (bytes) and path component Linux accepts (PATH_MAX, NAME_MAX).
_PATH_MAX, _NAME_MAX = 4096, 255


def normalize_dir(path: str | Path) -> Path:
    """``~`` expanded and ``a/b/../..`` folded, so that no stray directory is created;
    RunDirError (exit 2) for a path the OS would refuse (a NUL byte, too long)."""
    text = str(path)
    if "\x00" in text:
        raise RunDirError(f"{shown_path(text)}: a path may not contain a NUL byte")
    if text.startswith("~") and os.path.expanduser(text) == text:
        raise RunDirError(
            f"{shown_path(text)}: {text.split('/', 1)[0]} names no user here; kvsim will not "
            "make a directory of that name"
        )
    out = Path(os.path.normpath(os.path.expanduser(text)))
    full = os.fsencode(str(out.absolute()))
    if len(full) >= _PATH_MAX or any(len(part) > _NAME_MAX for part in full.split(b"/")):
        raise RunDirError(
            f"{shown_path(out)}: path too long (at most {_PATH_MAX} bytes, {_NAME_MAX} per "
            "directory name)"
        )
    return out


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _safe_name(name: object) -> bool:
    """A relative path inside the run, without '..', absolute parts or empty parts."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name:
        return False
    parts = name.split("/")
    return all(p not in ("", ".", "..") for p in parts) and "\n" not in name


def owned_files(path: Path) -> list[str]:
    """Top-level paths (relative) that kvsim says it wrote: ledger plus manifest."""
    names: dict[str, None] = {}
    try:
        raw = read_bounded(
            path / LEDGER_FILE,
            what="ledger",
            limit=MAX_LEDGER_BYTES,
            error=RunDirError,
            within=path,
        )
        names.update(dict.fromkeys(raw.decode("utf-8", errors="replace").splitlines()))
    except (OSError, RunDirError):  # absent, a link, a FIFO: lists nothing
        pass
    manifest = read_manifest(path) or {}
    files = manifest.get("files")
    if isinstance(files, list):
        names.update(dict.fromkeys(f for f in files if isinstance(f, str)))
    return [n for n in names if _safe_name(n)]


def record_owned(path: Path, *names: str) -> None:
    """Append ``names`` to the run's ledger before writing them (a crash then leaves a
    ledger that lists every file kvsim may have written)."""
    have = set(owned_files(path))
    new = [n for n in names if n not in have and _safe_name(n)]
    if not new:
        return
    ledger = path / LEDGER_FILE
    # O_NONBLOCK: a FIFO put in the ledger's place would block this open until a reader
    # came (a hang); it fails (ENXIO) or opens, and then the check below refuses it.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
    not_regular = OSError(errno.EINVAL, f"{LEDGER_FILE} is not a regular file", str(ledger))
    try:
        fd = os.open(ledger, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError as exc:
        raise not_regular if exc.errno == errno.ENXIO else exc from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise not_regular
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write("".join(f"{n}\n" for n in new))


def is_kvsim_run(path: Path) -> bool:
    """A manifest of kvsim, or kvsim's ledger (written before anything else)."""
    ledger = path / LEDGER_FILE
    return read_manifest(path) is not None or (ledger.is_file() and not _is_link(ledger))


def _has_previous_run(path: Path) -> bool:
    """A manifest, or anything kvsim's ledger lists, or points/: results a run left."""
    if read_manifest(path) is not None or os.path.lexists(path / POINTS_DIR):
        return True
    return any(os.path.lexists(path / name) for name in owned_files(path))


def _unlink_file(path: Path) -> None:
    """Remove a file kvsim wrote; a directory, or a path reached through a link, is left."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        return
    os.unlink(path)


def _planned_reps(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """(slug, rep-k) of every point run the manifest planned: the only directories under
    points/ that are kvsim's (a rep-9 of a run with 3 repeats is not)."""
    repeats = manifest.get("repeats")
    points = manifest.get("points")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not isinstance(points, list):
        return []
    slugs = [p.get("slug") for p in points if isinstance(p, dict)]
    return [
        (slug, f"{REP_PREFIX}{k}")
        for slug in slugs
        if isinstance(slug, str) and _safe_name(slug) and "/" not in slug
        for k in range(max(0, min(repeats, 10_000)))
    ]


def _remove_points(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Remove the planned point runs' files by exact name (``remove_rep_files``), then
    each directory left empty; anything else under points/ stays."""
    root = run_dir / POINTS_DIR
    if _is_link(root) or not root.is_dir():
        return
    tables = [
        name
        for name in manifest.get("tables") or {}
        if isinstance(name, str) and name.endswith(".csv") and name != SUMMARY_REPEATS_FILE
    ]
    slugs: dict[str, None] = {}
    for slug, rep in _planned_reps(manifest):
        rep_dir = root / slug / rep
        if first_link(run_dir, rep_dir) is None and rep_dir.is_dir():
            remove_rep_files(rep_dir, tables)
        slugs[slug] = None
    for slug in slugs:
        if first_link(run_dir, root / slug) is None:
            with contextlib.suppress(OSError):
                os.rmdir(root / slug)
    with contextlib.suppress(OSError):
        os.rmdir(root)


def remove_owned(path: Path) -> None:
    """Remove exactly what kvsim wrote in ``path`` (see the module doc); keep the lock."""
    for name in (POINTS_DIR, FIGURES_DIR):
        if _is_link(path / name):
            raise RunDirError(
                f"{path / name}: is a symbolic link; kvsim neither follows nor removes links "
                "in a run directory: remove it yourself, or pass --out to write elsewhere"
            )
    manifest = read_manifest(path) or {}
    names = [*dict.fromkeys([*CORE_FILES, *owned_files(path)])]
    for name in names:
        if first_link(path, (path / name).parent) is not None:
            continue  # reached through a link: not kvsim's to remove
        _unlink_file(path / name)
        _remove_temporaries(path / name)
    for name in sorted({n.rsplit("/", 1)[0] for n in names if "/" in n}, reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(path / name)
    _remove_points(path, manifest)
    _unlink_file(path / MANIFEST_FILE)
    _remove_temporaries(path / MANIFEST_FILE)
    _unlink_file(path / LEDGER_FILE)


def _remove_temporaries(target: Path) -> None:
    """Temporary files an atomic write of ``target`` left behind when it was killed
    (by their exact shape: ``sim.rundir.outputs.is_temporary_of``)."""
    parent = target.parent
    if _is_link(parent) or not parent.is_dir():
        return
    for entry in os.scandir(parent):
        ours = is_temporary_of(entry.name, target.name)
        if ours and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)


def _foreign(path: Path) -> bool:
    """Non-empty and not a kvsim run (the lock file alone does not make a run)."""
    try:
        names = [e.name for e in os.scandir(path)]
    except OSError:
        return False
    return bool(set(names) - {LOCK_FILE}) and not is_kvsim_run(path)


def _unwritable(path: Path) -> str:
    """Why ``os.access`` said no: a read-only mount is not a matter of permissions."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return "permission denied"


def open_run_dir(path: Path, force: bool, resume: bool = False) -> RunLock:
    """Make ``path`` ready for a new run (or, with ``resume``, for continuing the one
    there) and return its lock, held; or raise RunDirError saying why not."""
    if force and resume:
        raise RunDirError("--force and --resume contradict each other; choose one")
    if path.exists() and not path.is_dir():
        raise RunDirError(f"{path}: exists and is not a directory")
    if path.is_dir() and _foreign(path):
        raise RunDirError(
            f"{path}: directory is not empty and holds no kvsim run; "
            "choose another output.dir (or --out)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"{path}: cannot write ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK):
        raise RunDirError(f"{path}: cannot write ({_unwritable(path)})")
    lock = RunLock(path).acquire()
    try:
        if resume and _is_link(path / POINTS_DIR):  # its points would be read through it
            raise RunDirError(
                f"{path / POINTS_DIR}: is a symbolic link; kvsim reads and writes a run's "
                "points only inside its directory and never follows a link there: replace "
                "it by the directory it points to, or pass --out to write elsewhere"
            )
        if _has_previous_run(path):
            if not force and not resume:
                raise RunDirError(
                    f"{path}: holds a previous kvsim run; pass --resume to finish it, "
                    "--force to replace it, or --out to write elsewhere"
                )
            if force:
                remove_owned(path)
        record_owned(path, MANIFEST_FILE)
    except OSError as exc:
        lock.release()
        where = exc.filename or path
        raise RunDirError(f"{where}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        lock.release()
        raise
    return lock


def prepare_run_dir(path: Path, force: bool, resume: bool = False) -> None:
    """``open_run_dir`` for callers that do not write afterwards (the lock is released)."""
    open_run_dir(path, force, resume).release()
