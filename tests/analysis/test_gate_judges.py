"""The gate judges every rule it is given, or refuses it: a change from 0, a metric that is
not a number, a filter naming no column, a point B lacks, an --out it cannot write.

The runs are real (tiny, two repeats) and shared by the module's tests. A plug-in variant
misbehaves only in a point's child process (``KVSIM_PARENT_PID`` set), so the plug-in
check that ``kvsim run`` makes first in the parent passes.
"""

from __future__ import annotations

import csv
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from sim.cli import main
from tests.conftest import TINY, deep_merge

PLUGIN = """
import itertools, os, time
from connectors.base import AddressVariant
from connectors.registry import register

_calls = itertools.count()
_CHILD = bool(os.environ.get("KVSIM_PARENT_PID"))


@register
class Flaky(AddressVariant):
    name = "flaky"

    def prepare_values(self, chunks, block_ids):
        if _CHILD:
            {action}
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
"""

FINE = "pass"
#: Every other call of a request fails (the warm-up's call has one chunk; a request's ten).
HALF = 'if len(chunks) > 1 and next(_calls) % 2:\n                raise RuntimeError("boom")'
CRASH = 'raise RuntimeError("crash")'
HANG = "time.sleep(60)"


def _config(root: Path, name: str, action: str, sweep: bool = False, repeats: int = 2) -> Path:
    (root / f"{name}.py").write_text(PLUGIN.format(action=action))
    over = {
        "repeats": repeats,
        "plugins": [f"{name}.py"],
        "connector": {"variant": "flaky"},
        "output": {"dir": str(root / name)},
    }
    if sweep:  # in grid order: every repeat of numpy, then flaky's
        over["sweep"] = {"connector.variant": ["numpy", "flaky"], "order": "grid"}
    cfg = root / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump(deep_merge(TINY, over), sort_keys=False))
    return cfg


def _run(root: Path, name: str, action: str, sweep: bool = False) -> Path:
    main(["run", "-q", str(_config(root, name, action, sweep))])
    return root / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gate")
    return {
        "fine": _run(root, "fine", FINE),
        "half": _run(root, "half", HALF),
        "swept": _run(root, "swept", FINE, sweep=True),
        "crashed": _run(root, "crashed", CRASH, sweep=True),
        "root": root,
    }


def _gate(a: Path, b: Path, *rules: str, capsys) -> tuple[int, str, str]:
    for old in b.glob("compare_vs_*"):
        old.unlink()
    capsys.readouterr()
    args = ["compare", str(a), str(b)]
    for r in rules:
        args += ["--fail-if", r]
    code = main(args)
    said = capsys.readouterr()
    return code, said.out, said.err


def test_failures_from_none_fail_the_gate(runs, capsys) -> None:
    code, out, err = _gate(runs["fine"], runs["half"], "failed>+5%", capsys=capsys)
    assert code == 1, (out, err)
    assert "gate: FAIL failed>+5% at " in out and "up from 0 (0 → " in out
    assert "gate: FAILED" in out
    # The complete runs planned 2 repeats and have them: the note says why there was no
    # interval (a value of 0), not "some points lack repeats … --resume".
    notes = [ln for ln in out.splitlines() if ln.startswith("gate: note:")]
    assert notes and all("--resume" not in n and "lack repeats" not in n for n in notes)
    assert any("value of 0" in n for n in notes)
    # Failures gone (B has none): an improvement, judged and passed.
    code, out, _ = _gate(runs["half"], runs["fine"], "failed>+5%", capsys=capsys)
    assert code == 0 and "gate: pass failed>+5%: the largest change is -100.0%" in out, out


