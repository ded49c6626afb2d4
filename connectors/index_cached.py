"""``cached``: the step's common metadata builds the index once; components reuse it.

vLLM PR #47474: the first component that asks builds the index on the host and
copies it into one shared device buffer; the result is kept on the step's
metadata object, and every other component takes the same view. One build and
one copy per step, whatever K is.
"""

from __future__ import annotations

from typing import Any

from .registry import register_index
from .token_index import IndexVariant, StagedBuffer, StepMetadata

__all__ = ["CachedIndex"]


@register_index
class CachedIndex(IndexVariant):
    name = "cached"
    description = "Built once per step on the host, one copy, a cached view for every component."

    def _setup(self) -> None:
        self._buffer = StagedBuffer(self.max_tokens, self.device)

    def component_index(self, meta: StepMetadata, component: int) -> Any:
        view = meta.cached(self)
        if view is None:
            view = meta.store(self, self.fill(self._buffer, meta))
        return view
