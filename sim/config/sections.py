"""The smaller config sections: connector, store, GIL, output."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Strict, StrictBool, field_validator, model_validator

from sim.config.mooncake import MooncakeConfig
from sim.config.types import (
    FrozenModel,
    NonNegFloat,
    NonNegInt,
    PathText,
    PosFloat,
    PosInt,
    Prob,
)

__all__ = [
    "BASE_PERCENTILES",
    "ConnectorConfig",
    "GilConfig",
    "LimitsConfig",
    "OutputConfig",
    "StoreConfig",
    "percentile_label",
]


class ConnectorConfig(FrozenModel):
    """The code under test and the threads that run it."""

    variant: str = Field("numpy", description="Address-computation variant (`kvsim variants`).")
    workers: PosInt = Field(1, le=256, description="Load threads taking whole requests (FIFO).")
    handler: Literal["per_group", "per_chunk"] = Field(
        "per_group",
        description="per_chunk: one prepare_value call per chunk (before PR #48531); "
        "per_group: one prepare_values call per KV-cache group (after).",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Variant-specific options (see `kvsim variants`)."
    )


class StoreConfig(FrozenModel):
    """The KV store behind the load path: modelled, or a real Mooncake store (``kind:
    mooncake``, settings under ``mooncake``).

    The modelled store: a fixed latency, then the bytes over one shared link.

    The transfers in flight (at most ``concurrency``) divide the link's bandwidth
    equally between them (processor sharing), each capped at ``per_transfer_gb_per_s``
    when set: two equal transfers started together each take twice as long as one alone.
    """

    kind: Literal["model", "mooncake"] = Field(
        "model",
        description="model: the modelled store (the fields below); mooncake: a real Mooncake "
        "master and client per point, real KV buffers, every get verified.",
    )
    mooncake: MooncakeConfig = Field(
        default_factory=MooncakeConfig, description="Real store settings (kind: mooncake)."
    )

    bandwidth_gb_per_s: PosFloat = Field(
        100.0,
        le=1e6,
        description="Bandwidth of the link all transfers share, in GB/s (10^9 bytes per "
        "second; a 200 Gbit/s NIC is 25 GB/s).",
    )
    per_transfer_gb_per_s: PosFloat | None = Field(
        None,
        le=1e6,
        description="Most one transfer can move, in GB/s (e.g. one NIC or one stream); "
        "default: no cap beyond its share of the link.",
    )
    latency_ms: NonNegFloat = Field(
        0.5, le=1e9, description="Fixed cost per transfer (not shared)."
    )
    concurrency: PosInt = Field(
        4, le=4096, description="Transfers in flight at once; more wait for a slot."
    )
    fail_prob: Prob = Field(0.0, description="Probability that one transfer attempt fails.")
    stall_prob: Prob = Field(0.0, description="Probability that one attempt stalls first.")
    stall_ms: NonNegFloat = Field(0.0, le=1e9, description="Extra time a stalled attempt takes.")
    retries: NonNegInt = Field(
        2, le=100, description="Attempts after a failed one before the request fails."
    )
    retry_backoff_ms: NonNegFloat = Field(1.0, le=1e9, description="Pause before each retry.")

    @model_validator(mode="before")
    @classmethod
    def _renamed_bandwidth(cls, data: Any) -> Any:
        if isinstance(data, dict) and "bandwidth_gbps" in data:
            raise ValueError(
                "bandwidth_gbps is now bandwidth_gb_per_s: the old key was in GB/s "
                "(10^9 bytes per second, not Gbit/s), so keep the number to keep the "
                "meaning; the link is now shared by the transfers in flight"
            )
        return data


class GilConfig(FrozenModel):
    """GIL settings and the sentinel probe that measures stalls and GIL busy."""

    kind: Literal["cpython", "none"] = Field(
        "cpython",
        description="cpython: one GIL with CPython's switch-interval rules; none: a "
        "free-threaded interpreter where holds are plain CPU work on the cores "
        "(model mode only: real mode runs the interpreter it has).",
    )

    switch_interval_ms: PosFloat = Field(
        5.0, le=1000, description="sys.setswitchinterval for the run (CPython default 5 ms)."
    )
    probe: StrictBool = Field(
        True,
        description="Run the sentinel probe thread: stall p50/p99/max and an independent "
        "GIL-busy estimate set beside the per-request holds (docs/gil-method.md).",
    )
    probe_interval_ms: PosFloat = Field(
        2.0,
        ge=0.1,
        le=1000,
        description="Mean time between the probe's wake-ups (each jittered ±50%).",
    )
    probe_threshold_ms: PosFloat = Field(
        0.1,
        le=100,
        description="A wake-up later than this found the GIL busy; keep it above the "
        "probe's wake-up latency on an idle GIL and well below the holds measured.",
    )
    own_releases: StrictBool = Field(
        True,
        description="Model mode: run each hold in parts and let a waiting thread in "
        "between them, where kvsim calibrate saw library code release the GIL in "
        "mid-hold (NumPy's ufuncs, torch's operators; docs/model-mode.md, A hold's own "
        "releases). false: each hold is one block (NumPy's GIL wait then reads 40-60 % "
        "low in the mechanism replay).",
    )
    audit: Literal["off", "pyspy"] = Field(
        "off",
        description="pyspy: audit the meter independently — py-spy samples which thread "
        "holds the GIL (~audit_rate_hz, without stopping the process) over each point's "
        "load window (real mode; `kvsim run --audit`; docs/gil-method.md).",
    )
    audit_rate_hz: PosInt = Field(
        1000, ge=10, le=10000, description="py-spy's sampling rate for gil.audit."
    )


class LimitsConfig(FrozenModel):
    """Watchdogs (a hang ends the run with a clear error instead of waiting forever) and
    budgets (a config that would not fit is refused before anything runs)."""

    request_timeout_s: PosFloat = Field(
        120.0, le=86400, description="A request whose CPU stages take longer ends the run."
    )
    max_points: PosInt = Field(
        10_000,
        le=10_000_000,
        description="Point runs (grid points × repeats) a config may have; checked from the "
        "axes' lengths before the grid is expanded.",
    )
    max_point_s: PosFloat = Field(
        3600.0,
        le=30 * 86400,
        description="Wall time one point run may need at least, estimated from its plan "
        "before anything runs (modelled time is wall time): the arrivals' span (a trace's "
        "span over its speedup) and the last transfer, all transfers at the slowest "
        "configured bandwidth, the engine's baseline steps. Also the sweep's bound on a "
        "started point run (real or model mode): past it plus request_timeout_s without a "
        "result, the run is stopped and failed (a stopped or hung process never hangs the "
        "sweep).",
    )
    max_memory_gib: PosFloat | None = Field(
        None,
        le=1 << 20,
        description="Memory one point run may need at least (address arrays of the requests "
        "in flight, per-request records); default half of this machine's memory.",
    )


#: Latency percentiles every run reports (the compare, table and plots read them).
BASE_PERCENTILES = (50.0, 90.0, 99.0)


class OutputConfig(FrozenModel):
    """Where a run's files go and which latency percentiles its tables carry."""

    dir: PathText | None = Field(
        None,
        description="Run directory. A relative path is taken from the directory kvsim is "
        "started in (the working directory, like any output path on a command line), not "
        "from the config file's; default results/<name> (results/<name>-model in model "
        "mode). kvsim prints the full path. A leading ~ is expanded; $VARIABLES are not "
        "(refused: a config means the same in every shell).",
    )
    percentiles: tuple[Annotated[float, Strict(), Field(allow_inf_nan=False)], ...] = Field(
        BASE_PERCENTILES,
        max_length=20,
        description="Latency percentiles in summary.csv and results.json, e.g. "
        "[50, 90, 95, 99, 99.9]: each q gives a column latency_p<q>_ms (99.9 -> "
        "latency_p99.9_ms). 50, 90 and 99 are always reported.",
    )

    requests: str = Field(
        "all",
        max_length=40,
        description="Rows of requests.csv: all, none, or 'sample N' (about N rows, every "
        "k-th request by id). The summary covers every request whichever is chosen.",
    )

    window_s: PosFloat | None = Field(
        None,
        le=1e9,
        description="Also write windows.csv: per window of this many seconds of run time "
        "(by planned arrival), the requests, those ok and their latency p50/p99 (from "
        "histograms, within 0.05 %): latency over a load curve. Default: none.",
    )

    @field_validator("requests")
    @classmethod
    def _rows(cls, v: str) -> str:
        words = v.split()
        if words in (["all"], ["none"]):
            return words[0]
        if len(words) == 2 and words[0] == "sample" and words[1].isdigit() and int(words[1]) > 0:
            return f"sample {int(words[1])}"
        raise ValueError(f"expected all, none or 'sample N' with N a whole number > 0, got {v!r}")

    def request_stride(self, total: int) -> int:
        """Keep the requests whose id is a multiple of this (0: none)."""
        if self.requests == "all":
            return 1
        if self.requests == "none":
            return 0
        wanted = int(self.requests.split()[1])
        return max(1, -(-total // wanted))

    @field_validator("percentiles")
    @classmethod
    def _in_range(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        for q in v:
            if not 0 < q < 100:
                raise ValueError(f"each percentile must be a number above 0 and below 100, got {q}")
        return v

    @property
    def all_percentiles(self) -> tuple[float, ...]:
        """The base percentiles and the configured ones, sorted, without repeats."""
        return tuple(sorted({*BASE_PERCENTILES, *(float(q) for q in self.percentiles)}))


def percentile_label(q: float) -> str:
    """``99`` -> ``p99``, ``99.9`` -> ``p99.9`` (the name used in column names): the
    shortest text that reads back as ``q``, so two percentiles never share a column
    (``99.99999999999`` is not rounded to ``p100``)."""
    text = repr(float(q))
    return f"p{text[:-2] if text.endswith('.0') else text}"
