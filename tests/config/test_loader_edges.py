"""Config messages at the edges: each is one line naming the file, the field, the value
and what is allowed, where a traceback, a wrong field or a silent reading was before."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sim.config import ConfigError, parse_config
from sim.config.loader import parse_mapping
from tests.conftest import TINY

VARIANT = """
from connectors.base import AddressVariant
from connectors.registry import register


@register
class Mine(AddressVariant):
{body}

    def prepare_values(self, chunks, block_ids):
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
"""


def _text(extra: str = "", **replace: str) -> str:
    text = yaml.safe_dump({**TINY, "output": {"dir": "out"}}, sort_keys=False)
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text + extra


def _refused(path: Path, sets: tuple[str, ...] = (), plugins: tuple[str, ...] = ()) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(path, list(sets), list(plugins))
    msg = str(info.value)
    assert "\n" not in msg and "Traceback" not in msg, msg
    return msg


@pytest.mark.parametrize(
    "tail", ["plugins:\n", "plugins:\n#  - mine.py\n", "plugins:\n  # - mine.py\n"]
)
def test_an_empty_plugins_list_is_one_line(write_config, tail: str) -> None:
    path = write_config(text=_text(tail))
    msg = _refused(path)
    assert msg.startswith(f"{path}:") and "plugins: expected a list of .py files" in msg
    assert "got nothing" in msg


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('    name = "mine"\n    Options = dict', "Mine.Options is dict; a variant's Options is"),
        ('    name = ("a", "b")', "Mine.name is ('a', 'b') (tuple); a variant name is a string"),
        ('    name = "two words"', "Mine.name is 'two words'; a variant name is letters"),
    ],
)
def test_a_plugin_of_the_wrong_shape_is_named(
    write_config, tmp_path: Path, body: str, said: str
) -> None:
    (tmp_path / "mine.py").write_text(VARIANT.format(body=body))
    path = write_config(text=_text("plugins: [mine.py]\n"))
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    first = str(info.value).splitlines()[0]  # then the plug-in's own frames
    assert first.startswith(str(tmp_path / "mine.py")) and said in first, first


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("0o7", "0o7 is an octal number in YAML 1.2 but text in YAML 1.1"),
        ("1_0", "1_0: YAML 1.1 drops the underscore (reads 10); write 10"),
        ("1_00_0", "1_00_0: YAML 1.1 drops the underscore (reads 1000)"),
    ],
)
def test_numbers_yaml_1_1_misreads_are_refused_with_a_hint(
    write_config, value: str, said: str
) -> None:
    path = write_config(text=_text(**{"seed: 3": f"seed: {value}"}))
    msg = _refused(path)
    assert msg.startswith(f"{path}:2: seed: ") and said in msg, msg
    with pytest.raises(ConfigError, match="--set seed"):
        parse_config(write_config(), [f"seed={value}"])


def test_digits_grouped_by_thousands_read_as_the_number(write_config) -> None:
    cfg, _ = parse_config(write_config(text=_text(**{"seed: 3": "seed: 10_000"})))
    assert cfg.seed == 10_000


def test_a_typo_beside_a_missing_field_names_the_typo(write_config) -> None:
    path = write_config(text=_text(**{"tokens: 160": "tokens: {dist: uniform, low: 16, hihg: 64}"}))
    msg = _refused(path)
    assert "workload.tokens.hihg: unknown key 'hihg'; did you mean 'high'?" in msg, msg


def test_sweep_order_belongs_under_sweep(write_config) -> None:
    path = write_config(text=_text("sweep_order: grid\n"))
    msg = _refused(path)
    assert msg.startswith(f"{path}:") and "sweep_order: unknown key at the top level" in msg
    assert "sweep: {order: grid}" in msg
    assert "--set sweep_order" in _refused(write_config(), ("sweep_order=grid",))
    cfg, _ = parse_config(write_config(), ["sweep.order=grid"])
    assert cfg.sweep_order == "grid"
    # A loaded config's dump (what Experiment.with_ builds on) still carries it on top.
    again, _ = parse_mapping(cfg.model_dump(mode="json"))
    assert again.sweep_order == "grid"


def test_a_set_on_a_trace_config_is_blamed_on_the_set(write_config, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"  # a Mooncake trace: 512 tokens (one hash) a line
    trace.write_text(
        "\n".join(
            f'{{"timestamp": {i * 10}, "input_length": 512, "output_length": 1, "hash_ids": [{i}]}}'
            for i in range(4)
        )
        + "\n"
    )
    text = _text(**{"requests: 8": f"arrival: {{kind: trace, path: {trace}}}"})
    text = text.replace("  arrival:\n    kind: poisson\n    rate_rps: 400\n", "")
    text = text.replace("  tokens: 160\n", "")  # a trace sets them
    path = write_config(text=text)
    parse_config(path)  # the file itself is fine
    msg = _refused(path, ("workload.requests=5",))
    assert msg.startswith(f"{path} (--set workload.requests): "), msg


def test_a_validators_got_is_said_once(write_config) -> None:
    path = write_config(
        text=_text("output:\n  requests: sample 0\n").replace("output:\n  dir: out\n", "")
    )
    msg = _refused(path)
    assert msg.count("got 'sample 0'") == 1, msg


def test_a_plugin_that_cannot_be_read_is_named_once(write_config, tmp_path: Path, capsys) -> None:
    from sim.cli import main

    missing = tmp_path / "nothere.py"
    for args in (["check", "x"], ["validate", str(write_config())]):
        assert main([*args, "--plugin", str(missing)]) == 2
        err = capsys.readouterr().err
        assert err == f"kvsim: error: --plugin {missing}: cannot read plug-in (no such file)\n"
