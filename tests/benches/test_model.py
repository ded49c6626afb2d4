"""``kvsim bench model`` runs and says what it measured: both rates, the sweep estimate,
the verdict against the target. (The rates themselves are not asserted: a benchmark's
figures depend on the machine; tests check structure only.)"""

from __future__ import annotations

import re

from sim.cli import main as cli_main


def test_bench_model_prints_both_rates_and_the_verdict(capsys) -> None:
    assert cli_main(["bench", "model", "--requests", "12", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    for label in ("without probe", "with probe"):
        line = next(x for x in out.splitlines() if x.strip().startswith(label))
        assert re.search(r"[\d,]+ simulated requests/s of wall time", line)
        assert "240 requests" in line and "fastest of 2" in line  # 20 points x 12
        assert re.search(rf"target 20,000 requests/s {label}\s*: (met|NOT met) \(\d", out)
    assert "1,000-point sweep of 500 requests" in out
    point = re.search(
        r"one point of 12 requests in a fresh process: ([\d.]+) s to simulate \([\d,]+ "
        r"requests/s.*\), ([\d.]+) s with the process's start-up and imports; "
        r"peak RSS [\d,]+ MB",
        out,
    )
    assert point, out
    # Three significant figures: 12 requests take milliseconds, which read "0.0 s" before.
    simulate_s, process_s = float(point[1]), float(point[2])
    assert 0 < simulate_s < process_s, point[0]
