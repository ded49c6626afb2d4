"""A plug-in variant runs on a Ray host from a directory the worker never saw.

The throw-away cluster of tests/e2e/test_ray_executor.py (``tests/helpers/ray_cluster.sh``: a
head taking no work and one worker node, ``host-a``, in private network and PID
namespaces). ``tests/helpers/ray_plugin_scenario.py`` loads a config whose plug-in lives in
a private directory, removes that directory, then runs the sweep on Ray: the
variant's code can reach the host only inside the points' specs.
"""

from __future__ import annotations

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

HERE = Path(__file__).resolve().parents[1]  # tests/
ROOT = HERE.parent

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


def _skip_reason() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'kvsim[ray]')"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip (util-linux, iproute2) is not installed"
    probe = subprocess.run(
        ["unshare", "-n", "-p", "-f", "--mount-proc", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return "cannot create network/PID namespaces here (needs root)"
    return None


pytestmark = [
    pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason())),
    pytest.mark.timeout(700),
]


def test_a_plugin_variant_runs_on_a_ray_host_without_its_file(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir()
    (private / "afar.py").write_text(textwrap.dedent(PLUGIN))
    cfg = {
        "name": "ray-plugin",
        "seed": 3,
        "repeats": 1,
        "plugins": ["afar.py"],
        "model": {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256},
        "workload": {"requests": 6, "tokens": 4096, "arrival": {"kind": "poisson", "rate_rps": 50}},
        "connector": {"variant": "from_afar", "workers": 1},
        "store": {"bandwidth_gb_per_s": 50, "latency_ms": 0.2, "concurrency": 2},
    }
    (private / "plug.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    ray_tmp = tempfile.mkdtemp(prefix="kvray.", dir="/tmp")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "KVSIM_RAY_TMP": ray_tmp,
    }
    cmd = [
        "unshare", "-n", "-p", "-f", "--mount-proc",
        "bash", str(HERE / "helpers" / "ray_cluster.sh"), "host-a",
        sys.executable, str(HERE / "helpers" / "ray_plugin_scenario.py"), str(tmp_path),
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "scenario.json").read_text())
    assert report["gone"] and not private.exists()
    [point] = report["points"]
    assert point["variant"] == "from_afar" and point["status"] == "ok"
    assert int(point["ok"]) == 6
    [status] = [
        json.loads(p.read_text()) for p in (tmp_path / "out").glob("points/*/rep-0/status.json")
    ]
    assert status["status"] == "ok" and status["executor"] == "ray"
    assert status["host"]["name"] == "host-a"
