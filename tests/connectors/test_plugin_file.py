"""Variants from a user's file: loaded for a scope, named in configs, hashed, refused if broken."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from connectors import registry
from connectors.plugin_file import PluginCode, PluginError, plugins_loaded
from sim.cli import main
from sim.config import parse_config
from sim.errors import ConfigError

#: The smallest honest variant: the reference loop, in a user's file.
GOOD = textwrap.dedent(
    """
    from connectors.base import AddressVariant
    from connectors.registry import register


    @register
    class Mine(AddressVariant):
        name = "mine"
        description = "the reference loop, from a file"

        def prepare_values(self, chunks, block_ids):
            addrs, sizes, bids = [], [], []
            for start, end in chunks:
                a, s, b = self.db.prepare_value(start, end, block_ids)
                addrs.append(a)
                sizes.append(s)
                bids.append(b)
            return addrs, sizes, bids
    """
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_plugin_registers_only_inside_its_scope(tmp_path: Path) -> None:
    code = PluginCode(str(tmp_path / "mine.py"), GOOD)
    with plugins_loaded([code]) as loaded:
        assert [c.name for c in loaded] == ["mine"]
        assert registry.get_address_variant("mine") is loaded[0]
    assert "mine" not in registry.address_variant_names()
    import sys

    assert code.module_name not in sys.modules


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        (
            "from connectors.registry import register\n@register\nclass X:\n    name = 'x'\n",
            "is registered with @register but is not a subclass of connectors.base.AddressVariant",
        ),
        (
            "from connectors.base import AddressVariant\nfrom connectors.registry import register\n"
            "@register\nclass X(AddressVariant):\n    pass\n",
            "X has no name: give the class a `name",
        ),
        (
            "from connectors.base import AddressVariant\nfrom connectors.registry import register\n"
            "@register\nclass ScalarVariant(AddressVariant):\n    name = 'scalar'\n",
            "variant name 'scalar' is taken by connectors.address_scalar",
        ),
        (  # `kvsim check cached` would have found it, not the built-in index variant
            "from connectors.base import AddressVariant\nfrom connectors.registry import register\n"
            "@register\nclass Cached(AddressVariant):\n    name = 'cached'\n",
            "name 'cached' is taken by the index variant of connectors.index_cached",
        ),
        ("import math\n", "registers no variant; decorate an AddressVariant subclass"),
    ],
)
def test_a_broken_plugin_is_one_line_naming_the_file(tmp_path: Path, text: str, wanted) -> None:
    path = write(tmp_path, "broken.py", text)
    with pytest.raises(PluginError) as err, plugins_loaded([PluginCode(str(path), text)]):
        pass
    msg = str(err.value)
    assert msg.startswith(f"{path}: ")
    assert wanted in msg
    assert "\n" not in msg
    assert "x" not in registry.address_variant_names()


def test_a_name_another_plugin_file_took_names_that_file(tmp_path: Path) -> None:
    first = PluginCode(str(tmp_path / "a.py"), GOOD)
    second = PluginCode(str(tmp_path / "b.py"), GOOD + "# edited\n")
    with pytest.raises(PluginError) as err, plugins_loaded([first, second]):
        pass
    assert str(err.value) == (
        f"{tmp_path / 'b.py'}: variant name 'mine' is taken by {tmp_path / 'a.py'}: a plug-in "
        "cannot reuse a built-in's or another plug-in's name; choose another `name`"
    )


def test_an_import_error_shows_the_users_frames_only(tmp_path: Path) -> None:
    text = "import math\n\n\ndef helper():\n    return math.nope\n\n\nhelper()\n"
    path = write(tmp_path, "oops.py", text)
    with pytest.raises(PluginError) as err, plugins_loaded([PluginCode(str(path), text)]):
        pass
    lines = str(err.value).splitlines()
    head = "the file raised AttributeError: module 'math' has no attribute 'nope'"
    assert lines[0] == f"{path}: {head}"
    assert lines[1:] == [
        f'  File "{path}", line 8, in <module>',
        "    helper()",
        f'  File "{path}", line 5, in helper',
        "    return math.nope",
    ]


def test_a_config_names_a_plugin_variant_and_hashes_its_text(tmp_path: Path, write_config) -> None:
    (tmp_path / "mine.py").write_text(GOOD)
    path = write_config(
        {"plugins": ["mine.py"], "sweep": {"connector.variant": ["scalar", "mine"]}}
    )
    from sim.sweep.identity import config_hash, config_identity

    cfg, points = parse_config(path)
    assert [p.config.connector.variant for p in points] == ["scalar", "mine"]
    assert cfg.plugins[0].path == str(tmp_path / "mine.py")
    assert cfg.plugins[0].source == GOOD
    assert "mine" not in registry.address_variant_names()  # only while the config loaded
    ident = config_identity(cfg)
    assert ident["plugins"] == [str(tmp_path / "mine.py")]
    assert "source" not in json.dumps(ident)
    before = config_hash(cfg)
    (tmp_path / "mine.py").write_text(GOOD + "# an edit\n")
    assert config_hash(parse_config(path)[0]) != before


def test_plugin_on_the_command_line_and_its_errors(tmp_path: Path, write_config, capsys) -> None:
    write(tmp_path, "mine.py", GOOD)
    path = write_config({"connector": {"variant": "mine"}})
    with pytest.raises(ConfigError, match="unknown variant 'mine'") as err:
        parse_config(path)
    # A user who forgot the file (a --resume without --plugin) is told where variants come from.
    assert "(one of your own: plugins: [FILE] in the config, or --plugin FILE" in str(err.value)
    assert main(["variants", "mine"]) == 2
    assert "(one of your own: --plugin FILE)" in capsys.readouterr().err
    assert main(["bench", "connectors", "--variants", "scalar,mine"]) == 2
    assert "(one of your own: --plugin FILE)" in capsys.readouterr().err
    assert parse_config(path, plugins=[str(tmp_path / "mine.py")])[0].connector.variant == "mine"
    bad = write_config({"plugins": ["absent.py"]}, name="bad.yaml")
    wanted = r"bad\.yaml:\d+: plugins\[0\]: .*absent\.py: cannot read"
    with pytest.raises(ConfigError, match=wanted):
        parse_config(bad)
    assert main(["variants", "--plugin", str(tmp_path / "mine.py")]) == 0
    assert "mine " in capsys.readouterr().out
    assert main(["variants", "--plugin", str(tmp_path / "absent.py")]) == 2
    assert "--plugin" in capsys.readouterr().err


def test_a_plugin_point_runs_in_its_child_and_resume_names_the_edited_file(
    tmp_path: Path, write_config, capsys
) -> None:
    """The child gets the plug-in's text in its spec, and an edit afterwards refuses
    --resume, naming the file."""
    plugin = write(tmp_path, "mine.py", GOOD)
    path = write_config(
        {
            "plugins": ["mine.py"],
            "workload": {"requests": 3},
            "sweep": {"connector.variant": ["mine"]},
        }
    )
    assert main(["run", "-q", str(path)]) == 0
    spec = json.loads(next((tmp_path / "out" / "points").glob("*/rep-0/spec.json")).read_text())
    assert spec["config"]["plugins"][0]["source"] == GOOD
    status = json.loads(next((tmp_path / "out" / "points").glob("*/rep-0/status.json")).read_text())
    assert status["status"] == "ok"
    plugin.write_text(GOOD + "\n# changed\n")
    capsys.readouterr()
    assert main(["run", "--resume", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"plugins[0] {plugin}: the file's contents changed" in err


def test_a_syntax_error_shows_the_line(tmp_path: Path) -> None:
    text = "x = 1\ndef f(:\n    pass\n"
    path = write(tmp_path, "syn.py", text)
    with pytest.raises(PluginError) as err, plugins_loaded([PluginCode(str(path), text)]):
        pass
    lines = str(err.value).splitlines()
    assert lines[0].startswith(f"{path}: the file raised SyntaxError: ")
    assert lines[1:] == [f'  File "{path}", line 2', "    def f(:"]
