"""A plug-in cannot end, hang or flood kvsim at import: each is refused in one line naming it."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

import connectors.plugin_file as plugin_file
from connectors.plugin_file import PluginCode, PluginError, plugins_loaded
from sim.cli import main

HEAD = """
import sys, time
from connectors.base import AddressVariant
from connectors.registry import register
"""

TAIL = """
@register
class Mine(AddressVariant):
    name = "mine_bounded"

    def prepare_values(self, chunks, block_ids):
        return [], [], []
"""


def _code(tmp_path: Path, middle: str) -> PluginCode:
    text = textwrap.dedent(HEAD) + textwrap.dedent(middle) + textwrap.dedent(TAIL)
    path = tmp_path / "ends.py"
    path.write_text(text)
    return PluginCode(str(path), text)


@pytest.mark.parametrize(
    ("middle", "said"),
    [
        ("sys.exit(0)\n", "called sys.exit(0) at import (line 5, in <module>)"),
        ("raise SystemExit(3)\n", "called sys.exit(3) at import"),
        ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt at import"),
        ("raise GeneratorExit\n", "raised GeneratorExit at import"),
        ("import os\nos._exit(0)\n", "called os._exit(0) at import (line 6, in <module>)"),
    ],
)
def test_a_file_that_ends_the_process_at_import_is_refused(
    tmp_path: Path, middle: str, said: str
) -> None:
    code = _code(tmp_path, middle)
    with pytest.raises(PluginError) as err, plugins_loaded([code]):
        pass
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{code.path}: the file {said}")
    assert "must not end or interrupt kvsim" in text


def test_a_file_that_hangs_at_import_is_named_after_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plugin_file, "IMPORT_TIMEOUT_S", 0.3)
    code = _code(tmp_path, "time.sleep(30)\n")
    t0 = time.monotonic()
    with pytest.raises(PluginError) as err, plugins_loaded([code]):
        pass
    assert time.monotonic() - t0 < 10
    assert str(err.value).startswith(f"{code.path}: did not finish running as a module in 0.3 s")


def test_sys_exit_at_import_fails_variants_and_validate_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _code(tmp_path, "sys.exit(0)\n")
    config = tmp_path / "c.yaml"
    config.write_text("name: c\nworkload: {requests: 4}\n")
    for argv in (
        ["variants", "--plugin", code.path],
        ["validate", str(config), "--plugin", code.path],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0
        assert err.startswith(f"kvsim: error: {code.path}: the file called sys.exit(0)")


def test_an_ordinary_exception_at_import_still_shows_the_users_frames(tmp_path: Path) -> None:
    code = _code(tmp_path, "def f():\n    raise KeyError('x')\nf()\n")
    with pytest.raises(PluginError) as err, plugins_loaded([code]):
        pass
    lines = str(err.value).splitlines()
    assert lines[0] == f"{code.path}: the file raised KeyError: 'x'"
    assert any("raise KeyError('x')" in ln for ln in lines[1:])


def test_a_thread_a_plugin_leaves_running_does_not_keep_kvsim_from_exiting(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    code = _code(
        tmp_path,
        "import threading\n"
        "threading.Thread(target=time.sleep, args=(600,), name='sleeper', daemon=False).start()\n",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "sim", "variants", "--plugin", code.path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    assert "mine_bounded" in proc.stdout
    assert proc.stderr.strip() == (
        "kvsim: note: 1 thread(s) started by a plug-in still running ('sleeper'); "
        "exiting without waiting for them (a plug-in's threads must end, or be daemons)"
    )
