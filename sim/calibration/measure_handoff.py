"""The GIL's own hand-offs, as the model's GIL draws them.

A queue's wake-up (``wake``) is not how long the GIL takes to change hands: the woken
waiter must also win the GIL's mutex back, and on 7 Dec 2026 a release took 37-57 µs to
the waiter's first bytecode against 22-27 µs for the queue (experiments/gil_handoff).
So ``kvsim calibrate`` times the hand-offs themselves, with two threads: a *spinner*
that stamps the clock in a loop (a gap in its stamps is time it did not hold the GIL)
and a *visitor* that sleeps 1 ms, waits for the GIL (a forced switch once its switch
interval runs out), stamps its first bytecode, holds the GIL for a set time and sleeps
again, which releases it. Per visit that one gap in the spinner's stamps holds alone
(:func:`paired`):

* ``gil_forced``: the spinner's last stamp to the visitor's first (the drop request
  honoured and the visitor woken);
* ``gil_back`` (visits of no length): the visitor's release to the spinner's next stamp,
  FORCE_SWITCHING's return, the spinner woken as the visitor takes the GIL;
* ``gil_handoff`` (visits of 200 µs, long past that wake-up, so the spinner waits in
  ``take_gil``): a release to the waiting thread's first bytecode.
"""

from __future__ import annotations

import bisect
import threading
import time

__all__ = ["HANDOFF_VISITS", "gil_handoffs", "paired", "visits"]

#: Visits per kind measured by calibrate: each costs a switch interval and a millisecond.
HANDOFF_VISITS = 120
#: A visit long enough that the spinner, forced off, is back in ``take_gil`` before it
#: ends (FORCE_SWITCHING's return takes 15-35 µs).
_LONG_VISIT_NS = 200_000
#: A gap in the spinner's stamps longer than this is a stretch without the GIL (its own
#: loop turns in well under a microsecond).
_GAP_NS = 5_000
_clock = time.perf_counter_ns


def visits(n: int, hold_ns: int) -> tuple[list[float], list[float]]:
    """(forced hand-off, back) in ms, paired, for the visits of ``n`` holding the GIL
    ``hold_ns`` each that :func:`paired` keeps."""
    last = [0]
    spinning = threading.Event()
    stop = threading.Event()
    gaps: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] = []

    def spinner() -> None:
        last[0] = prev = _clock()
        spinning.set()
        while not stop.is_set():
            now = _clock()
            if now - prev > _GAP_NS:
                gaps.append((prev, now))
            last[0] = prev = now
        now = _clock()  # the last visit's return: the stretch the loop did not look at
        if now - prev > _GAP_NS:
            gaps.append((prev, now))

    def visitor() -> None:
        # A visit before the spinner runs would time the spinner's start-up (or, before
        # its first stamp, the clock's epoch), not a hand-off: on a loaded machine a
        # thread's start can take several visits.
        spinning.wait()
        end = 0
        try:
            for _ in range(n):
                # One visit a gap: on a loaded machine the spinner may wait for a core
                # past the next visit, and the GIL then sits idle (see paired).
                while last[0] <= end:
                    time.sleep(0.0002)
                time.sleep(0.001)
                t0 = _clock()
                while _clock() - t0 < hold_ns:
                    pass
                end = _clock()
                spans.append((t0, end))
        finally:
            stop.set()

    threads = [threading.Thread(target=spinner), threading.Thread(target=visitor)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return paired(gaps, spans)


def paired(
    gaps: list[tuple[int, int]], spans: list[tuple[int, int]]
) -> tuple[list[float], list[float]]:
    """(forced, back) in ms for each visit ``(first stamp, last stamp)`` that one gap in the
    spinner's stamps holds alone: forced from the gap's start to the visit's first stamp,
    back from its last to the gap's end. A gap holding two visits, or none that began
    before the visit, is left out: on a loaded machine the spinner, forced off, may wait
    for a core past the visitor's next visit, and the GIL then sat idle, which is no
    hand-off (make test beside a CPU hog: 9 of 12 returns found, the rest timed the idle
    GIL as forced hand-offs of several ms)."""
    resumed = [g[1] for g in gaps]
    forced: list[float] = []
    back: list[float] = []
    for k, (first, last) in enumerate(spans):
        i = bisect.bisect_left(resumed, last)
        if i == len(gaps):
            continue
        began, ended = gaps[i]
        alone = (k == 0 or spans[k - 1][1] < began) and (
            k + 1 == len(spans) or spans[k + 1][0] > ended
        )
        if began <= first and alone:
            forced.append((first - began) / 1e6)
            back.append((ended - last) / 1e6)
    return forced, back


def gil_handoffs(n: int = HANDOFF_VISITS) -> dict[str, list[float]]:
    """Samples (ms) of the three hand-offs the model's GIL draws, ``n`` visits each."""
    forced_short, back = visits(n, 0)
    forced_long, handoff = visits(n, _LONG_VISIT_NS)
    return {"gil_forced": forced_short + forced_long, "gil_back": back, "gil_handoff": handoff}
