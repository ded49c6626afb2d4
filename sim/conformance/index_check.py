"""An index variant's per-component index against the NumPy reference, step by step.

The index-variant contract (docs/your-connector.md): for every step, each of the
``components`` results is the per-token request index of the step's
``query_start_loc`` in its first ``num_mapped`` entries and zero up to
``num_tokens`` (the step may be padded). The cases cover decode and prefill
batches, a request with no tokens, padding, and one request.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from connectors import registry
from sim.conformance.check import CheckResult, describe_raise

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


def check_index_variant(name: str, components: int = 3) -> CheckResult:
    """Run the cases through index variant ``name`` on the CPU and compare every component."""
    from connectors.token_index import MetadataFactory, reference_index

    cls = registry.get_index_variant(name)
    step = "the constructor"
    try:  # the variant's bug (its _setup runs here), said in one line
        variant = cls(components, 64, "cpu")
        step = "warm_up()"
        variant.warm_up()
    except Exception as exc:
        failure = f"{step} {describe_raise(exc, cls)}"
        return CheckResult(name, len(INDEX_CASES), 0, 1, failure, REFERENCE)
    factory = MetadataFactory(8, 64, "cpu", pad_multiple=8)
    passed = 0
    for lens in INDEX_CASES:
        meta = factory.make(list(lens))
        want = reference_index(meta.query_start_loc_cpu.numpy(), meta.num_tokens)
        try:
            got = variant.step(meta)
        except Exception as exc:  # the variant's bug, reported as the case's failure
            failure = f"query lens {list(lens)}: {describe_raise(exc, cls)}"
            return CheckResult(name, len(INDEX_CASES), passed, 1, failure, REFERENCE)
        failure = _difference(lens, components, want, got)
        if failure:
            return CheckResult(name, len(INDEX_CASES), passed, 1, failure, REFERENCE)
        passed += 1
    return CheckResult(name, len(INDEX_CASES), passed, 1, None, REFERENCE)


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
