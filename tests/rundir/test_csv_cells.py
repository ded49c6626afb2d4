"""The fast table writers give the bytes the row-by-row reference gives, case by case.

The reference functions below are the writers kvsim used before tables were built
column by column and joined from the point runs' files: ``csv.DictWriter`` with a
``format_value`` per cell, rows from ``RequestRecord.as_row``, and combined tables
parsed with ``csv.DictReader`` and written again. Every fast path must give the
same bytes, on the awkward cases too (NaN, inf, -0.0, numpy scalars, quotes,
commas and newlines in cells, missing and extra keys, differing columns).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sim.point.records import REQUEST_COLUMNS, RequestRecord
from sim.rundir.combine import aggregate_with_numpy
from sim.rundir.csv_cells import format_column
from sim.rundir.outputs import csv_table_text, write_csv
from sim.rundir.parts import Part, join_parts, write_joined
from sim.rundir.verify import read_verified, record_files, verify_files
from sim.sweep.point_tables import request_cells, requests_text


def ref_format(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.6g}" if abs(v) < 1e15 else repr(v)
    return v


def ref_csv(columns: list[str], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ref_format(row.get(k, "")) for k in columns})
    return buf.getvalue()


def ref_read(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def ref_combine(lead: list[str], texts: list[str]) -> str:
    rows: list[dict[str, Any]] = []
    for text in texts:
        rows.extend(ref_read(text))
    cols: dict[str, None] = dict.fromkeys(lead)
    for row in rows:
        cols.update(dict.fromkeys(row))
    return ref_csv(list(cols), rows)


AWKWARD = [
    0.0,
    -0.0,
    1.5,
    1 / 3,
    1e-7,
    123456789.0,
    1e15,
    -1e15,
    2.5e20,
    math.nan,
    math.inf,
    -math.inf,
    np.float64(0.1),
    np.float32(2.5),
    np.int64(7),
    3,
    -4,
    True,
    None,
    "",
    "plain",
    "a, b",
    'say "hi"',
    "two\nlines",
    "cr\r",
    " lead space",
]


@pytest.mark.parametrize("seed", range(6))
def test_write_csv_gives_the_reference_bytes(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    columns = ["a", "b", "c", "d", "e"]
    rows: list[dict[str, Any]] = []
    for _ in range(40):
        row = {c: AWKWARD[int(rng.integers(len(AWKWARD)))] for c in columns if rng.random() > 0.1}
        if rng.random() < 0.2:
            row["extra"] = "left out"
        rows.append(row)
    # Columns of one type only take the one-pass paths.
    for r in rows:
        r["f"], r["i"], r["s"] = float(rng.normal()), int(rng.integers(9)), "x"
    columns += ["f", "i", "s"]
    write_csv(tmp_path / "t.csv", columns, iter(rows))
    assert (tmp_path / "t.csv").read_bytes().decode() == ref_csv(columns, rows)


def test_write_csv_edge_shapes() -> None:
    assert csv_table_text(["a", "b"], []) == ref_csv(["a", "b"], [])
    assert csv_table_text([], [{"a": 1}, {}]) == ref_csv([], [{"a": 1}, {}])
    assert csv_table_text(["a"], [{"a": ""}, {"a": "x"}]) == ref_csv(["a"], [{"a": ""}, {"a": "x"}])
    dup = ["a", "tokens", "tokens"]
    assert csv_table_text(dup, [{"a": 1, "tokens": 2.5}]) == ref_csv(dup, [{"a": 1, "tokens": 2.5}])


def test_format_column_keeps_strings_and_ints_as_they_are() -> None:
    col = ["1", 2, "x"]
    assert format_column(col) is col
    assert format_column([1.0, math.nan, 1e16]) == ["1", "", repr(1e16)]


def _records(n: int, seed: int) -> list[RequestRecord]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        r = RequestRecord(i, 16384, 128, 2097152, float(rng.random()))
        if rng.random() < 0.7:
            r.injected_s = r.arrival_s + 1e-4
            r.start_s = r.injected_s + float(rng.random()) * 1e-3
            r.done_s = 12345.000000001 + i
            r.latency_ms = float(rng.exponential(3.0))
            r.gil_hold_ms = float(rng.choice([0.0, -0.0, 1e-9, 2.5e16, math.inf]))
            r.status = "ok"
        else:
            r.status, r.error = "failed", 'StoreError: "timeout", retry'
        r.trace_line = None if rng.random() < 0.5 else int(rng.integers(1, 99))
        r.thread = f"kvsim-load-{i % 3}"
        out.append(r)
    return out


def _ref_requests(lead: dict[str, Any], records: list[RequestRecord]) -> str:
    return ref_csv([*lead, *REQUEST_COLUMNS], [{**lead, **r.as_row()} for r in records])


@pytest.mark.parametrize("seed", range(4))
def test_request_table_gives_the_as_row_reference_bytes(seed: int) -> None:
    lead = {"variant": "synthetic", "workers": 4, "mode": "model", "hold_ms": 1.6, "repeat": 0}
    records = _records(60, seed)
    assert requests_text(lead, records) == _ref_requests(lead, records)


def test_request_table_edge_cases() -> None:
    lead = {"variant": "synthetic", "workers": 1, "repeat": 2}
    assert requests_text(lead, []) == _ref_requests(lead, [])
    # An axis named like a request column: the column appears twice, as a row dict made it.
    clash = {"variant": "synthetic", "tokens": 512, "repeat": 0}
    records = _records(5, 9)
    assert requests_text(clash, records) == _ref_requests(clash, records)
    # numpy values in a record take the cell-by-cell path, with the same result.
    records[0].latency_ms = np.float64(2.25)  # type: ignore[assignment]
    records[1].tokens = np.int64(8)  # type: ignore[assignment]
    assert requests_text(lead, records) == _ref_requests(lead, records)


def test_a_record_subclass_goes_through_its_own_as_row() -> None:
    class Odd(RequestRecord):
        def as_row(self) -> dict[str, object]:
            return {**super().as_row(), "thread": "odd"}

    recs = [Odd(1, 2, 3, 4, 0.5)]
    cells = request_cells(recs)
    assert cells[REQUEST_COLUMNS.index("thread")] == ["odd"]


def _table(columns: list[str], rows: list[dict[str, Any]]) -> bytes:
    return ref_csv(columns, rows).encode()


def test_joined_table_gives_the_reference_bytes(tmp_path: Path) -> None:
    lead = ["variant", "workers", "repeat"]
    a = _table([*lead, "x", "y"], [{"variant": "v", "workers": 1, "repeat": 0, "x": 1.5, "y": 2}])
    quoted = _table(
        [*lead, "x", "y"],
        [{"variant": "v", "workers": 2, "repeat": 0, "x": "a, b", "y": 'q"'}] * 3,
    )
    wider = _table([*lead, "x", "z", "y"], [{"variant": "v", "workers": 3, "x": 0, "z": 9}])
    empty = _table([*lead, "x", "y", "never"], [])
    crlf = a.replace(b"\n", b"\r\n")
    short = a + b"v,9,0\n"  # a row with fewer fields than its header
    blobs = [a, quoted, empty, wider, crlf, short, a]
    parts = [Part.from_bytes(b) for b in blobs]
    assert [p.canonical for p in parts] == [True, False, True, True, False, False, True]
    record = write_joined(tmp_path / "j.csv", lead, parts)
    data = (tmp_path / "j.csv").read_bytes()
    assert data.decode() == ref_combine(lead, [b.decode() for b in blobs])
    assert record == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert record == record_files(tmp_path, ["j.csv"])["j.csv"]


def test_joined_table_of_nothing_is_the_lead_header() -> None:
    lead = ["variant", "repeat"]
    assert b"".join(join_parts(lead, [])).decode() == ref_combine(lead, [])
    blob = _table([*lead, "x"], [])
    joined = b"".join(join_parts(lead, [Part.from_bytes(blob)]))
    assert joined.decode() == ref_combine(lead, [blob.decode()])


def test_a_part_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(UnicodeDecodeError):
        Part.from_bytes(b"a,b\n\xff,1\n")


def test_read_verified_agrees_with_verify_files(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_bytes(b"a,b\n1,2\n")
    (tmp_path / "b.csv").write_bytes(b"a,b\n")
    records = record_files(tmp_path, ["a.csv", "b.csv"])
    why, blobs = read_verified(tmp_path, records)
    assert (why, blobs) == ("", {"a.csv": b"a,b\n1,2\n", "b.csv": b"a,b\n"})
    cases = {
        "changed": lambda: (tmp_path / "a.csv").write_bytes(b"a,b\n1,3\n"),
        "truncated": lambda: (tmp_path / "a.csv").write_bytes(b"a,b\n"),
        "missing": lambda: (tmp_path / "a.csv").unlink(),
        "link": lambda: ((tmp_path / "a.csv").unlink(), (tmp_path / "a.csv").symlink_to("b.csv")),
    }
    for name, damage in cases.items():
        damage()
        why, blobs = read_verified(tmp_path, records)
        assert why and why == verify_files(tmp_path, records), name
        assert blobs == {}, name
        if (tmp_path / "a.csv").is_symlink() or (tmp_path / "a.csv").exists():
            (tmp_path / "a.csv").unlink()
        (tmp_path / "a.csv").write_bytes(b"a,b\n1,2\n")
    assert read_verified(tmp_path, {}) == (verify_files(tmp_path, {}), {})
    assert read_verified(tmp_path, {"../x": {}})[0] == verify_files(tmp_path, {"../x": {}})


@pytest.mark.parametrize(
    "cell", ["0", "-0", "1.5", "-2e-9", "1e300", "inf", "-inf", "nan", "", None, "abc", True, 3]
)
@pytest.mark.parametrize("col", ["latency_p99_ms", "requests"])
def test_one_repeat_aggregates_as_the_numpy_path(cell: Any, col: str) -> None:
    from sim.rundir.combine import _aggregate_column

    got, want = _aggregate_column([cell], col), aggregate_with_numpy([cell], col)
    assert repr(got) == repr(want)
