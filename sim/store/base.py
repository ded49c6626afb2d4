"""What the load pipeline asks of a store, whichever store it is.

The pipeline of one request is: ``admit`` (on the simulation thread, at arrival)
-> ``stage`` (in a load thread: the connector's CPU stages, and for a real store
the get itself) -> ``transfer`` (on the simulation thread: the modelled transfer,
or the check of what a real get wrote) -> ``release``. ``admit`` and ``transfer``
answer through a callback, at once or later on the point's clock: the pipeline is
callbacks, not a SimPy process per request (the harness's cost). The modelled
store and the real Mooncake store are the two implementations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import simpy

from connectors.base import AddressVariant, LoadJob, mark_stage
from connectors.contract import ContractError, result_problem
from sim import columns
from sim.config.sections import StoreConfig
from sim.store.model import TransferOutcome

__all__ = ["STORE_METRICS", "LoadStore", "check_result", "cpu_stages", "nan_store_summary"]

#: Summary columns every store fills (NaN where a figure does not apply to it).
STORE_METRICS = columns.names(columns.STORE)


def nan_store_summary(kind: str) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(STORE_METRICS, float("nan"))
    out[columns.STORE_KIND.name] = kind
    return out


def cpu_stages(variants: Sequence[AddressVariant], handler: str, job: LoadJob) -> int:
    """What a load thread does for one request: every group's chunk list and addresses
    (stages ``keys`` and ``addresses``, marked by the variant), then the hand-off: the
    results, handed to the transfer, are dropped here on the load thread (``free``).

    Each group's result is checked against the list contract first (connectors.contract,
    about 1 µs of the ``addresses`` stage): ContractError for one the bindings would
    reject, which fails the point (sim.runtime.pipeline)."""
    chunks = 0
    results = []
    mark_stage("keys")
    for group, variant in enumerate(variants):
        keys, values = variant.run(job, group, handler)
        check_result(variant, values, len(keys), job, group)
        chunks += len(keys)
        results.append((keys, values))
        del keys, values
    mark_stage("free")
    del results
    return chunks


def check_result(
    variant: AddressVariant, values: Any, chunks: int, job: LoadJob, group: int
) -> None:
    """ContractError when ``values`` (one group's result) breaks the list contract; a
    variant that computes no addresses, or a buffer what-if (``array``), is not held to it."""
    cls = type(variant)
    if not cls.computes_addresses or cls.buffer_inputs:
        return
    problem = result_problem(values, chunks, variant.db.regions)
    if problem is not None:
        raise ContractError(
            f"variant {cls.name!r}, request {job.request_id} ({chunks} chunks, group {group}): "
            f"{problem}"
        )


class LoadStore(Protocol):
    """The store behind the load path (see the module docstring for the call order)."""

    #: ``admit`` calls back at once with nothing waited and ``release`` gives back
    #: nothing (the modelled store: its slots are the store model's own), so the pipeline
    #: skips both calls (two Python calls a request on the simulation thread).
    immediate: ClassVar[bool]

    @property
    def config(self) -> StoreConfig: ...

    def attach(self, env: simpy.Environment) -> None:
        """Bind to the point's clock before the first request."""
        ...

    def admit(self, job: LoadJob, then: Callable[[LoadJob, float], None]) -> None:
        """At arrival: ``then(job the load thread gets, seconds waited)``, now or later."""
        ...

    def stage(self, variants: Sequence[AddressVariant], handler: str, job: LoadJob) -> Any:
        """Run in a load thread (measured): the CPU stages, and a real store's get."""
        ...

    def transfer(
        self,
        nbytes: int,
        staged: Any,
        job: LoadJob,
        faults: np.random.Generator | None,
        then: Callable[[TransferOutcome], None],
    ) -> None:
        """After the load thread's job succeeded: ``then(outcome)``, now or later."""
        ...

    def release(self, job: LoadJob) -> None:
        """The request is done (ok or not): give back what ``admit`` took."""
        ...

    def summary(self) -> dict[str, Any]:
        """The store's own figures for summary.csv (STORE_METRICS)."""
        ...
