"""Strict scalar types shared by every config section.

YAML turns ``yes`` into ``True`` and ``1e3`` into a string; strict types make such
slips errors instead of silent conversions.
"""

from __future__ import annotations

import os
import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict

__all__ = [
    "FrozenModel",
    "NonNegFloat",
    "NonNegInt",
    "PathText",
    "PosFloat",
    "PosInt",
    "Prob",
]

# No upper bound here: each field states its own (``Field(le=...)``). A cap on the
# type would be merged after the field's and silently replace it; a test checks
# that every numeric field has a bound of its own.
PosInt = Annotated[int, Strict(), Field(gt=0)]
NonNegInt = Annotated[int, Strict(), Field(ge=0)]
PosFloat = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Prob = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]


#: Longest path (bytes) and path component Linux accepts (PATH_MAX, NAME_MAX).
_PATH_MAX, _NAME_MAX = 4096, 255
_VARIABLE = re.compile(r"\$(\{|[A-Za-z_])")


def _usable_path(value: str) -> str:
    """A path the OS can be asked about: no NUL byte, not longer than Linux allows, no
    ``$VAR`` (a config means the same in every shell: kvsim expands ``~`` only)."""
    if "\x00" in value:
        raise ValueError("a path may not contain a NUL byte")
    if len(os.fsencode(value)) > _PATH_MAX or any(
        len(os.fsencode(part)) > _NAME_MAX for part in value.split("/")
    ):
        raise ValueError(
            f"path too long (at most {_PATH_MAX} bytes, {_NAME_MAX} per directory name)"
        )
    if value.startswith("~") and os.path.expanduser(value) == value:
        raise ValueError(
            f"{value.split('/', 1)[0]} names no user here: a leading ~ or ~user is "
            "expanded, an unknown one would make a directory of that name"
        )
    if _VARIABLE.search(value):
        raise ValueError(
            "kvsim does not expand environment variables ($NAME) in a config; write the "
            "path out (a leading ~ is expanded)"
        )
    return value


#: A file or directory path given in a config.
PathText = Annotated[str, AfterValidator(_usable_path)]


class FrozenModel(BaseModel):
    """Base of every config object: immutable, and unknown keys are errors.

    ``defer_build``: a model's validator and serializer are built when it first
    validates or dumps, not when its class is made; a point child that unpickles its
    config from its spec (sim.sweep.spec) never builds them (kvsim bench startup)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, defer_build=True)
