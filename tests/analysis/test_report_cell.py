"""Report.cell finds a value however it is written (2.0 is the 2 the tables write), and
says what it has when it does not, as `kvsim compare --baseline` does."""

from __future__ import annotations

import pytest

from sim.analysis.bootstrap import Interval
from sim.analysis.compare import KNOWN_METRICS, Cell, Comparison, find_value
from sim.api.reports import Report


def _report() -> Report:
    metric = KNOWN_METRICS["latency_p99_ms"]
    levels = [("1",), ("4",)]
    variants = {lv: ["2", "2.2"] for lv in levels}
    cells = {
        (lv, v, metric.name): Cell(
            1.0 if v == "2" else 1.1, 3, None if v == "2" else Interval(1.1, 1.0, 1.2)
        )
        for lv in levels
        for v in variants[lv]
    }
    comp = Comparison(
        "t", "hold_ms", "2", ["workers"], levels, variants, [metric], cells, 200, 0, 3
    )
    return Report(comparison=comp, markdown="")


def test_find_value_takes_the_one_number_a_text_writes() -> None:
    assert find_value(["2", "2.2"], "2.0") == "2"
    assert find_value(["2", "2.2"], "2.20") == "2.2"
    assert find_value(["scalar", "numpy"], "numpy") == "numpy"
    assert find_value(["2", "2.2"], "3") is None
    assert find_value(["nan"], "nan") == "nan"  # itself, though no finite number
    assert find_value(["2", "2.0"], "2.00") is None  # two candidates: none chosen


def test_a_cell_is_found_however_its_value_and_level_are_written() -> None:
    report = _report()
    assert report.cell("2.0", "latency_p99_ms", level=[4]).ratio is None
    got = report.cell("2.20", "latency_p99_ms", level=["4.0"])
    assert got.ratio is not None and got.value == pytest.approx(1.1)


def test_a_missing_cell_says_what_there_is() -> None:
    report = _report()
    with pytest.raises(KeyError, match=r"hold_ms='3' is not one of 2, 2\.2"):
        report.cell("3", "latency_p99_ms", level=["1"])
    with pytest.raises(KeyError, match=r"metric 'nope' is not compared; compared: latency_p99"):
        report.cell("2", "nope", level=["1"])
    with pytest.raises(KeyError, match="level"):
        report.cell("2", "latency_p99_ms", level=["8"])
    with pytest.raises(KeyError, match="2 levels"):
        report.cell("2", "latency_p99_ms")
