"""A plug-in that ends, floods or breaks the contract in a point's load threads fails the
point at once, naming itself; the check before the run cannot see it (it misbehaves only
in the point's child process)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from sim.cli import main
from sim.process.capped_output import LOG_LIMIT_CHARS

#: The reference loop; in a point's child only, from its ``AFTER``-th request, ``WRONG``.
IN_THE_RUN = """
import sys
import numpy as np
from connectors.base import AddressVariant
from connectors.registry import register


def in_a_point():
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return getattr(spec, "name", "") == "sim.sweep.child"


@register
class Late(AddressVariant):
    name = "late"
    calls = 0

    def warm_up(self):
        {warm}
        super().warm_up()

    def prepare_values(self, chunks, block_ids):
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        addrs, sizes, bids = [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
        if in_a_point():
            Late.calls += 1
            if Late.calls > 3:
                {wrong}
        return addrs, sizes, bids
"""


def _run(tmp_path: Path, write_config, wrong: str = "pass", warm: str = "pass") -> dict:
    path = tmp_path / "late.py"
    path.write_text(textwrap.dedent(IN_THE_RUN).format(wrong=wrong, warm=warm))
    cfg = write_config(
        {
            "connector": {"variant": "late", "workers": 1},
            "limits": {"request_timeout_s": 60},
            "workload": {"requests": 8},
        }
    )
    code = main(["run", "-q", str(cfg), "--plugin", str(path), "--out", str(tmp_path / "r")])
    (status,) = (tmp_path / "r" / "points").glob("*/rep-0/status.json")
    return {"code": code, "path": path, **json.loads(status.read_text())}


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        ("sys.exit(0)", "called sys.exit(0)"),
        ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
        ("__import__('os')._exit(0)", "called os._exit(0)"),
    ],
)
def test_a_load_thread_that_ends_fails_the_point_naming_it(
    tmp_path: Path, write_config, wrong: str, said: str
) -> None:
    got = _run(tmp_path, write_config, wrong)
    assert got["code"] == 1 and got["status"] == "failed"
    error = got["error"]
    # Named at once (not after limits.request_timeout_s as "a worker hangs")
    assert "WatchdogError" not in error and "hangs" not in error
    assert error.startswith(f"PluginFault: {got['path']}: variant 'late', request ")
    assert f"{said} (line 28, in prepare_values) in a load thread" in error
    log = (tmp_path / "r").glob("points/*/rep-0/stderr.log")
    assert said.split()[-1].split("(")[0] in next(log).read_text()  # the log names it too


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        ("return None", "returned a NoneType, not (addr_lists, size_lists, block_ids)"),
        ("return np.array(addrs), sizes, bids", "addr_lists is a numpy.ndarray, not a list"),
        ("return addrs, sizes, bids[:-1]", "block_ids has 9 entries for 10 chunks"),
        ("bids[-1] = np.int64(bids[-1])", "chunk 9's block id is numpy.int64, not a Python int"),
        ("sizes[0] = [float(x) for x in sizes[0]]", "chunk 0's sizes are float, not Python ints"),
    ],
)
def test_a_result_outside_the_contract_fails_the_point(
    tmp_path: Path, write_config, wrong: str, said: str
) -> None:
    got = _run(tmp_path, write_config, wrong)
    assert got["code"] == 1 and got["status"] == "failed"
    assert got["error"].startswith(f"PluginFault: {got['path']}: variant 'late', request ")
    assert f"(10 chunks, group 0): {said}; the point is stopped" in got["error"]


def test_sys_exit_in_warm_up_fails_the_point_in_one_line(tmp_path: Path, write_config) -> None:
    got = _run(tmp_path, write_config, warm="if in_a_point(): sys.exit(5)")
    assert got["code"] == 1 and got["status"] == "failed"
    assert got["error"].startswith(
        f"PluginFault: {got['path']}: the plug-in called sys.exit(5) (line 19, in warm_up)"
    )


def test_a_plugin_printing_in_a_loop_is_cut_with_a_note(tmp_path: Path, write_config) -> None:
    got = _run(tmp_path, write_config, "print('x' * 99)\n                print('y' * 99)" * 1)
    assert got["code"] == 0 and got["status"] == "ok"  # printing is allowed, not kept
    path = tmp_path / "late.py"
    path.write_text(
        path.read_text().replace("print('x' * 99)", "for _ in range(3000): print('x' * 99)")
    )
    cfg = tmp_path / "exp.yaml"
    out = tmp_path / "r2"
    assert main(["run", "-q", str(cfg), "--plugin", str(path), "--out", str(out)]) == 0
    (log,) = out.glob("points/*/rep-0/stderr.log")
    text = log.read_text()
    assert len(text) < LOG_LIMIT_CHARS + 10_000
    assert "kvsim: output cut: " in text and "more characters were written" in text
    assert text.rstrip().endswith("y" * 99)  # the last writes follow the note


def test_a_thread_left_running_by_warm_up_does_not_hold_the_point(
    tmp_path: Path, write_config
) -> None:
    start = "import threading, time; threading.Thread(target=time.sleep, args=(600,)).start()"
    got = _run(tmp_path, write_config, warm=f"if in_a_point(): {start}")
    assert got["code"] == 0 and got["status"] == "ok"
    (log,) = (tmp_path / "r").glob("points/*/rep-0/stderr.log")
    assert "kvsim: note: 1 thread(s) started by a plug-in still running" in log.read_text()
