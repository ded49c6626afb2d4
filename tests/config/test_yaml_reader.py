"""YAML values read the same way everywhere, and read as YAML 1.2 reads them (issue 30, 10 and 15).

``--set`` values go through the bounds of a config file (an alias bomb on the command
line is refused in one line, not after a minute of CPU); numbers that PyYAML reads by
YAML 1.1 rules (``1:30`` is 90, ``010`` is 8) are refused with a hint instead of
misread; two percentiles never share a column.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sim.config import ConfigError, parse_config
from sim.config.yaml_reader import read_yaml_value
from sim.point.metrics import _extra_latency, extra_latency_columns

GUARD_S = 30


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"took more than {GUARD_S} s (the bounds were not applied?)")


@contextmanager
def bounded() -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(GUARD_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _bomb(levels: int = 9) -> str:
    parts, prev = ["&a [1,1,1,1,1,1,1,1,1,1]"], "a"
    for name in "bcdefghijk"[: levels - 1]:
        parts.append(f"&{name} [" + ",".join([f"*{prev}"] * 10) + "]")
        prev = name
    return "[" + ", ".join(parts) + "]"


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (_bomb(), "alias bomb"),
        ("[" * 5000 + "]" * 5000, "nested more than"),
        ("!!python/object/apply:os.system ['true']", "tag"),
        ("&l [*l]", "refers to itself"),
        ("9" * 30, "digits"),
        ("'unterminated", "not valid YAML"),
    ],
    ids=["alias-bomb", "deep", "python-tag", "recursive", "huge-int", "syntax"],
)
def test_a_set_value_is_read_under_the_config_bounds(write_config, value: str, needle: str) -> None:
    path = write_config()
    with bounded(), pytest.raises(ConfigError, match=needle) as info:
        parse_config(path, [f"model.regions={value}"])
    msg = str(info.value)
    assert msg.startswith("--set model.regions: ") and "\n" not in msg and len(msg) < 400


def test_plain_set_values_still_read_as_yaml() -> None:
    assert read_yaml_value("8", "--set x") == 8
    assert read_yaml_value("[1, 2]", "--set x") == [1, 2]
    assert read_yaml_value("numpy", "--set x") == "numpy"
    assert read_yaml_value("", "--set x") == ""
    assert read_yaml_value("0x10", "--set x") == 16  # hexadecimal is YAML 1.2 too


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("1:30", "base-60"),
        ("-1:30:00", "base-60"),
        ("1:30.5", "base-60"),
        ("010", "leading zero"),
        ("+007", "leading zero"),
        ("0b11", "binary"),
    ],
)
def test_yaml_11_numbers_are_refused_with_a_hint(write_config, text: str, needle: str) -> None:
    in_file = write_config(text=f"name: x\nconnector: {{workers: {text}}}\n", name="n.yaml")
    with pytest.raises(ConfigError, match=needle) as info:
        parse_config(in_file)
    assert str(info.value).startswith(f"{in_file}:2: connector.workers: ")
    assert "quote" in str(info.value)
    with pytest.raises(ConfigError, match=needle):
        parse_config(write_config(), [f"connector.workers={text}"])


def test_exponent_numbers_are_numbers_as_in_yaml_12(write_config) -> None:
    """PyYAML (YAML 1.1) wants a dot and a signed exponent: ``1e3`` and ``1.5e3`` were
    text, and a number field refused them as "not a valid number"."""
    text = "name: x\nstore: {latency_ms: 1.5e3, bandwidth_gb_per_s: 2E1}\n"
    cfg, _ = parse_config(write_config(text=text, name="e.yaml"))
    assert (cfg.store.latency_ms, cfg.store.bandwidth_gb_per_s) == (1500.0, 20.0)
    cfg, _ = parse_config(write_config(), ["store.latency_ms=1e-1"])
    assert cfg.store.latency_ms == 0.1
    assert read_yaml_value("[1e3, -2e-3, .5e1]", "--set x") == [1000.0, -0.002, 5.0]
    assert read_yaml_value("'1e3'", "--set x") == "1e3"  # quoted: text, as written
    assert read_yaml_value("1e", "--set x") == "1e"


def test_quoted_or_plain_numbers_mean_what_they_say(write_config) -> None:
    cfg, _ = parse_config(write_config(text="name: x\nconnector: {workers: 10}\n", name="a.yaml"))
    assert cfg.connector.workers == 10
    cfg, _ = parse_config(write_config(text="name: '010'\n", name="b.yaml"))
    assert cfg.name == "010"  # quoted: text, as written
    cfg, _ = parse_config(write_config(text="name: x\nseed: 0\n", name="c.yaml"))
    assert cfg.seed == 0  # a lone zero is zero in both YAML versions


def test_close_percentiles_get_columns_of_their_own(write_config) -> None:
    qs = [99.99999999999, 99.999999999999, 99.9, 95]
    cols = extra_latency_columns(qs)
    assert len(cols) == len(set(cols)) == 4
    assert "latency_p100_ms" not in cols
    assert "latency_p99.9_ms" in cols and "latency_p95_ms" in cols
    cfg, _ = parse_config(write_config({"output": {"percentiles": qs}}))
    assert len(cfg.output.all_percentiles) == 7


def test_an_extra_percentile_is_computed_at_its_own_value() -> None:
    """The column's number is the percentile computed, not its name read back (the name
    once rounded 99.99999999999 to 100, and the column held the maximum)."""
    lat = [float(i) for i in range(1, 1001)]
    out = _extra_latency(lat, [99.9, 99.99999999999])
    assert out["latency_p99.9_ms"] == pytest.approx(999.001)
    assert out["latency_p99.99999999999_ms"] < 1000.0


def test_set_keys_and_values_are_echoed_as_excerpts(write_config) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(write_config(), ["connector.variant=" + "v" * 1_000_000])
    assert len(str(info.value)) < 1000
    with pytest.raises(ConfigError) as info:
        parse_config(write_config(), ["a" * 1_000_000 + "..b=1"])
    assert len(str(info.value)) < 1000
