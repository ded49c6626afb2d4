"""kvsim calibrate writes a calibration model runs accept; validate-model pairs the modes."""

from __future__ import annotations

import json

import pytest

from sim.calibration.measure import fit_linear
from sim.cli import main as cli_main
from sim.model.calibration import load_calibration
from sim.rundir.outputs import read_csv


def test_fit_recovers_a_linear_cost() -> None:
    rows = [
        {"chunks": c * g, "regions": r, "groups": g, "hold": 0.1 + 2e-4 * c * g * r + 1e-3 * c * g}
        for c in (8, 64, 512)
        for r in (4, 61)
        for g in (1, 2)
    ]
    fit, worst = fit_linear(rows, "hold")
    assert fit.intercept == pytest.approx(0.1, abs=1e-6)
    assert fit.per_chunk_region == pytest.approx(2e-4, rel=1e-6)
    assert fit.per_chunk == pytest.approx(1e-3, rel=1e-6)
    assert worst < 1e-6


@pytest.fixture(scope="session")
def small_calibration(tmp_path_factory):
    """One small calibration for every test here (calibrating is the slow part): tests
    read it, none changes it."""
    out = tmp_path_factory.mktemp("calibration") / "cal.json"
    args = ["calibrate", "--out", str(out), "--variants", "numpy,synthetic"]
    args += ["--handlers", "per_group", "--chunks", "1,4", "--regions", "4", "--groups", "1"]
    assert cli_main([*args, "--reps", "1", "--no-engine"]) == 0
    return out


