"""sim.process.proc_fields: the one reader of /proc's Key: value records."""

from __future__ import annotations

import os
import sys

import pytest

from sim.process.proc_fields import proc_fields

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


@linux
def test_reads_the_named_fields_of_this_process_only() -> None:
    got = proc_fields("self", ("Umask", "VmHWM", "NoSuchKey"))
    assert set(got) == {"Umask", "VmHWM"}
    mask = os.umask(0o022)
    os.umask(mask)
    assert int(got["Umask"], 8) == mask
    assert int(got["VmHWM"]) > 0  # KiB
    assert proc_fields(os.getpid(), ("Pss",), "smaps_rollup")["Pss"].isdigit()


def test_a_process_that_is_gone_has_no_fields() -> None:
    assert proc_fields(2**22 + 1, ("VmRSS",)) == {}  # above Linux's largest pid
