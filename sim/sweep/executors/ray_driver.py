"""``--executor ray``: each point × repeat is a Ray task on a host offering ``kvsim_host``.

Every task asks for one unit of the custom resource ``kvsim_host`` and no CPU
of Ray's accounting, so a host started with ``--resources='{"kvsim_host": 1}'``
measures exactly one point at a time, and nothing else kvsim sends competes
with it. The driver keeps at most as many tasks submitted as the cluster has
``kvsim_host`` units, writes each run's files into the run directory as it
comes back (see ``transfer``), and reports where each run went.

Faults: a task whose worker or node dies (Ray's system errors) is submitted
again, up to ``retries`` times, and the loss is reported with the host's name;
Ray does not place work on a dead node, so the retry lands on a live host. A
failure of the point itself (its child failed) is a result, not retried.
Ctrl-C raises a stop flag every outstanding task watches (its child is stopped
and marks its point interrupted), keeps every run already back or finished
meanwhile, and marks the rest interrupted; it does not ``ray.cancel`` (see
sim.sweep.executors.ray_host).

``import ray`` happens only when this executor runs, never on the CLI's path.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.events import RepOutcome, SweepEvents
from sim.files.read import read_bounded
from sim.rundir.layout import RepRun, read_status, write_status
from sim.sweep.executors.base import ExecutorError
from sim.sweep.executors.ray_host import Board, run_on_host
from sim.sweep.executors.transfer import TransferError, read_inputs, write_outputs
from sim.sweep.hostinfo import code_hash
from sim.sweep.runner import last_error_line, last_line
from sim.sweep.spec import MAX_SPEC_BYTES

__all__ = ["HOST_RESOURCE", "RETRIABLE_ERRORS", "RayExecutor"]

#: Custom resource a host offers once per point it may measure at a time (1 = one point).
HOST_RESOURCE = "kvsim_host"
#: Ray errors that mean the host (worker or node) was lost, not that the point failed.
RETRIABLE_ERRORS = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "ObjectLostError",
    "ObjectFetchTimedOutError",
    "ObjectReconstructionFailedError",
    "OutOfMemoryError",
    "RaySystemError",
)
#: Seconds the driver waits, on Ctrl-C, for its tasks to stop their children.
_STOP_WAIT_S = 10.0
#: Seconds to wait for the cluster's address to accept a connection.
_PROBE_S = 5.0
_START_HINT = (
    "start one with `ray start --head --num-cpus=0` and one `ray start --address=HEAD:6379 "
    f"--resources='{{\"{HOST_RESOURCE}\": 1}}'` per measuring host (see docs/ray.md)"
)
#: How often the driver looks at the board (where runs started, their progress).
_POLL_S = 0.5

Prepare = Callable[[RepRun], Path]


@dataclass
class _Flight:
    rep: RepRun
    attempt: int
    key: str
    started: float = field(default_factory=time.perf_counter)
    host: str = ""
    lost: list[str] = field(default_factory=list)


class RayExecutor:
    """Runs point × repeat runs as Ray tasks on the hosts of a running Ray cluster."""

    name = "ray"

    def __init__(self, prepare: Prepare, address: str | None = None, retries: int = 2) -> None:
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        self._prepare = prepare
        self._address = address or os.environ.get("RAY_ADDRESS") or "auto"
        self._retries = retries
        self._code = code_hash()

    # -- connecting -------------------------------------------------------------------------

    def preflight(self) -> None:
        """ExecutorError unless Ray is installed and something answers at the address."""
        self._import_ray()
        self._reachable()

    @staticmethod
    def _import_ray() -> Any:
        try:
            import ray  # heavy: ray loads only when the ray executor runs
        except ImportError:
            raise ExecutorError(
                "--executor ray needs Ray: pip install 'kvsim[ray]' (ray==2.60.0)"
            ) from None
        return ray

    def _connect(self) -> Any:
        ray = self._import_ray()
        address = self._reachable()
        try:
            ray.init(
                address=address,
                namespace="kvsim",
                log_to_driver=False,
                logging_level=logging.ERROR,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(
                f"no Ray cluster at {address} ({last_line(str(exc))}); {_START_HINT}"
            ) from None
        return ray

    def _reachable(self) -> str:
        """The cluster's ``host:port``, once something answers there: Ray itself would wait
        minutes for a GCS that is not there (or that it found on this machine but cannot
        reach, e.g. from another network namespace)."""
        # Ray's own lookup of "auto" ($RAY_ADDRESS, the cluster last started here); an
        # explicit address is probed as given (no resolving "localhost" to another address).
        from ray._private.services import get_ray_address_from_environment

        try:
            address = get_ray_address_from_environment(self._address, None)
        except (ConnectionError, ValueError) as exc:
            raise ExecutorError(
                f"no Ray cluster found ({last_line(str(exc))}); {_START_HINT}"
            ) from None
        if address is None:
            raise ExecutorError(f"no Ray cluster found; {_START_HINT}")
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=_PROBE_S).close()
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise ExecutorError(
                f"no Ray cluster answers at {address} ({why}); pass --address HEAD:PORT, or "
                f"{_START_HINT}"
            ) from None
        return address

    def _slots(self, ray: Any) -> int:
        slots = int(ray.cluster_resources().get(HOST_RESOURCE, 0))
        if slots < 1:
            raise ExecutorError(
                f"the Ray cluster at {self._address} has no host offering the "
                f"{HOST_RESOURCE} resource; start each measuring host with "
                f"`ray start --address=HEAD:6379 --resources='{{\"{HOST_RESOURCE}\": 1}}'`"
            )
        return slots

    # -- the sweep --------------------------------------------------------------------------

    def run(self, reps: Sequence[RepRun], events: SweepEvents) -> None:
        if not reps:
            return
        ray = self._connect()
        try:
            self._run(ray, reps, events)
        finally:
            ray.shutdown()

    def _run(self, ray: Any, reps: Sequence[RepRun], events: SweepEvents) -> None:
        slots = self._slots(ray)
        task = ray.remote(num_cpus=0, resources={HOST_RESOURCE: 1}, max_retries=0)(run_on_host)
        board = (
            ray.remote(num_cpus=0, resources={"node:__internal_head__": 0.001})(Board)
            .options(max_concurrency=1)
            .remote()
        )
        queue: deque[tuple[RepRun, int, list[str]]] = deque((r, 1, []) for r in reps)
        flights: dict[Any, _Flight] = {}
        by_key: dict[str, _Flight] = {}
        try:
            while queue or flights:
                while queue and len(flights) < slots:
                    rep, attempt, lost = queue.popleft()
                    ref = self._submit(ray, task, board, rep, attempt, events)
                    if ref is not None:
                        fl = _Flight(rep, attempt, f"{rep.point.index}:{rep.repeat}:{attempt}")
                        fl.lost.extend(lost)
                        flights[ref] = by_key[fl.key] = fl
                ready, _ = ray.wait(list(flights), num_returns=1, timeout=_POLL_S)
                self._drain(ray, board, by_key, events)
                for ref in ready:
                    fl = flights.pop(ref)
                    by_key.pop(fl.key, None)
                    again = self._land(ray, ref, fl, events)
                    if again:
                        queue.appendleft((fl.rep, fl.attempt + 1, fl.lost))
        except BaseException:
            self._stop_all(ray, board, flights, events)
            raise

    def _submit(
        self, ray: Any, task: Any, board: Any, rep: RepRun, attempt: int, events: SweepEvents
    ) -> Any:
        """Prepare the run's directory and submit it; None when its inputs cannot be sent."""
        spec_path = self._prepare(rep)
        try:
            raw = read_bounded(spec_path, what="spec", limit=MAX_SPEC_BYTES, error=TransferError)
            spec = json.loads(raw)
            inputs = read_inputs(spec)
        except (TransferError, OSError, ValueError, RecursionError) as exc:
            write_status(rep.dir, "failed", error=last_line(str(exc)), executor="ray")
            events.finished(rep, RepOutcome("failed", last_line(str(exc)), 0.0))
            return None
        key = f"{rep.point.index}:{rep.repeat}:{attempt}"
        return task.remote(spec, inputs, key, board)

    def _drain(self, ray: Any, board: Any, by_key: dict[str, _Flight], ev: SweepEvents) -> None:
        for event in ray.get(board.drain.remote()):
            fl = by_key.get(event[1])
            if fl is None:
                continue
            if event[0] == "started":
                fl.host = str(event[2])
                ev.started(fl.rep, fl.host)
            elif event[0] == "progress":
                ev.progress(fl.rep, int(event[2]), int(event[3]))

    def _land(self, ray: Any, ref: Any, fl: _Flight, events: SweepEvents) -> bool:
        """Handle a finished task; True when it is to be submitted again (host lost)."""
        exc_types = ray.exceptions
        try:
            result = ray.get(ref)
        except exc_types.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            why = last_line(f"{type(cause).__name__}: {cause}" if cause else str(exc))
            return self._fail(fl, f"on {fl.host or 'a Ray host'}: {why}", events)
        except exc_types.TaskCancelledError:
            self._interrupted(fl, events)
            return False
        except exc_types.RayError as exc:
            if type(exc).__name__ not in RETRIABLE_ERRORS:
                return self._fail(fl, f"Ray: {last_line(str(exc))}", events)
            where = fl.host or "an unknown host"
            fl.lost.append(where)
            if fl.attempt <= self._retries:
                events.note(
                    f"{fl.rep.label}: host {where} was lost ({type(exc).__name__}); "
                    f"retrying ({fl.attempt}/{self._retries})"
                )
                return True
            return self._fail(
                fl, f"lost its host {fl.attempt} time(s) ({', '.join(fl.lost)}); gave up", events
            )
        self._write(fl, result, events)
        return False

    def _write(self, fl: _Flight, result: dict[str, Any], events: SweepEvents) -> None:
        rep = fl.rep
        extra: dict[str, Any] = {
            "executor": "ray",
            "ray_node_id": result["node_id"],
            "attempts": fl.attempt,
            "lost_hosts": fl.lost,
            "host_started_unix": result["started_unix"],
            "host_ended_unix": result["ended_unix"],
        }
        if result["code_hash"] != self._code:
            extra.update(
                status="failed",
                error=f"host {result['host']} runs different kvsim code "
                f"({str(result['code_hash'])[:19]}, the driver {self._code[:19]}); "
                "points from different code are not combined",
            )
        try:
            status = write_outputs(rep.dir, result["outputs"], extra)
        except TransferError as exc:
            self._fail(fl, f"from {result['host']}: {exc}", events)
            return
        if status is None:
            why = last_error_line(rep.log)
            msg = f"child exited with code {result['returncode']} on {result['host']}"
            write_status(rep.dir, "failed", error=msg + (f": {why}" if why else ""), **extra)
        st = read_status(rep.dir) or {"status": "failed", "error": "no status written"}
        outcome = RepOutcome(
            str(st["status"]), str(st.get("error", "")), time.perf_counter() - fl.started
        )
        events.finished(rep, outcome)

    def _fail(self, fl: _Flight, error: str, events: SweepEvents) -> bool:
        write_status(fl.rep.dir, "failed", error=error, executor="ray", attempts=fl.attempt)
        events.finished(fl.rep, RepOutcome("failed", error, time.perf_counter() - fl.started))
        return False

    def _interrupted(self, fl: _Flight, events: SweepEvents) -> None:
        if read_status(fl.rep.dir) is None:
            write_status(fl.rep.dir, "interrupted", error="stopped by Ctrl-C or SIGTERM")
        events.finished(fl.rep, None)

    def _stop_all(
        self, ray: Any, board: Any, flights: dict[Any, _Flight], events: SweepEvents
    ) -> None:
        """Ctrl-C: ask every task to stop its child (the board's flag, not ``ray.cancel``:
        see sim.sweep.executors.ray_host), keep the runs that finished, mark the rest
        interrupted. A task not back in time is ended with the driver (ray.shutdown)."""
        with contextlib.suppress(Exception):
            board.stop.remote()
        if flights:
            with contextlib.suppress(Exception):
                ray.wait(list(flights), num_returns=len(flights), timeout=_STOP_WAIT_S)
        for ref, fl in flights.items():
            try:
                result = ray.get(ref, timeout=0)
            except Exception:
                self._interrupted(fl, events)
                continue
            code = result.get("returncode")
            if code == 130 or (isinstance(code, int) and code < 0):
                self._interrupted(fl, events)  # its child was stopped (SIGTERM, or killed)
            else:
                self._write(fl, result, events)  # it ended before the stop reached it
