"""The engine step loop that runs beside the load pipeline (docs/design.md §1.2, §3).

Off by default: a point without it measures the connector alone. When enabled,
a real engine thread builds each step's token-to-request index with the chosen
index variant and then waits out a modelled GPU forward, so the step time shows
how much the connector threads' GIL hold slows the engine.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict, StrictBool, field_validator, model_validator

from connectors import registry
from sim.config.types import FrozenModel, NonNegFloat, PosInt

__all__ = ["EngineConfig", "HeapConfig"]

#: Most live objects a point may build (about 1.6 GB of memory at 8 million).
MAX_HEAP_OBJECTS = 8_000_000


class HeapConfig(FrozenModel):
    """A serving process's heap, built in the point's process before anything is measured.

    A collection's cost depends on what else lives in the process: a serving
    engine holds millions of container objects (request states, configs, module
    objects), and many freeze them after start-up (``gc.freeze()``) so that full
    collections skip them. kvsim's own process is small; this makes it large.
    """

    # The bound sits in the Annotated type: a Field(le=...) beside NonNegInt would be
    # overridden by NonNegInt's own le.
    objects: Annotated[int, Strict(), Field(ge=0, le=MAX_HEAP_OBJECTS)] = Field(
        0,
        description="Live container objects (dicts, lists, tuples, class instances, in a "
        "serving engine's proportions) kept alive for the whole point; 0: none. Applies "
        "whether or not the engine loop runs.",
    )
    frozen: StrictBool = Field(
        False,
        description="gc.collect() then gc.freeze() after building the heap (what engines do "
        "after start-up): collections then skip every object alive at that moment, kvsim's "
        "own and the engine's start-up included (even with objects: 0). false: the heap is "
        "collected into the oldest generation, where full collections scan it.",
    )


class EngineConfig(FrozenModel):
    """One engine thread, one step after another, paced by the simulation."""

    enabled: StrictBool = Field(False, description="Run the engine step loop beside the load.")
    index_variant: str = Field(
        "cached",
        description="How each step builds the token-to-request index (`kvsim variants`).",
    )
    components: PosInt = Field(
        3, le=64, description="Attention components that each need the index in a step (K)."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="Where index buffers live; auto takes CUDA when torch sees it."
    )
    batch: Literal["decode", "prefill"] = Field(
        "decode",
        description="decode: batch_size requests of one token each; prefill: prefill_tokens "
        "split evenly over batch_size requests.",
    )
    batch_size: PosInt = Field(32, le=8192, description="Requests in every step.")
    prefill_tokens: PosInt = Field(
        512, le=1 << 20, description="Tokens of a prefill step (batch: prefill only)."
    )
    pad_multiple: PosInt = Field(
        8,
        le=4096,
        description="Round a step's token count up to a multiple of this (CUDA-graph sizes); "
        "the padding's index entries are zero.",
    )
    forward_ms: NonNegFloat = Field(
        5.0, le=60_000, description="Modelled GPU forward per step: a wait without the GIL."
    )
    idle_ms: NonNegFloat = Field(
        0.0, le=60_000, description="Pause between steps (0: back to back)."
    )
    heap: HeapConfig = Field(
        default_factory=HeapConfig,
        description="A production-like heap in the point's process (sim.instruments.heap).",
    )
    baseline_steps: PosInt = Field(
        50,
        le=100_000,
        description="Steps run with no load before it starts: the engine-alone reference.",
    )

    @field_validator("index_variant")
    @classmethod
    def _known_variant(cls, v: str) -> str:
        names = registry.index_variant_names()
        if v not in names:
            raise ValueError(
                f"unknown index variant {v!r}; allowed: {', '.join(names)} (one of your own: "
                "plugins: [FILE] in the config, or --plugin FILE; docs/your-connector.md)"
            )
        return v

    @model_validator(mode="after")
    def _prefill_fits(self) -> EngineConfig:
        if self.batch == "prefill" and self.prefill_tokens < self.batch_size:
            raise ValueError(
                f"prefill_tokens ({self.prefill_tokens}) must be at least batch_size "
                f"({self.batch_size}): every request gets one token or more"
            )
        return self

    def query_lens(self) -> list[int]:
        """Query length of each request of a step."""
        if self.batch == "decode":
            return [1] * self.batch_size
        share, extra = divmod(self.prefill_tokens, self.batch_size)
        return [share + (1 if i < extra else 0) for i in range(self.batch_size)]

    def max_tokens(self) -> int:
        """Padded token count of a step: the size of the index buffers."""
        mapped = sum(self.query_lens())
        return -(-mapped // self.pad_multiple) * self.pad_multiple
