"""Reading Mooncake-format traces; malformed lines fail with file and line; the shipped sample."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from sim.config import ConfigError, parse_config
from sim.preflight import parse_checked
from sim.workload.trace import TraceError, read_trace, write_trace
from sim.workload.trace_synth import SynthSpec, synthesize_trace

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "configs" / "traces" / "mooncake_sample.jsonl"

ROWS = [
    {"timestamp": 0, "input_length": 1200, "output_length": 10, "hash_ids": [0, 1, 2]},
    {"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 3]},
    {"timestamp": 2500.5, "input_length": 300, "output_length": 0, "hash_ids": [4]},
]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text(text)
    return p


def test_reads_fields_in_file_order(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    write_trace(p, ROWS)
    tr = read_trace(p)
    assert len(tr) == 3 and tr.duration_ms == 2500.5
    assert tr.input_length.tolist() == [1200, 700, 300]
    assert tr.output_length.tolist() == [10, 5, 0]
    assert tr.blocks(1).tolist() == [0, 3] and tr.blocks(2).tolist() == [4]
    assert len(read_trace(p, limit=2)) == 2


def test_blank_lines_and_extra_keys_are_fine_output_length_optional(tmp_path: Path) -> None:
    p = _write(tmp_path, '\n{"timestamp": 1, "input_length": 5, "hash_ids": [7], "x": 1}\n\n')
    tr = read_trace(p)
    assert len(tr) == 1 and tr.output_length.tolist() == [0]


@pytest.mark.parametrize(
    ("line2", "needle"),
    [
        ('{"timestamp": 3, "input_length": 5, "hash_ids": [1', "not valid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"input_length": 5, "hash_ids": [1]}', "timestamp: expected milliseconds >= 0"),
        ('{"timestamp": -1, "input_length": 5, "hash_ids": [1]}', "timestamp: expected"),
        (
            '{"timestamp": 3, "input_length": 0, "hash_ids": [1]}',
            "input_length: expected an integer >= 1 (got 0)",
        ),
        ('{"timestamp": 3, "input_length": 5.5, "hash_ids": [1]}', "input_length"),
        (
            '{"timestamp": 3, "input_length": 5, "output_length": -2, "hash_ids": [1]}',
            "output_length",
        ),
        ('{"timestamp": 3, "input_length": 5, "hash_ids": "1,2"}', "hash_ids: expected a list"),
        ('{"timestamp": 3, "input_length": 5, "hash_ids": [1, -4]}', "hash_ids"),
        ('{"timestamp": 3, "input_length": 5, "hash_ids": [true]}', "hash_ids"),
        ('{"timestamp": 1, "input_length": 5, "hash_ids": [1]}', "earlier than the line before"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, line2: str, needle: str) -> None:
    first = '{"timestamp": 2, "input_length": 5, "hash_ids": [0]}\n'
    p = _write(tmp_path, first + "\n" + line2 + "\n")
    with pytest.raises(TraceError) as info:
        read_trace(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}:3: ") and needle in msg and "\n" not in msg


def test_empty_and_missing_traces(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="has no requests"):
        read_trace(_write(tmp_path, "\n\n"))
    with pytest.raises(TraceError, match="cannot read trace"):
        read_trace(tmp_path / "absent.jsonl")
    assert issubclass(TraceError, ConfigError)  # the CLI prints it as one line


def test_malformed_trace_fails_when_the_config_is_loaded(write_config, tmp_path: Path) -> None:
    _write(tmp_path, '{"timestamp": 0, "input_length": 5, "hash_ids": [0]}\nnot json\n')
    path = write_config(
        {
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": "t.jsonl"},
            }
        }
    )
    with pytest.raises(ConfigError) as info:
        parse_checked(path)  # the pre-flight reads every trace a config names
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 't.jsonl'}:2: not valid JSON")
    assert "workload.arrival.path" in msg and str(path) in msg


def test_missing_trace_file_names_the_field(write_config) -> None:
    path = write_config(
        {
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": "nope.jsonl"},
            }
        }
    )
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:") and "workload.arrival.path" in msg
    assert "nope.jsonl" in msg and "config file's directory" in msg


def test_sample_trace_has_shared_prefixes_and_sorted_times() -> None:
    tr = read_trace(SAMPLE)
    assert 200 <= len(tr) <= 500
    assert np.all(np.diff(tr.timestamps_ms) >= 0)
    assert len(np.unique(tr.hash_ids)) < len(tr.hash_ids)  # some blocks are shared
    blocks = -(-tr.input_length // 512)
    assert np.array_equal(blocks, np.diff(tr.offsets))  # one id per 512-token block


def test_sample_trace_is_what_the_script_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_sample_trace", ROOT / "experiments" / "make_sample_trace.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "again.jsonl"
    write_trace(out, synthesize_trace(mod.DEFAULT_SEED))
    assert out.read_bytes() == SAMPLE.read_bytes()


def test_synthesized_turns_extend_their_conversation() -> None:
    rows = synthesize_trace(3, SynthSpec(sessions=20))
    assert rows == synthesize_trace(3, SynthSpec(sessions=20))
    seen: set[int] = set()
    for r in rows:
        ids = r["hash_ids"]
        assert len(ids) == -(-r["input_length"] // 512)
        # A prefix may reuse known ids; after the first new id, every id is new.
        k = next((i for i, h in enumerate(ids) if h not in seen), len(ids))
        assert not seen.intersection(ids[k:])
        seen.update(ids)
