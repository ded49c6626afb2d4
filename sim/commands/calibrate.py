"""``kvsim calibrate [TARGET]``: measure what a model needs, on this machine.

Targets are sub-commands so that each model can add its own; the default (no
target, or ``gil``) measures what model mode's simulated GIL and threads need
(sim.calibration.measure) and writes the calibration file every model run records
in its manifest. ``store RUN_DIR`` fits the modelled store's latency and
bandwidth to the gets of a run's real-store points (sim.analysis.store_fit).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from sim.api.calibrate import CalibrateArgs, GilArgs, StoreFitArgs, calibrate, fit_store
from sim.calibration.measure import DEFAULT_CHUNKS, DEFAULT_GROUPS, DEFAULT_REGIONS
from sim.commands.common_args import add_plugin_argument

#: target name -> (help, add_arguments); the default target is "gil".
TARGETS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {}


def _ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected integers separated by commas"
        ) from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers")
    return out


def _gil_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        help="calibration file to write (default: results/calibration.json, the default of "
        "machine.calibration; with --python, results/calibration-NAME.json)",
    )
    p.add_argument(
        "--python",
        default="",
        metavar="PYTHON",
        help="measure in this python instead (a path, a name on PATH, or 'freethreaded': the "
        "one `make freethreaded` set up), with its GIL on; for model points whose "
        "interpreter.python names it (docs/model-mode.md)",
    )
    p.add_argument(
        "--variants",
        help="address variants to measure, comma-separated (default: every registered one)",
    )
    p.add_argument(
        "--handlers",
        default="per_group,per_chunk",
        help="request handlers to measure (default: per_group,per_chunk)",
    )
    p.add_argument(
        "--chunks",
        type=_ints,
        default=list(DEFAULT_CHUNKS),
        help="chunks per group to measure at (default: %(default)s)",
    )
    p.add_argument("--regions", type=_ints, default=list(DEFAULT_REGIONS), help="regions")
    p.add_argument("--groups", type=_ints, default=list(DEFAULT_GROUPS), help="KV-cache groups")
    p.add_argument("--reps", type=int, default=5, help="requests measured per geometry (median)")
    p.add_argument("--no-engine", action="store_true", help="skip the engine step's hold")
    p.add_argument("--force", action="store_true", help="replace an existing calibration file")
    add_plugin_argument(p)  # a plug-in's variants are calibrated as built-in ones are


def _gil_main(args: GilArgs) -> int:
    def say(msg: str) -> None:
        print(f"calibrate: {msg}", file=sys.stderr, flush=True)

    out = Path(args.out or default_out(args.python))
    doc = calibrate(
        out,
        variants=args.variants,
        handlers=args.handlers,
        chunks=args.chunks,
        regions=args.regions,
        groups=args.groups,
        reps=args.reps,
        engine=args.engine,
        force=args.force,
        python=args.python,
        say=say,
        plugins=args.plugins,
    )
    h = doc["harness"]
    print(
        f"wrote {out} ({doc['elapsed_s']:.0f} s; {doc['machine']['cores']} cores, "
        f"{loadavg_text(doc['machine']['loadavg'])})"
    )
    hold, busy = h.get("probe_hold_ms"), h.get("probe_hold_busy_ms")
    probe = "" if hold is None else f", probe hold {hold * 1e3:.0f} µs"
    if busy is not None:  # the one the model's probe holds (sim.model.costs)
        probe += f" ({busy * 1e3:.0f} µs after a wake-up that found the GIL busy)"
    print(
        f"harness: {h['sim_cpu_per_request_ms']:.3f} ms sim-thread CPU/request, wake "
        f"{h['wake_ms'] * 1e3:.0f} µs, timer late {h['timer_late_ms'] * 1e3:.0f} µs{probe}"
    )
    for key, e in doc["variants"].items():
        if "hold" in e:
            fit = e["hold"]
            print(
                f"{key:22s} hold ≈ {hold_fit_text(fit)} "
                f"(worst fit error {e['fit_worst_rel_error']:.0%}; model mode interpolates "
                "the measurements where it can)"
            )
        else:
            print(f"{key:22s} overhead {e['overhead_ms'] * 1e3:.0f} µs/request")
        let_in = [y for y in e.get("yields", ()) if y["per_request"] >= 0.5]
        if let_in:
            at = ", ".join(
                f"{y['per_request']:.1f} at {y['chunks']}×{y['regions']}" for y in let_in
            )
            print(f"{'':22s} a waiting thread let in mid-hold, a request: {at}")
        if "parallel_slowdown" in e:
            at = ", ".join(f"× {k} {m['slowdown']:.2f}" for k, m in e["parallel_slowdown"].items())
            print(f"{'':22s} GIL off, CPU a request beside other load threads: {at}")
    return 0


def default_out(python: str) -> str:
    """``results/calibration.json``; under another python ``results/calibration-NAME.json``
    (NAME: 'freethreaded', or the executable's file name), so that two builds' files sit
    side by side."""
    if not python:
        return "results/calibration.json"
    return f"results/calibration-{Path(python).name}.json"


def loadavg_text(loadavg: list[float] | None) -> str:
    """``load average 2.03, 1.50, 0.90 (1, 5, 15 min)``, as ``uptime`` prints it."""
    if not loadavg:
        return "load average unknown"
    return f"load average {', '.join(f'{x:.2f}' for x in loadavg)} (1, 5, 15 min)"


def hold_fit_text(fit: dict[str, float]) -> str:
    """``0.120 ms + 0.004 µs·chunks·regions − 0.25 µs·chunks``: each term with its own sign.

    A fit may give a term a negative coefficient (the intercept absorbs the rest); printed
    as ``+ -0.000 µs`` that read as a glitch. A term that rounds to zero is left out.
    """
    terms = [
        (fit["intercept"], "{:.3f} ms", 1.0),
        (fit["per_chunk_region"], "{:.3f} µs·chunks·regions", 1e3),
        (fit["per_chunk"], "{:.2f} µs·chunks", 1e3),
        (fit.get("per_group", 0.0), "{:.2f} µs·groups", 1e3),
    ]
    text = ""
    for value, form, scale in terms:
        shown = form.format(abs(value) * scale)
        if not text:
            text = ("−" if value < 0 and float(shown.split()[0]) else "") + shown
        elif float(shown.split()[0]):
            text += f" {'−' if value < 0 else '+'} {shown}"
    return text


TARGETS["gil"] = (
    "the simulated GIL's costs: holds per variant and geometry, harness, engine (default)",
    _gil_arguments,
)


def _store_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory of a real-store run")
    p.add_argument(
        "--workers",
        type=int,
        help="fit the points with this many load threads (default: the fewest in the run)",
    )
    p.add_argument("--json", action="store_true", help="print the fit as one JSON object")


def _store_main(args: StoreFitArgs) -> int:
    fit = fit_store(args.run_dir, args.workers)
    if args.json:
        print(json.dumps(fit.as_dict()))
        return 0
    forced = " (intercept forced to 0: the free fit was negative)" if fit.through_origin else ""
    print(
        f"store fit from {args.run_dir}: {fit.requests} requests of {len(fit.points)} "
        f"point(s) with {fit.workers} load thread(s), {fit.bytes_min / 1e6:.2f}–"
        f"{fit.bytes_max / 1e6:.2f} MB per get"
    )
    print(
        f"  latency {fit.latency_ms:.3f} ms + bytes / {fit.bandwidth_gb_per_s:.3f} GB/s{forced}; "
        f"R² {fit.r2:.3f}, |error| p50 {fit.rel_err_p50:.0%}, p99 {fit.rel_err_p99:.0%}"
    )
    print("modelled store settings (times measured on this machine; noisy when it is shared):")
    text = yaml.safe_dump({"store": fit.settings()}, sort_keys=False).rstrip()
    print("\n".join(f"  {line}" for line in text.splitlines()))
    return 0


TARGETS["store"] = (
    "the modelled store's latency and bandwidth, fitted to a real-store (store.kind: mooncake) run",
    _store_arguments,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="target", metavar="TARGET")
    for name, (help_text, add) in TARGETS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        add(sp)
    _gil_arguments(p)  # `kvsim calibrate` alone is `kvsim calibrate gil`


def main(cli_args: argparse.Namespace) -> int:
    args = CalibrateArgs.from_cli_args(cli_args)
    return _store_main(args.store) if args.store else _gil_main(args.gil)
