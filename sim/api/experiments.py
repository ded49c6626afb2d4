"""Experiments from Python: load one from a YAML file, or build one from a dict — no file.

An :class:`Experiment` is a validated config and its grid points. It is checked
exactly as ``kvsim validate`` checks a file (one-line :class:`~sim.errors.ConfigError`
naming the field), and it runs like ``kvsim run``: every point × repeat in its
own child process, which gets the resolved config itself, so an experiment built
in memory needs no file on disk at any point.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.runs import Run

if TYPE_CHECKING:  # the heavy parts load only when used
    from sim.config import ExperimentConfig, Point
    from sim.events import SweepEvents
    from sim.sweep.executors import ExecutorChoice
    from sim.sweep.run_plan import RunPlan

__all__ = ["Experiment", "Overrides", "build", "load", "open_config"]

#: Field changes: ``{"connector.workers": 8}``, or ``["connector.workers=8"]`` as on the CLI.
Overrides = Mapping[str, Any] | Sequence[str]


def _as_json(key: str, value: Any) -> str:
    """``value`` as the text of a ``--set`` (JSON is YAML); ConfigError when it has none."""
    from sim.config import ConfigError  # pydantic: not at import sim
    from sim.files.read import excerpt  # read only on this path: not at import sim

    try:
        return json.dumps(value)
    except (ValueError, TypeError, RecursionError):
        raise ConfigError(
            f"overrides: {excerpt(key)}: {excerpt(value)} cannot be written as a config value"
        ) from None


def _override_strings(overrides: Overrides | None) -> tuple[str, ...]:
    """``KEY=VALUE`` strings (the value as JSON, which is YAML) — what ``--set`` takes,
    and what the manifest records so a resume can repeat them."""
    if not overrides:
        return ()
    if isinstance(overrides, Mapping):
        return tuple(f"{k}={_as_json(k, v)}" for k, v in overrides.items())
    if isinstance(overrides, str):
        return (overrides,)
    return tuple(overrides)


@dataclass(frozen=True)
class Experiment:
    """A validated experiment: its config, its grid points, and where it came from.

    Make one with :func:`load` or :func:`build`; then :meth:`plan` it (what would
    run, reading only) or :meth:`run` it.
    """

    #: The validated config (frozen pydantic model; every default filled in).
    config: ExperimentConfig
    #: Every grid point: its axis values and its own resolved config.
    points: tuple[Point, ...]
    #: The YAML file it was loaded from; None when built in Python.
    source: Path | None = None
    #: The overrides applied, as ``KEY=VALUE`` strings.
    overrides: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """One line, not the ~5 KB of the whole config (``.config`` has it; ``print(exp.plan())``
        prints the point table)."""
        where = f", source={str(self.source)!r}" if self.source is not None else ""
        sets = f", overrides={list(self.overrides)!r}" if self.overrides else ""
        return (
            f"Experiment({self.name!r}, {len(self.points)} point(s) × {self.config.repeats} "
            f"repeat(s), mode={self.config.mode!r}{where}{sets})"
        )

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def axes(self) -> list[str]:
        """Axis columns every result table carries (always variant and workers)."""
        from sim.sweep.experiment import axis_columns  # the sweep: only when a run is planned

        return axis_columns(self.points)

    def with_overrides(self, overrides: Overrides) -> Experiment:
        """The same experiment with more field changes, validated again (``mode=model``:
        its model-mode twin). A file is read again with every override; an experiment
        built in Python is rebuilt from its resolved config."""
        from sim.preflight import parse_checked_mapping  # numpy: not on `import sim`

        more = _override_strings(overrides)
        sets = (*self.overrides, *more)
        if self.source is not None:
            return load(self.source, sets)
        cfg, points = parse_checked_mapping(self.config.model_dump(mode="json"), more)
        return Experiment(cfg, tuple(points), None, sets)

    def out_dir(self, out: str | Path | None = None) -> Path:
        """Where the run goes: ``out``, else ``output.dir``, else ``results/<name>``
        (``results/<name>-model`` in model mode; ``~`` expanded, ``..`` folded, made
        absolute)."""
        from sim.rundir.guard import normalize_dir  # the run directory's code: not at import sim

        return normalize_dir(out or self.config.output_dir).absolute()

    def plan(self, out: str | Path | None = None) -> RunPlan:
        """What a run into ``out`` would do; reads, never writes.

        The plan lists every point × repeat with its state in that directory
        (done, failed, interrupted, pending) and the requests each point plans.
        """
        from sim.sweep.session import plan_run  # the sweep: only when a run is planned

        return plan_run(
            self.config,
            list(self.points),
            self.out_dir(out),
            source=self.source,
            overrides=self.overrides,
        )

    def run(
        self,
        out: str | Path | None = None,
        *,
        force: bool = False,
        resume: bool = False,
        isolate: bool = True,
        events: SweepEvents
        | Callable[[RunPlan], AbstractContextManager[SweepEvents | None]]
        | None = None,
        executor: ExecutorChoice | None = None,
        plan: RunPlan | None = None,
    ) -> Run:
        """Run every point × repeat, each in its own child process; return the :class:`Run`.

        ``force`` replaces a previous run in the directory (only files kvsim wrote);
        ``resume`` keeps its finished point runs and runs the rest — refused with a
        RunDirError when the config is not the same experiment. ``isolate=False``
        runs points in this process (debuggers; a crash then ends the sweep).
        ``events`` (:class:`sim.SweepEvents`) hears what happens: a point run
        ``started(rep, host)``, its ``progress(rep, done, total)`` in requests, it
        ``finished(rep, outcome)``, and ``note(text)``; or, given the plan, a context
        that yields them, entered once the run directory is held (a progress display).
        ``executor`` (``sim.sweep.executors.ExecutorChoice``) runs points elsewhere,
        e.g. on a Ray cluster; default: here, one after the other.
        ``plan``: what :meth:`plan` gave for ``out``, not made again.
        A point that fails does not stop the sweep: see ``Run.outcome``.
        """
        from sim.sweep.session import open_session  # the sweep: only when a run is planned

        plan = plan if plan is not None else self.plan(out)
        shown = events if callable(events) else lambda _plan: nullcontext(events)
        with (
            open_session(plan, force=force, resume=resume, isolate=isolate) as session,
            shown(plan) as heard,
        ):
            outcome = session.run(plan, heard, executor)
        return Run(plan.out_dir, outcome)


def load(path: str | Path, overrides: Overrides | None = None) -> Experiment:
    """Load and validate an experiment YAML file (``kvsim validate`` checks the same).

    ``overrides`` change fields before validation, like ``--set``:
    ``load("exp.yaml", {"connector.workers": 8, "sweep.seed": [1, 2]})``.
    Relative data-file paths are taken from the file's directory.
    """
    from sim.preflight import parse_checked  # numpy: not on `import sim`

    sets = _override_strings(overrides)
    cfg, points = parse_checked(path, sets)
    return Experiment(cfg, tuple(points), Path(path), sets)


@contextmanager
def open_config(
    path: str | Path,
    sets: Sequence[str] = (),
    plugins: Sequence[str] = (),
    *,
    conformance: bool = True,
    quiet: bool = False,
) -> Iterator[Experiment]:
    """:func:`load` for a command: ``--set`` items, ``--plugin`` files, and the config's
    plug-in variants registered until the block ends; with ``conformance`` a plug-in
    computing wrong addresses is refused before anything is measured (``quiet``: no line
    for those that pass)."""
    from sim.config.plugins import plugin_scope  # the plug-ins load only for a command
    from sim.conformance import refuse_wrong_plugin_points  # numpy: not on `import sim`
    from sim.preflight import parse_checked  # numpy: not on `import sim`

    cfg, points = parse_checked(path, tuple(sets), tuple(plugins))
    with plugin_scope(cfg.plugins):
        if conformance:
            refuse_wrong_plugin_points(points, quiet=quiet)
        yield Experiment(cfg, tuple(points), Path(path), tuple(sets))


def build(
    data: Mapping[str, Any] | None = None,
    /,
    *,
    overrides: Overrides | None = None,
    base_dir: str | Path | None = None,
    **sections: Any,
) -> Experiment:
    """Build and validate an experiment in Python: what the YAML file would hold, as a dict.

    ``data`` is the whole mapping; keyword arguments set top-level keys on top of
    it (``name="demo", workload={"requests": 40}``); ``overrides`` then change
    single fields by dotted path, like ``--set``. Relative data-file paths are
    taken from ``base_dir`` (default: the working directory). Errors are one-line
    ConfigErrors naming the field, as for a file::

        exp = sim.build(name="demo", sweep={"connector.variant": ["scalar", "numpy"]})
    """
    from sim.preflight import parse_checked_mapping  # numpy: not on `import sim`

    raw = {**dict(data or {}), **sections}
    sets = _override_strings(overrides)
    cfg, points = parse_checked_mapping(raw, sets, base_dir=base_dir)
    return Experiment(cfg, tuple(points), None, sets)
