"""One catalogue of result columns (sim/columns.py): the code takes its names from it,
and docs/columns.md is generated from it."""

from __future__ import annotations

import ast
from pathlib import Path

from sim import columns
from sim.point.metrics import SUMMARY_METRICS
from sim.point.records import (
    DERIVED_COLUMNS,
    HOLD_STAGE_COLUMNS,
    RECORD_FIELDS,
    REQUEST_COLUMNS,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "columns.md"


def test_reference_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == columns.render(), (
        "docs/columns.md is stale: run `python -m sim.columns > docs/columns.md`"
    )


def test_the_request_record_has_the_catalogue_columns_in_order() -> None:
    assert list(columns.names(columns.REQUESTS)) == REQUEST_COLUMNS
    # the record holds every column the catalogue does not derive, in the same order
    assert [c for c in REQUEST_COLUMNS if c not in DERIVED_COLUMNS] == RECORD_FIELDS
    assert columns.names(columns.HOLD_STAGES) == HOLD_STAGE_COLUMNS


def test_what_the_measuring_code_fills_is_the_catalogue() -> None:
    from sim.instruments.engine import summarize_steps
    from sim.instruments.gc_meter import gc_summary

    assert set(summarize_steps([])) == set(columns.names(columns.ENGINE))
    assert set(gc_summary([])) == set(columns.names(columns.GC))
    assert {"stall_p99_ms", "noise_floor_p99_ms", "store_kind"} <= set(SUMMARY_METRICS)


def test_every_column_is_named_once_with_a_unit_and_a_meaning() -> None:
    for table in (columns.REQUESTS, columns.SUMMARY):
        names = columns.names(table)
        assert len(names) == len(set(names))
        for c in table:
            assert c.unit and c.meaning, c.name
            # the units are in the names (docs/design.md §6)
            if c.name.endswith("_ms"):
                assert c.unit == "ms", c.name


def test_the_results_page_points_to_the_generated_reference() -> None:
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")  # moved from README
    assert "](columns.md)" in results
    assert "docs/results.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_named_column_is_the_catalogue_entry_of_its_name() -> None:
    """Code names one column by its object (``columns.LATENCY_P50_MS.name``), never by its
    text: each such object is the catalogue's own entry, bound to its upper-cased name."""
    named = {k: v for k, v in vars(columns).items() if isinstance(v, columns.Column)}
    assert len(named) > 50
    entries = [*columns.REQUESTS, *columns.SUMMARY]
    for attr, col in named.items():
        assert attr == col.name.upper(), attr
        assert any(col is c for c in entries), attr


#: Columns of other tables whose name a catalogue column also has: steps.csv's
#: ``start_s`` is the engine step's start, not a request's; a calibration file's
#: ``elapsed_s`` is how long the calibration took, not a point's span.
_OTHER_TABLES = {
    ("sim/instruments/engine.py", "start_s"),
    ("sim/commands/calibrate.py", "elapsed_s"),
}


def _literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal in ``path`` that is not a docstring, a piece
    of an f-string or an entry of ``__all__``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):  # its text, not what its fields evaluate
            skip.update(id(v) for v in node.values if isinstance(v, ast.Constant))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            skip.update(id(v) for v in ast.walk(node.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def test_no_metric_name_is_spelled_outside_the_catalogue() -> None:
    """Emitters and readers name a column by the catalogue's object, so that renaming one
    is one edit and a typo fails at import. A one-word name (``status``, ``ok``,
    ``tokens``) is also an ordinary word (a status value, a field of status.json), so the
    check covers the names with an underscore: every metric with its unit."""
    catalogue = {c.name for c in (*columns.REQUESTS, *columns.SUMMARY) if "_" in c.name}
    assert {"latency_p50_ms", "gil_hold_mean_ms", "gil_hold_ms"} <= catalogue
    found = []
    for path in sorted((ROOT / "sim").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "sim/columns.py":
            continue
        for line, text in _literals(path):
            if text in catalogue and (rel, text) not in _OTHER_TABLES:
                found.append(f"{rel}:{line}: {text!r}")
    assert not found, "spell these as sim.columns.<NAME>.name:\n" + "\n".join(found)


def test_the_literal_check_sees_a_spelled_name(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        '"""doc latency_p50_ms"""\nrow = {"latency_p50_ms": 1}\nx = f"{row}_ms"\n'
        "y = f\"{row['gil_hold_ms']:.3f} ms\"\n",
        encoding="utf-8",
    )
    assert _literals(src) == [(2, "latency_p50_ms"), (4, "gil_hold_ms")]
