"""The hosts a run's points were measured on: never mix hardware silently, never mix code.

Every finished point run records its host in ``status.json`` (``sim.sweep.hostinfo``):
its name, CPU model, cores and the digest of the kvsim sources that ran. Points
run through ``--executor ray`` may land on different machines, so before
``compare`` or ``plot`` sets points beside each other:

* points produced by different kvsim code are refused outright (``RunDirError``):
  a ratio between them would measure the code change, not the variant;
* points measured on different hardware are reported: every level of the
  comparison whose points ran on more than one kind of hardware is named, with
  the hardware of each point, so no ratio pools machines without saying so.

Runs made before hosts were recorded have no host records; they are taken as one
unknown host (nothing to check, nothing to report).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.errors import RunDirError
from sim.rundir.layout import point_rep_dirs, read_status
from sim.rundir.reader import RunResults

__all__ = ["PointHost", "check_same_code", "host_warnings", "point_hosts"]


def same_hardware_key(host: dict[str, Any]) -> tuple[str, str]:
    """What makes two hosts' numbers comparable hardware: CPU model and usable cores."""
    cores = host.get("cpu_affinity") or host.get("cpu_count")
    return (str(host.get("cpu_model", "?")), str(cores))


@dataclass(frozen=True)
class PointHost:
    """Where one finished point × repeat ran."""

    axes: dict[str, Any]
    repeat: int
    name: str
    hardware: tuple[str, str]
    code: str


def point_hosts(res: RunResults) -> list[PointHost]:
    """Host of every finished point run of ``res`` that recorded one."""
    out = []
    points = res.manifest.get("points")
    for point in points if isinstance(points, list) else []:
        if not isinstance(point, dict) or not isinstance(point.get("slug"), str):
            continue
        for repeat, rep in point_rep_dirs(res.dir, point["slug"]):
            status = read_status(rep)
            if status is None:
                continue
            host = status.get("host")
            if status.get("status") != "ok" or not isinstance(host, dict):
                continue
            out.append(
                PointHost(
                    axes=dict(point.get("axes") or {}),
                    repeat=repeat,
                    name=str(host.get("name", "?")),
                    hardware=same_hardware_key(host),
                    code=str(host.get("code_hash", "")),
                )
            )
    return out


def check_same_code(res: RunResults, hosts: Sequence[PointHost] | None = None) -> None:
    """RunDirError when the run's points were produced by different kvsim code."""
    hosts = point_hosts(res) if hosts is None else hosts
    codes: dict[str, list[str]] = {}
    for h in hosts:
        if h.code:
            codes.setdefault(h.code, []).append(h.name)
    if len(codes) > 1:
        versions = "; ".join(
            f"{code[:19]} on {', '.join(sorted(set(names)))}" for code, names in codes.items()
        )
        raise RunDirError(
            f"{res.dir}: its points were produced by {len(codes)} versions of kvsim's code "
            f"({versions}); results of different code are not combined: rerun with --force "
            "on hosts running the same code"
        )


def _hw(key: tuple[str, str]) -> str:
    return f"{key[0]} ({key[1]} cores)"


def host_warnings(res: RunResults, by: str | None = "variant") -> list[str]:
    """Lines saying where a comparison by ``by`` sets points of different hardware side by
    side; RunDirError when points of different code are in the run."""
    hosts = point_hosts(res)
    check_same_code(res, hosts)
    kinds = {h.hardware for h in hosts}
    if len(kinds) < 2:
        return []
    levels: dict[tuple[tuple[str, str], ...], set[tuple[str, str]]] = {}
    where: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for h in hosts:
        level = tuple(sorted((k, str(v)) for k, v in h.axes.items() if k != by))
        levels.setdefault(level, set()).add(h.hardware)
        label = f"{by}={h.axes.get(by, '?')} rep {h.repeat}" if by else f"rep {h.repeat}"
        where.setdefault(level, []).append(f"{label} on {h.name} [{_hw(h.hardware)}]")
    lines = [
        f"{res.dir}: points were measured on {len(kinds)} kinds of hardware: "
        + "; ".join(sorted(_hw(k) for k in kinds))
    ]
    for level, hw in levels.items():
        if len(hw) > 1:
            at = ", ".join(f"{k}={v}" for k, v in level) or "the run"
            lines.append(f"at {at}, the ratios mix hardware: " + "; ".join(sorted(where[level])))
    return lines
