"""``noop``: a request whose CPU stages do nothing, for the harness's noise floor.

Run with ``noop``, every latency kvsim reports is what the framework itself adds
(worker queue, inbox, simulation loop) plus the modelled store transfer; the GIL
hold it reports is the meter's own overhead (docs/gil-method.md).
"""

from __future__ import annotations

from typing import Any

from .base import AddressVariant, LoadJob
from .registry import register

__all__ = ["NoopVariant"]


@register
class NoopVariant(AddressVariant):
    name = "noop"
    description = "Does nothing: the latency and GIL hold the harness itself adds."
    computes_addresses = False

    def warm_up(self) -> None:
        return None

    def prepare_values(self, chunks: Any, block_ids: Any) -> Any:
        raise NotImplementedError("noop computes no addresses (computes_addresses = False)")

    def run(self, job: LoadJob, group: int, handler: str) -> tuple[list[str], Any]:
        return [], None
