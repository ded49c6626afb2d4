"""A corpus of hostile inputs against ``kvsim validate`` and ``kvsim run``.

Mutations of every shipped config (every numeric value pushed out of range or
to the wrong type, text damaged, tags, duplicate keys, bombs) plus hand-made
files. Each case must end with exit code 2 (0 where the input is valid), exactly
one line on stderr when it fails, never a traceback, never a hang; ``run`` must
refuse before it creates its output directory. Run in-process to stay fast.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sim.cli import main

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
#: Seconds a case may take before it counts as a hang (a guard, not a speed test).
HANG_S = 120
#: Longest line a message may be (issue 30 item 16: values are echoed as excerpts).
MAX_LINE = 2000


@dataclass(frozen=True)
class Case:
    id: str
    #: File contents, or None for a special path made by ``special``.
    text: str | bytes | None
    #: "invalid", "valid" or "either" (a value that some fields accept).
    expect: str
    special: str = ""


def _leaves(data: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, (*path, i))
    else:
        yield path, data


def _set(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    out = dict(data) if isinstance(data, dict) else list(data)
    out[path[0]] = _set(data[path[0]], path[1:], value)
    return out


NUMERIC_MUTATIONS: list[tuple[str, Any, str]] = [
    ("huge", 10**30, "invalid"),
    ("inf", float("inf"), "invalid"),
    ("nan", float("nan"), "invalid"),
    ("text", "abc", "invalid"),
    ("list", [1, 2], "invalid"),
    ("negative", -1, "invalid"),
    ("zero", 0, "either"),
]


def _mutations(cfg: Path) -> Iterator[Case]:
    text = cfg.read_text()
    data = yaml.safe_load(text)
    stem = cfg.stem
    numeric = [
        (p, v)
        for p, v in _leaves(data)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and p[0] != "sweep"
    ]
    for i, (path, _v) in enumerate(numeric):
        name, value, expect = NUMERIC_MUTATIONS[i % len(NUMERIC_MUTATIONS)]
        dotted = ".".join(map(str, path))
        yield Case(f"{stem}:{dotted}={name}", yaml.safe_dump(_set(data, path, value)), expect)
        name, value, expect = NUMERIC_MUTATIONS[(i + 3) % len(NUMERIC_MUTATIONS)]
        yield Case(f"{stem}:{dotted}={name}", yaml.safe_dump(_set(data, path, value)), expect)
    lines = text.splitlines(keepends=True)
    first_section = next(i for i, ln in enumerate(lines) if ln.startswith("model:"))
    yield Case(f"{stem}:truncated", text[: len(text) // 2], "either")
    yield Case(f"{stem}:duplicate-key", text + "seed: 99\n", "invalid")
    yield Case(f"{stem}:duplicate-section", text + "".join(lines[first_section:]), "invalid")
    yield Case(f"{stem}:tag", text.replace("seed:", "seed: !foo", 1), "invalid")
    yield Case(
        f"{stem}:python-tag",
        text.replace("seed:", "seed: !!python/object/apply:os.system ['true'] #", 1),
        "invalid",
    )
    yield Case(f"{stem}:binary-tag", text + "extra: !!binary aGVsbG8=\n", "invalid")
    yield Case(f"{stem}:complex-key", text + "? [a, b]\n: 1\n", "invalid")
    yield Case(f"{stem}:tab-indent", text.replace("\n  ", "\n\t", 1), "invalid")
    yield Case(f"{stem}:nul-byte", text.encode() + b"\x00", "invalid")
    yield Case(f"{stem}:bad-utf8", text.encode() + b"# \xff\xfe\n", "invalid")
    yield Case(f"{stem}:unknown-section", text + "sweeep: {}\n", "invalid")
    yield Case(
        f"{stem}:no-name", "".join(ln for ln in lines if not ln.startswith("name:")), "invalid"
    )
    yield Case(
        f"{stem}:name-slash", text.replace(f"name: {data['name']}", "name: ../x", 1), "invalid"
    )
    yield Case(f"{stem}:huge-seed", text.replace("seed:", f"seed: {'9' * 5000} #", 1), "invalid")
    yield Case(f"{stem}:repeats-huge", text + "repeats: 1000000\n", "invalid")
    yield Case(
        f"{stem}:grid-bomb",
        text.split("sweep:")[0]
        + "sweep:\n"
        + "".join(
            f"  {axis}: [{', '.join(str(v) for v in range(1, 13))}]\n"
            for axis in (
                "connector.workers",
                "store.concurrency",
                "store.retries",
                "seed",
                "engine.components",
                "engine.batch_size",
                "engine.pad_multiple",
                "engine.baseline_steps",
            )
        ),
        "invalid",
    )
    modelled = data.get("mode") == "model"  # simulated time: a long latency costs no wall time
    yield Case(
        f"{stem}:latency-1e8",
        yaml.safe_dump(_set(data, ("store", "latency_ms"), 1e8)),
        "either" if modelled else "invalid",
    )
    yield Case(
        f"{stem}:regions-1e7", yaml.safe_dump(_set(data, ("model",), {"regions": 10**7})), "invalid"
    )
    yield Case(f"{stem}:deep", text + "deep: " + "[" * 3000 + "]" * 3000 + "\n", "invalid")
    yield Case(f"{stem}:alias-self", text + "loop: &l [*l]\n", "invalid")
    yield Case(
        f"{stem}:variant-unknown", text.replace("variant:", "variant: nosuch #", 1), "invalid"
    )
    yield Case(f"{stem}:sweep-not-list", text + "\nsweep: {connector.variant: scalar}\n", "invalid")


HAND_MADE: list[Case] = [
    Case("empty", "", "invalid"),
    Case("comments-only", "# nothing\n", "invalid"),
    Case("document-marker", "---\n", "invalid"),
    Case("scalar-top", "just text\n", "invalid"),
    Case("list-top", "- a\n- b\n", "invalid"),
    Case("minimal-valid", "name: ok\n", "valid"),
    Case("tilde-output", "name: ok\noutput: {dir: '~/kvsim-out'}\n", "valid"),
    Case("binary-garbage", os.urandom(4096), "invalid"),
    Case("too-large", "name: ok\n" + "# pad\n" * 900_000, "invalid"),
    Case("dev-zero", None, "invalid", special="/dev/zero"),
    Case("dev-null", None, "invalid", special="/dev/null"),
    Case("fifo", None, "invalid", special="fifo"),
    Case("directory", None, "invalid", special="dir"),
    Case("missing", None, "invalid", special="missing"),
    Case("link-to-dev-zero", None, "invalid", special="link-zero"),
    Case("link-loop", None, "invalid", special="link-loop"),
    Case("name-list", "name: [1, 2]\n", "invalid"),
    Case("name-mapping", "name: {a: 1}\n", "invalid"),
    Case("name-date", "name: 2020-01-01\n", "invalid"),
    Case("name-long", f"name: {'a' * 300}\n", "invalid"),
    Case("null-key", "name: ok\nnull: 1\n", "invalid"),
    Case("tilde-key", "name: ok\n~: 1\n", "invalid"),
    Case("int-key", "name: ok\n1: x\n", "invalid"),
    Case("bool-key", "name: ok\ntrue: x\n", "invalid"),
    Case("nested-int-key", "name: ok\nmodel: {1: 2}\n", "invalid"),
    Case("merge-key", "name: ok\nbase: &b {regions: 4}\nmodel: {<<: *b}\n", "invalid"),
    Case("merge-valid", "name: ok\nx-base: &b 4\nmodel: {regions: *b}\n", "invalid"),
    Case(
        "alias-bomb",
        "name: ok\na: &a [1,1,1,1,1,1,1,1,1,1]\n"
        + "".join(
            f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
            for p, n in zip("abcde", "bcdef", strict=True)
        ),
        "invalid",
    ),
    Case(
        "deep-mapping", "name: ok\n" + "".join("  " * i + f"k{i}:\n" for i in range(400)), "invalid"
    ),
    Case("deep-flow-mapping", "name: ok\nx: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n", "invalid"),
    Case("long-string", "name: ok\nconnector: {variant: " + "x" * 1_000_000 + "}\n", "invalid"),
    Case("seed-float-huge", "name: ok\nseed: 1e400\n", "invalid"),
    Case("seed-hex", "name: ok\nseed: 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF\n", "invalid"),
    Case("seed-negative", "name: ok\nseed: -1\n", "invalid"),
    Case("seed-bool", "name: ok\nseed: yes\n", "invalid"),
    Case("seed-string-number", "name: ok\nseed: '5'\n", "invalid"),
    Case("requests-1e12", "name: ok\nworkload: {requests: 1000000000000}\n", "invalid"),
    Case("tokens-1e11", "name: ok\nworkload: {tokens: 100000000000}\n", "invalid"),
    Case("workers-1e5", "name: ok\nconnector: {workers: 100000}\n", "invalid"),
    Case("block-size-1e12", "name: ok\nmodel: {block_size: 1000000000000}\n", "invalid"),
    Case("switch-1e5", "name: ok\ngil: {switch_interval_ms: 100000.0}\n", "invalid"),
    Case(
        "rate-tiny",
        "name: ok\nworkload: {arrival: {kind: poisson, rate_rps: 0.00001}}\n",
        "invalid",
    ),
    Case(
        "think-1e8",
        "name: ok\nworkload: {arrival: {kind: closed, think_ms: 100000000.0}}\n",
        "invalid",
    ),
    Case("stall-1e8", "name: ok\nstore: {stall_prob: 1.0, stall_ms: 100000000.0}\n", "invalid"),
    Case(
        "backoff-1e8",
        "name: ok\nstore: {fail_prob: 0.5, retry_backoff_ms: 100000000.0}\n",
        "invalid",
    ),
    Case("bandwidth-tiny", "name: ok\nstore: {bandwidth_gb_per_s: 0.000001}\n", "invalid"),
    Case(
        "memory-bomb",
        "name: ok\nmodel: {regions: 4096, block_size: 1}\nworkload: {tokens: 67108864}\n",
        "invalid",
    ),
    Case("arrival-unknown", "name: ok\nworkload: {arrival: {kind: burst}}\n", "invalid"),
    Case("tokens-unknown", "name: ok\nworkload: {tokens: {dist: zipf}}\n", "invalid"),
    Case("variant-path", "name: ok\nconnector: {variant: ../../etc/passwd}\n", "invalid"),
    Case(
        "options-unknown",
        "name: ok\nconnector: {variant: numpy, options: {nosuch: 1}}\n",
        "invalid",
    ),
    Case("sweep-empty", "name: ok\nsweep: {connector.variant: []}\n", "invalid"),
    Case("sweep-repeat", "name: ok\nsweep: {connector.variant: [scalar, scalar]}\n", "invalid"),
    Case("sweep-unknown-axis", "name: ok\nsweep: {nosuch.field: [1]}\n", "invalid"),
    Case("sweep-section", "name: ok\nsweep: {connector: [1]}\n", "invalid"),
    Case("sweep-bad-value", "name: ok\nsweep: {connector.workers: [1, 100000]}\n", "invalid"),
    Case("max-points-0", "name: ok\nlimits: {max_points: 0}\n", "invalid"),
    Case(
        "max-points-small",
        "name: ok\nlimits: {max_points: 1}\nsweep: {connector.workers: [1, 2]}\n",
        "invalid",
    ),
    Case(
        "trace-missing",
        "name: ok\nworkload: {arrival: {kind: trace, path: /nonexistent.jsonl}}\n",
        "invalid",
    ),
    Case(
        "trace-dev-zero",
        "name: ok\nworkload: {arrival: {kind: trace, path: /dev/zero}}\n",
        "invalid",
    ),
    Case("hf-config-missing", "name: ok\nmodel: {hf_config: /nonexistent.json}\n", "invalid"),
    Case("preset-unknown", "name: ok\nmodel: {preset: nosuch}\n", "invalid"),
    Case("two-documents", "name: a\n---\nname: b\n", "invalid"),
    Case("anchor-undefined", "name: ok\nseed: *nothing\n", "invalid"),
    Case("unterminated-quote", "name: 'ok\n", "invalid"),
    Case("crlf-valid", "name: ok\r\nseed: 3\r\n", "valid"),
    # issue 30: data files and paths (items 2, 13, 16)
    Case(
        "calibration-dev-zero",
        "name: ok\nmode: model\nmachine: {calibration: /dev/zero}\n",
        "invalid",
    ),
    Case("calibration-dir", "name: ok\nmode: model\nmachine: {calibration: /tmp}\n", "invalid"),
    Case("calibration-nul", 'name: ok\nmode: model\nmachine: {calibration: "a\\0b"}\n', "invalid"),
    Case("output-dir-nul", 'name: ok\noutput: {dir: "a\\0b"}\n', "invalid"),
    Case("output-dir-too-long", f"name: ok\noutput: {{dir: /tmp/{'d' * 300}}}\n", "invalid"),
    Case("output-dir-unknown-user", "name: ok\noutput: {dir: ~no_such_user_kvsim/x}\n", "invalid"),
    Case(
        "empirical-dev-zero",
        "name: ok\nworkload: {tokens: {dist: empirical, path: /dev/zero}}\n",
        "invalid",
    ),
    Case("output-dir-home-var", "name: ok\noutput: {dir: $HOME/x}\n", "invalid"),
    Case("output-dir-braced-var", "name: ok\noutput: {dir: '${HOME}/x'}\n", "invalid"),
    Case("trace-nul", 'name: ok\nworkload: {arrival: {kind: trace, path: "a\\0b"}}\n', "invalid"),
    Case("hf-config-dev-zero", "name: ok\nmodel: {hf_config: /dev/zero}\n", "invalid"),
    Case(
        "variant-megabyte", "name: ok\nconnector: {variant: " + "v" * 3_000_000 + "}\n", "invalid"
    ),
    # issue 30 item 15: YAML 1.1 numbers that YAML 1.2 reads otherwise are refused
    Case("workers-sexagesimal", "name: ok\nconnector: {workers: 1:30}\n", "invalid"),
    Case("workers-octal", "name: ok\nconnector: {workers: 010}\n", "invalid"),
    Case("seed-binary", "name: ok\nseed: 0b11\n", "invalid"),
    Case(
        "rate-sexagesimal-float", "name: ok\nworkload: {arrival: {rate_rps: 1:30.5}}\n", "invalid"
    ),
    Case("name-octal-quoted", "name: '010'\n", "valid"),
    Case(
        "percentiles-close",
        "name: ok\noutput: {percentiles: [99.99999999999, 99.999999999999]}\n",
        "valid",
    ),
    Case("key-megabyte", "name: ok\nmodel: {" + "k" * 1_000_000 + ": 1}\n", "invalid"),
    Case("bom-valid", "\ufeffname: ok\n", "valid"),
]


def _cases() -> list[Case]:
    out = [case for cfg in CONFIGS for case in _mutations(cfg)]
    return [*out, *HAND_MADE]


CASES = _cases()


def _materialise(case: Case, tmp_path: Path, base_dir: Path) -> str:
    if case.special == "":
        path = base_dir / f"case-{abs(hash(case.id)) % 10**8}.yaml"
        data = case.text if isinstance(case.text, bytes) else str(case.text).encode()
        path.write_bytes(data)
        return str(path)
    if case.special.startswith("/dev/"):
        return case.special
    path = tmp_path / "special"
    if case.special == "fifo":
        os.mkfifo(path)
    elif case.special == "dir":
        path.mkdir()
    elif case.special == "link-zero":
        path.symlink_to("/dev/zero")
    elif case.special == "link-loop":
        path.symlink_to(path)
    return str(path)


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """Mutations live beside the shipped configs' data (relative trace paths resolve)."""
    d = tmp_path / "configs"
    d.mkdir()
    traces = CONFIGS[0].parent / "traces"
    if traces.is_dir():
        (d / "traces").symlink_to(traces)
    return d


