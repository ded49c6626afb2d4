"""Read a config file as YAML without trusting it: bounded bytes, depth, size and types.

A config is a few hundred bytes of plain mappings. Anything else is refused with
one line naming the file and the line, before it can cost memory, time or a
traceback:

* only a regular file is read, at most ``MAX_FILE_BYTES`` of it (``sim.files.read``:
  a FIFO would block, ``/dev/zero`` never ends);
* nesting is checked on the event stream (PyYAML's parser is iterative, its
  composer and constructor are recursive), so 10,000 ``[`` cannot recurse;
* every node is one of the plain YAML types: no tags (``!!python/...``, ``!foo``,
  ``!!binary``), no complex keys (``? [a, b]``), no duplicate keys (the line of
  both is named), no integer longer than ``MAX_INT_DIGITS`` digits, no recursive
  alias, and aliases may not expand past ``MAX_NODES`` nodes or ``MAX_DEPTH`` levels;
* a number means what YAML 1.2 says or is refused: PyYAML reads YAML 1.1, where
  ``1:30`` is 90 (base 60), ``010`` is 8 (octal) and ``0b11`` is 3, silently;
  each is an error saying what to write instead. And where YAML 1.1 wants a dot and
  a signed exponent, ``1e9``, ``1.5e9`` and ``2E-3`` are numbers, as in YAML 1.2
  (PyYAML read them as text, which a number field then refused as "not a number").

A ``--set KEY=VALUE`` value is read by :func:`read_yaml_value` under the same
bounds: an alias bomb on the command line is refused like one in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sim.errors import ConfigError
from sim.files.read import read_bounded

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "read_yaml",
    "read_yaml_value",
]

MAX_FILE_BYTES = 4 << 20
MAX_DEPTH = 32
MAX_NODES = 100_000
MAX_INT_DIGITS = 24

_PLAIN = {
    f"tag:yaml.org,2002:{t}"
    for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "merge")
}
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
#: Plain scalars that YAML 1.1 (PyYAML) reads as numbers where YAML 1.2 does not:
#: base 60 (``1:30`` -> 90), a leading zero (``010`` -> 8, octal), binary (``0b11``).
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")
_LEADING_ZERO = re.compile(r"[-+]?0[0-9_]+")
_BINARY = re.compile(r"[-+]?0b[0-1_]+")
#: An underscore YAML 1.1 drops (``1_0`` -> 10); digits grouped by thousands are kept.
_UNDERSCORE = re.compile(r"[-+]?[0-9][0-9_]*_[0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?")
_THOUSANDS = re.compile(r"[-+]?[0-9]{1,3}(_[0-9]{3})+(\.[0-9]*)?([eE][-+]?[0-9]+)?")
#: YAML 1.2's octal (``0o7``), which YAML 1.1 reads as text.
_OCTAL_12 = re.compile(r"[-+]?0o[0-7_]+")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, reading the exponent forms YAML 1.2 calls floats as floats."""


_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _check_number(at: str, text: str) -> None:
    """Refuse the YAML 1.1 readings of a number that YAML 1.2 (and any reader) would
    take differently, with what to write instead."""
    if _SEXAGESIMAL.fullmatch(text):
        raise ConfigError(
            f"{at}{text} is a base-60 number in YAML 1.1 (1:30 is 90); write the number "
            f"itself, or quote '{text}' for text"
        )
    if _LEADING_ZERO.fullmatch(text):
        raise ConfigError(
            f"{at}{text} has a leading zero, which YAML 1.1 reads as octal (010 is 8); "
            f"write it without the zero, or quote '{text}' for text"
        )
    if _BINARY.fullmatch(text):
        raise ConfigError(
            f"{at}{text} is a binary number in YAML 1.1 only; write it in decimal, or "
            f"quote '{text}' for text"
        )
    if _UNDERSCORE.fullmatch(text) and not _THOUSANDS.fullmatch(text):
        raise ConfigError(
            f"{at}{text}: YAML 1.1 drops the underscore (reads {text.replace('_', '')}); "
            f"write {text.replace('_', '')}, group digits by thousands (10_000), or quote "
            f"'{text}' for text"
        )


def _check_text(at: str, text: str) -> None:
    """A plain scalar that YAML 1.2 reads as a number and YAML 1.1 (PyYAML) as text."""
    if _OCTAL_12.fullmatch(text):
        digits = text.replace("_", "").replace("0o", "", 1)
        try:
            decimal = str(int(digits, 8))
        except ValueError:
            decimal = "the number in decimal"
        raise ConfigError(
            f"{at}{text} is an octal number in YAML 1.2 but text in YAML 1.1, which kvsim "
            f"reads; write it in decimal ({decimal}), or quote '{text}' for text"
        )


@dataclass(frozen=True)
class _Text:
    """Where YAML text came from, as messages name it: a file (with the line) or a
    ``--set`` value (one line: its name alone)."""

    name: str
    lines: bool

    def at(self, line: int) -> str:
        return f"{self.name}:{line}" if self.lines else self.name

    def __str__(self) -> str:
        return self.name


