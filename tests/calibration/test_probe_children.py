"""validate-model's speed probe: one warm child per python and variant, kept.

A child a probe read the free-threaded grid's probes −25 % … +101 % about their median (a
cold process each time); the child now lives as long as the validation's real runs and
measures each probe when asked, one variant a child (what a process ran before moves what
a variant costs there). This interpreter stands in for the other one: the child is the
same code either way, and a tiny geometry keeps each probe to milliseconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.calibration.speed import ProbeChildren

#: measure_holds's arguments: variant, handler, chunks, regions, groups, reps, options.
TINY = ("scalar", "per_group", 4, 4, 1, 2, {})
#: Its child: this python, PYTHON_GIL as it is, the variant and handler.
KEY = (sys.executable, "default", "scalar", "per_group")


def test_one_child_answers_every_probe_and_ends_with_the_block() -> None:
    with ProbeChildren() as children:
        first = children.holds(sys.executable, "default", TINY)
        child = children._children[KEY]
        second = children.holds(sys.executable, "default", TINY)
        assert len(first) == len(second) == TINY[5]  # each request's hold
        assert min(first + second) > 0
        assert children._children[KEY] is child  # the same process
        assert child.poll() is None
    assert child.poll() is not None  # ended with the block, not left running
    assert not children._children


def test_a_probe_that_fails_is_one_line_and_the_child_goes_on() -> None:
    bad = ("no_such_variant", *TINY[1:])
    with ProbeChildren() as children:
        with pytest.raises(RuntimeError, match=r"probe under .*: .*no_such_variant"):
            children.holds(sys.executable, "default", bad)
        child = children._children[(sys.executable, "default", "no_such_variant", "per_group")]
        with pytest.raises(RuntimeError, match=r"no_such_variant"):
            children.holds(sys.executable, "default", bad)
        assert child.poll() is None  # it answered both and goes on


def test_each_variant_is_probed_in_a_process_of_its_own() -> None:
    # what a process ran before moves what a variant costs there (sim.calibration.speed)
    with ProbeChildren() as children:
        children.holds(sys.executable, "default", TINY)
        children.holds(sys.executable, "default", ("numpy", *TINY[1:]))
        children.holds(sys.executable, "default", TINY)
        assert len(children._children) == 2
        pids = {c.pid for c in children._children.values()}
        assert len(pids) == 2


def test_a_config_s_plugin_variant_is_probed_in_its_child() -> None:
    # the config's plugins: entry ({path, source}) is registered in the child, not here
    path = Path(__file__).resolve().parents[2] / "examples" / "my_variant.py"
    plugin = {"path": str(path), "source": path.read_text(encoding="utf-8")}
    with ProbeChildren() as children:
        holds = children.holds(sys.executable, "default", ("my_variant", *TINY[1:]), [plugin])
    assert len(holds) == TINY[5] and min(holds) > 0


def test_a_child_that_died_is_started_again() -> None:
    with ProbeChildren() as children:
        children.holds(sys.executable, "default", TINY)
        dead = children._children[KEY]
        dead.kill()
        dead.wait()
        assert min(children.holds(sys.executable, "default", TINY)) > 0
        assert children._children[KEY] is not dead
