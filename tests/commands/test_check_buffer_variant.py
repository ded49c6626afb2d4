"""``kvsim check array``: the built-in buffer what-if returns int64 arrays by design, so
the check compares their values as the lists they stand for (it failed 0/76 on the type),
and still finds a wrong value."""

from __future__ import annotations

import numpy as np

from connectors.address_array import ArrayVariant
from connectors.registry import ADDRESS_VARIANTS
from sim.cli import main
from sim.conformance import check_variant


def test_check_passes_the_builtin_array_variant(capsys) -> None:
    assert main(["check", "array"]) == 0
    out = capsys.readouterr().out
    assert "array: " in out and "cases match scalar" in out
    assert "its int64 arrays compared as the lists they stand for" in out


class _Shifted(ArrayVariant):
    """The array variant with every address one byte off: values wrong, types as designed."""

    name = "test-array-shifted"

    def prepare_values(self, chunks, block_ids):
        addrs, sizes, bids = super().prepare_values(chunks, block_ids)
        return np.asarray(addrs) + 1, sizes, bids


def test_a_buffer_variant_with_a_wrong_value_still_fails() -> None:
    with ADDRESS_VARIANTS.temporary(_Shifted):
        result = check_variant("test-array-shifted", threads=1)
    assert not result.ok
    assert "address expected" in (result.failure or ""), result.failure
