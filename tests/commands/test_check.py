"""``kvsim check``: a variant against the reference; run and bench refuse wrong plug-ins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from connectors.plugin_file import PluginCode, plugins_loaded
from sim.cli import main
from sim.conformance import check_index_variant, check_variant
from sim.conformance.corpus import corpus

#: Region 2 of chunk 1 one block too far: the bug the check must name.
OFF_BY_ONE = """
from connectors.base import AddressVariant
from connectors.registry import register


@register
class OffByOne(AddressVariant):
    name = "offbyone"

    def prepare_values(self, chunks, block_ids):
        addrs, sizes, bids = [], [], []
        for c, (s, e) in enumerate(chunks):
            a, z, b = self.db.prepare_value(s, e, block_ids)
            if c == 1 and len(a) > 2:
                a[2] += self.db.region_block_len()[2]
            addrs.append(a)
            sizes.append(z)
            bids.append(b)
        return addrs, sizes, bids
"""

#: Right values, wrong type: NumPy scalars where the bindings need Python ints.
NUMPY_INTS = """
import numpy as np
from connectors.base import AddressVariant
from connectors.registry import register


@register
class NpInts(AddressVariant):
    name = "npints"

    def prepare_values(self, chunks, block_ids):
        n = len(chunks)
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [list(np.array(a, dtype=np.int64)) for a, _, _ in out], [
            z for _, z, _ in out
        ], [b for _, _, b in out][:n]
"""

#: Right from one thread, wrong when calls overlap: it keeps the call's block ids on the
#: instance (the shared-state bug docs/your-connector.md warns of), and a call that starts
#: while another sleeps in it overwrites them. Only the threaded pass can see it.
THREAD_BUG = """
import time
from connectors.base import AddressVariant
from connectors.registry import register


