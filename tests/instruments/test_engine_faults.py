"""An index variant that hangs or ends its engine step fails the point, naming it and the step."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import sim.instruments.engine as engine
from connectors.plugin_file import PluginCode, plugins_loaded
from sim.config import EngineConfig
from sim.errors import PluginFault
from sim.instruments.engine import EngineLoop
from sim.runtime.env import HybridEnvironment

pytest.importorskip("torch", reason="the engine's index variants need torch")

ODD = """
import sys, threading
from connectors.registry import register_index
from connectors.index_cached import CachedIndex

RELEASE = threading.Event()


@register_index
class Odd(CachedIndex):
    name = "odd_engine"
    steps = 0

    warm = False

    def warm_up(self):
        super().warm_up()
        Odd.warm = True  # count the engine's steps, not warm_up's

    def component_index(self, meta, component):
        if component == 0 and Odd.warm:
            Odd.steps += 1
            if Odd.steps == {at}:
                {how}
        return super().component_index(meta, component)
"""


def _loop_until_it_fails(tmp_path: Path, at: int, how: str, seconds: float) -> PluginFault:
    path = tmp_path / "odd.py"
    code = PluginCode(str(path), textwrap.dedent(ODD).format(at=at, how=how))
    with plugins_loaded([code]) as loaded:
        cfg = EngineConfig(
            enabled=True, index_variant="odd_engine", baseline_steps=3, forward_ms=1.0
        )
        loop = EngineLoop(cfg)
        env = HybridEnvironment(stall_timeout_s=60.0)
        try:
            with pytest.raises(PluginFault) as err:
                try:
                    loop.attach(env)
                    env.run(until=env.timeout(env.now + seconds))
                finally:
                    loop.detach()
        finally:
            sys.modules[loaded[0].__module__].RELEASE.set()  # the stuck step returns
    return err.value


@pytest.mark.parametrize(("at", "phase"), [(2, "alone"), (6, "load")])
def test_a_hung_step_fails_the_point_naming_the_variant_and_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int, phase: str
) -> None:
    monkeypatch.setattr(engine, "STEP_LIMIT_S", 0.5)
    # The load runs for longer than the limit: the watchdog, not the end, finds the hang.
    fault = _loop_until_it_fails(tmp_path, at, "RELEASE.wait()", 5.0)
    text = str(fault)
    assert "\n" not in text
    assert text.startswith(
        f"{tmp_path / 'odd.py'}: index variant 'odd_engine', engine step {at - 1} ({phase}): "
        "did not return in 0.501 s (a hang?)"
    )


def test_a_step_hung_at_the_end_of_the_load_is_named_by_detach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "STEP_LIMIT_S", 2.0)
    fault = _loop_until_it_fails(tmp_path, 6, "RELEASE.wait()", 0.2)
    assert "engine step 5 (load): did not return in 2.001 s (a hang?)" in str(fault)


def test_sys_exit_in_a_step_fails_the_point_in_one_line(tmp_path: Path) -> None:
    fault = _loop_until_it_fails(tmp_path, 5, "sys.exit(7)", 2.0)
    text = str(fault)
    assert "engine step 4 (load): called sys.exit(7) (" in text
    assert "called sys.exit(7) (line 24, in component_index); the point is stopped" in text