def _read_bytes(path: Path) -> bytes:
    return read_bounded(path, what="config (YAML file)", limit=MAX_FILE_BYTES, error=ConfigError)


def _yaml_error(path: _Text, exc: yaml.YAMLError) -> ConfigError:
    mark = getattr(exc, "problem_mark", None)
    where = path.at(mark.line + 1) if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["syntax error"])[0]
    return ConfigError(f"{where}: not valid YAML ({problem})")


def _check_events(path: _Text, text: str) -> None:
    """Depth and event count on the (iterative) event stream, before composing."""
    depth = 0
    for events, ev in enumerate(yaml.parse(text, Loader=_Loader), 1):
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    f"{path.at(ev.start_mark.line + 1)}: nested more than {MAX_DEPTH} levels "
                    "deep; a config is a few levels of mappings"
                )
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if events > MAX_NODES:
            raise ConfigError(f"{path}: more than {MAX_NODES} YAML nodes; configs are small")


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _check_node(path: _Text, node: yaml.Node, field: str) -> None:
    at = f"{path.at(_line(node))}: " + (f"{field}: " if field else "")
    if node.tag not in _PLAIN:
        raise ConfigError(
            f"{at}YAML tag {node.tag!r} is not allowed; "
            "a config holds plain values, lists and mappings only"
        )
    if isinstance(node, yaml.ScalarNode) and node.tag in (_INT, _FLOAT) and node.style is None:
        _check_number(at, str(node.value))
    if isinstance(node, yaml.ScalarNode) and node.style is None and node.tag.endswith(":str"):
        _check_text(at, str(node.value))
    if node.tag == _INT and isinstance(node, yaml.ScalarNode):
        digits = len(str(node.value).lstrip("+-").replace("_", ""))
        if digits > MAX_INT_DIGITS:
            raise ConfigError(
                f"{at}an integer of {digits} digits is out of range (at most {MAX_INT_DIGITS})"
            )
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, _value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise ConfigError(
                    f"{path.at(_line(key))}: a key must be a plain word, not a list or mapping "
                    "(complex key)"
                )
            ident = (key.tag, key.value)
            if ident in seen and key.tag != "tag:yaml.org,2002:merge":
                raise ConfigError(
                    f"{path.at(_line(key))}: duplicate key {key.value!r} (first at line "
                    f"{seen[ident]}); each key may appear once"
                )
            seen[ident] = _line(key)


def _walk(path: _Text, root: yaml.Node) -> None:
    """Check every node once; size and depth as if aliases were expanded (iteratively)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    fields: dict[int, str] = {id(root): ""}  # dotted path of each node, for messages
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        if children_done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > MAX_NODES:
                raise ConfigError(
                    f"{path}: expands to more than {MAX_NODES} YAML nodes (alias bomb?); "
                    "configs are small mappings"
                )
            if depth[key] > MAX_DEPTH + 1:
                raise ConfigError(
                    f"{path.at(_line(node))}: nested more than {MAX_DEPTH} levels deep "
                    "(through aliases); a config is a few levels of mappings"
                )
            continue
        if key in size:
            continue
        if key in on_path:
            raise ConfigError(f"{path.at(_line(node))}: an alias refers to itself (recursive)")
        here = fields.get(key, "")
        _check_node(path, node, here)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                name = f"{here}.{k.value}" if here else str(k.value)
                fields.setdefault(id(v), name if isinstance(k, yaml.ScalarNode) else here)
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                fields.setdefault(id(v), f"{here}[{i}]")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)


def _load(path: _Text, text: str) -> tuple[Any, yaml.Node | None]:
    """Every check above, then the data: (data, node tree); node None for empty text."""
    try:
        _check_events(path, text)
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    if node is None:
        return None, None
    _walk(path, node)
    try:
        # From the tree composed above, not the text again: scanning is PyYAML's slow part
        # (pure Python, a character at a time: a 3 MB value took ~10 s a pass).
        data = _Loader("").construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise ConfigError(f"{path}: a value cannot be read ({type(exc).__name__})") from None
    return data, node


def read_yaml(path: Path) -> tuple[Any, yaml.Node]:
    """(data, node tree) of the config at ``path``; ConfigError (one line) if unusable."""
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    data, node = _load(_Text(str(path), True), text)
    if node is None:
        raise ConfigError(f"{path}: empty file; expected a mapping with at least 'name'")
    return data, node


def read_yaml_value(text: str, where: str) -> Any:
    """The value of ``--set KEY=TEXT`` read under the same bounds as a config file
    (``where`` names it in messages: ``--set KEY``); "" for empty text."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_FILE_BYTES:
        raise ConfigError(f"{where}: more than {MAX_FILE_BYTES >> 20} MiB is too large a value")
    data, node = _load(_Text(where, False), text)
    return "" if node is None else data
