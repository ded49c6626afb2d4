"""The check sees what a run will call: long requests, the run's geometry; a variant that
ends or hangs is named in one line, never ending kvsim (issue 43)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from connectors.plugin_file import PluginCode, plugins_loaded
from sim.cli import main
from sim.conformance import check_index_variant, check_variant

#: The reference loop, wrong only past ``LIMIT`` chunks (``WRONG`` says how).
SWITCHES = """
import sys
import numpy as np
from connectors.base import AddressVariant
from connectors.registry import register

LIMIT = {limit}


@register
class Switches(AddressVariant):
    name = "switches"

    def prepare_values(self, chunks, block_ids):
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        addrs, sizes, bids = [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
        if len(chunks) > LIMIT:
            {wrong}
        return addrs, sizes, bids
"""


def _switches(tmp_path: Path, limit: int, wrong: str) -> Path:
    path = tmp_path / "switches.py"
    path.write_text(textwrap.dedent(SWITCHES).format(limit=limit, wrong=wrong))
    return path


def test_numpy_arrays_on_long_requests_fail_the_check(tmp_path: Path, capsys) -> None:
    path = _switches(tmp_path, 12, "return [np.array(a) for a in addrs], sizes, bids")
    assert main(["check", "switches", "--plugin", str(path)]) == 1
    out = capsys.readouterr().out
    assert "300 chunks" in out and "the addresses are a numpy.ndarray, not a list" in out


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        ("return None", "returned a NoneType, not (addr_lists, size_lists, block_ids)"),
        ("bids[-1] = np.int64(bids[-1])", "block id is numpy.int64, not a Python int"),
    ],
)
def test_run_checks_on_its_own_geometry_and_longest_request(
    tmp_path: Path, write_config, capsys, wrong: str, said: str
) -> None:
    # Right on every request of the corpus (at most 300 chunks), wrong past 500: the run's
    # requests have 1,024 chunks on 61 regions, and the check before it compares those.
    path = _switches(tmp_path, 500, wrong)
    assert main(["check", "switches", "--plugin", str(path)]) == 0
    capsys.readouterr()
    cfg = write_config(
        {
            "model": {"regions": 61, "block_len": [147456], "block_size": 128},
            "workload": {"tokens": 131072},
            "connector": {"variant": "switches"},
        }
    )
    assert main(["run", "-q", str(cfg), "--plugin", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert f"{path}: variant 'switches' is not measured: the run's geometry (61 regions" in err
    assert "1024 chunks (131072 tokens)" in err and said in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("sys.exit(0)", "called sys.exit(0)"),
        ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
        ("raise SystemExit('bye')", "called sys.exit('bye')"),
        ("__import__('os')._exit(2)", "called os._exit(2)"),
    ],
)
def test_a_variant_that_ends_the_process_fails_check_in_one_line(
    tmp_path: Path, write_config, capsys, how: str, said: str
) -> None:
    path = _switches(tmp_path, 4, how)
    assert main(["check", "switches", "--plugin", str(path)]) == 1
    out = capsys.readouterr().out.strip()
    assert out.count("\n") == 0 and "Traceback" not in out
    assert f"5 chunks, per_group: {said} ({path} line 18, in prepare_values)" in out
    assert "a variant must not end or interrupt kvsim" in out
    cfg = write_config({"connector": {"variant": "switches"}})
    assert main(["run", "-q", str(cfg), "--plugin", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: variant 'switches' is not measured: " in err
    assert f"{said} (line 18, in prepare_values)" in err  # the file is named once, first
    assert main(["bench", "connectors", "--plugin", str(path)]) == 2
    assert "variant 'switches' is not measured" in capsys.readouterr().err


INDEX = """
import sys, threading
from connectors.registry import register_index
from connectors.index_cached import CachedIndex

RELEASE = threading.Event()


@register_index
class Odd(CachedIndex):
    name = "odd"

    def component_index(self, meta, component):
        if meta.num_reqs == 2:
            {how}
        return super().component_index(meta, component)
"""


def test_an_index_variant_that_hangs_is_named_within_the_limit(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="index variants need torch")
    code = PluginCode(str(tmp_path / "idx.py"), textwrap.dedent(INDEX).format(how="RELEASE.wait()"))
    import sys

    with plugins_loaded([code]) as loaded:
        try:
            result = check_index_variant("odd", timeout_s=1.0)
        finally:
            sys.modules[loaded[0].__module__].RELEASE.set()
    assert not result.ok
    assert result.failure == "query lens [16, 16]: did not return in 1 s (a hang?)"


def test_an_index_variant_that_exits_fails_its_check(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="index variants need torch")
    code = PluginCode(str(tmp_path / "idx.py"), textwrap.dedent(INDEX).format(how="sys.exit(4)"))
    with plugins_loaded([code]):
        result = check_index_variant("odd")
    assert not result.ok and result.passed == 4
    assert result.failure.startswith("query lens [16, 16]: called sys.exit(4) (")
    assert "a variant must not end or interrupt kvsim" in result.failure


def test_the_corpus_has_a_long_request_on_every_geometry() -> None:
    from sim.conformance.corpus import LONG_CHUNKS, corpus

    long = {c.geometry.name for c in corpus() if len(c.chunks) == LONG_CHUNKS}
    assert long == {c.geometry.name for c in corpus()}
    assert check_variant("rows", threads=1).ok
