"""Private network namespaces for a point that runs a real store.

The Mooncake client's transfer listeners bind every interface; a point run in a
fresh network namespace with only loopback up keeps every byte on loopback. The
sweep runner starts such a point's child as ``unshare -n -- sh -c 'ip link set lo
up && exec …'`` (root only); the child checks where it landed.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["in_private_netns", "netns_available", "say_once", "wrap_in_netns"]

_said: set[str] = set()


def say_once(message: str) -> None:
    """Print a notice to stderr the first time this process meets it."""
    if message not in _said:
        _said.add(message)
        print(f"kvsim: {message}", file=sys.stderr)


@functools.cache
def netns_available() -> str | None:
    """None when a private network namespace can be made here, else why not."""
    if os.geteuid() != 0:
        return "not root"
    for tool in ("unshare", "ip", "sh"):
        if shutil.which(tool) is None:
            return f"no {tool} command"
    try:
        subprocess.run(
            ["unshare", "-n", "--", "sh", "-c", "ip link set lo up"],
            check=True,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare -n failed ({type(exc).__name__})"
    return None


def wrap_in_netns(cmd: Sequence[str]) -> list[str]:
    """``cmd`` run in a new network namespace whose loopback is up (same pid: exec)."""
    return ["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', *cmd]


def in_private_netns() -> bool:
    """Whether this process sees loopback as its only network interface."""
    try:
        names = [name for _i, name in socket.if_nameindex()]
    except OSError:
        return False
    return names == ["lo"]
