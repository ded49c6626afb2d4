"""The smaller config sections: connector, store, GIL, output."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .types import FrozenModel, NonNegFloat, PosFloat, PosInt

__all__ = ["ConnectorConfig", "GilConfig", "OutputConfig", "StoreConfig"]


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


class GilConfig(FrozenModel):
    switch_interval_ms: PosFloat = Field(
        5.0, le=1000, description="sys.setswitchinterval for the run (CPython default 5 ms)."
    )


class OutputConfig(FrozenModel):
    dir: str | None = Field(
        None,
        description="Run directory, relative to the working directory; default results/<name>.",
    )
