"""The calibration file: what model mode knows about this machine's costs.

``kvsim calibrate`` measures (sim.calibration.measure) and writes it; every model run
loads it, records its path and digest in the manifest, and refuses a point its
measurements do not cover instead of extrapolating silently.

Per address variant and request handler the file holds a least-squares fit of
the GIL hold per request (ms) and of the CPU time of declared GIL-free sections,
both linear in ``chunks × regions``, ``chunks`` and ``groups`` (chunks counted
over all KV-cache groups), with the range of chunks, regions and groups the fit
was measured over. The synthetic variant needs no fit (it holds exactly
``hold_ms``): only its fixed overhead is measured. The harness section holds the
simulation thread's CPU per request, thread wake-up and timer lateness; the
engine section the step build's hold per index variant.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from sim.config import ConfigError
from sim.files.read import excerpt, read_bounded

__all__ = [
    "CALIBRATE_FIRST",
    "CALIBRATION_KIND",
    "CALIBRATION_VERSION",
    "Calibration",
    "CalibrationError",
    "LinearFit",
    "load_calibration",
]

CALIBRATION_KIND = "kvsim-calibration"
#: The calibration format this kvsim reads (``kvsim calibrate`` writes it as ``version``;
#: a file without one is of the same format, written before the field existed).
CALIBRATION_VERSION = 1
#: A calibration is a few kilobytes of JSON; far more is not one.
MAX_CALIBRATION_BYTES = 64 << 20
#: Variants whose cost is given by their options, not by geometry.
PARAMETRIC = ("synthetic",)


class CalibrationError(ConfigError):
    """A calibration that is missing, unreadable, or does not cover a point (one line)."""


@dataclass(frozen=True)
class LinearFit:
    """ms = intercept + per_chunk_region·chunks·regions + per_chunk·chunks + per_group·groups."""

    intercept: float
    per_chunk_region: float
    per_chunk: float
    per_group: float

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LinearFit:
        return cls(
            float(d["intercept"]),
            float(d["per_chunk_region"]),
            float(d["per_chunk"]),
            float(d["per_group"]),
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "intercept": self.intercept,
            "per_chunk_region": self.per_chunk_region,
            "per_chunk": self.per_chunk,
            "per_group": self.per_group,
        }

    def ms(self, chunks: int, regions: int, groups: int) -> float:
        v = (
            self.intercept
            + self.per_chunk_region * chunks * regions
            + self.per_chunk * chunks
            + self.per_group * groups
        )
        return max(0.0, v)


@dataclass(frozen=True)
class Calibration:
    path: str
    digest: str
    data: dict[str, Any]

    @property
    def cores(self) -> int:
        return int(self.data["machine"]["cores"])

    @property
    def harness(self) -> dict[str, float]:
        """The harness's scalar costs (ms), without the latency samples."""
        return {k: float(v) for k, v in self.data["harness"].items() if not isinstance(v, list)}

    def samples_ms(self, name: str, fallback: str | None = None) -> list[float]:
        """Measured samples of latency ``name`` (e.g. ``wake``), or [median] if none kept;
        ``fallback``'s where a calibration written before ``name`` was measured lacks it."""
        harness = self.data["harness"]
        got = harness.get(f"{name}_samples_ms")
        if isinstance(got, list) and got:
            return [float(x) for x in got]
        if fallback is not None and f"{name}_ms" not in harness:
            return self.samples_ms(fallback)
        return [float(harness.get(f"{name}_ms", 0.0))]

    @property
    def interpreter(self) -> dict[str, Any] | None:
        """The interpreter it was measured in (path, version, build, gil_enabled); None in
        a calibration written before it was recorded."""
        got = self.data.get("interpreter")
        return got if isinstance(got, dict) else None

    def manifest_entry(self) -> dict[str, Any]:
        """What a model run's manifest records about the calibration it used."""
        return {
            "path": self.path,
            "digest": self.digest,
            "created": self.data.get("created"),
            "machine": self.data.get("machine"),
            "interpreter": self.interpreter,
            "switch_interval_ms": self.data.get("switch_interval_ms"),
        }

    def variant(self, name: str, handler: str) -> dict[str, Any] | None:
        key = name if name in PARAMETRIC else f"{name}/{handler}"
        return self.data.get("variants", {}).get(key)

    def engine_yields(self, index_variant: str) -> dict[str, Any] | None:
        """The engine build's mid-hold GIL releases a waiting thread took
        (sim.calibration.measure_engine): ``{per_request, span}``; None where not measured."""
        v = self.data.get("engine", {}).get(index_variant) or {}
        return v.get("yields") or None

    def engine_build_ms(self, index_variant: str, tokens: int | None = None) -> float | None:
        """The step build's hold (ms) of ``index_variant`` at a step of ``tokens`` padded
        tokens: linear between the two measured sizes around it (sim.model.coverage
        refuses a step outside them; a calibration from before sizes were measured has
        one figure, for every size)."""
        v = self.data.get("engine", {}).get(index_variant)
        if v is None:
            return None
        sizes = sorted((int(k), float(ms)) for k, ms in v.get("by_tokens", {}).items())
        if tokens is None or not sizes:
            return float(v["build_ms"])
        if tokens <= sizes[0][0]:
            return sizes[0][1]
        for (t0, m0), (t1, m1) in pairwise(sizes):
            if tokens <= t1:
                return m0 + (m1 - m0) * (tokens - t0) / (t1 - t0)
        return sizes[-1][1]

    def engine_tokens(self, index_variant: str) -> tuple[int, int] | None:
        """The smallest and largest step (padded tokens) the build was measured at."""
        sizes = [
            int(k) for k in self.data.get("engine", {}).get(index_variant, {}).get("by_tokens", {})
        ]
        return (min(sizes), max(sizes)) if sizes else None

    def check_covers(
        self,
        variant: str,
        handler: str,
        chunks: range | None,
        regions: int,
        groups: int,
        plugins: Sequence[str] = (),
    ) -> None:
        """Raise CalibrationError unless the variant and geometry lie in the measured range.

        ``chunks`` is the range of chunks per group the point's requests can have
        (None: not known before the plan is drawn; checked again with the plan).
        ``plugins``: the point's plug-in files, named in the calibrate command advised
        (a plug-in's variant is unknown to a `kvsim calibrate` without them).
        """
        entry = self.variant(variant, handler)
        if entry is None:
            have = ", ".join(sorted(self.data.get("variants", {}))) or "none"
            files = "".join(f" --plugin {_shown_path(p)}" for p in plugins)
            raise CalibrationError(
                f"{self.path}: connector.variant {variant!r} (handler {handler}) is not "
                f"calibrated (calibrated: {have}); run `kvsim calibrate --variants {variant}"
                f"{files}`"
            )
        if variant in PARAMETRIC:
            return
        rng = entry["range"]
        checks = [
            ("model.regions", regions, regions, rng["regions"]),
            ("model.kv_groups", groups, groups, rng["groups"]),
        ]
        if chunks is not None:
            checks.append(("chunks per group", chunks.start, chunks.stop - 1, rng["chunks"]))
        for what, lo, hi, (cmin, cmax) in checks:
            if lo < cmin or hi > cmax:
                shown = f"{lo}" if lo == hi else f"{lo}–{hi}"
                raise CalibrationError(
                    f"{self.path}: {what} {shown} is outside the calibrated range "
                    f"{cmin}–{cmax} of variant {variant!r}; calibrate that geometry "
                    "(`kvsim calibrate --regions ... --chunks ...`)"
                )


