"""The list contract, checked on every request a run makes, at a cost of about a microsecond.

``kvsim check`` compares a variant with the reference on its corpus, and ``kvsim run``
on the run's own geometry before it starts (sim.conformance); neither sees every
request of the run. A variant may still give something else on one of them (a NumPy
array past some length, ``None`` once in a while): the store's native bindings would
reject it, and a run that went on would time work the real connector could not use.
So each request's result is checked here, in the load thread, where it is built:
its shape (three lists of one entry per chunk) in full, and the types of its first
and last chunk (a list of Python ints, one per region; the block id a Python int).
Every element would cost as much as building the lists; the first and the last catch
a variant that returns another type on some path, whichever chunk count it switches at.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ContractError", "result_problem", "type_name"]


class ContractError(ValueError):
    """A variant's result that breaks the list contract; the run cannot go on with it."""


def type_name(value: Any) -> str:
    """``int``, or ``numpy.int64``: what an error message calls a value's type."""
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _row_problem(row: Any, regions: int, what: str, chunk: int) -> str | None:
    if type(row) is not list:
        return f"chunk {chunk}'s {what} are a {type_name(row)}, not a list"
    if len(row) != regions:
        return f"chunk {chunk} has {len(row)} {what}, expected {regions} (one per region)"
    if regions and (type(row[0]) is not int or type(row[-1]) is not int):
        bad = row[0] if type(row[0]) is not int else row[-1]
        return f"chunk {chunk}'s {what} are {type_name(bad)}, not Python ints"
    return None


def result_problem(values: Any, chunks: int, regions: int) -> str | None:
    """What is wrong with one group's ``(addr_lists, size_lists, block_ids)`` for a request
    of ``chunks`` chunks over ``regions`` regions (None: nothing found).

    One expression decides that a result is right (about 1 µs: it runs once per group of
    every request, inside the measured CPU stages); :func:`_explain` says what is wrong."""
    list_, int_ = list, int
    if (type(values) is tuple or type(values) is list_) and len(values) == 3:
        a, s, b = values
        if (
            type(a) is list_
            and type(s) is list_
            and type(b) is list_
            and len(a) == chunks
            and len(s) == chunks
            and len(b) == chunks
        ):
            if not chunks:
                return None
            a0, a1, s0, s1 = a[0], a[-1], s[0], s[-1]
            if (
                type(a0) is list_
                and type(a1) is list_
                and type(s0) is list_
                and type(s1) is list_
                and len(a0) == regions
                and len(a1) == regions
                and len(s0) == regions
                and len(s1) == regions
                and type(b[0]) is int_
                and type(b[-1]) is int_
                and (
                    not regions
                    or (
                        type(a0[0]) is int_
                        and type(a0[-1]) is int_
                        and type(a1[0]) is int_
                        and type(a1[-1]) is int_
                        and type(s0[0]) is int_
                        and type(s0[-1]) is int_
                        and type(s1[0]) is int_
                        and type(s1[-1]) is int_
                    )
                )
            ):
                return None
    return _explain(values, chunks, regions)


def _explain(values: Any, chunks: int, regions: int) -> str | None:
    """The first thing :func:`result_problem` found wrong, in words."""
    if type(values) is not tuple and type(values) is not list:
        return f"returned a {type_name(values)}, not (addr_lists, size_lists, block_ids)"
    if len(values) != 3:
        return f"returned {len(values)} parts, not (addr_lists, size_lists, block_ids)"
    addrs, sizes, bids = values
    for name, part in (("addr_lists", addrs), ("size_lists", sizes), ("block_ids", bids)):
        if type(part) is not list:
            return f"{name} is a {type_name(part)}, not a list"
        if len(part) != chunks:
            return f"{name} has {len(part)} entries for {chunks} chunks"
    if not chunks:
        return None
    for c in (0, chunks - 1) if chunks > 1 else (0,):
        problem = _row_problem(addrs[c], regions, "addresses", c) or _row_problem(
            sizes[c], regions, "sizes", c
        )
        if problem:
            return problem
        if type(bids[c]) is not int:
            return f"chunk {c}'s block id is {type_name(bids[c])}, not a Python int"
    return None
