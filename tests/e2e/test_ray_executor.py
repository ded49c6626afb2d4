"""``kvsim run --executor ray`` against a real, throw-away Ray cluster on this machine.

The cluster (a head taking no work and two worker nodes, ``host-a`` and
``host-b``, each offering one ``kvsim_host`` slot) runs inside private network
and PID namespaces, started, used and stopped by ``tests/helpers/ray_cluster.sh`` (its
trap stops it however the driver ends; the kernel ends whatever is left with
the namespace). ``tests/helpers/ray_scenario.py`` drives three sweeps there — one to
the end, one stopped by Ctrl-C, one that loses a node — and this test checks
the run directories afterwards against local runs of the same configs; then
``tests/helpers/ray_plugin_scenario.py`` runs a plug-in variant from a directory the
workers never saw (removed before the sweep starts), on the node that is left.
One cluster serves every check: Ray takes several seconds to start.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import yaml

from sim.cli import main
from sim.config import parse_config
from sim.rundir.outputs import read_csv
from sim.workload.plan import planned_requests
from sim.workload.trace import write_trace

HERE = Path(__file__).resolve().parents[1]  # tests/
ROOT = HERE.parent
HOSTS = ("host-a", "host-b")

ROWS = [
    {"timestamp": 10 * i, "input_length": n, "output_length": 1, "hash_ids": ids}
    for i, (n, ids) in enumerate(
        [(1200, [0, 1, 2]), (700, [0, 3]), (1100, [0, 1, 2]), (300, [9]), (2000, [0, 1, 7, 8])]
    )
]
BASE = {
    "name": "ray-sweep",
    "seed": 5,
    "repeats": 1,  # the counts below are per point run
    "model": {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256},
    "connector": {"variant": "numpy", "workers": 1},
    "store": {"bandwidth_gb_per_s": 50, "latency_ms": 0.2, "concurrency": 2},
    "sweep": {"connector.variant": ["scalar", "numpy"], "connector.workers": [1, 2]},
}


PLUGIN = """
from connectors.base import AddressVariant
from connectors.registry import register


@register
class FromAfar(AddressVariant):
    name = "from_afar"

    def prepare_values(self, chunks, block_ids):
        out = [self.db.prepare_value(s, e, block_ids) for s, e in chunks]
        return [a for a, _, _ in out], [z for _, z, _ in out], [b for _, _, b in out]
"""
PLUGIN_CONFIG = {
    "name": "ray-plugin",
    "seed": 3,
    "repeats": 1,
    "plugins": ["afar.py"],
    "model": {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256},
    "workload": {"requests": 6, "tokens": 4096, "arrival": {"kind": "poisson", "rate_rps": 50}},
    "connector": {"variant": "from_afar", "workers": 1},
    "store": {"bandwidth_gb_per_s": 50, "latency_ms": 0.2, "concurrency": 2},
}


def _namespaces_usable() -> str | None:
    """Why a private network + PID namespace cannot be made here (None when it can)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip (util-linux, iproute2) is not installed"
    probe = subprocess.run(
        ["unshare", "-n", "-p", "-f", "--mount-proc", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return "cannot create network/PID namespaces here (needs root)"
    return None


def _skip_reason() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'kvsim[ray]')"
    return _namespaces_usable()


pytestmark = [
    pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason())),
    pytest.mark.timeout(900),
]


