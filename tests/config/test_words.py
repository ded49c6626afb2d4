"""Config errors from the newcomer trial, in words: what is allowed, at the right line."""

from __future__ import annotations

import pytest

from sim.config import ConfigError, parse_config

CASES = [
    # (yaml text after "name: t\n", line, fragment)
    ("workload: {tokens: 64K}\n", 2, "write a whole number of tokens (e.g. 65536 for 64K)"),
    ("sweep: {connector.workers: 4}\n", 2, "the values of a sweep axis are a list, e.g. [4]"),
    ("store: 5\n", 2, "expected a section of settings"),
    ("sweep: {workers: [1, 2]}\n", 2, "did you mean 'connector.workers'?"),
    ("sweep: {store.bandwith_gbps: [1, 2]}\n", 2, "did you mean 'store.bandwidth_gb_per_s'?"),
    ("sweep: {store: [1]}\n", 2, "names a whole section"),
    (
        "connector: {variant: rows, options: {pause_gcc: true}}\n",
        2,
        "did you mean 'pause_gc'? allowed: pause_gc, share_size_rows, promote_young",
    ),
    (
        "seed: 1\nconnector:\n  variant: numpy\nsweep:\n  connector.variant:\n    - numpy\n"
        "    - nunba\n",
        8,
        "unknown variant 'nunba'; did you mean 'numba'?",
    ),
    ("sweep:\n  store.bandwidth_gb_per_s: [1,\n    -2]\n", 4, "greater than 0"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), CASES)
def test_errors_say_what_is_allowed_at_the_line(tmp_path, text, line, fragment) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: t\n" + text)
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{line}:"), msg
    assert fragment in msg, msg
    assert "Input should be a valid" not in msg and "Extra inputs" not in msg


def test_name_with_a_space_is_explained(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: my study\n")
    with pytest.raises(ConfigError, match=r"'my study' is not allowed; .*no spaces"):
        parse_config(path)


def test_sweeping_the_rate_uses_the_default_poisson_arrival(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: t\nsweep: {workload.arrival.rate_rps: [10, 20]}\n")
    _, points = parse_config(path)
    arrivals = [p.config.workload.arrival for p in points]
    assert [(a.kind, a.rate_rps) for a in arrivals] == [("poisson", 10), ("poisson", 20)]


@pytest.mark.parametrize(
    ("text", "line"), [("name: off\n", 1), ("name: t\nconnector: {variant: no}\n", 2)]
)
def test_a_yaml_boolean_where_a_string_belongs_says_to_quote_it(tmp_path, text, line) -> None:
    """YAML 1.1 reads an unquoted off/no as False before kvsim sees the text: pydantic's
    "Input should be a valid string (got False)" left a user to guess why."""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{line}:"), msg
    assert "got the boolean False" in msg and "quote it" in msg, msg


def test_a_swept_yaml_on_off_labels_its_points_on_and_off(tmp_path) -> None:
    """``sweep: {interpreter.gil: [on, off]}`` unquoted: YAML gives True, False; the points
    are labelled (and their directories named) on/off as the field took them, which the GIL
    on/off table looks for (sim.analysis.gil_onoff), not gil=True / gil=False."""
    path = tmp_path / "c.yaml"
    path.write_text("name: t\nsweep:\n  interpreter.gil: [on, off]\n  gil.probe: [true]\n")
    _, points = parse_config(path)
    assert [p.axes["gil"] for p in points] == ["on", "off"]
    assert [p.config.interpreter.gil for p in points] == ["on", "off"]
    assert points[1].label.endswith("gil=off,probe=True"), points[1].label
    assert points[1].slug.endswith("gil-off_probe-True"), points[1].slug