def _hang_guard(signum: int, frame: Any) -> None:
    raise TimeoutError(f"a case ran past {HANG_S} s (hung?)")


def _one(argv: list[str], capsys) -> tuple[int, list[str]]:
    previous = signal.signal(signal.SIGALRM, _hang_guard)
    signal.alarm(HANG_S)
    try:
        rc = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    # an error echoes a bounded excerpt of what it was given, never megabytes on a line
    assert all(len(ln) <= MAX_LINE for ln in captured.err.splitlines()), "a huge message"
    return rc, [ln for ln in captured.err.splitlines() if ln.strip()]


def test_the_corpus_is_big_enough() -> None:
    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES)
    assert CONFIGS and all(
        sum(c.id.startswith(f"{cfg.stem}:") for c in CASES) >= 25 for cfg in CONFIGS
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_one_line_or_ok(
    case: Case, tmp_path: Path, config_dir: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    path = _materialise(case, tmp_path, config_dir)
    rc, err = _one(["validate", path], capsys)
    assert rc in (0, 2), (rc, err)
    if case.expect == "invalid":
        assert rc == 2, f"accepted: {case.id}"
    if case.expect == "valid":
        assert rc == 0, err
    if rc == 2:
        assert len(err) == 1 and err[0].startswith("kvsim: error: "), err
        out = tmp_path / "out"
        rc_run, err_run = _one(["run", "-q", path, "--out", str(out)], capsys)
        assert rc_run == 2 and len(err_run) == 1, (rc_run, err_run)
        assert not out.exists(), "run touched its output directory before refusing"
    else:
        assert err == [], err
        rc_dry, err_dry = _one(["run", "--dry-run", path, "--out", str(tmp_path / "dry")], capsys)
        # run checks more than validate (a model-mode calibration file): one line if it refuses
        assert (rc_dry, err_dry) == (0, []) or (rc_dry == 2 and len(err_dry) == 1), err_dry
        assert not (tmp_path / "dry").exists()
