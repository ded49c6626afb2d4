"""The run's uniform draws: one seeded numpy Generator, read one at a time or in blocks.

Every random choice of a model point (GIL hand-offs, wake-up and timer latencies,
the probe's jitter) comes from this one stream, so a point is reproducible from
its seed. Drawing numbers one numpy call at a time would cost more than the
simulation step that uses them, hence the buffer; the probe takes whole blocks
(:meth:`Uniforms.block`) because it draws ahead.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Uniforms"]


class Uniforms:
    """Uniform draws from the run's one generator, taken in blocks (one call per 4096)."""

    def __init__(self, rng: np.random.Generator, block: int = 4096) -> None:
        self._rng = rng
        self._block = block
        self._buf: list[float] = []
        self._i = 0

    def __call__(self) -> float:
        if self._i >= len(self._buf):
            self._buf = self._rng.random(self._block).tolist()
            self._i = 0
        x = self._buf[self._i]
        self._i += 1
        return x

    def block(self, n: int) -> np.ndarray:
        """The next ``n`` draws of the same stream, as an array (what ``n`` calls give)."""
        out = np.empty(n)
        got = 0
        while got < n:
            if self._i >= len(self._buf):
                self._buf = self._rng.random(self._block).tolist()
                self._i = 0
            take = min(n - got, len(self._buf) - self._i)
            out[got : got + take] = self._buf[self._i : self._i + take]
            self._i += take
            got += take
        return out
