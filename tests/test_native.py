"""The compiled model core (sim.native) gives the very same results as the source.

mypyc compiles the model's loop, resources and threads and the store model to C; the
suite itself runs the interpreted source (tests/conftest.py), so here child processes
run the same points once with the compiled core and once without, and every record,
summary value and table must match to the last bit (repr), on the model's varied paths
(tests/model/test_draws.py's cases, two seeds each).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sim.native import ENV, _native_dir
from tests.model.test_draws import CASES, sampled_calibration  # noqa: F401 (fixture)
from tests.runtime.test_plugin_faults import IN_THE_RUN

_ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import json, sys
import sim.model.loop
from sim.config import Point, parse_config
from sim.model.driver import run_model_point
from sim.native import native_state
out = {"state": native_state(), "loop": sim.model.loop.__file__, "runs": {}}
for path in sys.argv[1:]:
    _, points = parse_config(path)
    res = run_model_point(points[0])
    # no row kept: the driver hands the sink cells, no records (sim.model.driver)
    cfg = points[0].config
    none = cfg.model_copy(update={"output": cfg.output.model_copy(update={"requests": "none"})})
    lean = run_model_point(Point(0, points[0].axes, none), write_rows=lambda rows: None)
    out["runs"][path] = {
        "rows": [repr(sorted(r.as_row().items())) for r in res.records],
        "summary": {k: repr(v) for k, v in res.summary.items()},
        "tables": repr(res.tables),
        "lean": [{k: repr(v) for k, v in lean.summary.items()}, repr(lean.tables)],
    }
print(json.dumps(out))
"""


