"""Driver side of tests/e2e/test_ray_executor.py, run INSIDE the throw-away cluster
(``tests/helpers/ray_cluster.sh``): three sweeps through ``kvsim run --executor ray``.

1. ``fast.yaml`` into ``ray_out``: runs to the end.
2. ``slow.yaml`` into ``int_out``: Ctrl-C (SIGINT) once one run has finished.
3. ``slow.yaml`` into ``kill_out``: the Ray node ``host-a`` dies (its raylet is
   killed) while it measures a point; the sweep must retry it elsewhere and finish.
4. ``tests/helpers/ray_plugin_scenario.py`` on ``plugin/``: a plug-in variant whose
   file is removed before its sweep starts, on the node left (``host-b``).

What happened is written to ``scenario.json`` for the test to check once the
cluster is gone. Usage: python tests/helpers/ray_scenario.py WORKDIR
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

WAIT_S = 240.0


def kvsim(*args: str) -> list[str]:
    return [sys.executable, "-m", "sim", "run", *args, "--executor", "ray"]


def finished_runs(out: Path) -> int:
    n = 0
    for f in out.glob("points/*/rep-*/status.json"):
        try:
            n += json.loads(f.read_text()).get("status") == "ok"
        except (OSError, ValueError):
            continue
    return n


def _age_s(pid: int) -> float:
    """Seconds since the process started."""
    start = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - start / os.sysconf("SC_CLK_TCK")


def children_on(host: str, younger_than_s: float = 1e9) -> list[int]:
    """Pids of point children whose Ray node names itself ``host`` (started recently)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes()
            env = Path(f"/proc/{d}/environ").read_bytes()
        except OSError:
            continue
        if b"sim.sweep.child" in cmd and f"KVSIM_HOST_NAME={host}\0".encode() in env:
            try:
                if _age_s(int(d)) < younger_than_s:
                    out.append(int(d))
            except (OSError, ValueError, IndexError):
                continue
    return out


def raylet_above(pid: int) -> int | None:
    while pid > 1:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                return pid
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None


def wait_for(cond, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > WAIT_S:
            raise SystemExit(f"scenario: timed out waiting for {what}")
        time.sleep(0.1)


def main(work: Path) -> None:
    os.chdir(work)
    report: dict[str, object] = {}
    t0 = time.monotonic()
    done = subprocess.run(kvsim("fast.yaml", "--out", "ray_out"), capture_output=True, text=True)
    report["full"] = {"rc": done.returncode, "stderr": done.stderr[-4000:]}
    report["full_s"] = time.monotonic() - t0

    drv = subprocess.Popen(kvsim("slow.yaml", "--out", "int_out", "-q"), stderr=subprocess.PIPE)
    wait_for(lambda: finished_runs(work / "int_out") >= 1, "a finished run before Ctrl-C")
    drv.send_signal(signal.SIGINT)
    _, err = drv.communicate(timeout=WAIT_S)
    report["interrupt"] = {"rc": drv.returncode, "stderr": err.decode()[-4000:]}
    report["interrupt_s"] = time.monotonic() - t0

    drv = subprocess.Popen(kvsim("slow.yaml", "--out", "kill_out", "--retries", "1"))
    # A point that has just started on host-a: it cannot finish before its node dies.
    wait_for(lambda: children_on("host-a", 0.5), "a point starting on host-a")
    young = children_on("host-a", 0.5) or children_on("host-a")
    raylet = raylet_above(young[0]) if young else None
    if raylet is not None:
        os.kill(raylet, signal.SIGKILL)
    rc = drv.wait(timeout=WAIT_S)
    report["node_death"] = {"rc": rc, "raylet_killed": raylet is not None}
    report["node_death_s"] = time.monotonic() - t0

    driver = Path(__file__).with_name("ray_plugin_scenario.py")
    plugin = subprocess.run(
        [sys.executable, str(driver), str(work / "plugin")],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    report["plugin"] = {"rc": plugin.returncode, "stderr": plugin.stderr[-4000:]}
    report["plugin_s"] = time.monotonic() - t0
    (work / "scenario.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
