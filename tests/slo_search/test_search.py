"""kvsim search: SLO parsing, the bisection strategy on a known curve, and a real search
whose points are ordinary points of the run directory (compare, plot, resume)."""

from __future__ import annotations

import json
import math

import pytest

from sim.cli import main
from sim.rundir.outputs import read_csv
from sim.slo_search.slo import judge, parse_slo
from sim.slo_search.strategy import Strategy


def test_slo_parsing_and_judgement() -> None:
    slo = parse_slo("latency_p99_ms<=100")
    assert (slo.metric, slo.op, slo.limit) == ("latency_p99_ms", "<=", 100.0)
    assert slo.text == "p99 load latency ≤ 100 ms"
    assert parse_slo("stall_p99_ms < 5").text == "p99 probe stall < 5 ms"
    assert parse_slo("latency_p99.9_ms<=7").text == "p99.9 load latency ≤ 7 ms"
    with pytest.raises(ValueError, match="expected METRIC<=LIMIT"):
        parse_slo("latency_p99_ms=100")
    with pytest.raises(ValueError, match="did you mean 'latency_p99_ms'"):
        parse_slo("latency_p99ms<=1", known=["latency_p99_ms", "stall_p99_ms"])
    assert judge({"latency_p99_ms": "99", "failed": "0"}, [slo]).ok
    assert not judge({"latency_p99_ms": "101"}, [slo]).ok
    assert "failed" in judge({"latency_p99_ms": "1", "failed": "2"}, [slo]).why
    assert "no value" in judge({"latency_p99_ms": ""}, [slo]).why


def _run(strategy: Strategy, passes) -> list[float]:
    tried = []
    while (v := strategy.next_value()) is not None:
        tried.append(v)
        strategy.record(v, passes(v), v)
    return tried


def test_max_bisection_brackets_a_known_threshold() -> None:
    s = Strategy("max", start=25, lo=0.5, hi=1600, integer=False, tol=0.1, max_runs=20)
    tried = _run(s, lambda v: v <= 212)
    out = s.outcome()
    assert out.kind == "found" and out.value <= 212 < out.bound
    assert out.bound / out.value - 1 <= 0.1
    assert tried[:4] == [25, 50, 100, 200]  # doubling until the first miss
    # nothing meets it / everything does: said so, not guessed
    low = Strategy("max", 25, 1, 100, False, max_runs=20)
    _run(low, lambda v: False)
    assert low.outcome().kind == "none" and math.isnan(low.outcome().value)
    high = Strategy("max", 25, 1, 100, False, max_runs=20)
    _run(high, lambda v: True)
    assert high.outcome().kind == "at_least" and high.outcome().value == 100
    budget = Strategy("max", 25, 1, 1e4, False, max_runs=3)
    assert len(_run(budget, lambda v: v < 60)) == 3 and budget.outcome().kind == "budget"


def test_best_scans_powers_of_two_and_keeps_the_lowest_metric() -> None:
    s = Strategy("best", start=1, lo=1, hi=16, integer=True, max_runs=10)
    metric = {1: 90.0, 2: 40.0, 4: 35.0, 8: 60.0, 16: 120.0}
    while (v := s.next_value()) is not None:
        s.record(v, metric[int(v)] <= 100, metric[int(v)])
    assert sorted(s.tried) == [1, 2, 4, 8, 16]
    assert s.outcome().value == 4


def test_search_runs_points_that_compare_plot_and_resume_read(write_config, tmp_path, capsys):
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    out = tmp_path / "search"
    args = ["search", str(path), "--slo", "latency_p99_ms<=1000", "--over",
            "workload.arrival.rate_rps", "--max-runs", "2", "--out", str(out),
            "--in-process"]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    rows = read_csv(out / "summary.csv")
    state = json.loads((out / "search.json").read_text())
    # Whether a point meets the SLO depends on this machine's load; what must hold is that
    # each verdict is the SLO judged on the point's summary row, and that the second value
    # tried follows from the first verdict (double after a pass, halve after a miss).
    slo = parse_slo("latency_p99_ms<=1000")
    for series in state["series"]:
        first, second = series["tried"][0], series["tried"][1]
        assert first["value"] == 400  # the config's rate_rps
        assert second["value"] == (800 if first["meets"] else 200)
        for t in series["tried"]:
            row = next(r for r in rows if r["variant"] == series["axes"]["variant"]
                       and r["rate_rps"] == str(t["value"]))  # fmt: skip
            assert judge(row, [slo]).ok == t["meets"]
        line = next(ln for ln in text.splitlines() if ln.startswith(series["label"] + " "))
        assert "p99 load latency ≤ 1000 ms" in line
    assert len(rows) == 4 and {r["variant"] for r in rows} == {"scalar", "numpy"}
    assert (out / "figures" / "search.png").stat().st_size > 0
    results = json.loads((out / "results.json").read_text())
    assert {p["axes"]["rate_rps"] for p in results["points"]} == {int(r["rate_rps"]) for r in rows}
    assert main(["compare", str(out), "--bootstrap", "100"]) == 0
    heads = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("## ")]
    assert heads and all("workers=2" in h for h in heads)
    assert "rate_rps=400" in heads[0]
    assert main(["plot", str(out)]) == 0
    # resumed with a bigger budget: the four points are kept, two more are run
    before = {p.name: (p / "rep-0" / "status.json").read_text() for p in (out / "points").iterdir()}
    args[args.index("2")] = "3"
    assert main([*args, "--resume"]) == 0
    after = sorted((out / "points").iterdir())
    assert len(after) == 6
    for p in after:
        if p.name in before:
            assert (p / "rep-0" / "status.json").read_text() == before[p.name]