def test_calibrate_writes_a_file_model_runs_use(small_calibration, write_config, tmp_path):
    cal = load_calibration(small_calibration)
    assert cal.cores >= 1
    assert set(cal.data["variants"]) == {"numpy/per_group", "synthetic"}
    entry = cal.data["variants"]["numpy/per_group"]
    assert entry["range"] == {"chunks": [1, 4], "regions": [4, 4], "groups": [1, 1]}
    assert all(p["hold"] > 0 for p in entry["points"])
    # its own GIL releases, measured at the grid's largest request (the sizes clamped to it)
    assert [(y["chunks"], y["regions"]) for y in entry["yields"]] == [(4, 4)]
    assert entry["yields"][0]["per_request"] >= 0
    for key in ("sim_cpu_per_request_ms", "wake_ms", "timer_late_ms", "probe_late_ms"):
        assert cal.harness[key] >= 0
    # TINY: 160 tokens of 16 = 10 chunks per group: outside 1-4 chunks, refused ...
    path = write_config({"mode": "model", "machine": {"calibration": str(small_calibration)}})
    assert cli_main(["run", str(path), "-q"]) == 2
    # ... while 4 chunks are covered and run.
    assert cli_main(["run", str(path), "-q", "--set", "workload.tokens=64", "--force"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["calibration"][0]["digest"] == cal.digest


def test_calibrate_prints_the_load_average_and_signed_terms(tmp_path, monkeypatch, capsys):
    """What the command prints of a calibration (made up here: the measuring is tested above)."""
    import sim.calibration.measure as measure

    fit = {"intercept": 0.12, "per_chunk_region": 4e-6, "per_chunk": -2.5e-4, "per_group": -1e-9}
    doc = {
        "elapsed_s": 3.0,
        "machine": {"cores": 2, "loadavg": [2.02978515625, 1.5, 0.875]},
        "harness": {"sim_cpu_per_request_ms": 0.1, "wake_ms": 0.05, "timer_late_ms": 0.06},
        "variants": {
            "numpy/per_group": {
                "hold": fit,
                "fit_worst_rel_error": 0.04,
                "yields": [
                    {"chunks": 256, "regions": 61, "per_request": 0.2, "span": [0, 0]},
                    {"chunks": 1024, "regions": 61, "per_request": 3.35, "span": [0.2, 0.3]},
                ],
            }
        },
    }
    monkeypatch.setattr(measure, "calibrate", lambda *a, **k: doc)
    assert cli_main(["calibrate", "--out", str(tmp_path / "cal.json"), "--variants", "numpy"]) == 0
    out = capsys.readouterr().out
    assert "load average 2.03, 1.50, 0.88 (1, 5, 15 min)" in out
    assert "hold ≈ 0.120 ms + 0.004 µs·chunks·regions − 0.25 µs·chunks (" in out
    assert "+ -" not in out and "groups" not in out  # a term that rounds to 0 is left out
    assert "a waiting thread let in mid-hold, a request: 3.4 at 1024×61\n" in out


def test_calibrate_refuses_to_overwrite(small_calibration, capsys) -> None:
    assert cli_main(["calibrate", "--out", str(small_calibration), "--variants", "noop"]) == 2
    assert "exists; pass --force" in capsys.readouterr().err


def test_validate_model_pairs_real_and_model_points(small_calibration, write_config, tmp_path):
    path = write_config(
        {
            "machine": {"calibration": str(small_calibration)},
            "model": {"block_size": 16},
            "workload": {"requests": 30, "tokens": 64},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 2.0}},
            "sweep": {"connector.workers": [1, 2]},
        }
    )
    out = tmp_path / "val"
    args = ["validate-model", str(path), "--out", str(out), "--boot", "200", "--repeats", "1"]
    assert cli_main(args) == 0
    rows = read_csv(out / "validation.csv")
    assert [r["workers"] for r in rows] == ["1", "2"]
    for r in rows:
        real, model = float(r["latency_p50_ms_real"]), float(r["latency_p50_ms_model"])
        assert real > 0 and model > 0
        err = float(r["latency_p50_ms_error"])
        assert err == pytest.approx((model - real) / real, rel=1e-3, abs=1e-4)
        assert float(r["latency_p50_ms_real_low"]) <= real <= float(r["latency_p50_ms_real_high"])
    subs = (("real", "real"), ("model", "model"), ("model-idle", "model"))
    for sub, mode in (*subs, ("model-matched", "model")):
        summary = read_csv(out / sub / "summary.csv")
        assert [r["mode"] for r in summary] == [mode, mode]
    # the speed-matched model: each point at the real twin's mean hold over the model's
    scales = json.loads((out / "speed_scales.json").read_text())
    real_s = read_csv(out / "real" / "summary.csv")
    model_s = read_csv(out / "model" / "summary.csv")
    for r, m in zip(real_s, model_s, strict=True):
        key = f"synthetic,{float(r['workers'])!r}"
        want = float(r["gil_hold_mean_ms"]) / float(m["gil_hold_mean_ms"])
        assert scales[key] == pytest.approx(want, rel=1e-9)
        spec = next((out / "model-matched" / "points").glob(f"00{int(r['workers']) - 1}_*"))
        point = json.loads((spec / "rep-0" / "spec.json").read_text())
        assert point["config"]["machine"]["cpu_scale"] == round(scales[key], 4)
    assert "at the speed each real point met" in (out / "validation.md").read_text()
    idle = read_csv(out / "model-idle" / "summary.csv")
    assert {float(r["model_background_load"]) for r in idle} == {0.0}
    text = (out / "validation.md").read_text()
    assert "latency_p99_ms:" in text and "background load on this machine" in text
    cond = json.loads((out / "calibration-conditions.json").read_text())["conditions"]
    assert len(cond["loadavg_before"]) == len(cond["loadavg_after"]) == 3
    avg = ", ".join(f"{x:.2f}" for x in cond["loadavg_before"])
    assert f"Load average (1, 5, 15 min) before the real runs {avg}, after them" in text
    loads = json.loads((out / "background_load.json").read_text())
    assert sorted(loads) == ["0", "1"] and all(len(v) == 2 for v in loads.values())
    model = read_csv(out / "model" / "summary.csv")
    for r in model:
        before, after = loads[str(int(r["workers"]) - 1)]
        assert float(r["model_background_load"]) == pytest.approx((before + after) / 2, abs=1e-3)
    # Resumed with the real points done and the model runs gone (a model change re-run on
    # the same real data): the loads and conditions measured around the real points stay.
    import shutil

    conditions = (out / "calibration-conditions.json").read_text()
    for sub in ("model", "model-idle", "model-matched"):
        shutil.rmtree(out / sub)
    assert (
        cli_main(["validate-model", str(path), "--out", str(out), "--resume", "--repeats", "1"])
        == 0
    )
    assert json.loads((out / "background_load.json").read_text()) == loads
    assert (out / "calibration-conditions.json").read_text() == conditions
    again = read_csv(out / "model" / "summary.csv")
    key = "model_background_load"
    assert [r[key] for r in again] == [r[key] for r in model]


