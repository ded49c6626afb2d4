"""The real Mooncake store behind the load path, run for real inside a network namespace.

Every test that starts a master runs it in a private network namespace with only
loopback (``unshare -n``), through ``kvsim run`` (whose runner puts such a point's
child in one) or through ``tests/helpers/mooncake_point.py`` started under ``unshare -n``.
They skip only where the Mooncake package cannot be imported or no namespace can
be made, and say which.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sim.errors import RunDirError
from sim.store.mooncake import mooncake_missing
from sim.store.netns import netns_available, wrap_in_netns

ROOT = Path(__file__).resolve().parents[2]
HELPER = Path(__file__).resolve().parents[1] / "helpers" / "mooncake_point.py"

_why = mooncake_missing() or (
    None if netns_available() is None else f"no private network namespace: {netns_available()}"
)
pytestmark = pytest.mark.skipif(_why is not None, reason=f"real Mooncake store: {_why}")

REAL: dict[str, Any] = {
    "model": {"regions": 4, "block_len": [4096, 8192], "block_size": 16, "num_blocks": 256},
    "workload": {
        "requests": 12,
        "arrival": {"kind": "poisson", "rate_rps": 200},
        "tokens": {"dist": "uniform", "low": 32, "high": 320},
    },
    "store": {"kind": "mooncake", "mooncake": {"network": "namespace"}},
    "gil": {"probe": False},
}


def _env(mark: str | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if mark:
        env["KVSIM_TEST_MARK"] = mark
    return env


def _marked(mark: str) -> list[int]:
    """Pids of live processes that inherited ``KVSIM_TEST_MARK=mark``."""
    needle = f"KVSIM_TEST_MARK={mark}".encode()
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in env.split(b"\0") and state != "Z":
            out.append(int(pid))
    return out


def _masters(mark: str) -> list[int]:
    return [p for p in _marked(mark) if "mooncake_maste" in Path(f"/proc/{p}/comm").read_text()]


def _gone(mark: str, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while _marked(mark):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _helper(config: Path, mode: str, mark: str) -> dict[str, Any]:
    cmd = wrap_in_netns([sys.executable, str(HELPER), str(config), mode])
    proc = subprocess.run(
        cmd, env=_env(mark), capture_output=True, text=True, timeout=180, cwd=ROOT
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"helper printed nothing (rc {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(lines[-1])
    out["returncode"] = proc.returncode
    return out


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_real_store_runs_scalar_and_numpy_verified_and_leaves_nothing(write_config, tmp_path):
    mark = uuid.uuid4().hex
    cfg = write_config(
        {**REAL, "sweep": {"connector.variant": ["scalar", "numpy"], "connector.workers": [1, 4]}}
    )
    proc = subprocess.run(
        [sys.executable, "-m", "sim", "run", str(cfg), "-q"],
        env=_env(mark),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    reqs = _csv(out / "requests.csv")
    assert len(reqs) == 4 * 12
    assert {r["status"] for r in reqs} == {"ok"}
    for r in reqs:
        chunks = -(-int(r["tokens"]) // 16)
        assert int(float(r["transfer_bytes"])) == int(r["bytes"]) > 0
        assert int(float(r["verified_blocks"])) == chunks * 4  # every block of every region
        assert float(r["transfer_ms"]) > 0
    summary = _csv(out / "summary.csv")
    assert {s["store_kind"] for s in summary} == {"mooncake"}
    assert {s["store_netns"] for s in summary} == {"1"}
    assert all(float(s["store_get_p50_ms"]) > 0 for s in summary)
    assert _gone(mark), f"processes left behind: {_marked(mark)}"
    from sim.analysis.store_fit import fit_store

    # The model's parameters from these real gets (the fit itself is checked on known data in
    # tests/analysis/test_store_fit.py). 24 small gets on a loaded machine can be all noise: then
    # the one-line refusal, never a made-up bandwidth.
    try:
        fit = fit_store(out)
    except RunDirError as exc:
        assert "the get time does not grow with the bytes moved" in str(exc), exc
    else:
        assert fit.workers == 1 and fit.requests == 2 * 12
        assert fit.bandwidth_gb_per_s > 0 and fit.latency_ms >= 0


def test_a_wrong_address_fails_its_requests_clearly(write_config):
    cfg = write_config({**REAL, "connector": {"variant": "test-offset", "workers": 2}})
    out = _helper(cfg, "offset", uuid.uuid4().hex)
    recs = out["records"]
    assert recs and all(r["status"] == "failed" for r in recs)
    err = recs[0]["error"]
    assert err.startswith("KVVerifyError:"), err
    assert "region 1" in err and "the computed address is wrong" in err


def test_the_reference_layout_passes_in_the_helper(write_config):
    """The helper itself (same process layout as the offset test) verifies clean runs."""
    cfg = write_config({**REAL, "connector": {"variant": "scalar", "workers": 2}})
    out = _helper(cfg, "plain", uuid.uuid4().hex)
    assert {r["status"] for r in out["records"]} == {"ok"}
    assert out["masters_after"] == []


def test_one_object_per_region_with_batch_get_into_verifies_too(write_config):
    store = {"kind": "mooncake", "mooncake": {"network": "namespace", "api": "per_region"}}
    cfg = write_config({**REAL, "store": store, "connector": {"variant": "numpy", "workers": 2}})
    out = _helper(cfg, "plain", uuid.uuid4().hex)
    recs = out["records"]
    assert {r["status"] for r in recs} == {"ok"}
    assert all(r["transfer_bytes"] == r["bytes"] and r["verified_blocks"] > 0 for r in recs)


def test_a_get_error_code_is_a_failed_request_with_the_code(write_config):
    cfg = write_config({**REAL, "connector": {"variant": "test-short", "workers": 1}})
    out = _helper(cfg, "short", uuid.uuid4().hex)
    recs = out["records"]
    assert recs and all(r["status"] == "failed" for r in recs)
    assert all(r["error"].startswith("StoreError:") for r in recs)
    assert "-600" in recs[0]["error"], recs[0]["error"]


#: Requests of the master-kill test: the helper kills the master once 4 have finished; each
#: get after that waits out the client's RPC timeout (~4.3 s here, two at a time on the two
#: workers), so 3 after the kill prove as much as 12 did, in a third of the time.
_KILL_REQUESTS = 7


def test_killing_the_master_fails_the_rest_as_store_errors_and_ends(write_config):
    cfg = write_config(
        {
            **REAL,
            "workload": {
                **REAL["workload"],
                "requests": _KILL_REQUESTS,
                "arrival": {"kind": "constant", "rate_rps": 50},
            },
        }
    )
    mark = uuid.uuid4().hex
    out = _helper(cfg, "kill", mark)
    assert out["killed"], "the master was not found to kill"
    recs = out["records"]
    assert len(recs) == _KILL_REQUESTS
    assert sum(r["status"] == "ok" for r in recs) >= 4
    failed = [r for r in recs if r["status"] == "failed"]
    assert failed, "no request failed after the master was killed"
    assert all(r["error"].startswith("StoreError:") for r in failed)
    assert any("master exited" in r["error"] for r in failed)
    assert _gone(mark)


def test_a_crashed_point_takes_its_master_with_it(write_config):
    mark = uuid.uuid4().hex
    out = _helper(write_config(REAL), "crash", mark)
    assert out["returncode"] == 3
    assert out["masters"], "the store started no master"
    assert _gone(mark), f"left behind after a crash: {_marked(mark)}"


def test_ctrl_c_leaves_no_master(write_config):
    mark = uuid.uuid4().hex
    slow = {**REAL["workload"], "requests": 2000, "arrival": {"kind": "constant", "rate_rps": 100}}
    cfg = write_config({**REAL, "workload": slow})
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim", "run", str(cfg), "-q"],
        env=_env(mark),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _masters(mark):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no master started"
            time.sleep(0.1)
        time.sleep(1.0)  # the point is running requests now
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the foreground group
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    assert _gone(mark), f"left behind after Ctrl-C: {_marked(mark)}"


def test_validate_refuses_what_does_not_fit_with_the_arithmetic(write_config):
    big = {**REAL, "model": {**REAL["model"], "num_blocks": 1 << 20}}
    big["store"] = {"kind": "mooncake", "mooncake": {"memory_budget_gib": 1.0}}
    proc = subprocess.run(
        [sys.executable, "-m", "sim", "validate", str(write_config(big))],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    msg = proc.stderr
    assert "KV buffers" in msg and "store segment" in msg and "budget" in msg, msg
    assert "Traceback" not in msg
