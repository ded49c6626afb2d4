"""``manifest.json``: what a result was measured on (config, seed, versions, CPU, switch
interval, commit), how far the run got, and the files kvsim wrote (with the size and
checksum of each top-level table). The one module that reads and writes it.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sim.errors import RunDirError
from sim.files.read import read_bounded

__all__ = [
    "MANIFEST_TOOL",
    "is_kvsim_manifest",
    "machine_info",
    "manifest_path",
    "package_versions",
    "read_manifest",
    "recorded_now",
    "write_manifest",
]

MANIFEST_TOOL = "kvsim"
_PACKAGES = ("kvsim", "simpy", "numpy", "numba", "torch", "pydantic", "pyyaml")


def package_versions() -> dict[str, str | None]:
    # start-up: a point child records the host its sweep read, and never asks
    # (importlib.metadata: ~15 ms)
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    import subprocess  # start-up: as package_versions, only where a host is read

    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def machine_info() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "default_switch_interval_ms": sys.getswitchinterval() * 1e3,
        "git_commit": _git_commit(),
        "packages": package_versions(),
        "recorded_at": recorded_now(),
    }


def recorded_now() -> str:
    """The time a record is made, as ``recorded_at`` holds it (UTC, to the second)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


#: A manifest lists every point of a sweep; past this it is not one kvsim wrote.
MAX_MANIFEST_BYTES = 64 << 20


def manifest_path(run_dir: Path) -> Path:
    # the layout loads the config models and numpy: --version and host records need neither
    from sim.rundir.layout import MANIFEST_FILE

    return run_dir / MANIFEST_FILE


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The run's manifest as a dict, or None when absent, unreadable or not kvsim's."""
    path = manifest_path(run_dir)
    try:
        raw = read_bounded(
            path, what="manifest", limit=MAX_MANIFEST_BYTES, error=RunDirError, within=run_dir
        )
        data = json.loads(raw)
    except (RunDirError, ValueError, RecursionError):  # a link, a FIFO, /dev/zero: not a run
        return None
    return data if is_kvsim_manifest(data) else None


def is_kvsim_manifest(data: Any) -> bool:
    return isinstance(data, dict) and data.get("tool") == MANIFEST_TOOL


def write_manifest(run_dir: Path, data: dict[str, Any]) -> None:
    from sim.rundir.outputs import write_json  # the writer: not with `kvsim --version`

    write_json(manifest_path(run_dir), data)
