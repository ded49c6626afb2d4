"""What differs between two runs' manifests: commit, machine, package versions, executor,
config.

A before/after comparison means something only when the reader knows what
changed between the two runs: the commit (the change under test), the machine,
the versions of the libraries, or the config itself. This lists every one of
those, so that a ratio is never read without what it compares.
"""

from __future__ import annotations

from typing import Any

__all__ = ["manifest_differences"]

_MACHINE_FIELDS = (
    "cpu_model",
    "cpu_count",
    "cpu_affinity",
    "platform",
    "implementation",
    "python",
    "default_switch_interval_ms",
)
_MAX_CONFIG_LINES = 20


def _flat(tree: Any, path: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out.update(_flat(v, f"{path}.{k}" if path else str(k)))
        return out
    return {path: tree}


def _show(v: Any) -> str:
    return "(absent)" if v is _ABSENT else repr(v)


_ABSENT = object()


def _executors(manifest: dict[str, Any]) -> str:
    """The executors the run's sessions used (``local``, ``ray``), as one text."""
    sessions = manifest.get("sessions")
    names = {
        str(x.get("executor") or "local")
        for x in (sessions if isinstance(sessions, list) else [])
        if isinstance(x, dict)
    }
    return ", ".join(sorted(names)) or "local"


def manifest_differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(what, value in A, value in B)`` for each difference, in the order: commit,
    machine, versions, executor, config (every differing field, sweep axes included)."""
    out: list[tuple[str, str, str]] = []
    ma, mb = a.get("machine") or {}, b.get("machine") or {}
    ca, cb = ma.get("git_commit"), mb.get("git_commit")
    if ca != cb:
        out.append(("commit", str(ca or "unknown"), str(cb or "unknown")))
    for f in _MACHINE_FIELDS:
        if ma.get(f, _ABSENT) != mb.get(f, _ABSENT):
            out.append((f"machine.{f}", _show(ma.get(f, _ABSENT)), _show(mb.get(f, _ABSENT))))
    pa, pb = ma.get("packages") or {}, mb.get("packages") or {}
    for name in sorted(set(pa) | set(pb)):
        if pa.get(name) != pb.get(name):
            out.append((f"version of {name}", str(pa.get(name)), str(pb.get(name))))
    xa, xb = _executors(a), _executors(b)
    if xa != xb:
        out.append(("executor", xa, xb))
    oa, ob = a.get("overrides") or [], b.get("overrides") or []
    if oa != ob:
        out.append(("--set", " ".join(oa) or "(none)", " ".join(ob) or "(none)"))
    fa, fb = _flat(a.get("config") or {}), _flat(b.get("config") or {})
    config = [
        (f"config {k}", _show(fa.get(k, _ABSENT)), _show(fb.get(k, _ABSENT)))
        for k in sorted(set(fa) | set(fb))
        if fa.get(k, _ABSENT) != fb.get(k, _ABSENT)
    ]
    if len(config) > _MAX_CONFIG_LINES:
        rest = len(config) - _MAX_CONFIG_LINES
        config = [*config[:_MAX_CONFIG_LINES], (f"config: {rest} more field(s)", "…", "…")]
    out += config
    return out