def test_validate_model_aa_scores_a_second_real_run(small_calibration, write_config, tmp_path):
    """--aa runs the real grid again into real-again/ and reports it against real/; a later
    real run leaves that real-again/ out of the report, as no longer its twin."""
    import os

    path = write_config(
        {
            "machine": {"calibration": str(small_calibration)},
            "model": {"block_size": 16},
            "workload": {"requests": 20, "tokens": 64},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 1.0}},
            "sweep": {"connector.workers": [1, 2]},
        }
    )
    out = tmp_path / "val"
    base = ["validate-model", str(path), "--out", str(out), "--boot", "50", "--repeats", "1"]
    assert cli_main([*base, "--aa"]) == 0
    again = read_csv(out / "real-again" / "summary.csv")
    assert [(r["mode"], r["workers"]) for r in again] == [("real", "1"), ("real", "2")]
    real = read_csv(out / "real" / "requests.csv")
    assert [r["arrival_s"] for r in read_csv(out / "real-again" / "requests.csv")] == [
        r["arrival_s"] for r in real
    ]  # the same seeds: the same planned arrivals
    text = (out / "validation.md").read_text()
    line = next(x for x in text.splitlines() if x.startswith("- the real side against itself"))
    assert "latency p50 " in line and "/2 within ±10%" in line and "by workers: 1 " in line
    # the prediction's verdict per point: the second run's error beside the model's, the rule
    for r in read_csv(out / "validation.csv"):
        assert r["latency_p50_ms_rule"] in ("target", "repeat", "outside")
        assert float(r["latency_p99_ms_again_error"]) == float(r["latency_p99_ms_again_error"])
    assert "Verdict: " in text and "the real side repeats (meets both targets" in text
    # a later real run (here: its manifest rewritten after) makes real-again/ stale
    later = (out / "real-again" / "manifest.json").stat().st_mtime + 5
    os.utime(out / "real" / "manifest.json", (later, later))
    assert cli_main([*base, "--no-run"]) == 0
    assert "the real side against itself" not in (out / "validation.md").read_text()


def test_each_calibrated_request_starts_after_an_idle_gap_as_in_a_run(monkeypatch) -> None:
    """Back to back, a request runs from warm caches and holds the GIL less than in a
    run, where its load thread slept before it: calibration sleeps before each one."""
    from sim.calibration import measure as m
    from sim.instruments import gilmeter

    seen: list[str] = []
    real_sleep, real_measure = m.time.sleep, gilmeter.measure

    def sleep(s: float) -> None:
        seen.append(f"sleep {s}")
        real_sleep(s)

    def measured(*args, **kwargs):
        seen.append("job")
        return real_measure(*args, **kwargs)

    monkeypatch.setattr(m.time, "sleep", sleep)
    monkeypatch.setattr(gilmeter, "measure", measured)
    holds, _ = m._job_samples(m.request_config("numpy", "per_group", 4, 4, 1), reps=3)
    assert len(holds) == 3
    assert seen == [f"sleep {m.IDLE_GAP_S}", "job"] * 4  # the unkept warm-up one too


def test_validate_model_pools_at_least_three_repeats(small_calibration, write_config, tmp_path):
    """One repeat of a point does not reproduce itself to the targets (MIN_REPEATS): a
    config of one repeat is validated on three, interleaved, pooled per point; the
    background load measured around every real repeat is kept."""
    from sim.api.validate_model import MIN_REPEATS

    path = write_config(
        {
            "repeats": 1,
            "machine": {"calibration": str(small_calibration)},
            "model": {"block_size": 16},
            "workload": {"requests": 8, "tokens": 64},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 1.0}},
        }
    )
    out = tmp_path / "val"
    assert cli_main(["validate-model", str(path), "--out", str(out), "--boot", "50"]) == 0
    for sub in ("real", "model"):
        reps = sorted(p.name for p in (out / sub / "points").glob("*/rep-*"))
        assert reps == [f"rep-{i}" for i in range(MIN_REPEATS)]
        requests = read_csv(out / sub / "requests.csv")
        assert len(requests) == 8 * MIN_REPEATS
    loads = json.loads((out / "background_load.json").read_text())
    assert [len(v) for v in loads.values()] == [2 * MIN_REPEATS]
    with pytest.raises(SystemExit) as info:  # refused at the door, nothing run
        cli_main(["validate-model", str(path), "--repeats", "x"])
    assert info.value.code == 2


