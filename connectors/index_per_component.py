"""``per_component``: every attention component builds and copies the index itself.

This is the code before vLLM PR #47474: each of the K metadata builders (sparse
MLA, sliding window, compressor) turns ``query_start_loc`` into the per-token
request index on the host with NumPy and copies it into its own device buffer,
so one step does K identical builds and K host-to-device copies.
"""

from __future__ import annotations

from typing import Any

from .registry import register_index
from .token_index import IndexVariant, StagedBuffer, StepMetadata

__all__ = ["PerComponentIndex"]


@register_index
class PerComponentIndex(IndexVariant):
    name = "per_component"
    description = (
        "Each of K components repeats the index on the host and copies it (before #47474)."
    )

    def _setup(self) -> None:
        self._buffers = [StagedBuffer(self.max_tokens, self.device) for _ in range(self.components)]

    def component_index(self, meta: StepMetadata, component: int) -> Any:
        return self.fill(self._buffers[component], meta)
