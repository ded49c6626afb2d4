"""Which waiting thread gets the GIL when its holder lets it go, here.

The model draws the waiter at random (docs/model-mode.md, "Hand-off policy"). This asks
CPython and the OS directly: a holder spins 12 ms in Python; three threads come back from
sleeps of 2, 4 and 6 ms and wait for the GIL behind it; the holder then sleeps. It counts
which waiter ran first, over many trials, at two switch intervals:

- 1 s: no waiter's timed wait runs out, so the holder's release is voluntary;
- 5 ms (the default): the first waiter's wait runs out at about 7 ms, it asks the holder
  to drop, waits again, and the holder is forced off.

    PYTHONPATH=. python experiments/gil_handoff/waiter_order.py [TRIALS]
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter

#: The holder's spin, and when each waiter comes back from its sleep (s).
_HOLD_S = 0.012
_BACK_S = (0.002, 0.004, 0.006)


def _trial() -> tuple[int, ...]:
    """The order in which the three waiters got the GIL in one trial."""
    order: list[int] = []
    start = threading.Barrier(len(_BACK_S) + 1)

    def waiter(k: int) -> None:
        start.wait()
        time.sleep(_BACK_S[k])  # GIL released; coming back, it waits behind the holder
        order.append(k)

    def holder() -> None:
        start.wait()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < _HOLD_S:
            pass
        time.sleep(0.002)  # lets the GIL go

    threads = [threading.Thread(target=waiter, args=(k,)) for k in range(len(_BACK_S))]
    threads.append(threading.Thread(target=holder))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tuple(order)


def first_shares(interval_s: float, trials: int) -> list[float]:
    """The share of trials each waiter (by the time it began waiting) got the GIL first."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(interval_s)
    try:
        firsts = Counter(_trial()[0] for _ in range(trials))
    finally:
        sys.setswitchinterval(old)
    return [firsts[k] / trials for k in range(len(_BACK_S))]


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(f"which waiter got the GIL first, {trials} trials (waiting from 2, 4, 6 ms):")
    for interval, what in ((1.0, "released (switch interval 1 s)"), (0.005, "forced (5 ms)")):
        shares = first_shares(interval, trials)
        cells = ", ".join(f"{s:.0%}" for s in shares)
        print(f"  {what:<32} first, second, third to wait: {cells}")


if __name__ == "__main__":
    main()
