"""Settings of the real Mooncake store (``store.kind: mooncake``).

Kept apart from the modelled store's fields: these say how kvsim starts a
master and a client for a point, how the KV cache is checked, and how much of
the machine's memory a point may take.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool

from sim.config.types import FrozenModel, PosFloat, PosInt

__all__ = ["MooncakeConfig"]


class MooncakeConfig(FrozenModel):
    """A Mooncake master on loopback and a store client in the point's process."""

    api: Literal["multi_buffers", "per_region"] = Field(
        "multi_buffers",
        description="multi_buffers: one store object per chunk, fetched with "
        "batch_get_into_multi_buffers (one address per region, as the upstream connector); "
        "per_region: one object per chunk and region, fetched with batch_get_into.",
    )
    network: Literal["auto", "namespace", "loopback"] = Field(
        "auto",
        description="namespace: run the point (master and client) in a private network "
        "namespace with only loopback, refuse to run without one; loopback: bind 127.0.0.1 "
        "only (the client's transfer listeners may bind every interface); auto: a namespace "
        "where possible (root, unshare, ip), else loopback, said once.",
    )
    segment_mib: PosInt | None = Field(
        None,
        le=1 << 22,
        description="Store segment the client gives the store, MiB; default: what the "
        "point's puts need plus headroom (so nothing is evicted).",
    )
    local_buffer_mib: PosInt = Field(
        16, le=1 << 20, description="Client's local transfer buffer, MiB (not used by zero-copy)."
    )
    verify: StrictBool = Field(
        True,
        description="After each get, check the first, middle and last 8-byte word of every "
        "block against the pattern that was put; a wrong address fails the request.",
    )
    ready_timeout_s: PosFloat = Field(
        20.0, le=600, description="Seconds the master may take to accept connections."
    )
    memory_budget_gib: PosFloat | None = Field(
        None,
        le=1 << 20,
        description="RAM a point may use for KV buffers and store segment, GiB; default: "
        "limits.max_memory_gib when set, else 80% of the machine's available memory when "
        "the point is checked.",
    )
