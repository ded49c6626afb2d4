"""A variant's results against the reference ``scalar``, call by call, and their types.

``kvsim check NAME`` (and, in a quick form, ``kvsim run`` and ``kvsim bench`` before
they measure a plug-in) runs every case of the corpus (sim.conformance.corpus)
through the variant and through ``scalar`` on the same geometry, and compares the
two: the same addresses, sizes and block ids, as Python ``int`` in ``list``s (the
native transfer bindings reject NumPy scalars, docs/your-connector.md). Then the
same calls run from several threads at once on shared instances, as a run's load
threads call one instance, and are compared again. The first difference is said in
one line: the case (geometry, request, handler), the chunk, the region, what was
expected and what came.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from connectors import registry
from connectors.contract import type_name
from connectors.plugin_trace import ending
from sim.conformance.corpus import Case, corpus

__all__ = ["CheckResult", "check_variant", "describe_raise", "first_difference"]

#: Threads that run the corpus at once (a run's load threads share one instance).
THREADS = 4
#: Seconds one thread may take over the whole corpus before the check gives up on it.
THREAD_TIMEOUT_S = 120.0

_WHY_INT = (
    "return Python ints in lists (e.g. .tolist()): the store's native bindings reject "
    "NumPy scalars, and kvsim compares with the reference"
)


@dataclass(frozen=True)
class CheckResult:
    """What ``check_variant`` found: cases passed, and the first failure (one line) if any."""

    variant: str
    cases: int
    passed: int
    threads: int
    failure: str | None = None
    #: What the variant was compared with.
    reference: str = "scalar"
    #: A ``buffer_inputs`` what-if (``array``): arrays out by design, values compared.
    arrays: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None

    def summary(self) -> str:
        if self.ok:
            text = f"{self.variant}: {self.passed}/{self.cases} cases match {self.reference}"
            if self.arrays:
                text += " (its int64 arrays compared as the lists they stand for)"
            if self.threads > 1:
                text += f" (and again from {self.threads} threads at once)"
            return text
        done = f"{self.passed}/{self.cases} cases passed"
        return f"{self.variant}: {done}; first mismatch: {self.failure}"


def _ints(got: Any, expected: list[int], what: str, where: str, blen: Sequence[int]) -> str | None:
    """The first difference in one chunk's list of ints (``what``: address, size)."""
    if type(got) is not list:
        return f"{where}: the {what}es are a {type_name(got)}, not a list; {_WHY_INT}"
    if len(got) != len(expected):
        return f"{where}: {len(got)} {what}es, expected {len(expected)} (one per region)"
    for r, (g, e) in enumerate(zip(got, expected, strict=True)):
        if type(g) is not int:
            return f"{where}, region {r}: {what} is {type_name(g)}, not a Python int; {_WHY_INT}"
        if g != e:
            step = blen[r % len(blen)] if what == "address" and blen else 0
            blocks = (g - e) // step if step and (g - e) % step == 0 else 0
            off = f" ({blocks:+d} block{'' if abs(blocks) == 1 else 's'})" if blocks else ""
            return f"{where}, region {r}: {what} expected {e:#x}, got {g:#x}{off}"
    return None


def first_difference(case: Case, expected: Any, got: Any) -> str | None:
    """One line saying where ``got`` first differs from the reference's ``expected``."""
    head = case.label
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return f"{head}: returned a {type_name(got)}, not (addr_lists, size_lists, block_ids)"
    names = ("addr_lists", "size_lists", "block_ids")
    for name, part, want in zip(names, got, expected, strict=True):
        if type(part) is not list:
            return f"{head}: {name} is a {type_name(part)}, not a list; {_WHY_INT}"
        if len(part) != len(want):
            return f"{head}: {name} has {len(part)} chunks, expected {len(want)}"
    blen = case.geometry.db.region_block_len()
    for c in range(len(expected[0])):
        where = f"{head}: chunk {c}"
        for what, i in (("address", 0), ("size", 1)):
            found = _ints(got[i][c], expected[i][c], what, where, blen)
            if found:
                return found
        g, e = got[2][c], expected[2][c]
        if type(g) is not int:
            return f"{where}: block id is {type_name(g)}, not a Python int; {_WHY_INT}"
        if g != e:
            return f"{where}: block id expected {e}, got {g}"
    return None


def _call(variant: Any, case: Case) -> Any:
    return variant.addresses(list(case.chunks), list(case.block_ids), case.handler)


def describe_raise(exc: BaseException, cls: type) -> str:
    """``raised KeyError: 'x' (mine.py line 6, in helper)``: the exception and the
    innermost line of the variant's own file it passed through, so a bug in a plug-in
    is found without a traceback of kvsim's frames."""
    line = ending(exc)
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    own = [f for f in traceback.extract_tb(exc.__traceback__) if path and f.filename == path]
    if own:
        line += f" ({path} line {own[-1].lineno}, in {own[-1].name})"
    if not isinstance(exc, Exception):  # sys.exit, KeyboardInterrupt: would end kvsim
        line += "; a variant must not end or interrupt kvsim: raise an ordinary exception"
    return line


