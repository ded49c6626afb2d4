"""What model mode was validated on, and the note a run outside it prints.

The model is checked against real runs by ``kvsim validate-model`` (docs/model-mode.md,
Validation: one table per config, with its date, load and errors). This module holds the
summary of those tables — which combination of features each validated config
exercises, and how far the model was from it — and is the one place that knows it.
``kvsim run --mode model`` on a point whose features no validated config covers prints
one line naming the features, the closest validated config and that config's error, so
a prediction is never mistaken for a validated result.

A feature is what changes what the model has to get right: the address variant, the
arrival process, the engine (its index variant and step size, a built heap), store
faults, a free-threaded interpreter, a switch interval or core count other than the
calibration's, many load threads. Geometry and rates are not features: the
calibration's coverage check (sim.model.coverage) already bounds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim.config import ExperimentConfig, Point

__all__ = ["VALIDATED", "Validated", "features", "markdown_table", "unvalidated_note"]

#: Load threads beyond this were never validated (the synthetic sweep went to 8).
_MANY_WORKERS = 8


@dataclass(frozen=True)
class Validated:
    """One validated config: its features (the union over its points) and its errors."""

    config: str
    date: str
    features: frozenset[str]
    points: int
    p50_met: int
    p99_met: int
    #: Median |relative error| of latency p50 and p99 over the points.
    p50_median: float
    p99_median: float
    #: The real side against itself (validate-model --aa): the latency p50 and p99
    #: targets a second real run met against the first; None where none was run.
    aa: tuple[int, int] | None = None

    def error_text(self) -> str:
        return (
            f"validated {self.date}: latency p50 within ±10% at {self.p50_met}/{self.points} "
            f"points (median error {self.p50_median:.0%}), p99 within ±15% at "
            f"{self.p99_met}/{self.points} ({self.p99_median:.0%}){self._aa_text()}"
        )

    def _aa_text(self) -> str:
        return "" if self.aa is None else f"; a second real run met them at {self.aa_cell()}"

    def aa_cell(self) -> str:
        """The table's cell for the real side against itself."""
        return "–" if self.aa is None else f"{self.aa[0]}/{self.points}, {self.aa[1]}/{self.points}"


def _fs(*tags: str) -> frozenset[str]:
    return frozenset(tags)


