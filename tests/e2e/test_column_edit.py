"""A new requests.csv column is one edit, in the catalogue (sim/columns.py), and both
modes write it (issue 25: one request path, two clocks).

The edit is made to the source text of sim/columns.py, as a developer would make it,
and loaded in place of the file in every process of two ``kvsim run``\\ s — the command
and each point's child — through a ``sitecustomize`` on their path; nothing else is
touched, and the compiled model core (sim.native) is not rebuilt. The column is a
derived one (computed from the request's other columns when its row is made): a
column that needs a new measurement needs, besides, the code that measures it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.point.records import REQUEST_COLUMNS
from sim.rundir.outputs import read_csv
from tests.model.test_driver import write_calibration

pytestmark = pytest.mark.realthreads  # the real-mode point runs load threads

ROOT = Path(__file__).resolve().parents[2]
#: The end of the catalogue's REQUESTS: the new entry goes after its last column.
ANCHOR = '"line"\n    ),\n)\n'
#: The one edit: a line added to REQUESTS in sim/columns.py.
EDIT = (
    '    _c("cpu_span_ms", "the CPU stages from start to end",'
    " derive=lambda r: (r.cpu_done_s - r.start_s) * 1e3),\n"
)

_SITECUSTOMIZE = """
import sys, types
from pathlib import Path

path = Path({source!r})
text = path.read_text(encoding="utf-8")
assert text.count({anchor!r}) == 1, "the catalogue's REQUESTS no longer ends as expected"
edited = text.replace({anchor!r}, {anchor!r}[: -len(")\\n")] + {edit!r} + ")\\n")
module = types.ModuleType("sim.columns")
module.__file__ = str(path)
sys.modules["sim.columns"] = module  # before `sim` imports it: every importer gets this one
exec(compile(edited, str(path), "exec"), module.__dict__)
"""


def _run(config: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sim", "run", str(config), "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_one_catalogue_entry_adds_a_column_to_both_modes_requests_csv(
    write_config, tmp_path
) -> None:
    assert "cpu_span_ms" not in REQUEST_COLUMNS  # the column comes from the edit alone
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        _SITECUSTOMIZE.format(source=str(ROOT / "sim" / "columns.py"), anchor=ANCHOR, edit=EDIT)
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(shim), str(ROOT)]),
        "KVSIM_NATIVE": "0",
    }
    cal = write_calibration(tmp_path / "cal.json")
    outs = {}
    for mode in ("real", "model"):
        outs[mode] = tmp_path / f"out-{mode}"
        config = write_config(
            {
                "mode": mode,
                "machine": {"calibration": str(cal)},
                "output": {"dir": str(outs[mode])},
            },
            name=f"{mode}.yaml",
        )
        _run(config, env)
    headers = {}
    for mode, out in outs.items():
        with open(out / "requests.csv", encoding="utf-8") as fh:
            headers[mode] = fh.readline().strip().split(",")
        rows = read_csv(out / "requests.csv")
        assert rows and {r["mode"] for r in rows} == {mode}
        assert headers[mode][-1] == "cpu_span_ms"  # the catalogue's order: after trace_line
        for r in rows:
            span = (float(r["cpu_done_s"]) - float(r["start_s"])) * 1e3
            # six significant digits in the file (docs/design.md §6)
            assert float(r["cpu_span_ms"]) == pytest.approx(span, rel=1e-5, abs=1e-6)
    assert headers["real"] == headers["model"]  # both modes: the same columns
