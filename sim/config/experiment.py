"""The whole experiment: sections, sweep grid, and its expansion into points."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sim.config.engine import EngineConfig
from sim.config.geometry import GeometryConfig
from sim.config.interpreter import InterpreterConfig
from sim.config.machine import MachineConfig
from sim.config.plugins import PluginSource
from sim.config.sections import ConnectorConfig, GilConfig, LimitsConfig, OutputConfig, StoreConfig
from sim.config.types import FrozenModel, NonNegInt, PosInt
from sim.config.workload import WorkloadConfig

__all__ = ["ORDER_KEY", "ExperimentConfig", "Point", "SweepOrder", "expand_points"]

#: The key under ``sweep`` that says in what order point runs are made (not an axis).
ORDER_KEY = "order"
SweepOrder = Literal["interleaved", "grid"]


class ExperimentConfig(FrozenModel):
    """One YAML file. ``sweep`` turns it into a grid of points."""

    name: str = Field(
        ...,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
        description="Experiment name (used in paths): letters, digits, '_', '.', '-', no "
        "spaces; starts with a letter or digit; at most 100 characters.",
    )
    seed: NonNegInt = Field(0, le=2**64 - 1, description="Seed of the run's one random generator.")
    mode: Literal["real", "model"] = Field(
        "real",
        description="real: real threads on this machine, in real time; model: a discrete-event "
        "simulation with the GIL and the cores as simulated resources, costs from "
        "machine.calibration (docs/model-mode.md).",
    )
    model: GeometryConfig = Field(default_factory=GeometryConfig, description="KV-cache geometry.")
    workload: WorkloadConfig = Field(default_factory=WorkloadConfig, description="Requests.")
    connector: ConnectorConfig = Field(default_factory=ConnectorConfig, description="Variant.")
    store: StoreConfig = Field(default_factory=StoreConfig, description="KV store.")
    gil: GilConfig = Field(default_factory=GilConfig, description="GIL settings.")
    interpreter: InterpreterConfig = Field(
        default_factory=InterpreterConfig,
        description="The python the point children run under, and its GIL (real mode).",
    )
    output: OutputConfig = Field(default_factory=OutputConfig, description="Where results go.")
    machine: MachineConfig = Field(
        default_factory=MachineConfig, description="Simulated machine (model mode)."
    )
    limits: LimitsConfig = Field(default_factory=LimitsConfig, description="Watchdogs.")
    engine: EngineConfig = Field(
        default_factory=EngineConfig,
        description="Engine step loop beside the load (off by default).",
    )
    sweep: dict[str, tuple[Any, ...]] = Field(
        default_factory=dict,
        description="Grid axes: dotted field path -> list of values, e.g. "
        "connector.variant: [scalar, numpy]. Every combination is one point.",
    )
    repeats: PosInt = Field(
        3,
        le=1000,
        description="Runs of each point. A ratio's interval (kvsim compare's `*`) comes from "
        "the spread between them: 1 gives ratios without verdicts; 3, the least with which a "
        "stable metric's 10 % difference shows here (docs/statistics.md).",
    )
    plugins: tuple[PluginSource, ...] = Field(
        default=(),
        max_length=64,
        description="Python files registering your own variants, e.g. [my_variant.py] "
        "(relative to the config file; `--plugin FILE` adds one): their variants are named "
        "like built-ins. Each file's text is read when the config is loaded, is part of the "
        "config hash and travels with every point (docs/your-connector.md).",
    )
    sweep_order: SweepOrder = Field(
        "interleaved",
        description="Written `sweep: {order: ...}`. interleaved: the sweep runs in rounds, "
        "round k making repeat k of every point in an order shuffled per round from the "
        "seed, so a machine that changes speed during the sweep slows every point alike "
        "(docs/statistics.md); grid: every repeat of one point, then the next point's.",
    )

    @model_validator(mode="before")
    @classmethod
    def _order_under_sweep(cls, data: Any) -> Any:
        """``sweep.order`` is written beside the axes; it is a setting, not an axis."""
        if not isinstance(data, dict):
            return data
        sweep = data.get("sweep")
        if not isinstance(sweep, dict) or ORDER_KEY not in sweep:
            return data
        order = sweep[ORDER_KEY]
        if isinstance(order, (list, tuple)) and len(order) == 1:  # --set sweep.order=grid
            order = order[0]
        if "sweep_order" in data and data["sweep_order"] != order:
            raise ValueError("sweep.order and sweep_order disagree; give one of them")
        rest = {k: v for k, v in sweep.items() if k != ORDER_KEY}
        return {**data, "sweep": rest, "sweep_order": order}

    @field_validator("sweep")
    @classmethod
    def _axes_non_empty(cls, v: dict[str, tuple[Any, ...]]) -> dict[str, tuple[Any, ...]]:
        for axis, values in v.items():
            if not values:
                raise ValueError(f"axis {axis!r} has no values")
            if len(set(map(repr, values))) != len(values):
                raise ValueError(f"axis {axis!r} repeats a value")
        return v

    @model_validator(mode="after")
    def _real_mode_runs_this_machine(self) -> ExperimentConfig:
        """Real mode cannot honour a simulated machine: refuse instead of ignoring it."""
        if self.mode == "real":
            if self.gil.kind != "cpython":
                raise ValueError(
                    f"gil.kind: {self.gil.kind} needs mode: model (real mode runs this "
                    "interpreter, which has a GIL)"
                )
            if self.machine.cores is not None:
                raise ValueError(
                    "machine.cores needs mode: model (real mode runs on this machine's cores)"
                )
            if self.machine.cpu_scale != 1.0:
                raise ValueError(
                    "machine.cpu_scale needs mode: model (real mode runs at this machine's speed)"
                )
        else:
            self._model_names_its_gil()
        return self

    def _model_names_its_gil(self) -> None:
        """Model mode stands for the interpreter a config names (its calibration must come
        from that build: sim.model.coverage), so the GIL it simulates must be said, and
        agree with ``gil.kind``: off is no GIL (``gil.kind: none``), on is CPython's (the
        default ``gil.kind``, so only an explicit ``none`` can disagree)."""
        interp = self.interpreter
        if interp.python and interp.gil == "default":
            raise ValueError(
                "interpreter.gil: default in model mode: say on or off (the model simulates "
                "the GIL state it is given; a free-threaded build's default may be either)"
            )
        if interp.gil == "on" and self.gil.kind == "none":
            raise ValueError(
                "gil.kind: none disagrees with interpreter.gil: on; allowed: gil.kind "
                "cpython, or interpreter.gil: off"
            )

    @property
    def simulated_gil(self) -> Literal["cpython", "none"]:
        """The GIL model mode simulates: ``interpreter.gil`` when it says on or off (the
        free-threaded binary's two states, validated against real runs of each), else
        ``gil.kind``."""
        if self.interpreter.gil == "off":
            return "none"
        return "cpython" if self.interpreter.gil == "on" else self.gil.kind

    @property
    def output_dir(self) -> str:
        """``output.dir``, else ``results/<name>``, and ``results/<name>-model`` in model
        mode: a prediction never lands in (or asks to replace) the measured run's directory,
        so ``kvsim run CONFIG --mode model`` works right after ``kvsim run CONFIG``."""
        if self.output.dir:
            return self.output.dir
        return f"results/{self.name}-model" if self.mode == "model" else f"results/{self.name}"


def axis_label(path: str, all_paths: list[str]) -> str:
    """Short column name for an axis: its last part, unless two axes share it."""
    last = path.rsplit(".", 1)[-1]
    clash = sum(p.rsplit(".", 1)[-1] == last for p in all_paths) > 1
    return path.replace(".", "_") if clash else last


@dataclass(frozen=True)
class Point:
    """One grid point: its axis values (by column label) and its resolved config."""

    index: int
    axes: dict[str, Any]
    config: ExperimentConfig

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.axes.items()) or "default"

    @property
    def slug(self) -> str:
        """Directory-safe name of the point, stable across runs."""
        # mode=real is left out so that real runs keep the directory names they always had.
        parts = [f"{k}-{v}" for k, v in self.axes.items() if (k, v) != ("mode", "real")]
        raw = "_".join(parts) or "default"
        return f"{self.index:03d}_" + "".join(c if c.isalnum() or c in "-_." else "-" for c in raw)


def set_path(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Copy of ``raw`` with the dotted ``path`` set to ``value`` (intermediate dicts created)."""
    head, _, rest = path.partition(".")
    out = dict(raw)
    if rest:
        inner = out.get(head)
        out[head] = set_path(inner if isinstance(inner, dict) else {}, rest, value)
    else:
        out[head] = value
    return out


def _as_taken(cfg: ExperimentConfig, path: str, value: Any) -> Any:
    """An axis value as the config took it where YAML 1.1 made a boolean of a word: a sweep
    ``interpreter.gil: [on, off]`` reads True, False, which the field takes as "on", "off";
    the point's label, directory and axis column say on/off too (the GIL on/off table looks
    for them: sim.analysis.gil_onoff)."""
    if not isinstance(value, bool):
        return value
    taken: Any = cfg
    for part in path.split("."):
        taken = getattr(taken, part, None)
    return taken if isinstance(taken, str) else value


def expand_points(raw: dict[str, Any], build) -> list[Point]:
    """Every combination of the sweep axes of ``raw``, validated by ``build(raw, where)``.

    The variant, workers and mode columns always appear, swept or not, so that every
    requests.csv can be concatenated with every other, and so that analysis treats the
    mode as an axis (a real and a modelled point are never pooled).
    """
    sweep = raw.get("sweep") or {}
    paths = [p for p in sweep if p != ORDER_KEY]
    labels = {p: axis_label(p, paths) for p in paths}
    base = {k: v for k, v in raw.items() if k not in ("sweep", "sweep_order")}
    points = []
    for i, combo in enumerate(itertools.product(*(sweep[p] for p in paths))):
        point_raw = base
        for path, value in zip(paths, combo, strict=False):
            point_raw = set_path(point_raw, path, value)
        where = ", ".join(f"sweep.{p}={v!r}" for p, v in zip(paths, combo, strict=False))
        cfg = build(point_raw, where)
        axes: dict[str, Any] = {
            "variant": cfg.connector.variant,
            "workers": cfg.connector.workers,
            "mode": cfg.mode,
        }
        for path, value in zip(paths, combo, strict=False):
            axes[labels[path]] = _as_taken(cfg, path, value)
        points.append(Point(index=i, axes=axes, config=cfg))
    return points
