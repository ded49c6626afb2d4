"""Run one real-store point in this process, for tests/store/test_mooncake.py.

Started by the tests inside a private network namespace (``unshare -n``); prints
one JSON line with what happened. Test-only variants are registered here, in
this process only, through the registry:

    python tests/helpers/mooncake_point.py CONFIG MODE

MODE: ``plain``; ``offset`` (variant ``test-offset``: region 1 one block off);
``short`` (variant ``test-short``: sizes halved, so the get returns an error code);
``kill`` (the master is killed after the 4th request); ``crash`` (the process
exits without cleaning up once the store is running).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence

from connectors import registry
from connectors.address_numpy import NumpyVariant
from sim.config import parse_config
from sim.runtime.point import run_point


@registry.register
class OffsetVariant(NumpyVariant):
    name = "test-offset"
    description = "Test only: region 1's addresses one block too far."

    def prepare_values(self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]):
        addrs, sizes, bids = super().prepare_values(chunks, block_ids)
        step = self.db.region_block_len()[1]
        return (
            [[a + step if r == 1 else a for r, a in enumerate(row)] for row in addrs],
            sizes,
            bids,
        )


@registry.register
class ShortVariant(NumpyVariant):
    name = "test-short"
    description = "Test only: every size halved."

    def prepare_values(self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]):
        addrs, sizes, bids = super().prepare_values(chunks, block_ids)
        return addrs, [[z // 2 for z in row] for row in sizes], bids


def _masters() -> list[int]:
    """Pids of mooncake_master processes whose parent is this process."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if comm.startswith("mooncake_maste") and ppid == os.getpid():
            out.append(int(pid))
    return out


def main() -> int:
    config, mode = sys.argv[1], sys.argv[2]
    _cfg, points = parse_config(config)
    point = points[0]
    if mode == "crash":
        import numpy as np

        from sim.store.factory import open_store
        from sim.workload.plan import plan_workload

        workload = plan_workload(point.config, np.random.default_rng(0))
        with open_store(point.config, workload):
            print(json.dumps({"masters": _masters()}), flush=True)
            os._exit(3)
    killed: list[int] = []

    def progress(done: int, total: int) -> None:
        if mode == "kill" and done == 4 and not killed:
            for pid in _masters():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    res = run_point(point, 0, progress)
    print(
        json.dumps(
            {
                "records": [r.as_row() for r in res.records],
                "summary": {
                    k: v for k, v in res.summary.items() if isinstance(v, (int, float, str))
                },
                "killed": killed,
                "masters_after": _masters(),
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
