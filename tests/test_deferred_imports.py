"""Every import deferred into a function says why (issue 41, COMMON rules).

An import inside a function body runs late, on first call: that is worth it only to
keep start-up light (torch, numba, ray, matplotlib, rich, a sub-package a light
command never needs). So each one carries a one-line reason, as a comment on the
import's first line or alone on the line directly above; a bare pragma (``# noqa``,
``# type: ignore``) is no reason. An import that keeps nothing light belongs at the
module's top; one that dodges an import circle is a design fault to fix
(tests/test_imports.py).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "connectors")

_PRAGMA = re.compile(r"noqa(?::\s*[A-Z0-9, ]+)?|type:\s*ignore(?:\[[^\]]*\])?|pragma:[\w ]+", re.I)


def _reason(comment: str) -> bool:
    """Whether ``comment`` (``# ...``, possibly several joined) says something beyond pragmas."""
    text = _PRAGMA.sub("", comment.replace("#", " "))
    return re.search(r"[A-Za-z]{2,}", text) is not None


def unexplained(source: str) -> list[int]:
    """Line numbers of the imports inside function bodies of ``source`` that give no reason."""
    comments: dict[int, str] = {}
    only_comment: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string
            if tok.line.strip().startswith("#"):
                only_comment.add(tok.start[0])
    bad: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                line = child.lineno
                above = comments.get(line - 1, "") if line - 1 in only_comment else ""
                if not _reason(comments.get(line, "")) and not _reason(above):
                    bad.append(line)
            inside = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            visit(child, inside)

    visit(ast.parse(source), False)
    return bad


def test_every_deferred_import_says_why() -> None:
    offenders = []
    scanned = 0
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            scanned += 1
            rel = f.relative_to(ROOT)
            offenders += [f"{rel}:{n}" for n in unexplained(f.read_text(encoding="utf-8"))]
    assert scanned > 100  # the walk really found the modules
    assert not offenders, (
        f"{len(offenders)} imports inside functions give no reason (a comment on the "
        "import's line or the line above saying what it keeps light; or move it to the "
        "top):\n" + "\n".join(offenders)
    )


def test_the_checker_tells_a_reason_from_none() -> None:
    source = """
import os  # top level: runs at import, needs no reason
import sys


class Top:
    import json


def f():
    import numpy  # heavy: only f needs it
    # heavy: only f draws
    import matplotlib
    import shlex
    from sim import columns  # noqa: F401
    if sys:
        from pathlib import (  # type: ignore[attr-defined]
            Path,
        )
    return lambda: __import__("x")


def g():
    def inner():
        import torch
    x = 1  # a comment not above an import
    import re
"""
    assert unexplained(source) == [14, 15, 17, 25, 27]
