"""The quick check ``kvsim run`` and ``kvsim bench`` make before measuring a plug-in.

A variant from a user's file (connectors.plugin_file) is run through the corpus of
``kvsim check`` before anything is measured: timing a variant that computes wrong
addresses would report a speed-up of nothing. Built-in variants are checked by
the test suite and are not re-checked here.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from connectors import registry
from connectors.plugin_file import is_plugin
from sim.conformance.check import check_variant
from sim.conformance.corpus import Case, run_cases
from sim.conformance.index_check import check_index_variant
from sim.errors import ConfigError

__all__ = ["QUICK_THREADS", "refuse_wrong_plugin_points", "refuse_wrong_plugins"]

#: Threads of the quick check (the whole corpus, then again from this many at once).
QUICK_THREADS = 2


def _where(cls: type) -> str:
    module = sys.modules.get(cls.__module__)
    return str(getattr(module, "__file__", "") or cls.__module__)


def _with(options: dict[str, Any]) -> str:
    """`` with connector.options {unroll: 3}``: which setting failed, when there are any."""
    if not options:
        return ""
    return " with connector.options {" + ", ".join(f"{k}: {v!r}" for k, v in options.items()) + "}"


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def longest_tokens(cfg: Any) -> int:
    """The most tokens one request of the point ``cfg`` (an ExperimentConfig) can load:
    the token distribution's bound, or a trace replay's longest request."""
    tokens = cfg.workload.tokens
    dist = getattr(tokens, "dist", "fixed")
    if getattr(cfg.workload.arrival, "kind", "") == "trace":
        from sim.workload.plan import preview_workload  # a trace replay: only when one is named

        most = preview_workload(cfg).max_tokens
        return int(most) if most else int(cfg.model.block_size)
    bound = {"fixed": "value", "uniform": "high"}.get(dist, "max")
    return int(getattr(tokens, bound))


def refuse_wrong_plugins(
    address: Iterable[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], Sequence[Case]]] = (),
    index: Iterable[str] = (),
    say: Callable[[str], None] | None = _stderr,
) -> int:
    """Check each plug-in among ``address`` ((name, options) pairs, or (name, options,
    cases of the run's own geometry)) and ``index`` (names); ConfigError naming the first
    that computes a wrong result. Returns how many were checked. ``say`` hears a line
    before each check (seconds of silence otherwise; None: quiet)."""
    checked = 0
    say = say or (lambda _text: None)
    seen: set[str] = set()
    for name, options, *more in address:
        extra: Sequence[Case] = more[0] if more else ()
        cls = registry.get_address_variant(name)
        key = f"{name}:{sorted(options.items())!r}"
        if not is_plugin(cls) or not cls.computes_addresses or key in seen:
            continue
        seen.add(key)
        also = f" and on the run's geometry ({len(extra)} requests)" if extra else ""
        say(f"checking plug-in variant {name!r}{_with(options)} against kvsim check's corpus{also}")
        result = check_variant(name, options, QUICK_THREADS, extra)
        checked += 1
        if not result.ok:
            again = shlex.join(["kvsim", "check", name, "--plugin", _where(cls)])
            for key, value in options.items():  # the check must see the options that failed
                text = value if isinstance(value, str) else json.dumps(value)
                again += " " + shlex.join(["--option", f"{key}={text}"])
            failure = (result.failure or "").replace(f"({_where(cls)} line ", "(line ")
            raise ConfigError(
                f"{_where(cls)}: variant {name!r}{_with(options)} is not measured: "
                f"{failure} (`{again}` runs the whole check)"
            )
    for name in dict.fromkeys(index):
        cls = registry.get_index_variant(name)
        if not is_plugin(cls):
            continue
        say(f"checking plug-in index variant {name!r} against kvsim check's reference")
        result = check_index_variant(name)
        checked += 1
        if not result.ok:
            failure = (result.failure or "").replace(f"({_where(cls)} line ", "(line ")
            raise ConfigError(f"{_where(cls)}: index variant {name!r} is not measured: {failure}")
    return checked


def refuse_wrong_plugin_points(points: Iterable[Any], quiet: bool = False) -> int:
    """:func:`refuse_wrong_plugins` for the variants a sweep's points name (a line on
    standard error before each check unless ``quiet``)."""
    points = list(points)
    # Each variant (and options) once, with the cases of every geometry, longest request
    # and handler its points run: the corpus's requests are short, a run's are not.
    address: dict[str, tuple[str, dict[str, Any], list[Case]]] = {}
    shapes: set[str] = set()
    for p in points:
        cfg = p.config
        name, options = cfg.connector.variant, dict(cfg.connector.options)
        if not is_plugin(registry.get_address_variant(name)):
            continue
        key = f"{name}:{sorted(options.items())!r}"
        entry = address.setdefault(key, (name, options, []))
        tokens, handler = longest_tokens(cfg), cfg.connector.handler
        shape = f"{key}|{cfg.model.model_dump_json()}|{tokens}|{handler}"
        if shape not in shapes:
            shapes.add(shape)
            entry[2].extend(run_cases(cfg.model, tokens, handler))
    return refuse_wrong_plugins(
        list(address.values()),
        [p.config.engine.index_variant for p in points if p.config.engine.enabled],
        None if quiet else _stderr,
    )
