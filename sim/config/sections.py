"""The smaller config sections: connector, store, GIL, output."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from sim.config.types import FrozenModel, NonNegFloat, NonNegInt, PosFloat, PosInt, Prob

__all__ = ["ConnectorConfig", "GilConfig", "LimitsConfig", "OutputConfig", "StoreConfig"]


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
    """The modelled KV store: transfer time = latency + bytes / bandwidth."""

    bandwidth_gbps: PosFloat = Field(
        100.0, description="Transfer bandwidth in GB/s (10^9 bytes per second)."
    )
    latency_ms: NonNegFloat = Field(0.5, description="Fixed cost per transfer.")
    concurrency: PosInt = Field(4, le=4096, description="Transfers in flight at once.")
    fail_prob: Prob = Field(0.0, description="Probability that one transfer attempt fails.")
    stall_prob: Prob = Field(0.0, description="Probability that one attempt stalls first.")
    stall_ms: NonNegFloat = Field(0.0, description="Extra time a stalled attempt takes.")
    retries: NonNegInt = Field(
        2, le=100, description="Attempts after a failed one before the request fails."
    )
    retry_backoff_ms: NonNegFloat = Field(1.0, description="Pause before each retry.")


class GilConfig(FrozenModel):
    """GIL settings and the sentinel probe that measures stalls and GIL busy."""

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


class LimitsConfig(FrozenModel):
    """Watchdogs: a hang ends the run with a clear error instead of waiting forever."""

    request_timeout_s: PosFloat = Field(
        120.0, le=86400, description="A request whose CPU stages take longer ends the run."
    )


class OutputConfig(FrozenModel):
    dir: str | None = Field(
        None,
        description="Run directory, relative to the working directory; default results/<name>.",
    )
