"""An index variant's per-component index against the NumPy reference, step by step.

The index-variant contract (docs/your-connector.md): for every step, each of the
``components`` results is the per-token request index of the step's
``query_start_loc`` in its first ``num_mapped`` entries and zero up to
``num_tokens`` (the step may be padded). The cases cover decode and prefill
batches, a request with no tokens, padding, and one request.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from connectors import registry
from connectors.token_index import MetadataFactory, reference_index
from sim.conformance.check import THREAD_TIMEOUT_S, CheckResult, describe_raise

__all__ = ["INDEX_CASES", "check_index_variant"]

REFERENCE = "the NumPy reference index (connectors.token_index.reference_index)"

#: Query lengths per request of each step checked.
INDEX_CASES: tuple[tuple[int, ...], ...] = (
    (1, 1, 1, 1),
    (3, 0, 2, 1),
    (7,),
    (5, 9, 1, 0, 13, 2),
    (16, 16),
)


def check_index_variant(
    name: str, components: int = 3, timeout_s: float = THREAD_TIMEOUT_S
) -> CheckResult:
    """Run the cases through index variant ``name`` on the CPU and compare every component.

    The variant runs on a thread of its own, as the engine thread calls it: one that does
    not return within ``timeout_s`` is named with the step it was on, and one that calls
    ``sys.exit`` fails the check instead of ending kvsim."""
    cls = registry.get_index_variant(name)
    state: dict[str, Any] = {"at": "the constructor", "passed": 0, "failure": None}
    errors: list[BaseException] = []

    def work() -> None:
        try:
            _run_cases(cls, components, state)
        except BaseException as exc:  # kvsim's own error: raised again in the caller
            errors.append(exc)

    worker = threading.Thread(target=work, name="kvsim-check-index", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if errors:
        raise errors[0]
    failure = state["failure"]
    if worker.is_alive():
        failure = f"{state['at']}: did not return in {timeout_s:g} s (a hang?)"
    return CheckResult(name, len(INDEX_CASES), state["passed"], 1, failure, REFERENCE)


def _run_cases(cls: type, components: int, state: dict[str, Any]) -> None:
    """The cases one after another; ``state`` says where it is, what passed, what failed."""
    try:  # the variant's bug (its _setup runs here), said in one line
        variant = cls(components, 64, "cpu")
        state["at"] = "warm_up()"
        variant.warm_up()
    except BaseException as exc:  # sys.exit too: on this thread it is the variant's
        state["failure"] = f"{state['at']} {describe_raise(exc, cls)}"
        return
    factory = MetadataFactory(8, 64, "cpu", pad_multiple=8)
    for lens in INDEX_CASES:
        meta = factory.make(list(lens))
        want = reference_index(meta.query_start_loc_cpu.numpy(), meta.num_tokens)
        state["at"] = f"query lens {list(lens)}"
        try:
            got = variant.step(meta)
        except BaseException as exc:  # the variant's bug, reported as the case's failure
            state["failure"] = f"{state['at']}: {describe_raise(exc, cls)}"
            return
        state["failure"] = _difference(lens, components, want, got)
        if state["failure"]:
            return
        state["passed"] += 1


def _difference(lens: tuple[int, ...], components: int, want: np.ndarray, got: Any) -> str | None:
    head = f"query lens {list(lens)}"
    if not isinstance(got, list) or len(got) != components:
        return f"{head}: step() returned {type(got).__name__}, not a list of {components} indices"
    for k, t in enumerate(got):
        arr = np.asarray(t.cpu() if hasattr(t, "cpu") else t)[: len(want)]
        if arr.shape != want.shape:
            return f"{head}, component {k}: {arr.shape[0]} entries, expected {want.shape[0]}"
        bad = np.flatnonzero(arr != want)
        if bad.size:
            i = int(bad[0])
            return f"{head}, component {k}, token {i}: expected {int(want[i])}, got {int(arr[i])}"
    return None