def test_validate_model_refuses_an_uncovered_grid_before_any_point_runs(
    small_calibration, write_config, tmp_path, capsys
):
    """The calibration's coverage is checked before the real grid runs, and the refusal
    names the user's config file and the field, not the conditions file model/ is given."""
    # TINY: 160 tokens of 16 = 10 chunks per group, outside the calibrated 1-4
    path = write_config({"machine": {"calibration": str(small_calibration)}})
    out = tmp_path / "val"
    assert cli_main(["validate-model", str(path), "--out", str(out), "--repeats", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: machine.calibration: point 0 " in err and "chunks per group 10" in err
    assert "calibration-conditions" not in err
    assert not (out / "real").exists()


def test_calibrate_measures_a_plugin_variant_and_the_advice_names_the_file(
    small_calibration, write_config, tmp_path, capsys
):
    from tests.connectors.test_plugin_file import GOOD

    plugin = tmp_path / "mine.py"
    plugin.write_text(GOOD)
    # a config of that variant on a calibration without it: the advice names --plugin
    path = write_config(
        {
            "plugins": [str(plugin)],
            "connector": {"variant": "mine"},
            "workload": {"tokens": 64},
            "machine": {"calibration": str(small_calibration)},
        }
    )
    assert cli_main(["validate-model", str(path), "--out", str(tmp_path / "v")]) == 2
    assert f"kvsim calibrate --variants mine --plugin {plugin}`" in capsys.readouterr().err
    out = tmp_path / "cal.json"
    args = ["calibrate", "--out", str(out), "--plugin", str(plugin), "--variants", "mine"]
    args += ["--handlers", "per_group", "--chunks", "1,4", "--regions", "4", "--groups", "1"]
    assert cli_main([*args, "--reps", "1", "--no-engine"]) == 0
    entry = load_calibration(out).data["variants"]["mine/per_group"]
    assert entry["range"]["chunks"] == [1, 4] and all(p["hold"] > 0 for p in entry["points"])


def test_validate_model_scales_each_model_point_to_the_speed_probed_beside_its_twin(
    small_calibration, write_config, tmp_path
):
    """A calibration probe before and after each real repeat (sim.calibration.speed):
    its hold over the calibration's is the machine's speed at that minute, and the model
    twin runs at their median (machine.cpu_scale); the report says how far it moved."""
    import statistics

    path = write_config(
        {
            "machine": {"calibration": str(small_calibration)},
            "workload": {"requests": 8, "tokens": 64},
        }
    )
    out = tmp_path / "val"
    assert cli_main(["validate-model", str(path), "--out", str(out), "--repeats", "2"]) == 0
    speeds = json.loads((out / "machine_speed.json").read_text())
    assert list(speeds) == ["0"] and len(speeds["0"]) == 4 and min(speeds["0"]) > 0
    spec = next((out / "model" / "points").glob("000_*")) / "rep-0" / "spec.json"
    scale = json.loads(spec.read_text())["config"]["machine"]["cpu_scale"]
    assert scale == pytest.approx(statistics.median(speeds["0"]), abs=1e-4)
    idle = next((out / "model-idle" / "points").glob("000_*")) / "rep-0" / "spec.json"
    assert json.loads(idle.read_text())["config"]["machine"]["cpu_scale"] == 1.0
    text = (out / "validation.md").read_text()
    assert "- machine speed (a 5-request calibration probe" in text and "4 probes" in text


def _small_grid(write_config, calibration):
    """A synthetic grid of 1 ms holds at one and two load threads, 12 requests a point."""
    return write_config(
        {
            "machine": {"calibration": str(calibration)},
            "model": {"block_size": 16},
            "workload": {"requests": 12, "tokens": 64},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 1.0}},
            "sweep": {"connector.workers": [1, 2]},
        }
    )


