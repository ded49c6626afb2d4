"""Run a search: every value tried is an ordinary point of one run directory.

Each series (a combination of the config's other sweep axes: variant, workers,
…) gets its own :class:`~sim.slo_search.strategy.Strategy`. A round asks every
unfinished series for its next value, makes each one a :class:`Point` (the
series' config with the searched field set, and the field as an extra axis),
and runs the round (``Session.run``, ``sim.sweep.session``) on the whole list of
points so far, as a resume: points already done are kept, so ``summary.csv``,
``results.json`` and the per-point directories are those of any other run, and
``compare``, ``plot`` and a resumed search read them as such.

``search.json`` records the search (the field, the objectives, which point is
which value of which series, and the answer per series); a resumed search
replays the same proposals and finds the points already there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sim.config import ConfigError, ExperimentConfig, Point
from sim.config.experiment import axis_label, set_path
from sim.config.paths import CONFIG_DIR
from sim.errors import RunError
from sim.events import SweepEvents
from sim.files.read import read_bounded
from sim.rundir.guard import record_owned
from sim.rundir.layout import SEARCH_FILE, SUMMARY_FILE, search_file
from sim.rundir.outputs import read_csv, write_json
from sim.slo_search.report import verdict_line
from sim.slo_search.series import Series
from sim.slo_search.slo import SLO, judge
from sim.slo_search.strategy import Outcome, Strategy, nice
from sim.sweep.session import Session, SweepOutcome, plan_run

__all__ = [
    "Search",
    "SearchRounds",
    "field_value",
    "plan_search",
    "run_search",
    "search_name",
]


#: search.json lists the sessions of one search: kilobytes.
MAX_SEARCH_BYTES = 16 << 20


def field_value(cfg: ExperimentConfig, path: str) -> Any:
    """The value at a dotted path of a config; ConfigError saying what exists otherwise."""
    obj: Any = cfg
    done = []
    for part in path.split("."):
        fields = list(type(obj).model_fields) if hasattr(type(obj), "model_fields") else []
        if part not in fields:
            where = ".".join(done) or "the config"
            kind = getattr(obj, "kind", None) or getattr(obj, "dist", None)
            of = f" ({where} is kind {kind!r})" if kind else ""
            raise ConfigError(
                f"--over {path}: {part!r} is not a field of {where}{of}; its fields: "
                f"{', '.join(fields) or 'none'}"
            )
        obj = getattr(obj, part)
        done.append(part)
    if isinstance(obj, bool) or not isinstance(obj, (int, float)):
        raise ConfigError(f"--over {path}: {obj!r} is not a number; search a numeric field")
    return obj


@dataclass
class Search:
    cfg: ExperimentConfig
    over: str
    label: str
    slos: list[SLO]
    series: list[Series]
    config_dir: Path
    next_index: int = 0
    #: The config file and its ``KEY=VALUE`` overrides, recorded in the run's manifest.
    source: Path | None = None
    overrides: tuple[str, ...] = ()

    def point(self, s: Series, value: float) -> Point:
        """The point that tries ``value`` for series ``s`` (made once, then remembered)."""
        integer = s.strategy.integer
        data = s.config.model_dump(mode="json")
        data = set_path(data, self.over, int(value) if integer else float(value))
        try:
            cfg = ExperimentConfig.model_validate(data, context={CONFIG_DIR: self.config_dir})
        except ValidationError as exc:  # the value is outside the field's range (--lo/--hi)
            msg = exc.errors()[0]["msg"].replace("Value error, ", "")
            raise ConfigError(
                f"--over {self.over}={nice(value)}: {msg}; narrow the search with --lo/--hi"
            ) from None
        if value not in s.points:
            s.points[value] = self.next_index
            self.next_index += 1
        axes = {**s.axes, self.label: nice(value)}
        return Point(index=s.points[value], axes=axes, config=cfg)

    def all_points(self) -> list[Point]:
        pts = [self.point(s, v) for s in self.series for v in s.points]
        return sorted(pts, key=lambda p: p.index)

    def state(self) -> dict[str, Any]:
        out = []
        for s in self.series:
            res = s.strategy.outcome()
            out.append(
                {
                    "axes": s.axes,
                    "label": s.label,
                    "goal": s.strategy.goal,
                    "tried": [
                        {
                            "index": s.points[v],
                            "value": nice(v),
                            "meets": s.verdicts[v].ok,
                            # JSON has no NaN: a value not measured is null
                            "values": {
                                m: None if math.isnan(x) else x
                                for m, x in s.verdicts[v].values.items()
                            },
                            "why": s.verdicts[v].why,
                        }
                        for v in sorted(s.verdicts, key=lambda v: s.points[v])  # as tried
                    ],
                    "result": {
                        "kind": res.kind,
                        "value": None if math.isnan(res.value) else nice(res.value),
                        "bound": None if math.isnan(res.bound) else nice(res.bound),
                        "runs": res.runs,
                    },
                }
            )
        return {
            "over": self.over,
            "axis": self.label,
            "slo": [s.spec for s in self.slos],
            "series": out,
            "points": {
                str(s.points[v]): {"series": i, "value": nice(v)}
                for i, s in enumerate(self.series)
                for v in s.points
            },
        }

    def restore(self, path: Path) -> None:
        """Take the point indices of a previous session (a resumed search)."""
        try:
            raw = read_bounded(
                path, what="search record", limit=MAX_SEARCH_BYTES, within=path.parent
            )
            data = json.loads(raw)
        except (ConfigError, ValueError, RecursionError):  # absent, a link, a FIFO, not JSON
            return
        if not isinstance(data, dict):
            return
        if data.get("over") != self.over:
            raise ConfigError(
                f"{path}: that search was over {data.get('over')!r}, not {self.over!r}; "
                "use another --out, or --force to start over"
            )
        for index, where in (data.get("points") or {}).items():
            s = (
                self.series[int(where["series"])]
                if int(where["series"]) < len(self.series)
                else None
            )
            if s is not None:
                s.points[float(where["value"])] = int(index)
                self.next_index = max(self.next_index, int(index) + 1)

    def write(self, out_dir: Path) -> None:
        record_owned(out_dir, SEARCH_FILE)
        write_json(search_file(out_dir), self.state())


def search_name(cfg: ExperimentConfig) -> str:
    """The name of a search of ``cfg`` (its run's name, and its default directory)."""
    return f"{cfg.name}-search"[:100]


def plan_search(
    cfg: ExperimentConfig,
    points: Sequence[Point],
    over: str,
    slos: list[SLO],
    config_dir: Path,
    *,
    goal: str | None,
    lo: float | None,
    hi: float | None,
    tol: float,
    max_runs: int,
    source: Path | None = None,
    overrides: Sequence[str] = (),
) -> Search:
    """One series per combination of the config's sweep axes other than ``over``.

    ``source`` and ``overrides`` say where the config came from (the manifest records
    them)."""
    start = field_value(cfg, over)
    integer = isinstance(start, int)
    label = axis_label(over, [*cfg.sweep, over])
    goal = goal or ("best" if over == "connector.workers" else "max")
    if goal == "best" and not integer:
        raise ConfigError(f"--goal best scans powers of two; {over} is not a whole number")
    lo = lo if lo is not None else (1.0 if integer else max(start / 64, 1e-3))
    hi = hi if hi is not None else (16.0 if over == "connector.workers" else start * 64)
    if not 0 < lo <= hi:
        raise ConfigError(f"--lo {lo:g} / --hi {hi:g}: need 0 < lo <= hi")
    series: list[Series] = []
    seen: set[str] = set()
    for p in points:
        axes = {k: v for k, v in p.axes.items() if k != label}
        key = repr(sorted(axes.items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        seen.add(key)
        strat = Strategy(goal, float(field_value(p.config, over)), lo, hi, integer, tol, max_runs)
        series.append(Series(axes, p.config, strat))
    varying = {
        k for s in series for k, v in s.axes.items() if any(o.axes.get(k) != v for o in series)
    }
    for s in series:
        s.shown = tuple(k for k in s.axes if k in varying or k == "variant")
    renamed = cfg.model_copy(update={"name": search_name(cfg)})
    return Search(renamed, over, label, slos, series, config_dir, 0, source, tuple(overrides))


def run_search(search: Search, session: Session, events: SweepEvents) -> SearchRounds:
    """Rounds until every series is done, each a sweep of every point so far in
    ``session`` (points already done are kept). Each verdict is told as a note."""
    out_dir = session.out_dir
    restore = search_file(out_dir)
    if restore.is_file():
        search.restore(restore)
    last: SweepOutcome | None = None
    while True:
        todo = []
        for s in search.series:
            v = s.strategy.next_value()
            if v is not None:
                todo.append((s, v))
        if not todo:
            break
        for s, v in todo:
            search.point(s, v)
        plan = plan_run(
            search.cfg,
            search.all_points(),
            out_dir,
            source=search.source,
            overrides=search.overrides,
        )
        last = session.run(plan, events)
        _refuse_unfinished(last, search, out_dir)
        rows = _summary_by_index(out_dir, search)
        for s, v in todo:
            row = rows.get(s.points[v], {"status": "failed", "error": "no result"})
            verdict = judge(row, search.slos)
            s.verdicts[v] = verdict
            first = verdict.values.get(search.slos[0].metric, math.nan)
            s.strategy.record(v, verdict.ok, first)
            events.note(verdict_line(s, v, verdict, search.slos, search.label))
        search.write(out_dir)
    search.write(out_dir)
    return SearchRounds([(s, s.strategy.outcome()) for s in search.series], last)


def _refuse_unfinished(outcome: SweepOutcome, search: Search, out_dir: Path) -> None:
    """A point run that neither finished nor failed (its child stopped by a signal) has
    no verdict to give: stop the search (RunError, exit 1) instead of judging it a miss.
    The earlier rounds' verdicts are in search.json, so a resume asks the same values
    again and reruns only what did not finish."""
    stopped = [(rep, state) for rep, state, _ in outcome.unfinished if state != "failed"]
    if not stopped:
        return
    rep, state = stopped[0]
    raise RunError(
        f"{out_dir}: {len(stopped)} point run(s) did not finish ({rep.label}: {state}); "
        "the search stops rather than judge them; add --resume to go on"
    )


@dataclass(frozen=True)
class SearchRounds:
    """What the rounds of a search found."""

    #: Each series and what it sustains (or needs) under the objectives.
    results: list[tuple[Series, Outcome]]
    #: The last round's sweep (every point tried so far); None when no round ran.
    last: SweepOutcome | None


def _summary_by_index(out_dir: Path, search: Search) -> dict[int, dict[str, str]]:
    """summary.csv rows by point index (rows carry axis values; points know theirs)."""
    path = out_dir / SUMMARY_FILE
    rows = read_csv(path) if path.is_file() else []
    out: dict[int, dict[str, str]] = {}
    for p in search.all_points():
        key = {k: str(v) for k, v in p.axes.items()}
        for r in rows:
            if all(r.get(k) == v for k, v in key.items()):
                out[p.index] = r
                break
    return out
