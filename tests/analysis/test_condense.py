"""The end of a big sweep: a condensed table and one warning line per kind, not a
thousand of each; small sweeps print exactly what they always have."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from sim.analysis.audit import audit_note
from sim.analysis.behind import behind_note
from sim.analysis.condense import EDGE_ROWS, MAX_TABLE_ROWS, Elided, condense
from sim.analysis.point_notes import MANY_NOTES, audit_line, point_label, point_warnings
from sim.analysis.report import comparison_table
from sim.analysis.stage_report import stage_table

AXES = ["variant", "rate"]


def _row(variant: str, rate: int, lag: float = 0.2, achieved: float | None = None) -> dict:
    """One summary row; ``lag`` above 1 ms plus the 0.3 ms floor is falling behind."""
    return {
        "variant": variant,
        "rate": rate,
        "status": "ok",
        "ok": 100,
        "requests": 100,
        "latency_p50_ms": 12.0,
        "latency_p99_ms": 40.0 + rate / 100,
        "gil_hold_mean_ms": 2.0 if variant == "scalar" else 1.0,
        "gil_wait_mean_ms": 0.5,
        "inject_lag_p50_ms": lag / 2,
        "inject_lag_p99_ms": lag,
        "noise_floor_p99_ms": 0.3,
        "offered_rps": float(rate),
        "achieved_rps": float(rate if achieved is None else achieved),
        "repeats": 1,
    }


def _sweep(points_per_variant: int, behind: int = 0) -> list[dict[str, Any]]:
    """scalar then numpy, rates 10, 20, …; the last ``behind`` points of each variant lag,
    more at higher rates."""
    rows = []
    for variant in ("scalar", "numpy"):
        for i in range(points_per_variant):
            late = i >= points_per_variant - behind
            rate = 10 * (i + 1)
            if late:  # applied 90 % of the offered rate, handed over late
                rows.append(_row(variant, rate, lag=5.0 + i / 10, achieved=0.9 * rate))
            else:
                rows.append(_row(variant, rate))
    return rows


def _render(table: Any, width: int = 140) -> str:
    console = Console(width=width, record=True)
    console.print(table)
    return console.export_text()


def _old_warnings(rows: list[dict[str, Any]], axes: list[str]) -> list[str]:
    """What kvsim printed before (a sentence per point, behind before audit)."""
    out = []
    for r in rows:
        label = " · ".join(f"{a}={r.get(a, '')}" for a in axes) or "the point"
        out += [n for n in (behind_note(label, r), audit_note(label, r)) if n]
    return out


def test_a_few_points_keep_a_sentence_each() -> None:
    rows = _sweep(8, behind=2)
    rows[0]["audit_vs_meter"] = 0.5  # the meter counts 2× what py-spy saw
    notes = point_warnings(rows, AXES)
    assert notes == _old_warnings(rows, AXES)
    assert len(notes) == 4 + 1
    assert notes[0].startswith("variant=scalar · rate=10: the meter counts 2.0×")
    # Exactly MANY_NOTES points of a kind still get their own sentences.
    many = _sweep(MANY_NOTES // 2, behind=MANY_NOTES // 2)
    assert point_warnings(many, AXES) == _old_warnings(many, AXES)


def test_many_points_behind_are_one_line_with_the_count_and_the_worst() -> None:
    rows = _sweep(500, behind=470)  # 940 of 1,000
    rows[3]["achieved_rps"] = 20.0  # behind by its rate alone (lag within the floor)
    rows[0]["audit_vs_meter"] = 0.5  # one audit warning: still its own sentence
    notes = point_warnings(rows, AXES)
    assert len(notes) == 2
    summary, audit = notes
    assert summary.startswith("941 of 1,000 points: the load was not applied")
    # The worst three: the smallest share applied first (rate=40 applied half), then by
    # lag p99 among the 90 % ones: the highest rates, scalar's first on ties (sorted is
    # stable, in table order).
    worst = summary.split("worst: ")[1].split(". ")[0]
    assert worst.split("; ") == [
        "variant=scalar · rate=40 (lag p99 0.2 ms, 20.0 of 40.0 req/s)",
        "variant=scalar · rate=5000 (lag p99 54.9 ms, 4500.0 of 5000.0 req/s)",
        "variant=numpy · rate=5000 (lag p99 54.9 ms, 4500.0 of 5000.0 req/s)",
    ]
    for column in ("inject_lag_p99_ms", "offered_rps", "achieved_rps", '"behind"'):
        assert column in summary
    assert audit.startswith("variant=scalar · rate=10: the meter counts 2.0×")
    # One point over the limit is enough to switch to the summary.
    over = _sweep(MANY_NOTES // 2 + 1, behind=MANY_NOTES // 2 + 1)
    assert len(point_warnings(over, AXES)) == 1


def test_many_audit_warnings_are_one_line_and_the_audit_figures_a_range() -> None:
    rows = _sweep(30)
    for i, r in enumerate(rows):
        r["audit_status"] = "ok"
        r["audit_vs_meter"] = 0.5 + i / 100  # below 0.83 for the first 34 points
        r["audit_pyspy_cpu_frac"] = 0.25
    notes = point_warnings(rows, AXES)
    assert len(notes) == 1
    assert notes[0].startswith("34 of 60 points: the meter counts more than 1.2×")
    assert "lowest: variant=scalar · rate=10 (0.50); variant=scalar · rate=20 (0.51)" in notes[0]
    assert audit_line(rows) == (
        "GIL audit (py-spy): audit_vs_meter 0.50 to 1.09 over 60 audited points "
        "(summary.csv: audit_vs_meter); py-spy used up to 25 % of a core"
    )
    few = rows[:2]
    assert audit_line(few) == (
        "GIL audit (py-spy): audit_vs_meter scalar 0.50, scalar 0.51; py-spy used up to 25 % "
        "of a core"
    )


def test_a_small_table_is_printed_whole_as_before() -> None:
    rows = _sweep(MAX_TABLE_ROWS // 2, behind=3)  # exactly the limit
    whole = _render(comparison_table(rows, AXES, "scalar", "t"))
    assert _render(comparison_table(rows, AXES, "scalar", "t", MAX_TABLE_ROWS)) == whole
    assert "more" not in whole and "left out" not in whole


def test_a_big_table_keeps_each_variants_ends_and_counts_the_rest() -> None:
    rows = _sweep(500, behind=100)
    plan = condense(rows, AXES)
    gap = Elided(500 - 2 * EDGE_ROWS, behind=100 - EDGE_ROWS, failed=0)
    assert plan == [0, 1, 2, gap, 497, 498, 499, 500, 501, 502, gap, 997, 998, 999]
    text = _render(comparison_table(rows, AXES, "scalar", "t", MAX_TABLE_ROWS))
    lines = text.splitlines()
    body = [ln for ln in lines if ln.split()[:1] in (["scalar"], ["numpy"])]
    assert [ln.split()[1] for ln in body] == ["10", "20", "30", "4980", "4990", "5000"] * 2
    elisions = [ln for ln in lines if ln.lstrip().startswith("… 494 more")]
    assert len(elisions) == 2 and all("97 behind" in ln for ln in elisions)
    assert "… N more: points not shown (988 of 1,000)" in " ".join(text.split())
    # The ratios are still taken against the baseline's row, shown or not.
    # (the last column is now lag p99: some points were handed over late)
    assert body[-1].split()[-3:] == ["0.50×", "1.00×", "54.9"]
    # Asked for, every row is there.
    full = _render(comparison_table(rows, AXES, "scalar", "t"))
    # (a row: a variant, then its rate; the caption may wrap to start with "scalar")
    rows_shown = [ln.split()[:2] for ln in full.splitlines()]
    assert (
        sum(w[:1] in (["scalar"], ["numpy"]) and w[1:2] and w[1].isdigit() for w in rows_shown)
        == 1000
    )
    assert "more" not in full


def test_many_variants_share_the_rows_and_failures_are_counted() -> None:
    rows = [_row(f"v{k}", 10 * i) for k in range(30) for i in range(1, 4)]
    rows[40]["status"] = "failed"
    plan = condense(rows, AXES)
    # 30 variants × (1 + gap + 1) would be 90 rows: the table's own ends instead.
    assert plan[:3] == [0, 1, 2] and plan[-3:] == [87, 88, 89]
    assert plan[3] == Elided(84, behind=0, failed=1)
    text = _render(comparison_table(rows, AXES, "v0", "t", MAX_TABLE_ROWS))
    assert "… 84 more" in text and "1 failed" in text


def test_the_stage_table_is_condensed_the_same_way() -> None:
    rows = _sweep(100)
    for r in rows:
        r.update(hold_keys_mean_ms=0.1, hold_addresses_mean_ms=0.7, gc_per_request=0.0)
    text = _render(stage_table(rows, AXES, "where the hold goes", MAX_TABLE_ROWS))
    assert text.count("… 94 more") == 2
    assert sum(ln.split()[:1] in (["scalar"], ["numpy"]) for ln in text.splitlines()) == 12


def test_point_label_names_every_axis() -> None:
    assert point_label(_row("rows", 40), AXES) == "variant=rows · rate=40"
    assert point_label({}, []) == "the point"


def test_a_big_model_sweep_prints_a_short_end_and_all_rows_on_request(
    write_config, tmp_path: Path, capsys
) -> None:
    from sim.cli import main as cli_main
    from tests.model.test_driver import write_calibration

    cal = write_calibration(tmp_path / "cal.json")
    holds = [round(0.1 * i, 1) for i in range(MAX_TABLE_ROWS // 2 + 1)]  # 2 × 21 points
    path = write_config(
        {
            "mode": "model",
            "machine": {"calibration": str(cal)},
            "workload": {"requests": 6},
            "connector": {"variant": "synthetic", "options": {"free_ms": 0.1}},
            "sweep": {"connector.workers": [1, 2], "connector.options.hold_ms": holds},
        }
    )
    out_dir = tmp_path / "run"
    assert cli_main(["run", str(path), "--out", str(out_dir)]) == 0
    text = capsys.readouterr().out
    flat = " ".join(text.split())
    assert f"the table shows 12 of {2 * len(holds)} points" in flat
    assert "--resume --all-rows" in flat and "summary.csv" in flat
    assert text.count("… 15 more") == 2
    assert cli_main(["run", str(path), "--out", str(out_dir), "--resume", "--all-rows"]) == 0
    again = capsys.readouterr().out
    assert f"resumed: {2 * len(holds)} point run(s) were already done" in again
    assert "more" not in again and "the table shows" not in again
    shown = {(ln.split()[1], ln.split()[2]) for ln in again.splitlines() if ln.startswith("synth")}
    assert shown == {(w, f"{h:g}") for w in ("1", "2") for h in holds}, again  # every row
    # kvsim compare: one Markdown table per level (workers × hold_ms: 42) — the first and
    # last three printed, every one in compare.md, and all printed with --all-rows.
    assert cli_main(["compare", str(out_dir), "--bootstrap", "100"]) == 0
    short = capsys.readouterr().out
    md = (out_dir / "compare.md").read_text()
    assert md.count("\n## ") == 42 and short.count("\n## ") == 6
    assert f"_… 36 more levels of 42 not shown; {out_dir / 'compare.md'} has every one" in short
    assert short.rstrip().endswith(
        f"(written: {out_dir / 'compare.md'}, {out_dir / 'compare.csv'})"
    )
    assert "Sources:" in short
    assert cli_main(["compare", str(out_dir), "--bootstrap", "100", "--all-rows"]) == 0
    assert capsys.readouterr().out.startswith(md)


def test_compare_markdown_with_few_levels_is_printed_as_is() -> None:
    from sim.analysis.condense import MAX_LEVELS, condense_markdown

    def doc(levels: int) -> str:
        secs = "".join(f"\n\n## workers={i}\n\n| a |\n|:--|\n| {i} |" for i in range(levels))
        return f"# kvsim compare · t\n\nRun x.{secs}\n\nSources:\n- a: b\n"

    assert condense_markdown(doc(MAX_LEVELS)) == doc(MAX_LEVELS)
    short = condense_markdown(doc(MAX_LEVELS + 1), where="; see f.md")
    assert short.count("## workers=") == 6
    assert "## workers=2\n" in short and "## workers=10\n" in short
    assert "_… 7 more levels of 13 not shown; see f.md._" in short
    assert short.endswith("| 12 |\n\nSources:\n- a: b\n")
