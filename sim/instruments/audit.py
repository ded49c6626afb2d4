"""An independent GIL audit: py-spy samples which thread holds the GIL, from outside.

The meter (``sim.instruments.gilmeter``) trusts a variant to declare its GIL-free
sections; a variant that releases the GIL without saying so (hashlib on a large
buffer, a C call that drops the lock) is metered as holding it. The audit does
not trust anyone: ``py-spy record --gil --threads --nonblocking`` reads the
point's process from another process about ``rate_hz`` times a second without
stopping it, and keeps a sample only for the thread that holds the GIL at that
instant. Samples are attributed to roles by thread name (load threads
``kvsim-load-*``, the simulation thread ``MainThread``, ``kvsim-engine``,
``kvsim-probe``), and each role's busy fraction is its samples over the samples
the window should hold (``window × rate``).

``audit_vs_meter`` is the load threads' audited GIL time over the summed metered
holds of the same window: about 1 when the meter is right; well below 1 when a
variant holds less of the GIL than metered. On a loaded machine it also reads
above 1, because py-spy sees wall-clock occupancy and a holder kept off its core
by the OS still holds the GIL while its CPU clock (the meter) stops;
``audit_vs_meter_oncore`` takes all of the load threads' off-core time
(``/proc`` schedstat run delay) off the audited time — a lower bound — so the
truth lies between the two. When the operating system does not
let one process read another (no ``CAP_SYS_PTRACE`` in a container, Yama
``ptrace_scope`` 3), py-spy cannot attach: the point runs on without the audit
and ``audit_status`` says why and how to allow it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim import columns
from sim.instruments.gilmeter import HoldLedger, close_ledger, open_ledger
from sim.instruments.probe import run_delay_ns
from sim.process.lifeline import preexec_die_with

if TYPE_CHECKING:
    from sim.config.experiment import ExperimentConfig

__all__ = [
    "AUDIT_METRICS",
    "PySpyAudit",
    "attribute",
    "audit_addon",
    "parse_raw",
    "role_of",
]

#: Summary columns of the audit (NaN when it did not run), and its status text.
AUDIT_METRICS = columns.names(columns.AUDIT)

#: How to let py-spy attach, said once when it cannot.
PTRACE_HINT = (
    "allow it with `docker run --cap-add SYS_PTRACE` (or `securityContext.capabilities.add: "
    "[SYS_PTRACE]`), or `sysctl kernel.yama.ptrace_scope=1` as root"
)

_LINE = re.compile(r"^thread \((?:0x)?[0-9a-fA-F]+\): ([^;]*)(?:;.*)? (\d+)$")


def role_of(thread_name: str) -> str:
    """The role of a thread in a point, from the names kvsim gives its threads."""
    if thread_name.startswith("kvsim-load"):
        return "requests"
    if thread_name == "MainThread":
        return "harness"
    if thread_name.startswith("kvsim-engine"):
        return "engine"
    if thread_name.startswith("kvsim-probe"):
        return "probe"
    return "other"


def parse_raw(text: str) -> Counter[str]:
    """GIL-holding samples per thread name from py-spy's raw (collapsed) output.

    Each line is ``thread (TID): NAME;frame;frame COUNT`` (``--threads``).
    """
    out: Counter[str] = Counter()
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out[m.group(1).strip()] += int(m.group(2))
    return out


def attribute(samples: Counter[str]) -> Counter[str]:
    """Samples per role."""
    roles: Counter[str] = Counter()
    for name, n in samples.items():
        roles[role_of(name)] += n
    return roles


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc), NaN when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


class PySpyAudit:
    """The audit as an add-on: py-spy runs over exactly the point's load window."""

    def __init__(self, rate_hz: int = 1000, start_timeout_s: float = 30.0) -> None:
        self._rate = rate_hz
        self._start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._ledger: HoldLedger | None = None
        self._t0_ns = self._t1_ns = 0
        self._cpu_s = float("nan")
        self._roles: Counter[str] = Counter()
        self._delay0: dict[int, int] = {}
        self._offcore_ns = 0
        self.status = "not run"

    def attach(self, env: object) -> None:  # either clock: py-spy watches the process
        exe = shutil.which("py-spy")
        if exe is None:
            self.status = "unavailable: py-spy is not installed (pip install py-spy)"
            return
        self._dir = tempfile.TemporaryDirectory(prefix="kvsim-audit-")
        out = Path(self._dir.name) / "raw.txt"
        cmd = [exe, "record", "--gil", "--threads", "--nonblocking", "--rate", str(self._rate)]
        cmd += ["--format", "raw", "--output", str(out), "--pid", str(os.getpid())]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=preexec_die_with(os.getpid()),  # not outliving a killed point
        )
        started = self._wait_started(proc)
        if started is not None:
            self._stop(proc)
            self.status = f"unavailable: {started}"
            return
        self._proc = proc
        self._ledger = open_ledger()
        self._delay0 = self._load_thread_delays()
        self._t0_ns = time.perf_counter_ns()

    @staticmethod
    def _load_thread_delays() -> dict[int, int]:
        """Run delay (runnable, off-core) of every load thread so far, by native id."""
        out = {}
        for t in threading.enumerate():
            if role_of(t.name) == "requests" and t.native_id is not None:
                d = run_delay_ns(t.native_id)
                if d is not None:
                    out[t.native_id] = d
        return out

    def _wait_started(self, proc: subprocess.Popen[bytes]) -> str | None:
        """None once py-spy samples; else why it could not (its own error line)."""
        assert proc.stdout is not None and proc.stderr is not None
        line: list[bytes] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))
        reader.start()
        reader.join(self._start_timeout_s)
        if line and b"Sampling process" in line[0]:
            return None
        if line:  # its output ended: it is exiting (its status may lag the pipe's end)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10.0)
        if proc.poll() is None:
            return f"py-spy did not start sampling within {self._start_timeout_s:g} s"
        err = proc.stderr.read().decode(errors="replace").strip().splitlines()
        why = err[-1] if err else f"py-spy exited with status {proc.returncode}"
        if "ermission" in why or "ptrace" in why.lower() or "EPERM" in why:
            why = f"py-spy may not read this process ({why}); {PTRACE_HINT}"
        return why[:300]

    def _stop(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
            try:
                proc.wait(10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def detach(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        self._t1_ns = time.perf_counter_ns()
        delay1 = self._load_thread_delays()
        self._offcore_ns = sum(d - self._delay0[t] for t, d in delay1.items() if t in self._delay0)
        self._cpu_s = _proc_cpu_s(proc.pid)  # before it exits: /proc/PID goes with it
        if self._ledger is not None:
            close_ledger(self._ledger)
        self._stop(proc)
        assert self._dir is not None
        try:
            text = (Path(self._dir.name) / "raw.txt").read_text(errors="replace")
        except OSError:
            self.status = "failed: py-spy wrote no samples"
            return
        finally:
            self._dir.cleanup()
        self._roles = attribute(parse_raw(text))
        self.status = "ok"

    def summary(self) -> dict[str, Any]:
        nan = float("nan")
        out: dict[str, Any] = dict.fromkeys(AUDIT_METRICS, nan)
        out[columns.AUDIT_STATUS.name] = self.status
        window_s = (self._t1_ns - self._t0_ns) / 1e9
        if self.status != "ok" or window_s <= 0:
            return out
        ticks = window_s * self._rate
        for role in ("requests", "harness", "engine", "probe"):
            out[f"audit_busy_{role}"] = self._roles[role] / ticks
        metered_s = self._ledger.total_ns / 1e9 if self._ledger is not None else 0.0
        audited_s = self._roles["requests"] / self._rate
        out[columns.AUDIT_VS_METER.name] = audited_s / metered_s if metered_s > 0 else nan
        # py-spy sees who holds the GIL on the wall clock; the meter counts CPU time, which
        # stops while the OS keeps a holder off its core. The load threads' off-core time
        # bounds that difference: audited minus all of it is a lower bound on the ratio.
        offcore_s = self._offcore_ns / 1e9
        out[columns.AUDIT_OFFCORE_FRAC.name] = offcore_s / window_s
        if metered_s > 0:
            out[columns.AUDIT_VS_METER_ONCORE.name] = max(0.0, audited_s - offcore_s) / metered_s
        out[columns.AUDIT_SAMPLES.name] = sum(self._roles.values())
        out[columns.AUDIT_PYSPY_CPU_FRAC.name] = self._cpu_s / window_s
        return out

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {}


def audit_addon(cfg: ExperimentConfig) -> PySpyAudit | None:
    """The audit when ``gil.audit`` is ``pyspy``."""
    if cfg.gil.audit != "pyspy":
        return None
    return PySpyAudit(cfg.gil.audit_rate_hz)
