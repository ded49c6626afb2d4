"""Which host measured a point, on what hardware, with which code.

A point's numbers mean something only beside the machine that produced them:
its CPU, how many cores it had, the interpreter and package versions, the kvsim
code that ran, and the harness's noise floor on that host. The child records
this in its ``status.json`` so that points run locally and points run on other
hosts (``--executor ray``) say the same things about themselves, and the
analysis can keep hardware apart and refuse to mix code versions.

``code_hash`` is a digest of kvsim's own source files (``sim/`` and
``connectors/``), so two hosts count as running the same code only when their
sources are byte-identical, whether or not either is a git checkout or has
uncommitted edits; the git commit is recorded beside it for people.
"""

from __future__ import annotations

import hashlib
import os
import socket
from functools import lru_cache
from pathlib import Path
from typing import Any

from sim.rundir.manifest import machine_info, recorded_now

__all__ = [
    "HOST_NAME_ENV",
    "code_hash",
    "host_base",
    "host_info",
    "host_name",
]

#: Environment variable that names this host in results (default: its host name).
#: Useful when several kvsim hosts share a name, e.g. two Ray nodes on one machine.
HOST_NAME_ENV = "KVSIM_HOST_NAME"

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent
_SOURCE_DIRS = ("sim", "connectors")


def host_name() -> str:
    """This host's name in results: ``$KVSIM_HOST_NAME`` if set, else the host name."""
    return os.environ.get(HOST_NAME_ENV) or socket.gethostname()


@lru_cache(maxsize=1)
def code_hash() -> str:
    """``sha256:<hex>`` over the relative paths and bytes of kvsim's ``*.py`` sources.

    Cached: the sources of a running interpreter's kvsim are what it imported.
    """
    h = hashlib.sha256()
    for sub in _SOURCE_DIRS:
        root = _PACKAGE_ROOT / sub
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(_PACKAGE_ROOT).as_posix()
            try:
                data = path.read_bytes()
            except OSError:
                continue
            h.update(rel.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return f"sha256:{h.hexdigest()}"


def _ray_version() -> str | None:
    # start-up: a point child is given the host its sweep read, and never asks
    # (importlib.metadata: ~15 ms)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ray")
    except PackageNotFoundError:
        return None


def host_base() -> dict[str, Any]:
    """What :func:`host_info` says that does not change while a run lasts: the host,
    its hardware, versions and code (without ``noise_floor``; ``recorded_at`` is
    when this was called). Reading it costs tens of milliseconds (the git commit,
    package metadata): a sweep that runs its points here reads it once."""
    info = machine_info()
    info["packages"] = {**info.get("packages", {}), "ray": _ray_version()}
    return {
        "name": host_name(),
        "hostname": socket.gethostname(),
        **info,
        "code_hash": code_hash(),
    }


def host_info(
    noise_floor: dict[str, Any] | None = None, base: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The host record of a point: name, hardware, versions, code, and its noise floor.

    ``base`` is a :func:`host_base` read earlier in this process (its time of
    recording is renewed); without it everything is read now.
    """
    info = host_base() if base is None else {**base, "recorded_at": recorded_now()}
    info["noise_floor"] = dict(noise_floor or {})
    return info
