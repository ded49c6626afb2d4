"""The ``kvsim`` command line: one sub-command per module under ``sim.commands``.

Sub-command modules are imported only when chosen, so ``kvsim --help`` and
``kvsim validate`` start without loading torch or numba. Errors kvsim foresaw
are :class:`sim.errors.KvsimError`: printed as one line, exit code from the class.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence

from sim import __version__
from sim.commands.interrupt import interrupt_hint
from sim.errors import KvsimError
from sim.process.signals import Terminated, sigterm_unwinds

__all__ = ["COMMANDS", "main"]

#: name -> (module under sim.commands, the command's one line for ``kvsim --help`` and its
#: own ``--help``); the order is the order of ``kvsim --help``. The line is kept here, not
#: in the module, so that listing the commands imports none of them.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run an experiment and print a comparison of its points"),
    "compare": (
        "compare",
        "compare variants of a finished run, or two runs, with intervals over repeats",
    ),
    "report": (
        "report",
        "write one Markdown page for a pull request: ratios, intervals, verdicts",
    ),
    "search": (
        "search",
        "find the highest rate (or best worker count) that meets a latency or stall SLO",
    ),
    "plot": (
        "plot",
        "draw PNG figures of a finished run (latency CDF, p99 vs workers, GIL hold)",
    ),
    "validate": (
        "validate_config",
        "check a config file and list its points without running anything",
    ),
    "variants": (
        "variants",
        "list the registered connector variants, or show one variant and its options",
    ),
    "check": (
        "check",
        "check a variant's addresses (or index) against the reference on a fixed corpus",
    ),
    "bench": ("bench", "benchmark connector variants or index variants side by side"),
    "geometry": (
        "geometry",
        "show the KV-cache geometry a model preset or HF config.json resolves to",
    ),
    "calibrate": (
        "calibrate",
        "measure on this machine the costs model mode simulates (writes a calibration "
        "file); `store`: fit the store to a real run",
    ),
    "validate-model": (
        "validate_model",
        "run a config in real and model mode and report the model's error per point",
    ),
}


def _version() -> str:
    """``kvsim 0.1.0 (commit abc1234)``: the package version, and the commit when known."""
    text = f"kvsim {__version__}"
    try:
        # only --version: keeps `kvsim --help` from loading the run directory
        from sim.rundir.manifest import machine_info

        commit = machine_info().get("git_commit")
    except Exception:  # the version must print even where git or /proc is unusable
        commit = None
    return text + (f" (commit {commit[:12]})" if commit else "")


class _VersionAction(argparse.Action):
    """``--version``, computed only when asked (it runs git)."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        print(_version())
        parser.exit()


def _parser(chosen: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kvsim",
        description="Measure how GIL hold per request on the KV-cache load path turns into "
        "load latency and engine stalls.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, nargs=0, help="print the version and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, line) in COMMANDS.items():
        if name == chosen:
            mod = importlib.import_module(f"sim.commands.{module}")
            p = sub.add_parser(name, help=line, description=line)
            mod.add_arguments(p)
        else:
            sub.add_parser(name, help=line, add_help=False)
    return parser


def _short_of_memory(exc: BaseException) -> bool:
    """A library that could not load because the process may not map more memory
    (``ulimit -v``): numpy's ImportError says "failed to map segment"."""
    text = str(exc)
    return (
        isinstance(exc, MemoryError)
        or isinstance(exc.__cause__, MemoryError)
        or "failed to map segment" in text
        or "Cannot allocate memory" in text
    )


def _signal_name(code: int) -> str:
    """SIGTERM for exit code 143, SIGHUP for 129 (``Terminated`` carries 128 + signal)."""
    try:
        return signal.Signals(code - 128).name
    except ValueError:
        return f"signal {code - 128}"


def _no_memory() -> int:
    print(
        "kvsim: error: not enough memory to start (a library could not be loaded); "
        "raise the limit on virtual memory (ulimit -v)",
        file=sys.stderr,
    )
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (None: this process's own arguments, as the
    ``kvsim`` program: then threads a plug-in left running do not keep it from exiting,
    sim.process.stray_threads)."""
    code = _main(argv)
    if argv is None:
        from sim.process.stray_threads import leave  # light: os, sys, time

        return leave(code)
    return code


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    chosen = chosen if chosen in COMMANDS else None
    try:
        parser = _parser(chosen)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        mod = importlib.import_module(f"sim.commands.{COMMANDS[args.command][0]}")
    except (ImportError, MemoryError) as exc:
        if not _short_of_memory(exc):
            raise
        return _no_memory()
    try:
        with sigterm_unwinds():  # SIGTERM ends a command as Ctrl-C does, with the same words
            return int(mod.main(args) or 0)
    except KvsimError as exc:  # foreseen and explained in one line: no traceback
        print(f"kvsim: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (KeyboardInterrupt, Terminated) as exc:
        # The run is already over; a further Ctrl-C or SIGTERM must not turn the exit
        # code into a death by signal while the message is printed and Python exits.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        hint = interrupt_hint(exc)  # what the command attached (sim.commands.interrupt)
        how = f" by {_signal_name(int(exc.code))}" if isinstance(exc, Terminated) else ""
        print(f"kvsim: interrupted{how}" + (f"; {hint}" if hint else ""), file=sys.stderr)
        return int(exc.code) if isinstance(exc, Terminated) else 130
    except SystemExit as exc:  # a plug-in's sys.exit on this thread (kvsim's own passes)
        from connectors.plugin_trace import exit_message  # no numpy: only on this path

        said = exit_message(exc)
        if said is None:
            raise
        print(f"kvsim: error: {said}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as exc:  # the disk filled up, a file vanished: say which, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"kvsim: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except RecursionError:
        print("kvsim: error: input nested too deeply to process", file=sys.stderr)
        return 2
    except MemoryError:
        print("kvsim: error: out of memory; lower the config's sizes", file=sys.stderr)
        return 1
    except ImportError as exc:  # numpy or torch loaded late, under a low ulimit -v
        if not _short_of_memory(exc):
            raise
        return _no_memory()


def _broken_pipe() -> int:
    """Output piped into ``head`` that exited: stop quietly, as Unix tools do (128 + SIGPIPE).

    stdout is pointed at /dev/null so that the interpreter's final flush does not
    raise (and print) a second BrokenPipeError.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
