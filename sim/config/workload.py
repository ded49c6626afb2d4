"""Workload: how many load requests arrive, when, and how many tokens each loads."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from sim.config.paths import resolve_path
from sim.config.types import FrozenModel, NonNegFloat, NonNegInt, PathText, PosFloat, PosInt

__all__ = [
    "ArrivalConfig",
    "ClosedLoopArrival",
    "ConstantArrival",
    "CurveArrival",
    "EmpiricalTokens",
    "FixedTokens",
    "LognormalTokens",
    "OnOffArrival",
    "PoissonArrival",
    "PrefixCacheConfig",
    "TokensConfig",
    "TraceArrival",
    "UniformTokens",
    "WarmConfig",
    "WorkloadConfig",
]


def _existing_file(value: str, info: ValidationInfo, what: str) -> str:
    path = resolve_path(value, info.context)
    if not path.is_file():
        raise ValueError(
            f"{what} {str(path)!r} does not exist or is not a file (relative paths are "
            "taken from the config file's directory)"
        )
    return str(path)


class PoissonArrival(FrozenModel):
    """Open loop: exponential inter-arrival times."""

    kind: Literal["poisson"] = "poisson"
    rate_rps: PosFloat = Field(default=10.0, le=1e6, description="Mean arrivals per second.")


class ClosedLoopArrival(FrozenModel):
    """Closed loop: each client sends its next request when the previous one is done."""

    kind: Literal["closed"] = "closed"
    clients: PosInt = Field(4, le=4096, description="Concurrent clients (requests in flight).")
    think_ms: NonNegFloat = Field(
        0.0, le=1e9, description="Pause between a reply and the next request."
    )


class ConstantArrival(FrozenModel):
    """Open loop: one arrival every 1/rate_rps seconds, the first at time zero."""

    kind: Literal["constant"] = "constant"
    rate_rps: PosFloat = Field(10.0, le=1e6, description="Arrivals per second.")


class OnOffArrival(FrozenModel):
    """Open loop in bursts: Poisson arrivals at rate_rps during on periods, none while off.

    Periods have fixed lengths and the run starts at the beginning of an on period,
    so the mean rate is rate_rps * on_ms / (on_ms + off_ms).
    """

    kind: Literal["onoff"] = "onoff"
    rate_rps: PosFloat = Field(50.0, le=1e6, description="Mean arrivals per second while on.")
    on_ms: PosFloat = Field(200.0, le=1e9, description="Length of each burst.")
    off_ms: NonNegFloat = Field(
        800.0, le=1e9, description="Length of each quiet gap between bursts."
    )


class WarmConfig(FrozenModel):
    """Trace lines replayed into the store before the measured window, untimed: a count
    (``requests``) or a share of the trace's lines (``share``), not both.

    A share fits any trace: a store warmed by the first three quarters of a trace holds
    what the trace itself put in it, whatever its length (docs/usage.md, Trace replay)."""

    requests: NonNegInt | None = Field(
        default=None,
        le=10**7,
        description="The first this many trace lines only fill the store (no load, no row, "
        "no time); the measured window starts at the next line, at run time zero. "
        "Null (with no share): none.",
    )
    share: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] | None = Field(
        default=None,
        description="Instead of requests: this share of the trace file's lines (0 to below "
        "1, rounded down to whole lines) fills the store; the window (limit) follows.",
    )

    @model_validator(mode="after")
    def _one_amount(self) -> WarmConfig:
        if self.share is not None and self.requests is not None:
            raise ValueError("give warm.requests or warm.share, not both")
        return self

    def lines(self, trace_lines: int) -> int:
        """The lines that warm the store, of a trace of ``trace_lines`` lines in all."""
        if self.share is None:
            return min(self.requests or 0, trace_lines)
        return math.floor(self.share * trace_lines)


class CurveArrival(FrozenModel):
    """Open loop that follows a load curve: Poisson arrivals whose rate is ``rate_rps[k]``
    during step k (each ``step_s`` long), the curve repeating after its last step — a
    day's traffic in hourly steps, say. The run starts at the first step."""

    kind: Literal["curve"] = "curve"
    rate_rps: tuple[Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)], ...] = Field(
        ...,
        min_length=1,
        max_length=100_000,
        description="Mean arrivals per second in each step of the curve, in order.",
    )
    step_s: PosFloat = Field(3600.0, le=1e7, description="Length of each step of the curve.")

    @property
    def period_s(self) -> float:
        return self.step_s * len(self.rate_rps)

    @property
    def mean_rps(self) -> float:
        return sum(self.rate_rps) / len(self.rate_rps)


