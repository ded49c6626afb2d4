"""A run's large table is joined into the top-level one a block at a time: reading it
(checking it is canonical) and writing the combined table hold a few blocks, not the
file (a 10^6-request model sweep's parent peaked at 277 MB merging 666 MB of rows: the
check unpacked the file's block generator into one tuple)."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

from sim.rundir.parts import Part, write_joined

ROWS = 800_000  # ~18 MB of rows a table
LIMIT = 8 << 20  # a few 1 MiB blocks and a line's carry


def _table(path: Path, repeat: int) -> bytes:
    body = b"".join(b"%d,%d,%d.125,ok\n" % (repeat, i, i) for i in range(ROWS))
    path.write_bytes(b"repeat,request_id,latency_ms,status\n" + body)
    return body


def test_a_large_canonical_table_is_read_and_joined_in_blocks(tmp_path: Path) -> None:
    bodies = [_table(tmp_path / f"r{k}.csv", k) for k in range(2)]
    size = sum(len(b) for b in bodies)
    assert size > 3 * LIMIT
    tracemalloc.start()
    try:
        parts = [Part.from_file(tmp_path / f"r{k}.csv") for k in range(2)]
        _, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        record = write_joined(tmp_path / "all.csv", ["repeat"], parts)
        _, write_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(p.canonical and p.source is not None for p in parts)  # left on disk
    assert read_peak < LIMIT, f"reading held {read_peak / 2**20:.1f} MiB"
    assert write_peak < LIMIT, f"joining held {write_peak / 2**20:.1f} MiB"
    want = b"repeat,request_id,latency_ms,status\n" + b"".join(bodies)
    got = (tmp_path / "all.csv").read_bytes()
    assert got == want
    assert record == {"size": len(want), "sha256": hashlib.sha256(want).hexdigest()}
