"""One door per command: each ``kvsim`` command turns its argparse Namespace into one
typed, immutable argument object (``XArgs.from_cli_args``, defined in ``sim.api`` beside
the workflow it is the argument of), reads nothing else of the Namespace, and calls
``sim.api``; the same workflow is then reachable from Python with the same arguments."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
from types import ModuleType

import pytest

from sim.cli import COMMANDS, _parser


def _main(source: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")


def _resolve(mod: ModuleType, node: ast.expr) -> object:
    """What a name or dotted attribute in ``mod`` refers to (None when it cannot say)."""
    if isinstance(node, ast.Name):
        return getattr(mod, node.id, None)
    if isinstance(node, ast.Attribute):
        return getattr(_resolve(mod, node.value), node.attr, None)
    return None


def _door(mod: ModuleType, source: str | None = None) -> type:
    """The class whose ``from_cli_args`` ``main`` hands its Namespace to; the Namespace
    must go nowhere else (no attribute of it read, passed to no other function)."""
    main = _main(source or inspect.getsource(mod))
    (param,) = [a.arg for a in main.args.args]
    doors = [
        n
        for n in ast.walk(main)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "from_cli_args"
        and [ast.unparse(a) for a in n.args] == [param]
    ]
    uses = [n for n in ast.walk(main) if isinstance(n, ast.Name) and n.id == param]
    assert len(doors) == 1 and len(uses) == 1, f"{mod.__name__}.main uses {param} past its door"
    cls = _resolve(mod, doors[0].func.value)
    assert isinstance(cls, type), f"{mod.__name__}: {ast.unparse(doors[0].func.value)}"
    return cls


def _minimal_argv(name: str) -> list[str]:
    """``kvsim NAME`` with each required argument given a value and nothing else."""
    sub = next(
        a for a in _parser(name)._actions if isinstance(a, argparse._SubParsersAction)
    ).choices[name]
    argv = [name]
    for action in sub._actions:
        if isinstance(action, argparse._SubParsersAction):
            if action.required:
                argv.append(next(iter(action.choices)))
        elif not action.option_strings and action.nargs not in ("?", "*"):
            argv.append("x")
        elif action.required:
            argv += [action.option_strings[0], "x"]
    return argv


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_command_turns_its_namespace_into_one_typed_object_of_sim_api(name) -> None:
    mod = importlib.import_module(f"sim.commands.{COMMANDS[name][0]}")
    cls = _door(mod)
    assert cls.__module__.startswith("sim.api."), f"{cls.__name__} is not the API's"
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    argv = _minimal_argv(name)
    ns = _parser(name).parse_args(argv)
    try:
        args = cls.from_cli_args(ns)  # type: ignore[attr-defined]
    except Exception as exc:  # a check at the door may refuse "x": it must say so in one line
        from sim.errors import KvsimError

        assert isinstance(exc, KvsimError), f"{argv}: {exc!r}"
        return
    values = [getattr(args, f.name) for f in dataclasses.fields(args)]
    nested = [v for v in values if dataclasses.is_dataclass(v)]
    for v in [*values, *(getattr(n, f.name) for n in nested for f in dataclasses.fields(n))]:
        assert not isinstance(v, (list, dict, set, argparse.Namespace)), f"{name}: {v!r} mutable"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(args, dataclasses.fields(args)[0].name, None)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_command_calls_sim_api(name) -> None:
    """Past its door a command calls a function of sim.api (the workflow), not the domain:
    no helper of the command takes the Namespace, and a call reaches sim.api."""
    mod = importlib.import_module(f"sim.commands.{COMMANDS[name][0]}")
    tree = ast.parse(inspect.getsource(mod))
    takes_namespace = [
        f.name
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef)
        and f.name != "main"
        and any("Namespace" in ast.unparse(a.annotation or ast.Constant("")) for a in f.args.args)
    ]
    assert not takes_namespace, f"{mod.__name__}: {takes_namespace} read the Namespace"
    door = _door(mod)
    called = [_resolve(mod, n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    api = [
        c
        for c in called
        if callable(c)
        and c is not door
        and (getattr(c, "__module__", None) or "").startswith("sim.api")
    ]
    assert api, f"{mod.__name__} calls nothing of sim.api"


def test_the_door_check_fails_on_a_command_that_reads_its_namespace() -> None:
    source = "def main(ns):\n    args = A.from_cli_args(ns)\n    return ns.quiet\n"
    mod = ModuleType("fake")
    mod.A = type("A", (), {})  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match="past its door"):
        _door(mod, source)
    assert _door(mod, source.replace("ns.quiet", "args")) is mod.A  # type: ignore[attr-defined]
