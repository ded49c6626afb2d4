"""Two runs side by side (before/after a change, machine A against B): ``compare A B``.

Points are paired by their axis values — every axis of either run must have the
same value in both — and only paired points are compared; a point of one run
with no twin in the other is listed and left out, never set beside a point that
merely looks similar. The pairs become one combined result with a ``run`` axis,
so the comparison is the ordinary one (``sim.analysis.compare``): the same
metrics, with run B's values as ratios to A's and their intervals from the two
runs' repeats, unpaired (the runs were not made in the same rounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.rundir.reader import RunResults

__all__ = [
    "RUN_AXIS",
    "Pairing",
    "host_difference",
    "missing_lines",
    "pair_runs",
    "run_labels",
    "unpaired_lines",
]

#: The axis that tells the two runs apart in the combined result.
RUN_AXIS = "run"


def run_labels(a: Path, b: Path) -> tuple[str, str]:
    """Short distinct names of two run directories: their names, else A and B."""
    if a.name != b.name:
        return a.name, b.name
    if a.parent.name and a.parent.name != b.parent.name:
        return f"{a.parent.name}/{a.name}", f"{b.parent.name}/{b.name}"
    return "A", "B"


@dataclass
class _Combined(RunResults):
    """A RunResults whose tables are the paired rows of two runs, with a ``run`` column."""

    sources: tuple[tuple[str, RunResults], ...] = ()
    keep: frozenset[tuple[str, ...]] = frozenset()
    base_axes: tuple[str, ...] = ()
    _merged: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def has_table(self, stem: str) -> bool:
        return all(res.has_table(stem) for _, res in self.sources)

    def table(self, stem: str) -> list[dict[str, str]]:
        if stem not in self._merged:
            rows: list[dict[str, str]] = []
            if self.has_table(stem):
                for label, res in self.sources:
                    rows += [
                        {**r, RUN_AXIS: label}
                        for r in res.table(stem)
                        if res.key(r, list(self.base_axes)) in self.keep
                    ]
            self._merged[stem] = rows
        return self._merged[stem]


@dataclass
class Pairing:
    labels: tuple[str, str]
    #: Axes used for pairing: every axis of either run.
    axes: list[str]
    paired: list[tuple[str, ...]]
    only_a: list[tuple[str, ...]]
    only_b: list[tuple[str, ...]]
    combined: RunResults | None
    #: ``(axis, A's value, B's value)``: the settings the pairs were made across (the
    #: runs' one point each at workers=1 and 4, or mode real and model); [] when the
    #: pairs agree on every axis.
    across: list[tuple[str, str, str]] = field(default_factory=list)


def _keys(
    res: RunResults, axes: list[str], rows: list[dict[str, str]] | None = None
) -> list[tuple[str, ...]]:
    # An axis the run does not sweep has no value to pair on: "(not swept)" never matches
    # a value, so points of runs swept over different axes stay apart.
    return [
        tuple(r.get(a, "(not swept)") if a in res.axes else "(not swept)" for a in axes)
        for r in (res.summary if rows is None else rows)
    ]


def missing_lines(p: Pairing, b: RunResults) -> list[str]:
    """One line per point of A that B lacks, saying why: it failed in B (its error), B
    was stopped before it, or B's sweep has no such point."""
    raw = b.table("summary")  # every row: load_results keeps the finished points only
    failed = {
        k: r.get("error") or "no error recorded"
        for r, k in zip(raw, _keys(b, p.axes, raw), strict=True)
        if r.get("status") == "failed"
    }
    lb = p.labels[1]
    stopped = b.manifest.get("status") in ("interrupted", "running")
    out = []
    for k in p.only_a:
        if k in failed:
            why = f"it failed in {lb}: {failed[k]}"
        elif stopped:
            why = f"{lb} was interrupted before it ran (kvsim run … --resume finishes it)"
        else:
            why = f"{lb}'s sweep has no such point"
        out.append(f"{_label(p.axes, k)}: in {p.labels[0]}, not in {lb}: {why}")
    return out


