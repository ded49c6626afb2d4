"""Workload: how many load requests arrive, when, and how many tokens each loads."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .types import FrozenModel, NonNegFloat, PosFloat, PosInt

__all__ = [
    "ArrivalConfig",
    "ClosedLoopArrival",
    "FixedTokens",
    "LognormalTokens",
    "PoissonArrival",
    "TokensConfig",
    "UniformTokens",
    "WorkloadConfig",
]


class PoissonArrival(FrozenModel):
    """Open loop: exponential inter-arrival times."""

    kind: Literal["poisson"] = "poisson"
    rate_rps: PosFloat = Field(10.0, description="Mean arrivals per second.")


class ClosedLoopArrival(FrozenModel):
    """Closed loop: each client sends its next request when the previous one is done."""

    kind: Literal["closed"] = "closed"
    clients: PosInt = Field(4, le=4096, description="Concurrent clients (requests in flight).")
    think_ms: NonNegFloat = Field(0.0, description="Pause between a reply and the next request.")


ArrivalConfig = Annotated[
    PoissonArrival | ClosedLoopArrival,
    Field(discriminator="kind"),
]


class FixedTokens(FrozenModel):
    dist: Literal["fixed"] = "fixed"
    value: PosInt = Field(131072, le=1 << 26, description="Tokens to load per request.")


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


TokensConfig = Annotated[
    FixedTokens | UniformTokens | LognormalTokens,
    Field(discriminator="dist"),
]


class WorkloadConfig(FrozenModel):
    """Token counts are rounded down to a multiple of the chunk granularity (at least one)."""

    requests: PosInt = Field(40, le=10**7, description="Load requests per experiment point.")
    arrival: ArrivalConfig = Field(
        default_factory=PoissonArrival, description="Arrival process (kind: poisson | closed)."
    )
    tokens: TokensConfig = Field(
        default_factory=FixedTokens,
        description="Tokens to load per request (dist: fixed | uniform | lognormal); a plain "
        "integer means fixed.",
    )

    @model_validator(mode="before")
    @classmethod
    def _plain_int_is_fixed(cls, data):
        if (
            isinstance(data, dict)
            and isinstance(data.get("tokens"), int)
            and not isinstance(data.get("tokens"), bool)
        ):
            data = {**data, "tokens": {"dist": "fixed", "value": data["tokens"]}}
        return data
