"""Variant files given by path (``--plugin FILE``) to a workflow that has no config.

A file registers variants as a config's ``plugins:`` entry does
(sim.config.plugins, docs/your-connector.md); the variants exist only while the
workflow runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sim.config.plugins import plugin_error, plugin_scope, read_plugin
from sim.errors import ConfigError

__all__ = ["command_plugins"]


@contextmanager
def command_plugins(paths: Sequence[str | Path]) -> Iterator[list[dict[str, str]]]:
    """The ``--plugin`` files' variants registered for the block (commands with no config);
    yields the files as read (``{path, source}``, what a config's ``plugins:`` holds)."""
    read = []
    for path in paths:
        try:
            read.append(read_plugin(str(path), Path.cwd()))
        except ValueError as exc:  # the path said once, as for a config's plugins:
            raise ConfigError(plugin_error(path, exc)) from None
    with plugin_scope(read):
        yield read
