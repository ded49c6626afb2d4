"""Strict scalar types shared by every config section.

YAML turns ``yes`` into ``True`` and ``1e3`` into a string; strict types make such
slips errors instead of silent conversions.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

__all__ = ["FrozenModel", "NonNegFloat", "NonNegInt", "PosFloat", "PosInt", "Prob"]

PosInt = Annotated[int, Strict(), Field(gt=0, le=10**12)]
NonNegInt = Annotated[int, Strict(), Field(ge=0, le=10**12)]
PosFloat = Annotated[float, Strict(), Field(gt=0, le=1e12, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Strict(), Field(ge=0, le=1e12, allow_inf_nan=False)]
Prob = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]


class FrozenModel(BaseModel):
    """Base of every config object: immutable, and unknown keys are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
