"""The one way kvsim reads a number back from a CSV cell or a JSON value.

Result tables hold numbers as text, empty cells for "no value", and sometimes a
word (a status, an error). Every reader turns a cell into a float here, so that
"1e3", "", "nan", None and "failed" mean the same thing everywhere.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["as_float", "parse_number"]


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
