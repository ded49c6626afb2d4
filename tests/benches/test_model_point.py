"""A model-mode point's peak memory does not grow with its request count (issue 28).

Each point runs in a fresh process (sim.benches.model_point), which reports its own
peak RSS. 150,000 requests rather than the issue's 10^6: the suite runs the
interpreted core (KVSIM_NATIVE=0), which simulated 10,000-12,000 requests per CPU
second on the 2-core development machine, so 10^6 would add some 100 s of a core to
every run of the suite (more beside CI's CPU hog), and past 65,536 requests
both bounded paths are in use (the plan drawn a block at a time past
sim.workload.plan.PLAN_HELD; the summary in histograms past
sim.runtime.summary_stream.EXACT_LIMIT), so a larger count only runs longer in the
same memory. The figures at 10^6 and 10^7 requests come from ``kvsim bench model
--requests N`` and the day's two 10^7-request points (docs/model-mode.md, Speed).
Before records were streamed a point held ~4.8 KB per request: these 140,000 more
would have added some 650 MB.
"""

from __future__ import annotations

from sim.benches.model import _stand_in_calibration
from sim.benches.model_point import measure_point
from sim.runtime.summary_stream import EXACT_LIMIT
from sim.workload.plan import PLAN_HELD

SMALL, LARGE = 10_000, 150_000


def test_peak_rss_of_a_model_point_is_independent_of_its_requests(tmp_path) -> None:
    assert 2 * max(PLAN_HELD, EXACT_LIMIT) < LARGE  # past both bounds, into steady state
    cal = str(_stand_in_calibration(tmp_path / "cal.json"))
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small = measure_point(cal, SMALL, 100.0, tmp_path / "small", timeout_s=240)
    large = measure_point(cal, LARGE, 100.0, tmp_path / "large", timeout_s=240)
    assert (small.requests, large.requests) == (SMALL, LARGE)
    rows = (tmp_path / "large" / "requests.csv").read_text().count("\n")
    assert rows == LARGE + 1  # every row written, with the header
    ratio = large.max_rss_mb / small.max_rss_mb
    assert 0.8 <= ratio <= 1.2, (
        f"peak RSS {small.max_rss_mb:.0f} MB at {SMALL} requests, "
        f"{large.max_rss_mb:.0f} MB at {LARGE}"
    )


_DRIVER = """
import sys
from pathlib import Path
from sim.benches.model import _stand_in_calibration
from sim.benches.model_point import measure_point
tmp = Path(sys.argv[1])
measure_point(str(_stand_in_calibration(tmp / "cal.json")), 5_000_000, 15.0, tmp)
"""


def test_the_points_process_dies_with_a_killed_bench(tmp_path) -> None:
    """kill -9 of ``kvsim bench model`` left its point (minutes of work) running under
    another parent; it must end with it (every wait bounded, leftovers killed)."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from tests.procscan import TAG_ENV, children, kill_tagged, new_tag, tagged, wait_for

    tag = new_tag()
    env = {**os.environ, TAG_ENV: tag, "PYTHONPATH": str(Path(__file__).parents[2])}
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER, str(tmp_path)], env=env)
    try:
        assert wait_for(lambda: children(driver.pid, "model_point"), 120)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        left: list[int] = []

        def none_left() -> bool:
            left[:] = tagged(tag)
            return not left

        assert wait_for(none_left, 60), f"the point's process outlived the bench: {left}"
    finally:
        if driver.poll() is None:
            driver.kill()
        kill_tagged(tag)