def _python(native: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python *args`` in a child with the compiled core on ("1") or off ("0")."""
    env = {**os.environ, ENV: native, "PYTHONPATH": str(_ROOT)}
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def _child(env_value: str, configs: list[Path]) -> dict:
    done = _python(env_value, "-c", _CHILD, *map(str, configs))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _native_built() -> str:
    """native_state() as a child with the compiled core allowed sees it."""
    done = _python("1", "-c", "from sim.native import native_state; print(native_state())")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_compiled_core_gives_the_very_same_runs(write_config, sampled_calibration):  # noqa: F811
    state = _native_built()
    if state != "native":
        pytest.skip(f"the compiled model core is missing: {state} (scripts/install.sh builds it)")
    configs = [
        write_config(
            {"mode": "model", "seed": seed, "machine": {"calibration": str(sampled_calibration)}}
            | CASES[case],
            name=f"{case}-{seed}.yaml",
        )
        for case in sorted(CASES)
        for seed in (1, 2)
    ]
    native, source = _child("1", configs), _child("0", configs)
    assert native["state"] == "native" and not native["loop"].endswith(".py")
    assert source["state"].startswith("python") and source["loop"].endswith(".py")
    for path in map(str, configs):
        a, b = native["runs"][path], source["runs"][path]
        assert len(a["rows"]) > 0
        assert a["rows"] == b["rows"], path
        assert a["summary"] == b["summary"], path
        assert a["tables"] == b["tables"], path
        assert a["lean"] == b["lean"] == [a["summary"], a["tables"]], path


def test_a_real_point_runs_on_the_compiled_store_model(write_config, tmp_path):
    """Real mode drives the same compiled store model (sim.store.link, sim.store.model)
    from its simulation thread: a tiny real run completes with every request loaded."""
    state = _native_built()
    if state != "native":
        pytest.skip(f"the compiled model core is missing: {state} (scripts/install.sh builds it)")
    out = tmp_path / "real"
    cfg = write_config({"output": {"dir": str(out)}}, name="real.yaml")
    done = _python("1", "-m", "sim", "run", str(cfg), "--quiet")
    assert done.returncode == 0, done.stderr[-2000:]
    with open(out / "summary.csv", newline="", encoding="utf-8") as fh:
        (values,) = list(csv.DictReader(fh))
    assert values["status"] == "ok"
    assert int(float(values["ok"])) == int(float(values["requests"])) == 8


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        ("sys.exit(0)", "called sys.exit(0) (line 28, in prepare_values) in a load thread"),
        ("return None", "returned a NoneType, not (addr_lists, size_lists, block_ids)"),
    ],
)
def test_the_compiled_load_pipeline_ends_a_faulty_point_as_the_source_does(
    write_config, tmp_path, wrong, said
):
    """The load pipeline (sim.runtime.pipeline) is compiled too, and the suite tests its
    source: a variant that ends a load thread or breaks the list contract fails the point
    in the same one line with the compiled pipeline (KVSIM_NATIVE=1)."""
    state = _native_built()
    if state != "native":
        pytest.skip(f"the compiled model core is missing: {state} (scripts/install.sh builds it)")
    assert list((_native_dir() / "sim" / "runtime").glob("pipeline.*.so"))
    plugin = tmp_path / "late.py"
    plugin.write_text(textwrap.dedent(IN_THE_RUN).format(wrong=wrong, warm="pass"))
    cfg = write_config(
        {"connector": {"variant": "late", "workers": 1}, "workload": {"requests": 8}},
        name="late.yaml",
    )
    out = tmp_path / "r"
    args = ("-m", "sim", "run", "-q", str(cfg), "--plugin", str(plugin), "--out", str(out))
    done = _python("1", *args)
    assert done.returncode == 1, done.stderr[-2000:]
    (status,) = out.glob("points/*/rep-0/status.json")
    error = json.loads(status.read_text())["error"]
    assert error.startswith(f"PluginFault: {plugin}: variant 'late', request "), error
    assert said in error


@pytest.fixture
def fake_root(tmp_path, monkeypatch):
    """sim.native looking at a source tree of its own (the modules as one-line files)."""
    import sim.native as native

    for name in native.MODULES:
        path = tmp_path.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n")
    monkeypatch.setattr(native, "_ROOT", tmp_path)
    monkeypatch.setenv(ENV, "1")
    native.native_state.cache_clear()
    yield native
    native.native_state.cache_clear()


def test_an_edited_module_is_never_shadowed_by_an_older_build(fake_root):
    native = fake_root
    assert native.native_state().startswith("python (not built")
    stamp = native._native_dir() / native._STAMP
    stamp.parent.mkdir(parents=True)
    stamp.write_text(json.dumps({"digest": native._digest()}))
    native.native_state.cache_clear()
    # The stamp matches, but there is no compiled library to load: still interpreted.
    assert native.native_state().startswith("python (the build does not load")
    (native._ROOT / "sim" / "model" / "gil.py").write_text("# edited\n")
    native.native_state.cache_clear()
    assert native.native_state().startswith("python (the build is older than the source")
    path = ["/the/source"]
    native.enable("sim.model", path)
    assert path == ["/the/source"]


def test_the_switch_turns_the_compiled_core_off(fake_root, monkeypatch):
    monkeypatch.setenv(ENV, "0")
    fake_root.native_state.cache_clear()
    assert fake_root.native_state() == f"python ({ENV}=0)"


def test_a_build_of_these_sources_by_this_mypyc_is_kept_not_compiled_again(fake_root, monkeypatch):
    """``python -m sim.native build`` (every install) keeps a build that is current: of
    these sources, by this mypyc, loading; anything else is compiled again."""
    native = fake_root
    monkeypatch.setattr(native, "_load_runtime", lambda: object())  # as a real build loads
    stamp = native._native_dir() / native._STAMP
    stamp.parent.mkdir(parents=True)
    stamp.write_text(json.dumps({"digest": native._digest()}))  # a stamp of before: no mypy
    native.native_state.cache_clear()
    assert native.native_state() == "native" and native.current_build() is None
    stamp.write_text(json.dumps({"digest": native._digest(), "mypy": "0.0.1"}))
    assert native.current_build() is None  # another mypyc compiled it
    stamp.write_text(json.dumps({"digest": native._digest(), "mypy": native._compiler()}))
    assert native._compiler() and native.current_build() == native._native_dir()
    (native._ROOT / "sim" / "model" / "gil.py").write_text("# edited\n")
    native.native_state.cache_clear()
    assert native.current_build() is None  # older than the source


def test_the_module_alone_says_its_state_and_how_to_build(fake_root, monkeypatch, capsys):
    """``python -m sim.native`` with no argument printed only its usage (issue 42 item 5)."""
    native = fake_root
    monkeypatch.chdir(native._ROOT)
    assert native.main([]) == 0
    said = capsys.readouterr().out
    where = str(native._native_dir().relative_to(native._ROOT))
    assert said.splitlines()[0] == "native: the model core is python (not built: " + (
        "python -m sim.native build)"
    )
    assert f"no build in {where}: model mode runs interpreted" in said
    assert "`python -m sim.native build` compiles it" in said and f"{ENV}=0" in said
    monkeypatch.setattr(native, "_load_runtime", lambda: object())  # as a real build loads
    stamp = native._native_dir() / native._STAMP
    stamp.parent.mkdir(parents=True)
    stamp.write_text(json.dumps({"digest": native._digest()}))
    native.native_state.cache_clear()
    assert native.main([]) == 0
    said = capsys.readouterr().out
    assert said.splitlines()[0] == "native: the model core is native"
    assert f"compiled core in {where}, of the sources on disk now" in said
    (native._ROOT / "sim" / "model" / "gil.py").write_text("# edited\n")
    native.native_state.cache_clear()
    assert native.main([]) == 0
    assert f"a build in {where} that is not used: the build is older" in capsys.readouterr().out
    assert native.main(["bogus"]) == 2
    assert "usage: python -m sim.native [build|state]" in capsys.readouterr().err
