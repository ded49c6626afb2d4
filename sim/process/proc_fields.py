"""A process's ``Key: value`` records in ``/proc/<pid>/`` (Linux): the kernel's own account,
read where the standard library cannot answer — a peak resident memory that exec reset
(``ru_maxrss`` carries the parent's across a vfork), the umask without setting it, the
proportional memory of a process tree (``smaps_rollup``)."""

from __future__ import annotations

__all__ = ["proc_fields"]


def proc_fields(pid: int | str, keys: tuple[str, ...], file: str = "status") -> dict[str, str]:
    """The first word after ``Key:`` of each of ``keys`` found in ``/proc/<pid>/<file>``
    (``pid`` may be ``"self"``); {} off Linux or for a process that is gone."""
    found: dict[str, str] = {}
    try:
        with open(f"/proc/{pid}/{file}", encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                words = rest.split()
                if key in keys and words:
                    found[key] = words[0]
    except OSError:
        pass
    return found
