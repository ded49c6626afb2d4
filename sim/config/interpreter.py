"""Which Python the point children run under, and whether its GIL is on (``interpreter:``).

The GIL's own cost is measured by running the same points on one free-threaded binary
with the GIL on and off (configs/gil_on_off.yaml): the only difference between the two
sides is then the GIL, not the interpreter (docs/columns.md §GIL off). Whether the
interpreter exists, is free-threaded and has each point's packages is checked before
any point runs (sim.preflight.interpreter), because that needs a process of it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from sim.config.types import FrozenModel, PathText

__all__ = ["FREETHREADED", "GilSwitch", "InterpreterConfig"]

#: ``python: freethreaded``: the interpreter `make freethreaded` set up (or $KVSIM_FT_PYTHON).
FREETHREADED = "freethreaded"

GilSwitch = Literal["default", "on", "off"]


class InterpreterConfig(FrozenModel):
    """The point children's interpreter; the defaults keep kvsim's own."""

    python: PathText = Field(
        "",
        description="The python the point children run under: a path, a name on PATH, or "
        "'freethreaded' (the one `make freethreaded` set up, or $KVSIM_FT_PYTHON). Empty: "
        "the interpreter kvsim runs in.",
    )
    gil: GilSwitch = Field(
        "default",
        description="on: PYTHON_GIL=1, off: PYTHON_GIL=0 in the point children (off needs a "
        "free-threaded build); default: neither (a free-threaded build starts with the GIL "
        "off, and an extension module may turn it on). Each point records what "
        "sys._is_gil_enabled() said in its child.",
    )

    @field_validator("gil", mode="before")
    @classmethod
    def _yaml_on_off(cls, v: Any) -> Any:
        """YAML 1.1 reads a bare ``on``/``off`` as a boolean: take it as written."""
        if v is True:
            return "on"
        if v is False:
            return "off"
        return v

    @property
    def is_default(self) -> bool:
        """Neither another python nor a GIL switch: the children run as they always did."""
        return not self.python and self.gil == "default"