def test_search_argument_errors_are_one_line(write_config, capsys) -> None:
    path = write_config({})
    base = ["search", str(path), "--over", "workload.arrival.rate_rps"]
    assert main([*base, "--slo", "latency_p99<=3"]) == 2
    assert "not a summary column" in capsys.readouterr().err
    assert main(["search", str(path), "--slo", "latency_p99_ms<=3", "--over", "store.speed"]) == 2
    assert "'speed' is not a field of store" in capsys.readouterr().err
    closed = write_config(
        {"workload": {"arrival": {"kind": "closed", "clients": 2}}}, name="c.yaml"
    )
    assert main(["search", str(closed), "--slo", "latency_p99_ms<=3", "--over",
                 "workload.arrival.rate_rps"]) == 2  # fmt: skip
    assert "is kind 'closed'" in capsys.readouterr().err
    assert main([*base, "--slo", "latency_p99_ms<=3", "--max-runs", "0"]) == 2


def test_search_over_workers_scans_and_names_the_best(write_config, tmp_path, capsys) -> None:
    path = write_config({})
    out = tmp_path / "w"
    args = ["search", str(path), "--slo", "latency_p99_ms<=100000", "--over",
            "connector.workers", "--hi", "2", "--out", str(out), "--in-process"]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    rows = read_csv(out / "summary.csv")
    assert sorted(r["workers"] for r in rows) == ["1", "2"]  # powers of two up to --hi
    tried = json.loads((out / "search.json").read_text())["series"][0]["tried"]
    met = [t for t in tried if t["meets"]]  # a point the harness fell behind on is a miss
    if met:
        best = min(met, key=lambda t: t["values"]["latency_p99_ms"])["value"]
        assert f"numpy: best workers = {best} under p99 load latency ≤ 100000 ms" in text
    else:
        assert "numpy misses p99 load latency ≤ 100000 ms" in text


def test_the_search_figure_is_a_panel_per_variant(tmp_path, monkeypatch) -> None:
    """Six series on one pair of axes under a legend as large could not be read apart."""
    import json

    import matplotlib.figure

    from sim.slo_search.figure import draw_search

    def tried(cap: float) -> list[dict]:
        return [
            {"index": i, "value": v, "meets": v <= cap, "values": {"latency_p99_ms": 10 * v / cap}}
            for i, v in enumerate((20, 40, 80))
        ]

    series = [
        {"axes": {"variant": v, "workers": w}, "label": f"{v} · workers={w}", "goal": "max",
         "tried": tried(cap * w), "result": {"kind": "found", "value": 20}}
        for v, cap in (("scalar", 10), ("numpy", 30), ("rows", 60))
        for w in (1, 4)
    ]  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    (run / "search.json").write_text(
        json.dumps({"over": "workload.arrival.rate_rps", "axis": "rate_rps",
                    "slo": ["latency_p99_ms<=10"], "series": series, "points": []})
    )  # fmt: skip
    seen = []
    real = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "savefig",
        lambda fig, *a, **k: (seen.append(fig), real(fig, *a, **k)),
    )
    draw_search(run)
    (fig,) = seen
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in panels] == ["scalar · ", "numpy · ", "rows · "]
    for ax, variant in zip(panels, ("scalar", "numpy", "rows"), strict=True):
        lines = [ln.get_label() for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        assert lines == [
            f"{variant} · workers=1",
            f"{variant} · workers=4",
            "limit: p99 load latency ≤ 10 ms",
        ]