class PrefixCacheConfig(FrozenModel):
    """What the store remembers of earlier requests' blocks during trace replay.

    ``capacity_blocks`` or ``capacity_gib`` bound what it holds (the KV bytes of
    one rank of the model, all regions and groups); with neither (``null``, the
    default) the store keeps every block: the trace's ideal reuse, what a pooled
    production store of terabytes (Mooncake pools many nodes' DRAM) comes close to.
    """

    capacity_blocks: PosInt | None = Field(
        default=None,
        le=1 << 40,
        description="Trace blocks (block_tokens each) the store holds at most; null: unbounded.",
    )
    capacity_gib: PosFloat | None = Field(
        default=None,
        le=1 << 20,
        description="Store capacity in GiB (2^30 bytes), counted in whole trace blocks of the "
        "model's bytes per token (all regions and groups of one rank); null: unbounded.",
    )
    warm: WarmConfig = Field(
        default_factory=WarmConfig,
        description="Fill the store before measuring: {requests: N} replays the first N trace "
        "lines into it untimed ({share: f}: the first f of the trace's lines), so the "
        "measured window starts from a warm store as production's does (a cold store's "
        "first minutes find little).",
    )
    policy: Literal["lru", "fifo"] = Field(
        default="lru",
        description="Eviction: lru (least recently looked up or stored; a request's tail "
        "blocks go before its shared head) or fifo (oldest stored first).",
    )

    @model_validator(mode="after")
    def _one_capacity(self) -> PrefixCacheConfig:
        if self.capacity_blocks is not None and self.capacity_gib is not None:
            raise ValueError("give capacity_blocks or capacity_gib, not both")
        return self


class TraceArrival(FrozenModel):
    """Replay a Mooncake-format trace (JSON lines: timestamp ms, input_length, output_length,
    hash_ids): arrival times from the trace, tokens from the prefix the store already holds.

    A request's tokens to load are its leading blocks found in the store (``load:
    hit``) or its whole prompt (``load: prompt``), at most input_length - 1 (the last
    prompt token is always computed), rounded down to the chunk granularity. Requests
    left with nothing to load are counted, not run.
    """

    kind: Literal["trace"] = "trace"
    path: PathText = Field(
        ..., description="Trace file (JSON lines); relative to the config file's directory."
    )
    speedup: PosFloat = Field(
        1.0, le=1e6, description="Time compression: trace gaps are divided by this factor."
    )
    limit: PosInt | None = Field(
        None,
        le=10**7,
        description="Measure only this many trace requests (after cache.warm's lines).",
    )
    load: Literal["hit", "prompt"] = Field(
        "hit",
        description="What a request loads: hit, the prefix the store holds (what a "
        "prefix-caching connector loads; the hit ratio follows the trace and the cache); "
        "prompt, its whole prompt but the last token, whatever is stored (an upper bound: "
        "a connector that loads every block it is given).",
    )
    block_tokens: PosInt = Field(
        512, le=1 << 20, description="Tokens per trace hash id (Mooncake traces use 512)."
    )
    cache: PrefixCacheConfig = Field(
        default_factory=PrefixCacheConfig,
        description="Store memory: capacity and eviction policy.",
    )

    @field_validator("path")
    @classmethod
    def _path_exists(cls, v: str, info: ValidationInfo) -> str:
        return _existing_file(v, info, "trace file")


ArrivalConfig = Annotated[
    PoissonArrival
    | ClosedLoopArrival
    | ConstantArrival
    | OnOffArrival
    | CurveArrival
    | TraceArrival,
    Field(discriminator="kind"),
]


class FixedTokens(FrozenModel):
    dist: Literal["fixed"] = "fixed"
    value: PosInt = Field(default=131072, le=1 << 26, description="Tokens to load per request.")


