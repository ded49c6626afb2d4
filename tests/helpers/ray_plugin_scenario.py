"""Driver side of tests/e2e/test_ray_executor.py's plug-in test, run INSIDE the throw-away
cluster (``tests/helpers/ray_cluster.sh``) by ``tests/helpers/ray_scenario.py``: a plug-in
variant from a directory the Ray worker never saw.

The config and its plug-in file are loaded here, then their directory is removed
before the sweep starts: the points can only run on the Ray host from the variant's
text that travels in their specs. What happened is written to ``scenario.json``.
Usage: python tests/helpers/ray_plugin_scenario.py WORKDIR
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import sim
from sim.sweep.executors import ExecutorChoice


def main() -> int:
    work = Path(sys.argv[1])
    private = work / "private"
    exp = sim.load(private / "plug.yaml")
    shutil.rmtree(private)  # from here on, nobody can read the plug-in file
    run = exp.run(work / "out", executor=ExecutorChoice("ray"))
    (work / "scenario.json").write_text(
        json.dumps({"points": run.points, "gone": not private.exists()})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