def _as_lists(got: Any) -> Any:
    """A ``buffer_inputs`` what-if's int64 arrays as the lists they stand for
    (``np.asarray(x).tolist()``, connectors.address_array): its values are checked, its
    types are by design not the list contract's."""
    if hasattr(got, "tolist"):
        return got.tolist()
    if isinstance(got, (tuple, list)):
        return type(got)(_as_lists(p) for p in got)
    return got


def _run_case(variant: Any, case: Case, expected: Any) -> str | None:
    try:
        got = _call(variant, case)
    except BaseException as exc:  # the variant's bug (on a check thread: never a Ctrl-C)
        return f"{case.label}: {describe_raise(exc, type(variant))}"
    if type(variant).buffer_inputs:
        got = _as_lists(got)
    return first_difference(case, expected, got)


@dataclass
class _Pass:
    """How far the single-thread pass got: what it is doing now (``at``), the cases
    passed, the first failure, and the instances and expected results the threaded
    pass reuses."""

    at: str = "the constructor"
    passed: int = 0
    failure: str | None = None
    done: bool = False
    instances: dict[str, Any] = field(default_factory=dict)
    expected: list[Any] = field(default_factory=list)


def _single_pass(cls: type, opts: Any, cases: list[Case], state: _Pass) -> None:
    ref_cls = registry.get_address_variant("scalar")
    refs: dict[str, Any] = {}
    for case in cases:
        geo = case.geometry
        if geo.name not in state.instances:
            state.at = f"{geo.name}: the constructor"
            try:  # the variant's bug (docs/your-connector.md: warm_up), said in one line
                variant = cls(geo.db, opts)
                state.at = f"{geo.name}: warm_up()"
                variant.warm_up()
            except BaseException as exc:  # sys.exit too: on this thread it is the variant's
                state.failure = f"{state.at} {describe_raise(exc, cls)}"
                return
            state.instances[geo.name] = variant
            refs[geo.name] = ref_cls(geo.db, None)
    state.expected = [_call(refs[c.geometry.name], c) for c in cases]
    for case, want in zip(cases, state.expected, strict=True):
        state.at = case.label
        state.failure = _run_case(state.instances[case.geometry.name], case, want)
        if state.failure:
            return
        state.passed += 1
    state.done = True


def check_variant(
    name: str,
    options: dict[str, Any] | None = None,
    threads: int = THREADS,
    extra: Sequence[Case] = (),
) -> CheckResult:
    """Run the corpus through variant ``name`` (looked up in the registry, so call it
    inside the plug-ins' scope) and compare with ``scalar``; ``threads`` > 1 runs it
    again from that many threads at once. ``extra``: cases of a run's own geometry and
    request lengths (sim.conformance.corpus.run_cases), checked with the corpus."""
    cls = registry.get_address_variant(name)
    opts = cls.validate_options(dict(options or {}))
    cases = [*corpus(), *extra]
    # The single pass runs in a thread of its own, as a run's load threads call the
    # variant, so that one that never returns is named instead of hanging the command.
    state = _Pass()
    errors: list[BaseException] = []

    def single() -> None:
        try:
            _single_pass(cls, opts, cases, state)
        except BaseException as exc:  # kvsim's own error: raised again in the caller
            errors.append(exc)

    worker = threading.Thread(target=single, name="kvsim-check", daemon=True)
    worker.start()
    worker.join(timeout=THREAD_TIMEOUT_S)
    if errors:
        raise errors[0]
    if worker.is_alive():
        failure = f"{state.at}: did not return in {THREAD_TIMEOUT_S:.0f} s (a hang?)"
        return CheckResult(name, len(cases), state.passed, 1, failure)
    if not state.done:
        return CheckResult(name, len(cases), state.passed, 1, state.failure)
    instances, expected, passed = state.instances, state.expected, state.passed
    if threads > 1:
        failure = _threaded(instances, cases, expected, threads)
        if failure:
            return CheckResult(
                name, len(cases), passed, threads, f"from {threads} threads: {failure}"
            )
    return CheckResult(name, len(cases), passed, threads, arrays=bool(cls.buffer_inputs))


def _threaded(
    instances: dict[str, Any], cases: list[Case], expected: list[Any], threads: int
) -> str | None:
    """Every case from ``threads`` threads at once on the shared instances (each thread
    in its own order, so different cases overlap); the first failure, if any."""
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def work(k: int) -> None:
        try:
            start.wait(timeout=THREAD_TIMEOUT_S)
        except threading.BrokenBarrierError:
            return
        order = list(range(len(cases)))
        order = order[k::threads] + [i for i in order if i % threads != k]
        for _ in range(3):
            for i in order:
                failure = _run_case(instances[cases[i].geometry.name], cases[i], expected[i])
                if failure:
                    with lock:
                        failures.append(failure)
                    return

    pool = [
        threading.Thread(target=work, args=(k,), name=f"kvsim-check-{k}", daemon=True)
        for k in range(threads)
    ]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=THREAD_TIMEOUT_S)
        if t.is_alive():
            return f"a thread did not finish the corpus in {THREAD_TIMEOUT_S:.0f} s (a deadlock?)"
    return failures[0] if failures else None