def _fixed_apart(
    axes: list[str], ka: list[tuple[str, ...]], kb: list[tuple[str, ...]]
) -> list[tuple[str, str, str]]:
    """``(axis, A's value, B's value)`` for each axis that has one value in each run, not
    the same one: a setting the runs were made at, not a sweep."""
    out = []
    for i, axis in enumerate(axes):
        va, vb = {k[i] for k in ka}, {k[i] for k in kb}
        if len(va) == 1 and len(vb) == 1 and va != vb:
            out.append((axis, next(iter(va)), next(iter(vb))))
    return out


def _across(
    axes: list[str], ka: list[tuple[str, ...]], kb: list[tuple[str, ...]]
) -> list[tuple[str, str, str]]:
    """The settings to compare across when no point pairs: two one-point runs made at
    different settings (workers=1 against 4), or a real run against a model run of the
    same points (mode real against model alone); else none (the runs stay apart)."""
    apart = _fixed_apart(axes, ka, kb)
    one_each = len(set(ka)) == 1 and len(set(kb)) == 1
    if apart and (one_each or [x for x, _, _ in apart] == ["mode"]):
        return apart
    return []


def pair_runs(a: RunResults, b: RunResults) -> Pairing:
    """Pair the points of ``a`` and ``b`` by their axis values; where none pairs, across
    the settings that keep them apart when that is a comparison a user means
    (``_across``), saying so in ``Pairing.across``."""
    labels = run_labels(a.dir, b.dir)
    axes = list(dict.fromkeys([*a.axes, *b.axes]))
    ka, kb = _keys(a, axes), _keys(b, axes)
    paired = [k for k in dict.fromkeys(ka) if k in set(kb)]
    across = [] if paired else _across(axes, ka, kb)
    if across:
        axes = [x for x in axes if x not in {axis for axis, _, _ in across}]
        ka, kb = _keys(a, axes), _keys(b, axes)
        paired = [k for k in dict.fromkeys(ka) if k in set(kb)]
    only_a = [k for k in dict.fromkeys(ka) if k not in set(kb)]
    only_b = [k for k in dict.fromkeys(kb) if k not in set(ka)]
    combined = None
    if paired:
        keep = frozenset(paired)
        summary: list[dict[str, Any]] = []
        for label, res, keys in ((labels[0], a, ka), (labels[1], b, kb)):
            pairs = zip(res.summary, keys, strict=True)
            summary += [{**r, RUN_AXIS: label} for r, k in pairs if k in keep]
        # the fewer: a verdict needs repeats on both sides (one repeat of A gives none)
        repeats = min(int(m.manifest.get("repeats", 1) or 1) for m in (a, b))
        manifest = {
            "tool": "kvsim",
            "config": {"name": f"{a.name} ({labels[0]}) vs {b.name} ({labels[1]})"},
            "repeats": repeats,
            "axes": [*axes, RUN_AXIS],
        }
        combined = _Combined(
            dir=b.dir,
            manifest=manifest,
            axes=[*axes, RUN_AXIS],
            summary=summary,
            sources=((labels[0], a), (labels[1], b)),
            keep=keep,
            base_axes=tuple(axes),
        )
    return Pairing(labels, axes, paired, only_a, only_b, combined, across if paired else [])


def _label(axes: list[str], key: tuple[str, ...]) -> str:
    return ", ".join(f"{a}={v}" for a, v in zip(axes, key, strict=True) if v != "(not swept)")


def unpaired_lines(p: Pairing) -> list[str]:
    """One line per point left out, saying which run has it."""
    out = []
    for label, keys in ((p.labels[0], p.only_a), (p.labels[1], p.only_b)):
        for k in keys:
            out.append(f"only in {label}: {_label(p.axes, k)}")
    return out


def _hosts(res: RunResults) -> str:
    rows = res.table("summary_repeats") or res.summary
    names = sorted({str(r.get("host")) for r in rows if r.get("host")})
    return ", ".join(names) or "(not recorded)"


def host_difference(a: RunResults, b: RunResults) -> tuple[str, str, str] | None:
    """``("hosts", A's, B's)`` when the two runs' points ran on different hosts."""
    ha, hb = _hosts(a), _hosts(b)
    return None if ha == hb else ("hosts", ha, hb)
