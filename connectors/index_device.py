"""``device``: the index is computed on the device from its copy of ``query_start_loc``.

The step after PR #47474 in upstream: no host-side repeat and no index copy at
all. Token ``t`` belongs to the request ``r`` with ``qsl[r] <= t < qsl[r + 1]``,
which is ``searchsorted(qsl[1:], t, right=True)``; that is written straight into
the persistent buffer, and the padding ``[num_mapped:num_tokens]`` (whose
positions would map to ``num_reqs``) is zeroed. Built once per step, like
``cached``. ``searchsorted`` needs no output size, so nothing waits on the device.
"""

from __future__ import annotations

from typing import Any

from .registry import register_index
from .token_index import IndexVariant, StepMetadata

__all__ = ["DeviceIndex"]


@register_index
class DeviceIndex(IndexVariant):
    name = "device"
    description = (
        "Built once per step on the device from query_start_loc (searchsorted), no host work."
    )

    def _setup(self) -> None:
        import torch  # heavy: torch loads only when the device index is set up

        self._searchsorted = torch.searchsorted
        self._buffer = torch.zeros(self.max_tokens, dtype=torch.int32, device=self.device)
        self._positions = torch.arange(self.max_tokens, dtype=torch.int32, device=self.device)

    def component_index(self, meta: StepMetadata, component: int) -> Any:
        view = meta.cached(self)
        if view is None:
            view = meta.store(self, self._build(meta))
        return view

    def _build(self, meta: StepMetadata) -> Any:
        m, n = meta.num_mapped, meta.num_tokens
        out = self._buffer[:n]
        if meta.num_reqs == 0:
            out.zero_()
        else:
            ends = meta.query_start_loc[1:]
            self._searchsorted(ends, self._positions[:n], right=True, out_int32=True, out=out)
            if n > m:
                out[m:n].zero_()
        meta.index_builds += 1
        return out
