"""One model-mode point of N requests in a fresh process: its wall time and peak memory.

``kvsim bench model`` starts ``python -m sim.benches.model_point CALIBRATION REQUESTS
RATE DIR REGIONS ROWS HOLD_MS PROBE``; the child runs one point the way a sweep's child
does (the rows ``output.requests`` keeps streamed to ``DIR/requests.csv``,
sim.sweep.point_tables.RequestsFile) and prints one JSON line: the requests, the wall
time of the point, the process's peak resident memory (VmHWM: the high-water
mark, start-up and imports included) and the model core it ran on. A fresh process,
so that nothing another point left behind counts; its peak with 10^4 requests is the
floor that a point's memory, bounded by design (docs/design.md §6), should stay near at
any count.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sim.native import ENV as NATIVE_ENV
from sim.native import native_state
from sim.process.lifeline import PARENT_PID_ENV, die_with_parent, parent_pid
from sim.process.proc_fields import proc_fields

__all__ = ["PointMemory", "measure_point", "point_config"]


@dataclass(frozen=True)
class PointMemory:
    requests: int
    wall_s: float
    max_rss_mb: float
    #: Planned arrivals per second (sets the simulated span; not the wall time).
    rate_rps: float
    #: The model core the point ran on (sim.native.native_state).
    core: str = ""


def point_config(
    calibration: str,
    requests: int,
    rate: float,
    regions: int = 4,
    rows: str = "all",
    hold_ms: float = 5.0,
    probe: bool = True,
) -> dict:
    """A synthetic model point: 5 ms hold, 2 workers, the probe on and every row kept
    (the defaults: gil.probe, output.requests all). The probe wakes every 2 ms of
    simulated time, more often than the requests arrive: its state is what grew with the
    request count before it was folded as it goes (sim.model.probe). Fewer ``regions``,
    fewer ``rows`` and no hold make it cheaper per request where only its memory is asked
    (tests/benches/test_model_point.py)."""
    # yaml and the run directory's layout: in the point's child, only after die_with_parent
    from sim.benches.model_sweep import synthetic_config

    cfg = synthetic_config(calibration, requests, rate, probe)
    cfg["model"] = {**cfg["model"], "regions": regions}
    cfg["output"] = {**cfg.get("output", {}), "requests": rows}
    cfg["connector"] = {**cfg["connector"], "workers": 2}
    cfg["connector"]["options"] = {"hold_ms": hold_ms, **cfg["connector"]["options"]}
    # Its simulated span (10^6 requests at 200/s: 5,000 s) may pass the default bound of a
    # point run's span, which the model enforces as a real run's would be stopped.
    span_s = requests / rate
    cfg["limits"] = {**cfg.get("limits", {}), "max_point_s": min(30 * 86400, 2 * span_s + 3600)}
    return cfg


def measure_point(
    calibration: str,
    requests: int,
    rate: float,
    out_dir: Path,
    timeout_s: float = 3600.0,
    *,
    regions: int = 4,
    rows: str = "all",
    hold_ms: float = 5.0,
    probe: bool = True,
    compiled: bool = False,
) -> PointMemory:
    """Run the point in a child process (bounded by ``timeout_s``) and read its line.

    ``compiled``: the child runs the compiled core when it is built and current
    (sim.native), whatever ``KVSIM_NATIVE`` says here (the test suite turns it off for
    its own process, whose spies must reach the source); else the interpreted one, the
    same point more slowly. The line says which ran."""
    argv = [sys.executable, "-m", __name__, calibration, str(requests), str(rate), str(out_dir)]
    argv += [str(regions), rows, str(hold_ms), "probe" if probe else "no-probe"]
    env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}  # the child dies with this process
    if compiled:
        env.pop(NATIVE_ENV, None)
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout_s, check=False, env=env
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the model point of {requests} requests failed: {tail}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return PointMemory(data["requests"], data["wall_s"], data["max_rss_mb"], rate, data["core"])


def _peak_rss_kb() -> int:
    """This process's own peak resident memory, in KiB.

    ``/proc/self/status``'s VmHWM belongs to the address space exec made; ``ru_maxrss``
    does not: Linux carries the parent's high-water mark across a vfork and exec (which
    subprocess uses), so a child of a 500 MB pytest process reported 500 MB however
    small it stayed. ``ru_maxrss`` only where /proc is missing."""
    hwm = proc_fields("self", ("VmHWM",)).get("VmHWM", "")
    if hwm.isdigit():
        return int(hwm)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _main(argv: list[str]) -> int:
    # First: a `kvsim bench model` killed with -9 would otherwise leave this point running
    # on for minutes under another parent (sim.process.lifeline).
    if not die_with_parent(parent_pid()):
        return 1
    # Loaded after die_with_parent, so that a parent killed meanwhile takes this along.
    from sim.config import ExperimentConfig, Point  # after die_with_parent (above)
    from sim.model.driver import run_model_point  # heavy (simpy): after die_with_parent
    from sim.sweep.point_tables import RequestsFile  # after die_with_parent (above)

    calibration, requests, rate, out = argv[0], int(argv[1]), float(argv[2]), Path(argv[3])
    probe = argv[7] == "probe"
    shape = point_config(calibration, requests, rate, int(argv[4]), argv[5], float(argv[6]), probe)
    cfg = ExperimentConfig.model_validate(shape)
    rows = RequestsFile(out, {"repeat": 0}, durable=False)
    t0 = time.perf_counter()
    res = run_model_point(Point(0, {}, cfg), 0, None, write_rows=rows)
    rows.commit()
    wall = time.perf_counter() - t0
    peak_kb = _peak_rss_kb()
    line = {
        "requests": res.summary["requests"],
        "wall_s": wall,
        "max_rss_mb": peak_kb / 1024,
        "core": native_state(),
    }
    print(json.dumps(line))
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a child by measure_point
    sys.exit(_main(sys.argv[1:]))
