"""The run's uniform draws: one seeded numpy Generator, read one at a time or in blocks.

Every random choice of a model point (GIL hand-offs, wake-up and timer latencies,
the probe's jitter) comes from this one stream, so a point is reproducible from
its seed. Drawing numbers one numpy call at a time would cost more than the
simulation step that uses them, hence the buffer; the probe takes whole blocks
(:meth:`Uniforms.block`) because it draws ahead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain, islice

import numpy as np

__all__ = ["Uniforms"]


class Uniforms:
    """Uniform draws from the run's one generator, taken in blocks (one numpy call per 4096).

    ``next`` is the fastest way to draw one (a C-level iterator step, no Python frame:
    model mode draws several times per request); calling the object does the same."""

    def __init__(self, rng: np.random.Generator, block: int = 4096) -> None:
        self._rng = rng
        self._block = block
        self._it = chain.from_iterable(self._blocks())
        #: Draw one: ``draws.next()``.
        self.next: Callable[[], float] = self._it.__next__

    def _blocks(self) -> Iterator[list[float]]:
        while True:
            yield self._rng.random(self._block).tolist()

    def __call__(self) -> float:
        return self.next()

    def block(self, n: int) -> np.ndarray:
        """The next ``n`` draws of the same stream, as an array (what ``n`` calls give)."""
        return np.fromiter(islice(self._it, n), dtype=float, count=n)
