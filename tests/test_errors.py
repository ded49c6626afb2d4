"""One error hierarchy: every foreseen error is a KvsimError, and the CLI maps by that base."""

from __future__ import annotations

import sys
import types

import pytest

import sim.cli
import sim.errors as errors
from sim.cli import main


def test_every_error_is_a_kvsim_error_with_an_exit_code() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    assert errors.KvsimError in classes
    for cls in classes:
        assert issubclass(cls, errors.KvsimError), cls
        assert cls.exit_code in (1, 2), cls
    assert errors.ConfigError.exit_code == errors.UsageError.exit_code == 2
    assert errors.RunDirError.exit_code == errors.SpecError.exit_code == 2
    assert errors.WatchdogError.exit_code == errors.StoreError.exit_code == 1
    # Raised inside pydantic validators or caught as such by callers: still the builtin too.
    assert issubclass(errors.HFConfigError, ValueError)
    assert issubclass(errors.WatchdogError, RuntimeError)


def test_old_import_locations_name_the_same_classes() -> None:
    from sim.config import ConfigError
    from sim.config.hf_config import HFConfigError
    from sim.rundir.guard import RunDirError
    from sim.runtime.env import StallError
    from sim.runtime.pipeline import WatchdogError
    from sim.store.model import StoreError
    from sim.sweep.spec import SpecError
    from sim.workload.trace import TraceError

    assert ConfigError is errors.ConfigError and TraceError is errors.TraceError
    assert HFConfigError is errors.HFConfigError and RunDirError is errors.RunDirError
    assert WatchdogError is errors.WatchdogError and StoreError is errors.StoreError
    assert SpecError is errors.SpecError and StallError is errors.StallError
    assert issubclass(TraceError, ConfigError)


class _Odd(errors.KvsimError):
    exit_code = 7


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (_Odd("odd thing: field x"), 7),
        (errors.UsageError("--x: bad"), 2),
        (errors.RunError("r"), 1),
    ],
)
def test_the_cli_prints_one_line_and_exits_with_the_class_code(
    monkeypatch, capsys, exc: Exception, code: int
) -> None:
    def boom(args):
        raise exc

    fake = types.SimpleNamespace(add_arguments=lambda p: None, main=boom)
    monkeypatch.setitem(sys.modules, "sim.commands._fake", fake)
    monkeypatch.setitem(sim.cli.COMMANDS, "fake", ("_fake", "x"))
    assert main(["fake"]) == code
    err = capsys.readouterr().err
    assert err == f"kvsim: error: {exc}\n"


def test_a_bug_keeps_its_traceback(monkeypatch) -> None:
    def boom(args):
        raise ZeroDivisionError("a bug")

    fake = types.SimpleNamespace(add_arguments=lambda p: None, main=boom)
    monkeypatch.setitem(sys.modules, "sim.commands._fake", fake)
    monkeypatch.setitem(sim.cli.COMMANDS, "fake", ("_fake", "x"))
    with pytest.raises(ZeroDivisionError):
        main(["fake"])


def test_argument_errors_of_compare_are_usage_errors(tmp_path, capsys) -> None:
    assert main(["compare", str(tmp_path), "--bootstrap", "5"]) == 2
    assert "--bootstrap 5" in capsys.readouterr().err
    assert main(["geometry", "llama-3.1-8b", "--tp", "0"]) == 2
    assert "--tp: must be a positive integer" in capsys.readouterr().err


@pytest.mark.parametrize("inside", [True, False], ids=["with-hint", "before-hint"])
def test_ctrl_c_prints_the_hint_the_command_attached(monkeypatch, capsys, inside: bool) -> None:
    """The resume hint rides on the interrupt (sim.commands.interrupt), not on the
    Namespace: only an interrupt inside the block says it."""
    from sim.commands.interrupt import hint_on_interrupt

    def interrupted(args):
        if inside:
            with hint_on_interrupt("finished point runs are kept in X"):
                raise KeyboardInterrupt
        raise KeyboardInterrupt

    fake = types.SimpleNamespace(add_arguments=lambda p: None, main=interrupted)
    monkeypatch.setitem(sys.modules, "sim.commands._fake", fake)
    monkeypatch.setitem(sim.cli.COMMANDS, "fake", ("_fake", "x"))
    # the CLI ignores SIGINT and SIGTERM once interrupted: not in this test process
    monkeypatch.setattr(sim.cli.signal, "signal", lambda *_args: None)
    assert main(["fake"]) == 130
    said = "kvsim: interrupted; finished point runs are kept in X\n" if inside else None
    assert capsys.readouterr().err == (said or "kvsim: interrupted\n")