def test_compare_latency_counts_finished_requests_only(runs, capsys) -> None:
    half = runs["half"]
    _gate(runs["fine"], half, capsys=capsys)
    with (half / "compare_vs_fine.csv").open() as f:
        cells = {(r["run"], r["metric"]): r for r in csv.DictReader(f)}
    with (half / "requests.csv").open() as f:
        rows = list(csv.DictReader(f))
    ok = [float(r["latency_ms"]) for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] != "ok"]
    assert failed and ok  # the plug-in failed some requests and not all
    cell = cells[("half", "latency_p50_ms")]
    assert float(cell["value"]) == pytest.approx(float(np.percentile(ok, 50)), rel=1e-5)
    assert int(cell["n"]) == len(ok)
    assert "where status=ok" in cell["source"]
    assert "| run | ok requests | p50 latency (ms) |" in (half / "compare_vs_fine.md").read_text()


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("status>+5%", "'status' is not a number"),
        ("mode>+5%", "'mode' is an axis of the run"),
        ("workers>+5%", "'workers' is an axis of the run"),
        ("requests.latency_ms:p50@nosuch=1>+5%", "has no column 'nosuch'"),
        ("requests.latency_ms:p50@status>+5%", "filter 'status' is not COL=VALUE"),
        ("requests.status:p50>+5%", "'status' is not a number"),
        ("requests.latency_ms:p1x>+5%", "unknown statistic 'p1x'"),
    ],
)
def test_rules_on_what_is_not_a_metric_are_refused(runs, capsys, rule: str, said: str) -> None:
    code, out, err = _gate(runs["fine"], runs["half"], rule, capsys=capsys)
    assert code == 2 and out == ""
    line = err.strip()
    assert line.count("\n") == 0 and said in line, line
    assert "available:" in line or "COL=VALUE" in line or "allowed" in line


def test_a_point_that_failed_in_b_fails_the_gate(runs, capsys) -> None:
    code, out, err = _gate(runs["swept"], runs["crashed"], "gil_hold_mean_ms>+500%", capsys=capsys)
    assert code == 1, (out, err)
    assert "gate: FAIL at variant=flaky" in out and "it failed in crashed: RuntimeError" in out


def test_an_interrupted_b_fails_the_gate(runs, capsys) -> None:
    root = runs["root"]
    # One repeat: the numpy point is whole when the flaky one (after it) hangs.
    cfg = _config(root, "stopped", HANG, sweep=True, repeats=1)
    out = root / "stopped"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim", "run", "-q", str(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60

        # The numpy point finishes and the flaky one hangs: stop the run there.
        def numpy_done() -> bool:
            done = [p.read_text() for p in out.glob("points/*numpy*/rep-0/status.json")]
            return any('"ok"' in d for d in done) and bool(list(out.glob("points/*flaky*/*/")))

        while not numpy_done():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    code, text, err = _gate(runs["swept"], out, "gil_hold_mean_ms>+500%", capsys=capsys)
    assert code == 1, (text, err)
    assert "gate: FAIL at variant=flaky" in text and "stopped was interrupted" in text


def _read_only(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    """``command`` with ``tmp_path/ro`` a read-only mount (a private mount namespace)."""
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is not installed: no read-only mount to test on")
    ro = tmp_path / "ro"
    (ro / "run").mkdir(parents=True)
    mount = f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro}"
    done = subprocess.run(
        ["unshare", "-rm", "bash", "-c", f"{mount} && {command}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(f"no private mount namespace here: {done.stderr.strip()}")
    return done


def test_an_out_that_cannot_be_written_is_not_a_regression(runs, tmp_path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    capsys.readouterr()
    gate = ["--fail-if", "gil_hold_mean_ms>+500%"]
    out = ["--out", str(blocker / "x")]
    code = main(["compare", str(runs["fine"]), str(runs["half"]), *out, *gate])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert main(["compare", str(runs["fine"]), *out]) == 2
    # A directory it may not write (a read-only mount): exit 2, the file system named.
    ro = tmp_path / "ro"
    py = f"{sys.executable} -m sim"
    done = _read_only(
        tmp_path,
        f"{py} compare {runs['fine']} {runs['half']} --out {ro}/cmp {shlex.join(gate)}; "
        f"echo rc=$?; {py} compare {runs['fine']} --out {ro}/one; echo rc=$?",
    )
    assert done.stdout.count("rc=2") == 2, (done.stdout[-500:], done.stderr)
    said = [ln for ln in done.stderr.splitlines() if ln.startswith("kvsim: error:")]
    assert len(said) == 2 and all("cannot write (Read-only file system)" in x for x in said), said


def test_a_read_only_run_directory_is_named_so(tmp_path, write_config) -> None:
    """kvsim run into an existing directory on a read-only mount said "permission denied"."""
    cfg = write_config()
    done = _read_only(tmp_path, f"{sys.executable} -m sim run -q {cfg} --out {tmp_path}/ro/run")
    assert done.returncode == 2, done.stderr
    assert "cannot write (read-only file system)" in done.stderr, done.stderr
