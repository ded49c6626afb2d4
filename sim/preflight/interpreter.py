"""Can each point run under the interpreter its config names? Asked once, refused early.

A config's ``interpreter:`` (sim.config.interpreter) names a python and a GIL switch.
Before any point runs, each distinct python is found and asked, in one tiny
subprocess (sim.process.interpreter.probe), for its version, build and packages. Then
a point is refused, with one line naming the file, the field and what is allowed:

* ``gil: off`` on a python that is not free-threaded (it has a GIL it cannot drop);
* a variant, index variant or store whose package that python lacks (numba has no
  free-threaded 3.13 wheel, torch no CPU one): never a failure mid-sweep;
* kvsim's own needs (pydantic, PyYAML, SimPy, numpy) missing there;
* the py-spy GIL audit (``gil.audit``) where the GIL is off: nobody holds it. The
  sentinel probe still runs (a thread's lateness means something without a GIL); its
  GIL-busy columns are empty there (sim.instruments.threadtime).
"""

from __future__ import annotations

from connectors import registry
from sim.config.experiment import Point
from sim.config.loader import ParsedConfig
from sim.errors import ConfigError
from sim.process.interpreter import (
    KVSIM_NEEDS,
    InterpreterError,
    Probe,
    probe,
    resolve_python,
)

__all__ = ["check_interpreters", "point_needs"]


def point_needs(point: Point) -> list[tuple[str, str]]:
    """(package, what needs it) for ``point``: its variant's, its engine's index
    variant's when the engine runs, the real store's."""
    cfg = point.config
    out = [(pkg, "kvsim") for pkg in KVSIM_NEEDS]
    variant = cfg.connector.variant
    try:
        cls = registry.get_address_variant(variant)
    except KeyError:  # a plug-in's variant: its file says nothing of its packages
        cls = None
    out += [(pkg, f"variant {variant}") for pkg in getattr(cls, "requires", ())]
    if cfg.engine.enabled:
        index = cfg.engine.index_variant
        try:
            icls = registry.get_index_variant(index)
        except KeyError:
            icls = None
        out += [(pkg, f"engine.index_variant {index}") for pkg in getattr(icls, "requires", ())]
    if cfg.store.kind == "mooncake":
        out.append(("mooncake", "store.kind mooncake"))
    return out


def _where(parsed: ParsedConfig, point: Point, field: str) -> str:
    swept = f" (point {point.label})" if point.axes and len(parsed.points) > 1 else ""
    return f"{parsed.at(field)}: {field}{swept}"


def _probe_for(parsed: ParsedConfig, point: Point, seen: dict[str, Probe]) -> Probe:
    name = point.config.interpreter.python
    if name in seen:
        return seen[name]
    try:
        found = probe(resolve_python(name))
    except InterpreterError as exc:
        raise ConfigError(f"{parsed.at('interpreter.python')}: {exc}") from None
    seen[name] = found
    return found


def check_interpreters(parsed: ParsedConfig) -> None:
    """Refuse the first point its interpreter cannot run (module docstring: which)."""
    seen: dict[str, Probe] = {}
    for point in parsed.points:
        cfg = point.config
        if cfg.mode != "real" or cfg.interpreter.is_default:
            continue
        found = _probe_for(parsed, point, seen)
        gil = cfg.interpreter.gil
        if gil == "off" and not found.free_threaded:
            raise ConfigError(
                f"{_where(parsed, point, 'interpreter.gil')}: off needs a free-threaded "
                f"python; {found.describe()} has a GIL (allowed there: on, default; "
                "`make freethreaded` sets one up)"
            )
        missing = [(pkg, who) for pkg, who in point_needs(point) if found.missing((pkg,))]
        if missing:
            pkg, who = missing[0]
            raise ConfigError(
                f"{_where(parsed, point, 'interpreter.python')}: {who} needs package {pkg}, "
                f"which {found.describe()} lacks"
            )
        if not found.kvsim:
            raise ConfigError(
                f"{parsed.at('interpreter.python')}: {found.describe()} cannot import kvsim"
            )
        if found.free_threaded and gil != "on" and cfg.gil.audit != "off":
            raise ConfigError(
                f"{_where(parsed, point, 'gil.audit')}: samples who holds the GIL, and "
                f"{found.describe()} runs with it off (interpreter.gil: {gil}); "
                "allowed there: gil.audit: off, or interpreter.gil: on"
            )
