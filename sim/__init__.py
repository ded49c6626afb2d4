"""kvsim: real threads, a SimPy clock, and the GIL between them.

kvsim measures how GIL hold per request on the KV-cache load path of an LLM
serving engine turns into load latency and engine stalls. From Python::

    import sim

    exp = sim.build(                                  # or sim.load("configs/quickstart.yaml")
        name="demo",
        workload={"requests": 40},
        sweep={"connector.variant": ["scalar", "numpy"], "connector.workers": [1, 4]},
    )
    print(exp.plan("results/demo"))                   # what would run (the dry-run table)
    run = exp.run("results/demo", force=True)         # each point in its own process
    print(run.compare())                              # ratios with intervals over repeats
    run.plot()                                        # PNGs into results/demo/figures

    sim.open_run("results/demo").points               # summary.csv rows, figures as numbers
    run.frame()                                       # a DataFrame (pandas or polars), if installed

Errors kvsim foresaw are :class:`KvsimError` (``ConfigError``, ``RunDirError``,
``UsageError``, …) with a one-line message. The same API backs the ``kvsim``
command line; see docs/design.md for how the pieces fit together.
"""

from sim.errors import ConfigError, KvsimError, RunDirError, UsageError
from sim.events import SweepEvents

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Experiment",
    "KvsimError",
    "Report",
    "Run",
    "RunDirError",
    "SearchResult",
    "SweepEvents",
    "UsageError",
    "Validation",
    "Verdict",
    "__version__",
    "build",
    "calibrate",
    "check",
    "compare",
    "load",
    "open_run",
    "plot",
    "ratio_verdict",
    "search",
    "validate_model",
]


#: The library's entry points (sim.api): the names above not defined here, imported on
#: first use. ``import sim.<module>`` imports this package first, and every point child
#: and sweep worker imports some module of it; loading the whole API (config models,
#: yaml, the run directory) there cost a child ~0.15 s of start-up it never used.
_LAZY_ANALYSIS = frozenset({"Verdict", "ratio_verdict"})
_API = frozenset(__all__) - set(globals()) - _LAZY_ANALYSIS


def __getattr__(name: str) -> object:
    """The API's names (above), and ``sim.ratio_verdict`` and ``sim.Verdict``
    (docs/statistics.md), imported on first use: they need numpy, which ``import sim``
    does not load."""
    if name in _API:
        import sim.api  # deferred: keeps `import sim.<module>` light (see _API)

        return getattr(sim.api, name)
    if name in _LAZY_ANALYSIS:
        from sim.analysis import verdict  # numpy: `import sim` loads none (tests/e2e/test_api.py)

        return getattr(verdict, name)
    raise AttributeError(f"module 'sim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
