"""validate-model's speed probe under a point's own interpreter: one warm child, kept.

A child a probe read the free-threaded grid's probes −25 % … +101 % about their median (a
cold process each time); the child now lives as long as the validation's real runs and
measures each probe when asked. This interpreter stands in for the other one: the child
is the same code either way, and a tiny geometry keeps each probe to milliseconds.
"""

from __future__ import annotations

import sys

import pytest

from sim.calibration.speed import ProbeChildren

#: measure_holds's arguments: variant, handler, chunks, regions, groups, reps, options.
TINY = ("scalar", "per_group", 4, 4, 1, 2, {})


def test_one_child_answers_every_probe_and_ends_with_the_block() -> None:
    with ProbeChildren() as children:
        first = children.holds(sys.executable, True, TINY)
        child = children._children[(sys.executable, True)]
        second = children.holds(sys.executable, True, TINY)
        assert len(first) == len(second) == TINY[5]  # each request's hold
        assert min(first + second) > 0
        assert children._children[(sys.executable, True)] is child  # the same process
        assert child.poll() is None
    assert child.poll() is not None  # ended with the block, not left running
    assert not children._children


def test_a_probe_that_fails_is_one_line_and_the_child_goes_on() -> None:
    with ProbeChildren() as children:
        with pytest.raises(RuntimeError, match=r"probe under .*: .*no_such_variant"):
            children.holds(sys.executable, True, ("no_such_variant", *TINY[1:]))
        child = children._children[(sys.executable, True)]
        assert min(children.holds(sys.executable, True, TINY)) > 0
        assert children._children[(sys.executable, True)] is child


def test_a_child_that_died_is_started_again() -> None:
    with ProbeChildren() as children:
        children.holds(sys.executable, True, TINY)
        dead = children._children[(sys.executable, True)]
        dead.kill()
        dead.wait()
        assert min(children.holds(sys.executable, True, TINY)) > 0
        assert children._children[(sys.executable, True)] is not dead
