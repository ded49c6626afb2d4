"""The engine step loop: a real engine thread, paced by the simulation (docs/design.md §3).

An inference engine's main loop alternates Python work that holds the GIL (the
step's metadata, here the token-to-request index built by the configured index
variant) with waits that release it (the GPU forward). Connector threads holding
the GIL delay both: the engine cannot start building, and cannot resume after
the forward, until it gets the GIL back (the convoy effect, docs/design.md §1.3).
This add-on runs that loop on a real thread so the delay is real and measured.

Pacing follows the one threading rule: a SimPy process posts each step to the
engine thread through a queue, with an external event that the thread completes
through ``env.complete``; only the simulation thread touches SimPy. Before the
load starts, :meth:`EngineLoop.attach` runs ``baseline_steps`` steps with the
load threads idle — the engine-alone reference that every point carries, so
the inflation ratio compares like with like on the same machine at the same time.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from connectors import registry
from connectors.base import gil_free
from connectors.plugin_trace import ending, plugin_line
from connectors.token_index import MetadataFactory, resolve_device
from sim import columns
from sim.errors import ConfigError, PluginFault
from sim.instruments.gilmeter import ENGINE, measure
from sim.stats import percentiles

if TYPE_CHECKING:
    import simpy

    from sim.config.engine import EngineConfig
    from sim.config.experiment import ExperimentConfig, Point


class StepClock(Protocol):
    """What the engine loop needs of real mode's clock: SimPy processes, and events
    another thread completes (sim.runtime.env.HybridEnvironment, a layer above)."""

    def process(self, generator: Generator[Any, Any, None]) -> simpy.Process: ...

    def run(self, until: Any = None) -> Any: ...

    def timeout(self, delay: float) -> simpy.Timeout: ...

    def external_event(self) -> simpy.Event: ...

    def complete(self, event: simpy.Event, ok: bool, value: Any) -> None: ...

    def to_run_time(self, t_ns: int) -> float: ...


__all__ = [
    "STEP_COLUMNS",
    "EngineLoop",
    "build_step",
    "check_device",
    "engine_addon",
    "summarize_steps",
]

#: Columns of steps.csv (after the axis columns), in order.
STEP_COLUMNS = [
    "step",
    "phase",
    "start_s",  # the step's own start, on the run's clock (not a request's)
    "batch_size",
    "tokens",
    "padded_tokens",
    "build_us",
    "forward_ms",
    "step_ms",
    "stall_ms",
    "wake_ms",
    "resume_ms",
]

_STOP = object()

#: Seconds one engine step may take (beyond its forward) before the point ends, naming
#: the index variant and the step; the engine thread gets as long to end its last one.
STEP_LIMIT_S = 10.0


@dataclass(frozen=True)
class _Command:
    step: int
    phase: str
    posted_ns: int
    event: simpy.Event


def build_step(factory: Any, variant: Any, query_lens: list[int]) -> Any:
    """The GIL-held part of a step: its metadata, then every component's index. Model
    mode's calibration times this very call (sim.calibration.measure_engine.measure_engine), so the
    build the model holds the GIL for is the build the real engine thread runs."""
    meta = factory.make(query_lens)
    variant.step(meta)
    return meta


def check_device(source: str, points: Sequence[Point]) -> None:
    """Refuse (ConfigError, before the run directory is touched) a real-mode point whose
    engine asks for ``engine.device: cuda`` on a machine where torch sees no GPU: the run
    would start and every such point fail. Imports torch only for such a point."""
    wanted = [p for p in points if p.config.mode == "real" and p.config.engine.enabled]
    if not any(p.config.engine.device == "cuda" for p in wanted):
        return

    try:
        resolve_device("cuda")
    except (ValueError, ImportError) as exc:
        raise ConfigError(
            f"{source}: engine.device: cuda, but this machine has none ({exc}); "
            "use auto (CUDA when there is one) or cpu"
        ) from None


def engine_addon(cfg: ExperimentConfig) -> EngineLoop | None:
    """The add-on factory: an EngineLoop when ``engine.enabled``, else None."""
    return EngineLoop(cfg.engine) if cfg.engine.enabled else None


class EngineLoop:
    """AddOn: the engine thread and the SimPy process that paces it.

    Per step, on the engine thread: ``wake`` is how late the thread started after
    the step was posted (OS wake-up plus getting the GIL); ``build`` makes the
    step's metadata and every component's index; the forward is a GIL-free
    sleep, and ``resume`` is how late the thread ran again after it. ``stall`` is
    wake + resume; ``step`` runs from posting to the end of the step.
    """

    def __init__(self, cfg: EngineConfig) -> None:
        self._cfg = cfg
        self._rows: list[dict[str, Any]] = []
        self._commands: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._env: StepClock | None = None
        self._stopping = threading.Event()
        self._variant: Any = None
        self._factory: Any = None
        #: The step the engine thread is in (None between steps): named if it hangs.
        self._current: _Command | None = None
        self._since_ns = 0
        #: The watchdog ended the point: detach need not wait for the stuck step again.
        self._faulted = False

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self._rows)

    # -- AddOn ---------------------------------------------------------------
    def prepare(self) -> None:
        """The engine's start-up: the index variant (torch, its buffers) built and warmed
        up; run_point calls it before the heap is settled (sim.point.addons.StartsUp)."""
        if self._factory is not None:
            return
        cfg = self._cfg
        try:
            resolve_device(cfg.device)
        except ValueError as exc:
            raise ConfigError(f"engine.device: {exc}; use auto or cpu") from None
        cls = registry.get_index_variant(cfg.index_variant)
        self._variant = cls(cfg.components, cfg.max_tokens(), cfg.device)
        self._variant.warm_up()
        self._factory = MetadataFactory(
            cfg.batch_size, cfg.max_tokens(), self._variant.device, cfg.pad_multiple
        )

    def attach(self, env: StepClock) -> None:
        cfg = self._cfg
        self.prepare()
        self._env = env
        self._thread = threading.Thread(target=self._loop, name="kvsim-engine", daemon=True)
        self._thread.start()
        env.process(self._watchdog())
        baseline = env.process(self._steps("alone", cfg.baseline_steps))
        env.run(until=baseline)
        env.process(self._steps("load", None))

    def detach(self) -> None:
        """Stop the engine thread; PluginFault when it is stuck in a step (the index
        variant hangs): its steps would otherwise end the point as if it had stopped."""
        self._stopping.set()
        self._commands.put(_STOP)
        if self._thread is not None:
            limit = self._step_limit_s()
            self._thread.join(timeout=0.1 if self._faulted else limit)  # said once is enough
            stuck, self._thread = self._thread.is_alive(), None
            cmd = self._current
            if stuck and cmd is not None and not self._faulted:
                raise self._fault(cmd, f"did not return in {limit:g} s (a hang?)")

    def _step_limit_s(self) -> float:
        return STEP_LIMIT_S + self._cfg.forward_ms / 1e3

    def _watchdog(self) -> Generator[Any, Any, None]:
        """SimPy process: end the point when one engine step outlasts :data:`STEP_LIMIT_S`
        (the index variant hangs), instead of running on without its steps. It wakes a
        few times per limit: a cost of nothing per step."""
        env = self._env
        assert env is not None
        limit = self._step_limit_s()
        while not self._stopping.is_set():
            yield env.timeout(limit / 4)
            cmd, since = self._current, self._since_ns
            if cmd is not None and time.perf_counter_ns() - since > limit * 1e9:
                self._faulted = True
                raise self._fault(cmd, f"did not return in {limit:g} s (a hang?)")

    def summary(self) -> dict[str, float]:
        return summarize_steps(self._rows)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {"steps": self.rows}

    # -- the simulation side -------------------------------------------------
    def _steps(self, phase: str, count: int | None) -> Generator[Any, Any, None]:
        env = self._env
        assert env is not None
        idle_s = self._cfg.idle_ms / 1e3
        done = 0
        while (count is None or done < count) and not self._stopping.is_set():
            event = env.external_event()
            self._commands.put(_Command(len(self._rows), phase, time.perf_counter_ns(), event))
            raw = yield event
            raw["start_s"] = env.to_run_time(raw["posted_ns"])
            self._rows.append({k: raw[k] for k in STEP_COLUMNS})
            done += 1
            if idle_s:
                yield env.timeout(idle_s)

    # -- the engine thread ---------------------------------------------------
    def _loop(self) -> None:
        env = self._env
        assert env is not None
        while True:
            cmd = self._commands.get()
            if cmd is _STOP:
                return
            self._since_ns = time.perf_counter_ns()
            self._current = cmd
            try:
                row = self._run_step(cmd)
            except Exception as exc:
                env.complete(cmd.event, False, RuntimeError(f"engine step {cmd.step}: {exc}"))
                continue
            except BaseException as exc:  # sys.exit in the variant: on this thread, its own
                env.complete(cmd.event, False, self._fault(cmd, ending(exc), exc))
                continue
            finally:
                self._current = None
            env.complete(cmd.event, True, row)

    def _fault(self, cmd: _Command, what: str, exc: BaseException | None = None) -> PluginFault:
        """The point's end, naming the index variant, its file and the step."""
        cls = type(self._variant)
        module = sys.modules.get(cls.__module__)
        where = getattr(module, "__file__", None) or cls.__module__
        line = plugin_line(exc, str(where)) if exc is not None else ""
        at = f" ({line})" if line else ""
        return PluginFault(
            f"{where}: index variant {cls.name!r}, engine step {cmd.step} ({cmd.phase}): "
            f"{what}{at}; the point is stopped"
        )

    def _run_step(self, cmd: _Command) -> dict[str, Any]:
        """One step, through the GIL meter so that its hold counts (as ``engine``) in the
        probe's ledger: the probe sees the engine holding the GIL, so must the meter."""
        row, error, _timing = measure(self._step, cmd, source=ENGINE)
        if error is not None:
            raise error
        return row

    def _step(self, cmd: _Command) -> dict[str, Any]:
        cfg = self._cfg
        started = time.perf_counter_ns()
        meta = build_step(self._factory, self._variant, cfg.query_lens())
        built = time.perf_counter_ns()
        forward_ns = int(cfg.forward_ms * 1e6)
        with gil_free():
            before = time.perf_counter_ns()
            time.sleep(forward_ns / 1e9)
            resumed = time.perf_counter_ns()
        ended = time.perf_counter_ns()
        wake_ns = started - cmd.posted_ns
        resume_ns = max(0, resumed - before - forward_ns)
        return {
            "step": cmd.step,
            "phase": cmd.phase,
            "posted_ns": cmd.posted_ns,
            "batch_size": meta.num_reqs,
            "tokens": meta.num_mapped,
            "padded_tokens": meta.num_tokens,
            "build_us": (built - started) / 1e3,
            "forward_ms": cfg.forward_ms,
            "step_ms": (ended - cmd.posted_ns) / 1e6,
            "stall_ms": (wake_ns + resume_ns) / 1e6,
            "wake_ms": wake_ns / 1e6,
            "resume_ms": resume_ns / 1e6,
        }


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else float("nan")


def summarize_steps(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Step-time percentiles under load and alone, and how much the load inflates them."""
    load = [r for r in rows if r["phase"] == "load"]
    alone = [r for r in rows if r["phase"] == "alone"]
    p50, p99 = percentiles((r["step_ms"] for r in load), [50, 99])
    a50, a99 = percentiles((r["step_ms"] for r in alone), [50, 99])
    (b50,) = percentiles((r["build_us"] for r in load), [50])
    (s99,) = percentiles((r["stall_ms"] for r in load), [99])
    return {
        columns.ENGINE_STEPS.name: len(load),
        columns.ENGINE_STEP_P50_MS.name: p50,
        columns.ENGINE_STEP_P99_MS.name: p99,
        columns.ENGINE_ALONE_P50_MS.name: a50,
        columns.ENGINE_ALONE_P99_MS.name: a99,
        columns.ENGINE_P50_INFLATION.name: _ratio(p50, a50),
        columns.ENGINE_P99_INFLATION.name: _ratio(p99, a99),
        columns.ENGINE_BUILD_P50_US.name: b50,
        columns.ENGINE_STALL_P99_MS.name: s99,
    }
