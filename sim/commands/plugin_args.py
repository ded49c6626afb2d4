"""``--plugin FILE``: the one way a command is given a user's variant file on the command line.

The file registers variants as a config's ``plugins:`` entry does
(sim.config.plugins, docs/your-connector.md); the variants exist only while the
command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sim.config.plugins import plugin_scope, read_plugin
from sim.errors import ConfigError

__all__ = ["add_plugin_argument", "command_plugins"]


def add_plugin_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="FILE",
        help="a Python file registering your own variants (repeatable; "
        "docs/your-connector.md), as `plugins: [FILE]` in a config",
    )


@contextmanager
def command_plugins(paths: Sequence[str]) -> Iterator[list[dict[str, str]]]:
    """The ``--plugin`` files' variants registered for the block (commands with no config);
    yields the files as read (``{path, source}``, what a config's ``plugins:`` holds)."""
    read = []
    for path in paths:
        try:
            read.append(read_plugin(path, Path.cwd()))
        except ValueError as exc:
            raise ConfigError(f"--plugin {path}: {exc}") from None
    with plugin_scope(read):
        yield read
