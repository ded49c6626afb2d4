"""No import circles: the modules of sim/ and connectors/ import each other as a DAG.

The whole graph of the imports that run when a module is imported (top level,
outside ``if TYPE_CHECKING``) must be acyclic: a circle there can leave a module
half-initialised. The graph of every import the code names must be acyclic too:
those deferred into functions (kept there so that torch, numba or matplotlib load
only when used) and those for types only (``if TYPE_CHECKING``): such a circle
still means modules that cannot be understood, tested or moved apart.
In the first graph, importing ``a.b.c`` also imports the packages ``a`` and
``a.b``, so those count as edges too, except for a module's own enclosing
packages, which are already being imported when its body runs. The second graph
is of modules only: an import counts for the module it names. The third is of
packages (``sim.config``, ``sim.sweep``, …; a module at the top of ``sim`` is its
own node): counting every import, the packages form layers, so a lower package
never imports a higher one (docs/design.md §2).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "connectors")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


MODULES = _modules()


def _imported(name: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Modules (of ours) that ``node`` in module ``name`` imports."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        pkg = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
        pkg = pkg[: len(pkg) - node.level + 1]
        base = ".".join([*pkg, *([base] if base else [])])
    subs = [f"{base}.{a.name}" for a in node.names]
    # ``from pkg import submodule`` needs the submodule, not what pkg/__init__ defines.
    return subs if all(m in MODULES for m in subs) else [base, *subs]


def _edges(name: str, deferred: bool) -> set[str]:
    found: set[str] = set()

    def visit(body: list[ast.stmt], top: bool) -> None:
        for node in body:
            if (
                isinstance(node, ast.If)
                and "TYPE_CHECKING" in ast.unparse(node.test)
                and not deferred
            ):
                continue  # never runs (the graph of every import counts it)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and (top or deferred):
                for target in _imported(name, node):
                    parts = target.split(".")
                    for i in range(1, len(parts) + 1):
                        prefix = ".".join(parts[:i])
                        enclosing = name.startswith(prefix + ".")
                        # The deferred graph is of modules, not of package initialisation
                        # (the first graph covers that): only what is named counts there.
                        implied = i < len(parts) and (enclosing or deferred)
                        if prefix in MODULES and not implied:
                            found.add(prefix)
            inner_top = top and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            )
            if isinstance(node, ast.ClassDef):
                inner_top = top  # a class body runs at import
            for attr in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(node, attr, None)
                if isinstance(sub, list):
                    visit(sub, inner_top)

    visit(ast.parse(MODULES[name].read_text(encoding="utf-8")).body, True)
    found.discard(name)
    return found


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as a path (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return [*path[path.index(w) :], w]
            if w not in state:
                found = walk(w)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = walk(v)
            if found:
                return found
    return None


def test_the_import_graph_has_no_circle_at_import() -> None:
    graph = {m: _edges(m, False) for m in MODULES}
    assert sum(len(v) for v in graph.values()) > 100  # the walk really found the imports
    cycle = _a_cycle(graph)
    assert cycle is None, "import circle: " + " → ".join(cycle or [])


def test_no_circle_even_counting_deferred_imports() -> None:
    """Counting the imports for types and those deferred into functions: no two modules
    import each other (api/reports and api/runs, the search's driver and report, the
    run plan and the session once did)."""
    graph = {m: _edges(m, True) for m in MODULES}
    cycle = _a_cycle(graph)
    assert cycle is None, "import circle: " + " → ".join(cycle or [])


@pytest.mark.parametrize(
    "group",
    [
        ("sim.analysis.plot", "sim.analysis.figures", "sim.analysis.figures_load"),
        ("sim.analysis.plot", "sim.analysis.stage_figure", "sim.analysis.layout"),
        ("sim.sweep.experiment", "sim.sweep.runner", "sim.sweep.child", "sim.sweep.spec"),
        ("sim.runtime.point", "sim.model.driver", "sim.point.result"),
        ("sim.api.reports", "sim.api.runs"),
        ("sim.slo_search.driver", "sim.slo_search.report"),
        ("sim.sweep.run_plan", "sim.sweep.session"),
        ("sim.api.runs", "sim.api.reports", "sim.api.experiments"),
        ("sim.workload.trace", "sim.errors"),
    ],
    ids=[
        "plot-figures",
        "plot-stage",
        "sweep",
        "point-model",
        "reports-runs",
        "search-report",
        "plan-session",
        "api",
        "trace-errors",
    ],
)
def test_modules_that_once_formed_circles_do_not_even_with_deferred_imports(group) -> None:
    graph = {m: _edges(m, True) & set(group) for m in group}
    assert all(m in MODULES for m in group)
    cycle = _a_cycle(graph)
    assert cycle is None, "import circle: " + " → ".join(cycle or [])


def test_the_checker_sees_a_circle() -> None:
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": {"b"}, "b": set()}) is None
    # The circles this project once had are edges the walk does find (one way now).
    assert "sim.errors" in _edges("sim.workload.trace", False)
    assert "sim.analysis.figures" in _edges("sim.analysis.plot", True)
    assert "sim.analysis.plot" not in _edges("sim.analysis.figures", True)


def _package(module: str) -> str:
    """The package a module belongs to: ``sim.<sub>`` for a sub-package's modules, the
    module itself for a module at the top of ``sim`` (``sim.errors``), ``connectors``."""
    parts = module.split(".")
    if parts[0] != "sim":
        return parts[0]
    if len(parts) >= 2 and (ROOT / "sim" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for m in MODULES:
        a = _package(m)
        graph.setdefault(a, set())
        for target in _edges(m, True):
            b = _package(target)
            if a != b:
                graph[a].add(b)
    return graph


def test_packages_form_layers_even_counting_deferred_imports() -> None:
    """No allowed exceptions: the pre-flight checks that once took config into the store
    and the workload live above all three (sim.preflight)."""
    graph = _package_graph()
    assert {"sim.config", "sim.sweep", "sim.runtime", "sim.model", "sim.preflight"} <= set(graph)
    assert not graph["sim.config"] & {"sim.store", "sim.workload", "sim.preflight"}
    cycle = _a_cycle(graph)
    assert cycle is None, "package circle: " + " → ".join(cycle or [])


def test_the_runtime_and_the_model_are_siblings() -> None:
    """Real threads and the event model never import each other, not even for types:
    both fill the point's records and result (sim.point), the child picks the mode
    (sim.sweep.child.run_in_mode), and calibration, which runs real points to measure the
    machine, sits above both (sim.calibration)."""
    graph = _package_graph()
    assert "sim.model" not in graph["sim.runtime"]
    assert "sim.runtime" not in graph["sim.model"]
    assert "sim.point" in graph["sim.model"] and "sim.point" in graph["sim.runtime"]
    assert "sim.runtime" not in graph["sim.point"] and "sim.model" not in graph["sim.point"]
    # what judges the model (sim.validation) and what measures for it sit above it
    above = {"sim.validation", "sim.calibration", "sim.analysis", "sim.rundir", "sim.sweep"}
    assert not graph["sim.model"] & above


def test_the_graph_counts_imports_for_types() -> None:
    """An import under ``if TYPE_CHECKING`` is an edge of the graph of every import
    (sim.api.search names a search's Series for its types alone)."""
    typed_only = "sim.slo_search.series"
    assert typed_only not in _edges("sim.api.search", False)
    assert typed_only in _edges("sim.api.search", True)
