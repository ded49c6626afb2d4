"""A config's ``plugins:``: the user's variant files, read once, carried as text.

``plugins: [my_variant.py]`` (paths relative to the config file) or ``--plugin FILE``
(relative to the working directory) name Python files that register variants
(docs/your-connector.md). The loader reads each file when the config is loaded and
the config keeps its text (:class:`PluginSource`), so the text is part of the
config hash (a resume after an edit is refused, naming the file) and travels in
each point's spec to its child process or Ray host: nothing re-reads the file
later, and no shared file system is needed.

Variants are registered only inside :func:`plugin_scope`, so none outlives the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field

from sim.config.types import FrozenModel
from sim.errors import ConfigError
from sim.files.read import read_bounded

__all__ = [
    "MAX_PLUGIN_BYTES",
    "PluginSource",
    "command_plugins",
    "plugin_codes",
    "plugin_error",
    "plugin_scope",
    "read_plugin",
]

#: A variant is a small module; a bigger file is more likely a mistake (a data file).
MAX_PLUGIN_BYTES = 1 << 20


class PluginSource(FrozenModel):
    """One plug-in file as the loaded config holds it. In YAML you write only its path
    (``plugins: [my_variant.py]``); kvsim reads the file into these two fields."""

    path: str = Field(
        ...,
        max_length=4096,
        description="The file, absolute (resolved against the config's directory).",
    )
    source: str = Field(
        ...,
        max_length=MAX_PLUGIN_BYTES,
        description="The file's text when the config was loaded: what runs, what the "
        "config hash covers.",
    )


def read_plugin(entry: Any, base: Path) -> dict[str, str]:
    """``{path, source}`` for a ``plugins:`` entry (a path, relative to ``base``);
    ValueError saying what is wrong. An entry already read (a mapping, as a spec
    carries it) is returned as it is."""
    if isinstance(entry, dict):
        return entry
    if not isinstance(entry, str) or not entry:
        raise ValueError(f"a plug-in is a path to a .py file (got {entry!r})")
    path = Path(entry).expanduser()
    path = (path if path.is_absolute() else base / path).absolute()
    if path.suffix != ".py":
        raise ValueError(f"{path}: a plug-in is a Python file ending in .py")
    data = read_bounded(path, what="plug-in", limit=MAX_PLUGIN_BYTES, error=ValueError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: the plug-in is not UTF-8 text") from None
    return {"path": str(path), "source": text}


def plugin_error(entry: str | Path, exc: Exception) -> str:
    """``--plugin ENTRY: what is wrong``, the path said once (read_plugin's message
    starts with the resolved path: ``plug-in x.py: /abs/x.py: …`` said it twice)."""
    text = str(exc)
    head, sep, rest = text.partition(": ")
    if sep and Path(head).name == Path(str(entry)).name:
        text = rest
    return f"--plugin {entry}: {text}"


def plugin_codes(sources: Sequence[PluginSource | dict[str, Any]]) -> list[Any]:
    """The loader's view (``connectors.plugin_file.PluginCode``) of config entries."""
    from connectors.plugin_file import PluginCode  # numpy (token_index): only with plug-ins

    out = []
    for s in sources:
        path, text = (s.path, s.source) if isinstance(s, PluginSource) else (s["path"], s["source"])
        out.append(PluginCode(str(path), str(text)))
    return out


@contextmanager
def plugin_scope(sources: Sequence[PluginSource | dict[str, Any]]) -> Iterator[list[type]]:
    """The plug-ins' variants registered inside the block (none outside it); a broken
    file is a ConfigError whose first line names it."""
    from connectors.plugin_file import PluginError, plugins_loaded  # numpy: only if used

    with ExitStack() as stack:
        try:
            loaded = stack.enter_context(plugins_loaded(plugin_codes(sources)))
        except PluginError as exc:
            raise ConfigError(str(exc)) from None
        yield loaded


@contextmanager
def command_plugins(paths: Sequence[str | Path]) -> Iterator[list[dict[str, str]]]:
    """The ``--plugin`` files of a workflow that has no config (``kvsim check``,
    ``variants``, ``bench``, ``calibrate``), their variants registered for the block as a
    config's ``plugins:`` entry registers them; yields the files as read (``{path,
    source}``, what a config's ``plugins:`` holds)."""
    read = []
    for path in paths:
        try:
            read.append(read_plugin(str(path), Path.cwd()))
        except ValueError as exc:  # the path said once, as for a config's plugins:
            raise ConfigError(plugin_error(path, exc)) from None
    with plugin_scope(read):
        yield read
