"""How kvsim opens a file it was pointed at: bounded, regular, never blocking.

See :mod:`sim.files.read` and docs/design.md §7.
"""

from sim.files.read import (
    MAX_DATA_BYTES,
    MAX_RUN_FILE_BYTES,
    excerpt,
    first_link,
    open_bounded,
    read_bounded,
    read_tail,
    shown_path,
)

__all__ = [
    "MAX_DATA_BYTES",
    "MAX_RUN_FILE_BYTES",
    "excerpt",
    "first_link",
    "open_bounded",
    "read_bounded",
    "read_tail",
    "shown_path",
]