def _shown_path(path: str) -> str:
    """A plug-in's path as a command line names it: relative to here when it lies below."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


#: The largest magnitude a measured figure may have (ms: a request held 1000 s is not one).
MAX_FIGURE = 1e6
#: Coefficients of a least-squares fit (``LinearFit``): the only figures that may be < 0.
_SIGNED = {"intercept", "per_chunk_region", "per_chunk", "per_group"}


def _leaves(node: Any, where: str = "") -> Iterator[tuple[str, Any, str]]:
    """(dotted path, value, key of the nearest mapping) of every scalar under ``node``."""
    items: list[tuple[str, Any, str]] = []
    if isinstance(node, dict):
        items = [(f"{where}.{k}" if where else str(k), v, str(k)) for k, v in node.items()]
    elif isinstance(node, list):
        key = where.rsplit(".", 1)[-1]
        items = [(f"{where}[{i}]", v, key) for i, v in enumerate(node)]
    for at, value, key in items:
        if isinstance(value, (dict, list)):
            yield from _leaves(value, at)
        else:
            yield at, value, key


def _check_values(p: Path, data: dict[str, Any]) -> None:
    """Every measured figure a number in range: finite, at most :data:`MAX_FIGURE`, and
    not negative unless it is a fit's coefficient (a negative wake-up made a negative
    noise floor; 1e300 aborted the run). CalibrationError naming the field."""
    cores = data["machine"].get("cores")
    if isinstance(cores, bool) or not isinstance(cores, int) or not 1 <= cores <= 65536:
        raise CalibrationError(f"{p}: machine.cores: expected 1 to 65536, got {excerpt(cores)}")
    sections = {k: data.get(k) for k in ("harness", "variants", "engine", "switch_interval_ms")}
    for where, value, key in _leaves(sections):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        low = -MAX_FIGURE if key in _SIGNED else 0.0
        if not (math.isfinite(value) and low <= value <= MAX_FIGURE):
            allowed = "-1e6 to 1e6" if low else "0 to 1e6"
            raise CalibrationError(
                f"{p}: {where}: {excerpt(value)} is out of range ({allowed}); "
                "recalibrate (`kvsim calibrate --force`)"
            )


#: What a missing calibration file at machine.calibration's default, for kvsim's own
#: python, asks for (sim.model.coverage names the command for any other).
CALIBRATE_FIRST = "run `kvsim calibrate` first"


def load_calibration(path: str | Path, missing: str = CALIBRATE_FIRST) -> Calibration:
    """The calibration file at ``path``; ``missing``: the advice when there is none."""
    p = Path(path)
    raw = read_bounded(
        p,
        what="calibration file (machine.calibration)",
        limit=MAX_CALIBRATION_BYTES,
        error=CalibrationError,
        missing=missing,
    )
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, a 4,300-digit integer, deep nesting
        raise CalibrationError(f"{p}: not a JSON calibration file") from None
    if not isinstance(data, dict):
        raise CalibrationError(
            f"{p}: not a kvsim calibration file (a JSON object of kind {CALIBRATION_KIND!r})"
        )
    if data.get("kind") != CALIBRATION_KIND:
        found = f"kind {excerpt(data['kind'])}" if "kind" in data else "no kind"
        raise CalibrationError(
            f"{p}: not a kvsim calibration file: {found}, expected {CALIBRATION_KIND!r} "
            "(what `kvsim calibrate` writes)"
        )
    version = data.get("version", CALIBRATION_VERSION)
    if type(version) is not int or version != CALIBRATION_VERSION:
        raise CalibrationError(
            f"{p}: calibration version {excerpt(version)}; this kvsim reads version "
            f"{CALIBRATION_VERSION}: recalibrate (`kvsim calibrate --force`)"
        )
    for key in ("machine", "harness", "variants"):
        if not isinstance(data.get(key), dict):
            raise CalibrationError(f"{p}: calibration has no {key!r} section")
    _check_values(p, data)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    return Calibration(str(p), digest, data)
