"""The console every command prints its tables to: whole lines when stdout is not a terminal.

rich sizes output to the terminal, and to 80 columns when there is none: a table piped
into ``cat``, a file or a CI log lost its cells to ``…`` (``per_compo…``). A terminal
keeps its own width (the tables are built to fit 100 columns); a pipe or file gets the
tables as a 100-column terminal shows them and every sentence on one line, unwrapped, as
``grep`` and ``diff`` want, without colour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import IO

    from rich.console import Console

__all__ = ["TABLE_WIDTH", "error_console", "output_console", "pipe_console"]

#: The width every table kvsim prints is built to fit (tests/e2e/test_piped_output.py checks).
TABLE_WIDTH = 100
#: The width of standard error on a pipe: wider than any line kvsim writes there. rich lays
#: a progress bar out as a grid of its natural width (nothing is padded to this), and cut
#: one at its 80-column default ("… 1080/1080 req 0:0… ETA 0:0…").
_UNCUT_WIDTH = 10_000


def output_console() -> Console:
    """A rich console on stdout: the terminal's own, or :func:`pipe_console` when piped."""
    from rich.console import Console  # rich loads only for commands that print tables

    console = Console()
    return console if console.is_terminal else pipe_console()


def pipe_console(file: IO[str] | None = None) -> Console:
    """What a pipe or file gets (``file``: None for stdout): tables laid out in
    :data:`TABLE_WIDTH` columns, as in a 100-column terminal (headers wrap, no cell is cut),
    and text never wrapped (soft_wrap), so that each sentence stays one line; no colour."""
    from rich.console import Console  # rich loads only for commands that print tables

    return Console(file=file, width=TABLE_WIDTH, soft_wrap=True, color_system=None)


def error_console() -> Console:
    """A rich console on stderr (progress bars, notes): the terminal's own; on a pipe or
    file, every line whole (bars at their natural width, text unwrapped), no colour."""
    from rich.console import Console  # rich loads only for commands that print tables

    console = Console(stderr=True)
    if console.is_terminal:
        return console
    return Console(stderr=True, width=_UNCUT_WIDTH, soft_wrap=True, color_system=None)
