"""Geometry presets and hf_config in the model section: resolution, conflicts, errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from sim.config import ConfigError, GeometryConfig, parse_config
from sim.config.presets import PRESETS, get_preset

DATA = Path(__file__).resolve().parents[1] / "data"


def test_deepseek_preset_is_the_default_geometry() -> None:
    default = GeometryConfig()
    ds = GeometryConfig(preset="deepseek-v3")
    assert (ds.regions, ds.block_len) == (default.regions, default.block_len) == (61, (147456,))


@pytest.mark.parametrize(
    ("preset", "tp", "regions", "block_len"),
    [
        ("llama-3.1-8b", 1, 64, 128 * 8 * 128 * 2),
        ("llama-3.1-70b", 1, 160, 128 * 8 * 128 * 2),
        ("llama-3.1-70b", 8, 160, 128 * 1 * 128 * 2),
        ("qwen2.5-7b", 2, 56, 128 * 2 * 128 * 2),
        ("qwen3-32b", 4, 128, 128 * 2 * 128 * 2),
        ("deepseek-v3", 8, 61, 147456),
    ],
)
def test_presets_resolve_per_rank(preset: str, tp: int, regions: int, block_len: int) -> None:
    g = GeometryConfig(preset=preset, tp=tp)
    assert g.regions == regions and g.block_len == (block_len,)


def test_block_len_follows_block_size_and_kv_dtype() -> None:
    g = GeometryConfig(preset="llama-3.1-8b", block_size=16, kv_dtype="fp8")
    assert g.block_len == (16 * 8 * 128 * 1,)


def test_preset_and_its_config_json_agree() -> None:
    for name, file in (
        ("llama-3.1-8b", "hf_llama_3_1_8b.json"),
        ("deepseek-v3", "hf_deepseek_v3.json"),
        ("qwen2.5-7b", "hf_qwen2_5_7b.json"),
    ):
        a = GeometryConfig(preset=name, tp=2)
        b = GeometryConfig(hf_config=str(DATA / file), tp=2)
        assert (a.regions, a.block_len) == (b.regions, b.block_len)


def test_every_preset_names_its_source() -> None:
    for p in PRESETS.values():
        assert "/" in p.hf_id and p.summary
        assert GeometryConfig(preset=p.name).regions > 0


def test_unknown_preset_suggests_a_name() -> None:
    with pytest.raises(ValueError, match=r"did you mean 'llama-3\.1-8b'"):
        get_preset("llama-3.1-8")


def test_resolved_config_validates_again_unchanged() -> None:
    g = GeometryConfig(preset="qwen3-32b", tp=2, block_size=64)
    assert GeometryConfig.model_validate(g.model_dump()) == g


def test_written_out_fields_must_agree() -> None:
    assert GeometryConfig(preset="llama-3.1-8b", regions=64, block_len=[262144]).regions == 64
    with pytest.raises(ValidationError, match="regions 3 disagrees with preset"):
        GeometryConfig(preset="llama-3.1-8b", regions=3)
    with pytest.raises(ValidationError, match="not both"):
        GeometryConfig(preset="llama-3.1-8b", hf_config=str(DATA / "hf_qwen2_5_7b.json"))
    with pytest.raises(ValidationError, match="tp applies only with preset or hf_config"):
        GeometryConfig(tp=2)
    with pytest.raises(ValidationError, match=r"dtype 'int2' is not known"):
        GeometryConfig(preset="llama-3.1-8b", kv_dtype="int2")


def test_yaml_hf_config_is_relative_to_the_config_file(write_config, tmp_path: Path) -> None:
    sub = tmp_path / "models"
    sub.mkdir()
    shutil.copy(DATA / "hf_llama_3_1_8b.json", sub / "config.json")
    cfg, _ = parse_config(
        write_config(
            {"model": {"regions": None, "block_len": None, "hf_config": "models", "tp": 2}}
        )
    )
    assert cfg.model.regions == 64 and cfg.model.block_len == (16 * 4 * 128 * 2,)
    assert Path(cfg.model.hf_config).is_absolute()


def test_yaml_sweep_over_presets(write_config) -> None:
    _, points = parse_config(
        write_config(
            {
                "model": {"regions": None, "block_len": None, "preset": "llama-3.1-8b"},
                "sweep": {"model.preset": ["llama-3.1-8b", "deepseek-v3"]},
            }
        )
    )
    assert [p.config.model.regions for p in points] == [64, 61]
    assert points[1].axes["preset"] == "deepseek-v3"


@pytest.mark.parametrize(
    ("model", "needle"),
    [
        ({"preset": "gpt-17"}, "model: unknown preset 'gpt-17'"),
        ({"hf_config": "nope.json"}, "model: hf_config "),
        ({"hf_config": str(DATA / "hf_mamba.json")}, "kvsim models an attention KV cache"),
        ({"preset": "llama-3.1-70b", "tp": 3}, "cannot be split evenly over tp=3"),
    ],
)
def test_yaml_errors_are_one_line(write_config, model: dict, needle: str) -> None:
    path = write_config({"model": {"regions": None, "block_len": None, **model}})
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    msg = str(info.value)
    assert needle in msg and "\n" not in msg and msg.startswith(f"{path}:")
