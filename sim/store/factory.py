"""Build the store a point's config asks for; a context manager that always cleans up."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sim.config.experiment import ExperimentConfig
from sim.store.base import LoadStore
from sim.store.modelled import ModelledStore

__all__ = ["open_store"]


@contextmanager
def open_store(cfg: ExperimentConfig, workload: Any) -> Iterator[LoadStore]:
    """The modelled store, or a started (and filled) real store that is stopped on every
    way out. Call ``attach(env)`` on it with the point's clock before the first request."""
    if cfg.store.kind == "mooncake":
        from sim.store.real import MooncakeStore  # imports mooncake only when used

        with MooncakeStore(cfg, workload) as store:  # __enter__ starts it
            yield store
        return

    # An open loop waits for no transfer's end on the wall clock: quiet timers.
    yield ModelledStore(cfg.store, quiet_ends=getattr(workload, "closed_clients", None) is None)