def test_validate_model_mechanism_level_replays_the_real_run_only(
    small_calibration, write_config, tmp_path, capsys
):
    """--level mechanism runs the real grid and replays its measured holds through the
    model (sim.api.replay): no model run directories, a table per point at 100 columns
    and the mechanism's verdict; --level both adds the prediction's table after it."""
    path = _small_grid(write_config, small_calibration)
    out = tmp_path / "val"
    base = ["validate-model", str(path), "--out", str(out), "--boot", "50", "--repeats", "1"]
    assert cli_main([*base, "--level", "mechanism"]) == 0
    printed = capsys.readouterr().out
    assert "## Mechanism: the real runs' measured holds replayed" in printed
    assert "## Prediction" not in printed and not (out / "model").exists()
    assert f"written: {out / 'validation.md'}\n" in printed  # no table: no prediction
    rows = [x for x in printed.splitlines() if x.startswith(("synthetic 1 ", "synthetic 2 "))]
    assert len(rows) == 2
    assert all(len(x) <= 100 for x in printed.splitlines() if not x.startswith("written: "))
    flat = " ".join(printed.split())  # the verdict is wrapped at 100 columns
    assert "Verdict: " in flat and "latency mean ±5% " in flat
    assert cli_main([*base, "--no-run", "--level", "both"]) == 2  # no model/ to report on
    assert cli_main([*base, "--resume", "--level", "both"]) == 0
    text = (out / "validation.md").read_text()
    assert text.index("## Mechanism") < text.index("## Prediction") < text.index("Every metric")


def test_validate_model_mechanism_level_replays_under_the_latencies_of_its_real_runs(
    small_calibration, write_config, tmp_path, capsys
):
    """--level mechanism measures the OS latencies around its real runs and replays under
    them (calibration-conditions.json), so a report made after a recalibration (--no-run)
    prints the same table; without that file the replay takes the calibration as it is
    now, and the report says so (here: wake-ups made 2 ms longer move the replay)."""
    cal_file = tmp_path / "cal.json"
    cal_file.write_text(small_calibration.read_text())
    path = _small_grid(write_config, cal_file)
    out = tmp_path / "val"
    base = ["validate-model", str(path), "--out", str(out), "--repeats", "1"]
    base += ["--level", "mechanism"]
    assert cli_main(base) == 0
    first = capsys.readouterr().out
    assert (out / "calibration-conditions.json").is_file()
    assert "latencies: measured around the real runs (calibration-conditions.json)" in " ".join(
        first.split()
    )

    def rows(printed: str) -> list[str]:
        return [x for x in printed.splitlines() if x.startswith("synthetic ")]

    data = json.loads(cal_file.read_text())  # a recalibration on a slower machine
    data["harness"]["wake_samples_ms"] = [x + 2.0 for x in data["harness"]["wake_samples_ms"]]
    data["harness"]["wake_ms"] += 2.0
    cal_file.write_text(json.dumps(data))
    assert cli_main([*base, "--no-run"]) == 0
    assert rows(capsys.readouterr().out) == rows(first) and len(rows(first)) == 2
    (out / "calibration-conditions.json").unlink()  # a validation made before 7 Dec 2026
    assert cli_main([*base, "--no-run"]) == 0
    later = capsys.readouterr().out
    assert "machine.calibration as it is now, not measured around these real runs" in " ".join(
        later.split()
    )
    assert rows(later) != rows(first)


def test_validate_model_mechanism_level_with_aa_scores_the_real_side_against_itself(
    small_calibration, write_config, tmp_path, capsys
):
    """--level mechanism --aa runs the real grid twice (real/, real-again/) and prints,
    after the model's table, the second real run against the first by the same targets,
    its counts on the verdict's lines; still no model run directories."""
    path = _small_grid(write_config, small_calibration)
    out = tmp_path / "val"
    base = ["validate-model", str(path), "--out", str(out), "--repeats", "1"]
    assert cli_main([*base, "--level", "mechanism", "--aa"]) == 0
    printed = capsys.readouterr().out
    assert (out / "real-again").is_dir() and not (out / "model").exists()
    mech = printed.index("## Mechanism: the real runs' measured holds replayed")
    aa = printed.index("## Mechanism: the real side against itself (real-again/ against real/)")
    assert mech < aa
    flat = " ".join(printed[mech:aa].split())
    assert "- a second real run against the first (real-again/, below): latency mean ±5% " in flat
    again = printed[aa:]
    assert "real  again" in again and "- again: the real grid run a second time" in " ".join(
        again.split()
    )
    assert len([x for x in again.splitlines() if x.startswith("synthetic ")]) == 2
    assert all(len(x) <= 100 for x in printed.splitlines() if not x.startswith("written: "))
    assert cli_main([*base, "--level", "mechanism", "--no-run"]) == 0  # the again run kept
    assert "the real side against itself" in capsys.readouterr().out
