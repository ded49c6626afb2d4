"""Config loading: good files load into frozen objects; bad ones give one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sim.config import ConfigError, ExperimentConfig, parse_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_validate(path: Path) -> None:
    cfg, points = parse_config(path)
    assert cfg.name
    assert points


def test_quickstart_grid_is_variant_by_workers() -> None:
    cfg, points = parse_config(ROOT / "configs" / "quickstart.yaml")
    assert cfg.model.regions == 61 and cfg.model.block_size == 128
    combos = {(p.axes["variant"], p.axes["workers"]) for p in points}
    assert {("scalar", 1), ("scalar", 4), ("numpy", 1), ("numpy", 4)} <= combos
    for p in points:
        assert p.config.connector.variant == p.axes["variant"]
        assert p.config.connector.workers == p.axes["workers"]
        assert p.config.sweep == {} or p.config.sweep  # sweep is kept on the point config
    assert len({p.slug for p in points}) == len(points)


def test_config_is_immutable(write_config) -> None:
    cfg, _ = parse_config(write_config())
    with pytest.raises(ValidationError):
        cfg.connector.workers = 9  # type: ignore[misc]


def test_defaults_and_derived_values(write_config) -> None:
    cfg, points = parse_config(write_config())
    assert cfg.model.chunk_granularity == 16
    assert cfg.model.base_addrs(0)[1] - cfg.model.base_addrs(0)[0] == 256 * 1024
    assert (
        cfg.model.base_addrs(1)[0]
        == cfg.model.last_address - sum(cfg.model.region_bytes(r) for r in range(4))
        or cfg.model.kv_groups == 1
    )
    assert len(points) == 1 and points[0].axes == {"variant": "numpy", "workers": 2, "mode": "real"}


def test_plain_int_tokens_means_fixed(write_config) -> None:
    cfg, _ = parse_config(write_config({"workload": {"tokens": 64}}))
    assert cfg.workload.tokens.dist == "fixed" and cfg.workload.tokens.value == 64


def test_sweep_axes_label_columns_and_validate_each_point(write_config) -> None:
    path = write_config(
        {"sweep": {"connector.variant": ["scalar", "numpy"], "store.concurrency": [1, 2, 4]}}
    )
    _, points = parse_config(path)
    assert len(points) == 6
    assert set(points[0].axes) == {"variant", "workers", "mode", "concurrency"}


BAD = [
    ({"connector": {"workers": 0}}, "connector.workers", "greater than 0"),
    ({"connector": {"workers": "4"}}, "connector.workers", "valid integer"),
    ({"connector": {"workers": True}}, "connector.workers", "valid integer"),
    ({"connector": {"wokers": 2}}, "connector.wokers", "did you mean 'workers'"),
    ({"conector": {"workers": 2}}, "conector", "did you mean 'connector'"),
    ({"connector": {"variant": "nump"}}, "connector.variant", "did you mean 'numpy'"),
    ({"connector": {"handler": "per_request"}}, "connector.handler", "per_group"),
    ({"connector": {"options": {"x": 1}}}, "connector.options", "takes no options"),
    ({"model": {"regions": -1}}, "model.regions", "greater than 0"),
    ({"model": {"block_len": []}}, "model.block_len", "at least 1"),
    ({"model": {"block_len": [1, 2, 3, 4, 5]}}, "model.block_len", "only 4 regions"),
    ({"model": {"block_size": 16, "hash_block_size": 6}}, "model", "must divide"),
    ({"model": {"num_blocks": 1 << 32, "block_len": [1 << 30]}}, "model", "past int64"),
    ({"model": {"regions": 10**20}}, "model.regions", "less than or equal"),
    ({"model": {"regions": 10**30}}, "model.regions", "out of range"),
    ({"workload": {"requests": 0}}, "workload.requests", "greater than 0"),
    ({"workload": {"arrival": {"kind": "burst"}}}, "workload.arrival", "unknown kind"),
    (
        {"workload": {"arrival": {"kind": "poisson", "rate_rps": -3}}},
        "workload.arrival.rate_rps",
        "greater than 0",
    ),
    (
        {"workload": {"arrival": {"kind": "poisson", "rate": 3}}},
        "workload.arrival.rate",
        "did you mean 'rate_rps'",
    ),
    (
        {"workload": {"tokens": {"dist": "uniform", "low": 9, "high": 3}}},
        "workload.tokens",
        "must not exceed",
    ),
    ({"workload": {"tokens": {"dist": "zipf"}}}, "workload.tokens", "unknown dist"),
    ({"store": {"bandwidth_gb_per_s": 0}}, "store.bandwidth_gb_per_s", "greater than 0"),
    ({"store": {"latency_ms": float("nan")}}, "store.latency_ms", "finite"),
    ({"gil": {"switch_interval_ms": 0}}, "gil.switch_interval_ms", "greater than 0"),
    ({"name": "has space"}, "name", "no spaces"),
    ({"seed": -1}, "seed", "greater than or equal"),
    ({"sweep": {"connector.variant": []}}, "sweep", "no values"),
    ({"sweep": {"conector.variant": ["numpy"]}}, "sweep.conector.variant", "did you mean"),
    ({"sweep": {"connector.workers": [1, 0]}}, "connector.workers", "sweep.connector.workers=0"),
    ({"sweep": {"connector.variant": ["numpy", "numpy"]}}, "sweep", "repeats a value"),
    ({"repeats": 0}, "repeats", "greater than 0"),
]


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"), BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)]
)
def test_bad_values_give_one_line_error(write_config, overrides, field, fragment) -> None:
    path = write_config(overrides)
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(str(path))
    assert field in msg
    assert fragment in msg


BAD_FILES = [
    ("", "empty file"),
    ("name: [unclosed", "not valid YAML"),
    ("- a\n- b\n", "top level must be a mapping"),
    ("just a string", "top level must be a mapping"),
    ("name: x\nname: y\n", "duplicate key 'name' (first at line 1)"),  # not "last wins"
    (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
            for p, n in zip("abcde", "bcdef", strict=True)
        ),
        "alias bomb",
    ),
    ("seed: 1\n", "name: required field is missing"),
    ("name: ok\n1: x\n", "must be a string"),
]


@pytest.mark.parametrize(("text", "fragment"), BAD_FILES)
def test_bad_files_give_one_line_error(write_config, text, fragment) -> None:
    path = write_config(text=text)
    if fragment is None:
        cfg, _ = parse_config(path)
        assert cfg.name == "y"
        return
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    assert "\n" not in str(info.value)
    assert fragment in str(info.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        parse_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="is a directory"):
        parse_config(tmp_path)


def test_error_names_the_line(write_config) -> None:
    text = "name: t\nconnector:\n  variant: numpy\n  workers: 0\n"
    with pytest.raises(ConfigError) as info:
        parse_config(write_config(text=text))
    assert str(info.value).split(": ")[0].endswith("exp.yaml:4")


def test_model_validate_directly_rejects_unknown_keys() -> None:
    with pytest.raises(ValidationError):
        ExperimentConfig.model_validate({"name": "x", "bogus": 1})
