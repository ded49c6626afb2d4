"""``kvsim geometry``: what a preset or a config.json resolves to, as a user reads it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"


def _fields(out: str) -> dict[str, str]:
    return {line[:12].strip(): line[13:] for line in out.splitlines() if line.strip()}


def test_lists_presets_without_an_argument(capsys) -> None:
    assert main(["geometry"]) == 0
    out = capsys.readouterr().out
    for name in ("deepseek-v3", "llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen3-32b"):
        assert name in out


def test_preset_prints_regions_block_len_and_sizes(capsys) -> None:
    assert main(["geometry", "llama-3.1-70b", "--tp", "8"]) == 0
    f = _fields(capsys.readouterr().out)
    assert f["regions"].startswith("160 (K and V per layer)")
    assert f["block_len"].startswith("32768 bytes per 128-token block")
    # 80 layers x 2 x 1 head x 128 x 2 bytes per token on one of 8 ranks.
    assert f["per token"].startswith(f"{80 * 2 * 128 * 2} bytes")
    assert f["per chunk"].startswith(f"{80 * 2 * 128 * 2 * 128} bytes")
    assert f["resolves to"] == "regions: 160, block_len: [32768]"
    assert "preset: llama-3.1-70b, tp: 8" in f["config"]


def test_config_json_path_and_block_size(capsys) -> None:
    assert main(["geometry", str(DATA / "hf_deepseek_v3.json"), "--block-size", "64"]) == 0
    f = _fields(capsys.readouterr().out)
    assert f["attention"].startswith("MLA: 61 layers")
    assert f["resolves to"] == f"regions: 61, block_len: [{64 * 576 * 2}]"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["llama-3.1-9b"], "did you mean 'llama-3.1-8b'"),
        ([str(DATA / "hf_mamba.json")], "kvsim models an attention KV cache"),
        (["llama-3.1-8b", "--tp", "3"], "cannot be split evenly over tp=3"),
        (["llama-3.1-8b", "--block-size", "0"], "--block-size"),
        (["llama-3.1-8b", "--kv-dtype", "int4"], "dtype 'int4' is not known"),
    ],
)
def test_errors_are_one_line(capsys, args: list[str], needle: str) -> None:
    assert main(["geometry", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvsim: error: ") and needle in err and "\n" not in err


def test_does_not_import_torch_or_numba() -> None:
    code = (
        "import sys; from sim.cli import main; main(['geometry', 'qwen3-32b']); "
        "assert 'torch' not in sys.modules and 'numba' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)