def _write_configs(work: Path) -> None:
    write_trace(work / "trace.jsonl", ROWS)
    fast = {
        **BASE,
        "workload": {
            "requests": 40,
            "tokens": 131072,
            "arrival": {"kind": "trace", "path": "trace.jsonl"},
        },
    }
    slow = {
        **BASE,
        "workload": {"requests": 20, "tokens": 4096, "arrival": {"kind": "poisson", "rate_rps": 8}},
    }
    (work / "fast.yaml").write_text(yaml.safe_dump(fast, sort_keys=False))
    (work / "slow.yaml").write_text(yaml.safe_dump(slow, sort_keys=False))
    private = work / "plugin" / "private"
    private.mkdir(parents=True)
    (private / "afar.py").write_text(textwrap.dedent(PLUGIN))
    (private / "plug.yaml").write_text(yaml.safe_dump(PLUGIN_CONFIG, sort_keys=False))


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = (
                Path(f"/proc/{d}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
        except OSError:
            continue
        if text in cmd:
            found.append(f"{d}: {cmd[:120]}")
    return found


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("ray")
    _write_configs(work)
    ray_tmp = tempfile.mkdtemp(prefix="kvray.", dir="/tmp")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "KVSIM_RAY_TMP": ray_tmp,
        # Notice a dead node within seconds rather than the default ~30 s.
        "RAY_health_check_period_ms": "1000",
        "RAY_health_check_timeout_ms": "1000",
        "RAY_health_check_failure_threshold": "5",
    }
    cmd = [
        "unshare", "-n", "-p", "-f", "--mount-proc",
        "bash", str(HERE / "helpers" / "ray_cluster.sh"), " ".join(HOSTS),
        sys.executable, str(HERE / "helpers" / "ray_scenario.py"), str(work),
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=840)
        leftovers = _processes_mentioning(ray_tmp)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert leftovers == [], f"Ray processes outlived the cluster: {leftovers}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work, json.loads((work / "scenario.json").read_text())


def _statuses(out: Path) -> dict[str, dict]:
    return {
        str(f.parent.relative_to(out)): json.loads(f.read_text())
        for f in sorted(out.glob("points/*/rep-*/status.json"))
    }


def _files(out: Path) -> set[str]:
    return {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}


def test_ray_sweep_equals_a_local_run(cluster_run) -> None:
    work, report = cluster_run
    assert report["full"]["rc"] == 0, report["full"]["stderr"]
    ray_out, local_out = work / "ray_out", work / "local_out"
    assert main(["run", str(work / "fast.yaml"), "--out", str(local_out), "-q"]) == 0
    assert _files(ray_out) == _files(local_out)
    _cfg, points = parse_config(work / "fast.yaml")
    planned = {p.slug: planned_requests(p.config, {})[0] for p in points}
    for out in (ray_out, local_out):
        for p in points:
            rows = read_csv(out / "points" / p.slug / "rep-0" / "requests.csv")
            assert len(rows) == planned[p.slug] == 3
        assert len(read_csv(out / "requests.csv")) == sum(planned.values())
    statuses = _statuses(ray_out)
    assert len(statuses) == 4
    assert all(s["status"] == "ok" and s["executor"] == "ray" for s in statuses.values())
    assert {s["host"]["name"] for s in statuses.values()} <= set(HOSTS)
    for s in statuses.values():
        assert s["host"]["code_hash"].startswith("sha256:")
        assert s["host"]["noise_floor"]["noise_floor_p99_ms"] >= 0
    hosts = {r["host"] for r in read_csv(ray_out / "summary_repeats.csv")}
    assert hosts <= set(HOSTS)
    local = {r["host"] for r in read_csv(local_out / "summary_repeats.csv")}
    assert not local & set(HOSTS)


def test_no_two_points_overlap_on_one_host(cluster_run) -> None:
    work, _ = cluster_run
    spans: dict[str, list[tuple[float, float]]] = {}
    for out in ("ray_out", "kill_out"):
        for s in _statuses(work / out).values():
            if s["status"] == "ok":
                spans.setdefault(s["host"]["name"], []).append(
                    (s["host_started_unix"], s["host_ended_unix"])
                )
    assert spans, "no finished run recorded its host"
    for host, runs in spans.items():
        runs.sort()
        for (_, end), (start, _) in itertools.pairwise(runs):
            assert start >= end, f"two points overlapped on {host}"


def test_ctrl_c_keeps_finished_runs_and_resume_finishes_locally(cluster_run) -> None:
    work, report = cluster_run
    out = work / "int_out"
    assert report["interrupt"]["rc"] == 130, report["interrupt"]["stderr"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    before = _statuses(out)
    kept = {k for k, s in before.items() if s["status"] == "ok"}
    assert kept and all(s["status"] in ("ok", "interrupted") for s in before.values())
    # Resume across executors: the rest runs here, what Ray finished is kept as it was.
    assert main(["run", str(work / "slow.yaml"), "--out", str(out), "--resume", "-q"]) == 0
    after = _statuses(out)
    assert len(after) == 4 and all(s["status"] == "ok" for s in after.values())
    assert all(after[k] == before[k] for k in kept)
    assert {after[k].get("executor", "local") for k in after.keys() - kept} == {"local"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["executor"] for s in manifest["sessions"]] == ["ray", "local"]
    assert manifest["status"] == "complete"


def test_a_run_whose_node_dies_is_retried_elsewhere(cluster_run) -> None:
    work, report = cluster_run
    assert report["node_death"]["raylet_killed"]
    assert report["node_death"]["rc"] == 0
    statuses = _statuses(work / "kill_out")
    assert len(statuses) == 4 and all(s["status"] == "ok" for s in statuses.values())
    retried = [s for s in statuses.values() if s["attempts"] > 1]
    assert retried, "no run was retried after host-a died"
    # The lost host is named when its task's "started" report reached the driver before
    # the node died; on a loaded machine it may not have (then "an unknown host").
    for s in retried:
        assert len(s["lost_hosts"]) == 1 and s["host"]["name"] == "host-b", s
        assert s["lost_hosts"][0] in ("host-a", "an unknown host"), s
    notes = json.loads((work / "kill_out" / "manifest.json").read_text())["sessions"][-1]["notes"]
    assert any(" was lost (" in n and "retrying" in n for n in notes), notes


def test_a_plugin_variant_runs_on_a_ray_host_without_its_file(cluster_run) -> None:
    """The variant's code can reach the host only inside the points' specs: its directory
    is removed after the config is loaded, before the sweep starts. It runs last, when
    host-a is gone (the node-death sweep above): host-b is the one host left."""
    work, report = cluster_run
    plugin = work / "plugin"
    assert report["plugin"]["rc"] == 0, report["plugin"]["stderr"]
    scenario = json.loads((plugin / "scenario.json").read_text())
    assert scenario["gone"] and not (plugin / "private").exists()
    [point] = scenario["points"]
    assert point["variant"] == "from_afar" and point["status"] == "ok"
    assert int(point["ok"]) == 6
    [status] = [
        json.loads(p.read_text()) for p in (plugin / "out").glob("points/*/rep-0/status.json")
    ]
    assert status["status"] == "ok" and status["executor"] == "ray"
    assert report["node_death"]["raylet_killed"], "host-a was not killed: either host may run it"
    assert status["host"]["name"] == "host-b"