@register
class SharedState(AddressVariant):
    name = "sharedstate"

    def prepare_values(self, chunks, block_ids):
        self._block_ids = list(block_ids)
        time.sleep(0.002)  # another load thread runs here
        out = [self.db.prepare_value(s, e, self._block_ids) for s, e in chunks]
        return [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
"""

#: Never returns on an empty request (until the test releases it).
HANGS = """
import threading
from connectors.base import AddressVariant
from connectors.registry import register

RELEASE = threading.Event()


@register
class Hangs(AddressVariant):
    name = "hangs"

    def prepare_values(self, chunks, block_ids):
        if not chunks:
            RELEASE.wait()
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
"""

#: An index variant that maps every token one request too far.
WRONG_INDEX = """
from connectors.registry import register_index
from connectors.index_cached import CachedIndex


@register_index
class Shifted(CachedIndex):
    name = "shifted"

    def component_index(self, meta, component):
        return super().component_index(meta, component) + 1
"""


#: Raises in its own helper, from warm_up's first call: the user's bug, not kvsim's.
RAISES = """
from connectors.base import AddressVariant
from connectors.registry import register


def lookup(table):
    return table["missing"]


@register
class Raises(AddressVariant):
    name = "raises"

    def prepare_values(self, chunks, block_ids):
        return lookup({})
"""

#: An index variant whose buffer allocation (in _setup, called by warm_up) raises.
INDEX_SETUP_RAISES = """
from connectors.registry import register_index
from connectors.index_cached import CachedIndex


@register_index
class Broken(CachedIndex):
    name = "broken"

    def _setup(self):
        raise RuntimeError("no buffer for you")
"""


#: Right at its default option, wrong at shift=1: the setting is part of what failed.
WRONG_AT_ONE_SETTING = """
from pydantic import BaseModel, ConfigDict, Field
from connectors.base import AddressVariant
from connectors.registry import register


class Opts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    shift: int = Field(0, ge=0, description="blocks to add to region 0 (0 is right)")


@register
class Shifty(AddressVariant):
    name = "shifty"
    Options = Opts

    def prepare_values(self, chunks, block_ids):
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        step = self.options.shift * self.db.region_block_len()[0]
        return [[a[0] + step, *a[1:]] for a, _, _ in out], [z for _, z, _ in out], [
            b for _, _, b in out
        ]
"""


def _plugin(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_corpus_covers_what_the_issue_lists() -> None:
    cases = corpus()
    names = {c.geometry.name for c in cases}
    assert any("mla" in n for n in names) and any("mha" in n for n in names)
    assert any("group 1" in n for n in names)
    assert {c.handler for c in cases} == {"per_chunk", "per_group"}
    assert any(not c.chunks for c in cases) and any(len(c.chunks) == 1 for c in cases)
    partial = [
        c
        for c in cases
        if c.chunks and c.chunks[-1][1] - c.chunks[-1][0] < c.geometry.db.block_size
    ]
    assert partial
    assert any(len(set(c.geometry.db.block_len)) > 1 for c in cases)
    edge = max(
        a
        for c in cases
        for (s, _e) in c.chunks
        for a in c.geometry.db.prepare_value(s, s + c.geometry.db.hash_block_size, c.block_ids)[0]
    )
    assert edge > 2**63 - 2**41  # an address just below INT64_MAX


@pytest.mark.parametrize("name", ["scalar", "numpy", "rows"])
def test_built_in_variants_pass(name: str) -> None:
    result = check_variant(name, threads=2)
    assert result.ok, result.failure
    assert result.passed == result.cases == len(corpus())


def test_off_by_one_is_named_by_check_and_refused_by_run(
    tmp_path: Path, write_config, capsys
) -> None:
    path = _plugin(tmp_path, "off.py", OFF_BY_ONE)
    assert main(["check", "offbyone", "--plugin", str(path)]) == 1
    out = capsys.readouterr().out
    assert (
        "first mismatch: mla 5 regions, 5 chunks, per_group: chunk 1, region 2: address expected 0x"
        in out
    )
    assert "(+1 block)" in out
    cfg = write_config({"connector": {"variant": "offbyone"}})
    assert main(["run", "-q", str(cfg), "--plugin", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: variant 'offbyone' is not measured: " in err
    assert "chunk 1, region 2: address expected" in err
    assert "checking plug-in" not in err  # -q: the error only
    assert not (tmp_path / "out").exists()  # refused before the run directory was made
    # without -q a line says what the seconds before the refusal are spent on
    assert main(["run", str(cfg), "--plugin", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("checking plug-in variant 'offbyone' against kvsim check's corpus")
    assert lines[1].startswith(f"kvsim: error: {path}: variant 'offbyone' is not measured: ")


def test_numpy_ints_are_refused_with_the_reason(tmp_path: Path, capsys) -> None:
    path = _plugin(tmp_path, "np.py", NUMPY_INTS)
    assert main(["check", "npints", "--plugin", str(path)]) == 1
    out = capsys.readouterr().out
    assert "address is numpy.int64, not a Python int" in out
    assert "native bindings reject NumPy scalars" in out
    assert main(["bench", "connectors", "--plugin", str(path)]) == 2
    assert "variant 'npints' is not measured" in capsys.readouterr().err


def test_run_names_the_option_setting_it_refused_and_a_check_that_sees_it(
    tmp_path: Path, write_config, capsys
) -> None:
    import shlex

    path = _plugin(tmp_path, "shifty.py", WRONG_AT_ONE_SETTING)
    cfg = write_config({"connector": {"variant": "shifty", "options": {"shift": 1}}})
    assert main(["run", "-q", str(cfg), "--plugin", str(path)]) == 2
    err = capsys.readouterr().err
    assert "variant 'shifty' with connector.options {shift: 1} is not measured" in err
    again = err.split("(`", 1)[1].split("` runs the whole check)", 1)[0]
    assert again.endswith("--option shift=1")
    assert main(shlex.split(again)[1:]) == 1  # the command it suggests finds the mismatch
    assert "(+1 block)" in capsys.readouterr().out
    assert main(["check", "shifty", "--plugin", str(path)]) == 0  # the default is right


def test_a_variant_that_raises_is_one_line_naming_its_own_line(
    tmp_path: Path, write_config, capsys
) -> None:
    path = _plugin(tmp_path, "raises.py", RAISES)
    assert main(["check", "raises", "--plugin", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "Traceback" not in out
    assert "warm_up() raised KeyError: 'missing'" in out
    assert f"({path} line 7, in lookup)" in out
    cfg = write_config({"connector": {"variant": "raises"}})
    assert main(["run", "-q", str(cfg), "--plugin", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: variant 'raises' is not measured: " in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_an_index_variant_whose_setup_raises_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="index variants need torch")
    code = PluginCode(str(tmp_path / "idx.py"), textwrap.dedent(INDEX_SETUP_RAISES))
    with plugins_loaded([code]):
        result = check_index_variant("broken")
    assert not result.ok and result.passed == 0
    assert "warm_up() raised RuntimeError: no buffer for you" in (result.failure or "")
    assert f"({tmp_path / 'idx.py'} line 11, in _setup)" in (result.failure or "")


def test_the_threaded_pass_finds_what_one_thread_does_not(tmp_path: Path) -> None:
    code = PluginCode(str(tmp_path / "t.py"), textwrap.dedent(THREAD_BUG))
    with plugins_loaded([code]):
        assert check_variant("sharedstate", threads=1).ok
        result = check_variant("sharedstate", threads=3)
    assert not result.ok
    assert result.failure.startswith("from 3 threads: ")
    assert "expected" in result.failure


def test_a_variant_that_never_returns_is_named_not_waited_for(tmp_path: Path, monkeypatch) -> None:
    import sys

    import sim.conformance.check as check_module

    monkeypatch.setattr(check_module, "THREAD_TIMEOUT_S", 1.0)
    code = PluginCode(str(tmp_path / "h.py"), textwrap.dedent(HANGS))
    with plugins_loaded([code]) as loaded:
        try:
            result = check_variant("hangs", threads=2)
        finally:
            sys.modules[loaded[0].__module__].RELEASE.set()  # the stuck call returns
    assert not result.ok
    assert result.failure.endswith(", empty request, per_group: did not return in 1 s (a hang?)")


def test_index_variants_against_the_reference(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="index variants need torch")
    assert check_index_variant("cached").ok
    code = PluginCode(str(tmp_path / "idx.py"), textwrap.dedent(WRONG_INDEX))
    with plugins_loaded([code]):
        result = check_index_variant("shifted")
    assert not result.ok
    assert "component 0, token 0: expected 0, got 1" in result.failure


def test_the_api_checks_a_plugin_for_one_call(tmp_path: Path) -> None:
    import sim
    from connectors import registry

    path = _plugin(tmp_path, "off.py", OFF_BY_ONE)
    result = sim.check("offbyone", plugins=[path], threads=1)
    assert not result.ok and "chunk 1, region 2" in (result.failure or "")
    assert "offbyone" not in registry.address_variant_names()
    assert sim.check("numpy", threads=2).ok
    with pytest.raises(sim.UsageError, match="no variant 'nump'; did you mean 'numpy'"):
        sim.check("nump")


def test_audit_of_an_index_variant_says_it_is_not_run(capsys) -> None:
    pytest.importorskip("torch", reason="index variants need torch")
    assert main(["check", "cached", "--audit"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("cached: 5/5 cases match the NumPy reference index")
    assert out[1].startswith("audit: not run: it checks an address variant's gil_free")


def test_bench_index_refuses_a_wrong_index_plugin(tmp_path: Path, capsys) -> None:
    pytest.importorskip("torch", reason="index variants need torch")
    path = _plugin(tmp_path, "idx.py", WRONG_INDEX)
    assert main(["bench", "index", "--plugin", str(path), "--csv", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: index variant 'shifted' is not measured: " in err
    assert not (tmp_path / "b.csv").exists()


def test_a_file_given_as_the_name_gets_the_command_with_its_variants(
    tmp_path: Path, capsys
) -> None:
    """``kvsim check off.py``, the first guess of a user with a file: the command to type,
    naming what the file registers (it was "no variant 'off.py'; known: ...")."""
    path = _plugin(tmp_path, "off.py", OFF_BY_ONE)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"registers 'offbyone': kvsim check offbyone --plugin {path}"), err
    assert len(err.splitlines()) == 1
    assert main(["check", str(tmp_path / "none.py")]) == 2
    assert "no such file; a file of your own: kvsim check NAME --plugin FILE" in (
        capsys.readouterr().err
    )
