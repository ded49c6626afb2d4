"""The console every command prints its tables to: whole lines when stdout is not a terminal.

rich sizes output to the terminal, and to 80 columns when there is none: a table piped
into ``cat``, a file or a CI log lost its cells to ``…`` (``per_compo…``). A terminal
keeps its own width (the tables are built to fit 100 columns); a pipe or file gets a
width no line reaches, so every table is printed at its natural width and every
sentence on one line, as ``grep`` and ``diff`` want. rich also drops colour there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["PIPE_WIDTH", "TABLE_WIDTH", "output_console"]

#: Columns given to output that goes to a pipe or a file: wider than any line kvsim prints.
PIPE_WIDTH = 10_000
#: The width every table kvsim prints is built to fit (tests/test_piped_output.py checks).
TABLE_WIDTH = 100


def output_console() -> Console:
    """A rich console on stdout: the terminal's width, or :data:`PIPE_WIDTH` when piped."""
    from rich.console import Console  # rich loads only for commands that print tables

    console = Console()
    if console.is_terminal:
        return console
    # Tables are laid out in TABLE_WIDTH columns, as in a 100-column terminal (headers wrap,
    # no cell is cut); text is never wrapped (soft_wrap), so each sentence stays one line.
    return Console(width=TABLE_WIDTH, soft_wrap=True)