#: From docs/model-mode.md's validation tables: the latest run of each config on a quiet
#: machine, else its latest run (the load average says which).
VALIDATED: tuple[Validated, ...] = (
    # quiet, three repeats a point, with --aa, both levels, a hold's own releases on
    # (issue 40, 8 Dec 2026 00:34-00:37)
    Validated(
        "configs/quickstart.yaml",
        "8 Dec 2026 00:34, load average 0.5–0.7",
        _fs("arrival poisson", "variant numpy", "variant rows", "variant scalar"),
        6,
        5,
        6,
        0.05,
        0.05,
        aa=(5, 6),
    ),
    # quiet, three repeats a point, with --aa, both levels, a hold's own releases on
    # (issue 40, 8 Dec 2026 00:54-01:09)
    Validated(
        "configs/synthetic_sweep.yaml",
        "8 Dec 2026 00:54, load average 0.1–0.3",
        _fs("arrival poisson", "variant synthetic"),
        20,
        20,
        20,
        0.03,
        0.03,
        aa=(20, 19),
    ),
    # quiet, three repeats a point, with --aa, both levels, a hold's own releases on
    # (issue 40, 8 Dec 2026 00:37-00:51)
    Validated(
        "configs/engine_interference.yaml",
        "8 Dec 2026 00:37, load average 0.6–0.7",
        _fs(
            "arrival poisson",
            "engine index_variant cached",
            "engine index_variant device",
            "engine index_variant per_component",
            "engine step of 32 tokens",
            "variant numpy",
            "variant rows",
            "variant scalar",
        ),
        18,
        16,
        17,
        0.03,
        0.02,
        aa=(17, 16),
    ),
    # quiet, three repeats a point, with --aa (issue 31, 2 Dec 2026 07:03-07:16)
    Validated(
        "experiments/pr47474_index_cache/config.yaml",
        "2 Dec 2026 07:03, load average 0.1–0.6",
        _fs(
            "arrival poisson",
            "engine index_variant cached",
            "engine index_variant device",
            "engine index_variant per_component",
            "engine step of 256 tokens",
            "engine step of 32 tokens",
            "variant numpy",
        ),
        6,
        6,
        3,
        0.06,
        0.19,
        aa=(6, 4),
    ),
    # quiet, three repeats a point, with --aa (issue 31, 2 Dec 2026 07:13-07:21)
    Validated(
        "experiments/switch_interval/config.yaml",
        "2 Dec 2026 07:13, load average 0.9",
        _fs(
            "arrival poisson",
            "engine index_variant cached",
            "engine step of 32 tokens",
            "switch interval 0.5 ms",
            "switch interval 1 ms",
            "switch interval 2 ms",
            "switch interval 20 ms",
            "variant numpy",
            "variant scalar",
        ),
        10,
        7,
        6,
        0.07,
        0.08,
        aa=(6, 4),
    ),
    Validated(
        "configs/trace_replay.yaml",
        "2 Dec 2026 04:15, load average 0.8",
        _fs("arrival trace", "variant numpy", "variant scalar"),
        2,
        2,
        0,
        0.08,
        0.32,
    ),
    Validated(
        "experiments/pr48531_prepare_values/config.yaml",
        "2 Dec 2026 04:16, load average 0.7",
        _fs("arrival closed", "variant numpy", "variant scalar"),
        4,
        2,
        0,
        0.12,
        0.18,
    ),
    Validated(
        "experiments/drift_order/config.yaml",
        "2 Dec 2026 04:18, load average 0.5",
        _fs("arrival poisson", "variant numpy", "variant scalar"),
        2,
        1,
        1,
        0.23,
        0.15,
    ),
    Validated(
        "configs/search_capacity.yaml",
        "2 Dec 2026 04:19, load average 0.5",
        _fs("arrival poisson", "variant numpy", "variant scalar"),
        2,
        2,
        0,
        0.04,
        0.46,
    ),
    Validated(
        "experiments/gil_hold_latency/config.yaml",
        "2 Dec 2026 04:20, load average 0.7",
        _fs("arrival poisson", "variant synthetic"),
        20,
        17,
        7,
        0.06,
        0.21,
    ),
    # quiet, three repeats a point, with --aa, both levels, a hold's own releases on
    # (issue 40, 8 Dec 2026 01:09-01:10)
    Validated(
        "experiments/gil_contention/hold_1ms.yaml",
        "8 Dec 2026 01:09, load average 0.3–0.4",
        _fs("arrival poisson", "variant synthetic"),
        4,
        2,
        0,
        0.35,
        0.37,
        aa=(2, 1),
    ),
    # quiet, three repeats a point, with --aa, both levels, a hold's own releases on
    # (issue 40, 8 Dec 2026 01:10-01:11)
    Validated(
        "experiments/gil_contention/hold_1ms_one.yaml",
        "8 Dec 2026 01:10, load average 0.6",
        _fs("arrival poisson", "variant synthetic"),
        2,
        2,
        2,
        0.05,
        0.03,
        aa=(2, 2),
    ),
    # quiet, three repeats a point, with --aa, both levels, a hold's own releases on
    # (issue 40, 8 Dec 2026 01:11-01:17)
    Validated(
        "experiments/gil_contention/hold_5ms.yaml",
        "8 Dec 2026 01:11, load average 0.8",
        _fs("arrival poisson", "variant synthetic"),
        6,
        4,
        5,
        0.05,
        0.07,
        aa=(6, 6),
    ),
    # quiet, three repeats a point, with --aa, both levels, a hold's own releases on
    # (issue 40, 8 Dec 2026 01:17-01:20)
    Validated(
        "experiments/gil_contention/hold_20ms.yaml",
        "8 Dec 2026 01:17, load average 0.7",
        _fs("arrival poisson", "variant synthetic"),
        6,
        6,
        5,
        0.03,
        0.03,
        aa=(6, 6),
    ),
    # quiet, three repeats a point, with --aa, calibrated in the same free-threaded build,
    # each variant calibrated and probed in a process of its own (issue 39, 6 Dec 2026
    # 05:40-05:54; docs/model-mode.md, "The GIL on and off, each variant in a process of
    # its own")
    Validated(
        "configs/gil_on_off.yaml",
        "6 Dec 2026 05:40, load average 0.4–1.4",
        _fs(
            "arrival poisson",
            "gil.kind none",
            "interpreter.python",
            "variant numpy",
            "variant scalar",
        ),
        12,
        10,
        8,
        0.08,
        0.10,
        aa=(8, 8),
    ),
)


