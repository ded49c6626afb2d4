"""The one way kvsim reads a number back from a CSV cell or a JSON value.

Result tables hold numbers as text, empty cells for "no value", and sometimes a
word (a status, an error). Every reader turns a cell into a float here, so that
"1e3", "", "nan", None and "failed" mean the same thing everywhere.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sim.columns import holds_whole_numbers

__all__ = ["as_float", "parse_number", "typed_row"]


def parse_number(v: Any) -> float | None:
    """The cell as a float (booleans count 0/1), or None when it is not a number."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if v is None:
        return None
    try:
        return float(str(v))
    except (ValueError, OverflowError):
        return None


def as_float(v: Any) -> float:
    """The cell as a float; NaN when it is empty or not a number."""
    n = parse_number(v)
    return math.nan if n is None else n


def typed_row(row: dict[str, str]) -> dict[str, Any]:
    """A CSV row with its cells as Python values: a whole number in a column of whole
    numbers (sim.columns) as int, another number as float (a latency written ``38`` too),
    an empty cell as None, anything else (a variant, a status) as the text.

    What the Python API hands out (``Run.points``): ``'38.091'`` is a figure to compute
    with, not a string to convert first.
    """
    out: dict[str, Any] = {}
    for key, cell in row.items():
        if cell is None or cell == "":
            out[key] = None
            continue
        if _INTEGER.fullmatch(cell) and holds_whole_numbers(key):
            out[key] = int(cell)
            continue
        number = parse_number(cell) if _NUMBER.fullmatch(cell) else None
        out[key] = cell if number is None else number
    return out


_INTEGER = re.compile(r"-?[0-9]+")
#: What the tables write for a float: 38.091, 1e-05, nan, inf (not "1_000" or " 12 ").
_NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?|nan|inf)")