class UniformTokens(FrozenModel):
    dist: Literal["uniform"] = "uniform"
    low: PosInt = Field(..., le=1 << 26, description="Smallest token count (inclusive).")
    high: PosInt = Field(..., le=1 << 26, description="Largest token count (inclusive).")

    @model_validator(mode="after")
    def _ordered(self) -> UniformTokens:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) must not exceed high ({self.high})")
        return self


class LognormalTokens(FrozenModel):
    dist: Literal["lognormal"] = "lognormal"
    median: PosInt = Field(..., le=1 << 26, description="Median token count.")
    sigma: PosFloat = Field(1.0, le=10, description="Shape: standard deviation of log(tokens).")
    max: PosInt = Field(1 << 20, le=1 << 26, description="Draws above this are clipped.")


class EmpiricalTokens(FrozenModel):
    """Prompt lengths resampled (with replacement) from the input_length of a trace's requests."""

    dist: Literal["empirical"] = "empirical"
    path: PathText = Field(
        ..., description="Trace file (JSON lines); relative to the config file's directory."
    )
    max: PosInt = Field(1 << 20, le=1 << 26, description="Draws above this are clipped.")

    @field_validator("path")
    @classmethod
    def _path_exists(cls, v: str, info: ValidationInfo) -> str:
        return _existing_file(v, info, "trace file")


TokensConfig = Annotated[
    FixedTokens | UniformTokens | LognormalTokens | EmpiricalTokens,
    Field(discriminator="dist"),
]


class WorkloadConfig(FrozenModel):
    """Token counts are rounded down to a multiple of the chunk granularity (at least one)."""

    requests: PosInt = Field(
        40,
        le=10**7,
        description="Load requests per experiment point (with a trace: arrival.limit instead).",
    )
    arrival: ArrivalConfig = Field(
        default_factory=PoissonArrival,
        description="Arrival process (kind: poisson | constant | onoff | curve | closed | "
        "trace); "
        "without kind, poisson.",
    )
    tokens: TokensConfig = Field(
        default_factory=FixedTokens,
        description="Tokens to load per request (dist: fixed | uniform | lognormal | "
        "empirical); a plain integer means fixed. A trace sets them itself.",
    )

    @model_validator(mode="before")
    @classmethod
    def _plain_int_is_fixed(cls, data):
        if not isinstance(data, dict):
            return data
        tokens = data.get("tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            data = {**data, "tokens": {"dist": "fixed", "value": tokens}}
        elif isinstance(tokens, (str, float)):
            raise ValueError(
                f"tokens: {tokens!r} is not a token count; write a whole number of tokens "
                "(e.g. 65536 for 64K) or a distribution such as "
                "{dist: uniform, low: 1024, high: 65536}"
            )
        # The documented defaults apply when a section gives fields but no kind/dist,
        # e.g. `arrival: {rate_rps: 30}` or a sweep of workload.arrival.rate_rps.
        arrival = data.get("arrival")
        if isinstance(arrival, dict) and "kind" not in arrival:
            data = {**data, "arrival": {"kind": "poisson", **arrival}}
        tokens = data.get("tokens")
        if isinstance(tokens, dict) and "dist" not in tokens:
            data = {**data, "tokens": {"dist": "fixed", **tokens}}
        return data

    @model_validator(mode="after")
    def _trace_sets_requests_and_tokens(self) -> WorkloadConfig:
        if isinstance(self.arrival, TraceArrival):
            defaults = WorkloadConfig.model_construct()
            for key, instead in (("requests", "arrival.limit"), ("tokens", "the trace")):
                if getattr(self, key) != getattr(defaults, key):
                    raise ValueError(
                        f"{key} is set by {instead} when arrival.kind is trace; remove {key}"
                    )
        return self

    def data_files(self) -> list[tuple[str, str]]:
        """(field, path) of every trace file this workload reads, for checks before a run."""
        out = []
        if isinstance(self.arrival, TraceArrival):
            out.append(("workload.arrival.path", self.arrival.path))
        if isinstance(self.tokens, EmpiricalTokens):
            out.append(("workload.tokens.path", self.tokens.path))
        return out
