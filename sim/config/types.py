"""Strict scalar types shared by every config section.

YAML turns ``yes`` into ``True`` and ``1e3`` into a string; strict types make such
slips errors instead of silent conversions.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

__all__ = ["FrozenModel", "NonNegFloat", "NonNegInt", "PosFloat", "PosInt", "Prob"]

# No upper bound here: each field states its own (``Field(le=...)``). A cap on the
# type would be merged after the field's and silently replace it; a test checks
# that every numeric field has a bound of its own.
PosInt = Annotated[int, Strict(), Field(gt=0)]
NonNegInt = Annotated[int, Strict(), Field(ge=0)]
PosFloat = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Prob = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]


class FrozenModel(BaseModel):
    """Base of every config object: immutable, and unknown keys are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