def markdown_table() -> str:
    """The table as docs/model-mode.md shows it (tests/model/test_validated.py keeps the two
    the same: a change of one is a change of both)."""
    lines = [
        "| config | validated | features | latency p50 within ±10 % | p99 within ±15 % "
        "| a second real run (`--aa`): p50, p99 |",
        "|--|--|--|--|--|--|",
    ]
    for v in VALIDATED:
        lines.append(
            f"| `{v.config}` | {v.date} | {', '.join(sorted(v.features))} | "
            f"{v.p50_met}/{v.points} (median {v.p50_median:.0%}) | "
            f"{v.p99_met}/{v.points} (median {v.p99_median:.0%}) | {v.aa_cell()} |"
        )
    return "\n".join(lines) + "\n"


def features(cfg: ExperimentConfig) -> frozenset[str]:
    """The features of one point (see the module's docstring)."""
    tags = {f"variant {cfg.connector.variant}", f"arrival {cfg.workload.arrival.kind}"}
    if cfg.connector.handler != "per_group":
        tags.add(f"handler {cfg.connector.handler}")
    if cfg.connector.variant == "synthetic":
        opts = cfg.connector.options
        if opts.get("free_kind") == "kernel" and float(opts.get("free_ms", 0.0)) > 0:
            tags.add("synthetic free_kind kernel")
    if cfg.connector.workers > _MANY_WORKERS:
        tags.add(f"workers > {_MANY_WORKERS}")
    eng = cfg.engine
    if eng.enabled:
        tags.add(f"engine index_variant {eng.index_variant}")
        tags.add(f"engine step of {eng.max_tokens()} tokens")
        if eng.components != 3:
            tags.add(f"engine components {eng.components}")
        if eng.heap.objects:
            tags.add("engine.heap")
    if cfg.store.fail_prob > 0 or cfg.store.stall_prob > 0:
        tags.add("store faults")
    if cfg.simulated_gil == "none":
        tags.add("gil.kind none")
    if cfg.interpreter.python:  # another build's calibration (sim.model.coverage)
        tags.add("interpreter.python")
    if cfg.gil.switch_interval_ms != 5.0:
        tags.add(f"switch interval {cfg.gil.switch_interval_ms:g} ms")
    if cfg.machine.cores is not None:
        tags.add("machine.cores")
    if cfg.machine.cpu_scale != 1.0:
        tags.add("machine.cpu_scale")
    return frozenset(tags)


def _closest(tags: frozenset[str]) -> Validated:
    """The validated config sharing most of ``tags`` and adding least (ties: listed first)."""
    return max(VALIDATED, key=lambda v: (len(tags & v.features), -len(v.features - tags)))


def unvalidated_note(points: Sequence[Point]) -> str | None:
    """One line when some model-mode point's features no validated config covers; None
    when every one is covered (or none runs in model mode)."""
    model = [p for p in points if p.config.mode == "model"]
    outside = [
        tags
        for p in model
        if not any((tags := features(p.config)) <= v.features for v in VALIDATED)
    ]
    if not outside:
        return None
    tags = frozenset().union(*outside)
    closest = _closest(tags)
    new = sorted(tags - closest.features)
    which = (
        "this config" if len(outside) == len(points) else f"{len(outside)} of {len(points)} points"
    )
    return (
        f"model mode was never validated on {which}: {', '.join(new)} (not in the closest "
        f"validated config, {closest.config}, {closest.error_text()}; docs/model-mode.md)"
    )
