"""The "never validated" note: `kvsim run` in model mode names what no validation covered,
the closest validated config and its error, in one line; the table is the doc's."""

from __future__ import annotations

from pathlib import Path

from sim.cli import main as cli_main
from sim.config import parse_config
from sim.model.validated import VALIDATED, features, markdown_table, unvalidated_note
from tests.model.test_driver import write_calibration

DOC = Path(__file__).resolve().parents[2] / "docs" / "model-mode.md"


def _config(write_config, tmp_path, **over):
    cal = write_calibration(tmp_path / "cal.json")
    return write_config({"machine": {"calibration": str(cal)}, **over})


def test_a_combination_never_validated_gets_one_line(write_config, tmp_path, capsys) -> None:
    path = _config(
        write_config,
        tmp_path,
        workload={"requests": 4, "arrival": {"kind": "closed", "clients": 2, "think_ms": 1.0}},
        engine={"enabled": True, "baseline_steps": 2, "components": 4},
    )
    assert cli_main(["run", str(path), "--mode", "model", "-q"]) == 0
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "never validated" in ln]
    assert len(notes) == 1
    # numpy, closed loop, the engine (cached, 32 tokens, 4 components): the closest shares
    # the most features (numpy, cached, 32 tokens: pr47474 and engine_interference) and
    # adds the fewest (pr47474); what it lacks is named
    (closest,) = [v for v in VALIDATED if v.config.startswith("experiments/pr47474")]
    assert notes[0] == (
        "kvsim: note: model mode was never validated on this config: arrival closed, "
        f"engine components 4 (not in the closest validated config, {closest.config}, "
        f"{closest.error_text()}; docs/model-mode.md)"
    )


def test_a_validated_combination_and_real_mode_get_none(write_config, tmp_path, capsys) -> None:
    path = _config(write_config, tmp_path, workload={"requests": 4})
    assert cli_main(["run", str(path), "--mode", "model", "-q"]) == 0
    assert "never validated" not in capsys.readouterr().err
    _cfg, points = parse_config(path, ["engine.enabled=true"])  # real mode: not the model's
    assert unvalidated_note(points) is None


def test_a_sweep_names_how_many_points_are_outside(write_config, tmp_path) -> None:
    path = _config(write_config, tmp_path, sweep={"gil.switch_interval_ms": [5.0, 3.0]})
    _cfg, points = parse_config(path, ["mode=model"])
    assert features(points[0].config) <= VALIDATED[0].features
    note = unvalidated_note(points)
    assert note is not None
    assert note.startswith(
        "model mode was never validated on 1 of 2 points: switch interval 3 ms ("
    )


def test_the_table_is_the_docs() -> None:
    assert markdown_table() in DOC.read_text(encoding="utf-8")


def test_a_second_real_run_is_quoted_beside_the_model_error() -> None:
    """Where a validation ran --aa, the note quotes what a second real run met: the floor
    the model's own count is read against."""
    from dataclasses import replace

    v = replace(VALIDATED[0], points=18, p50_met=12, p99_met=13, p99_median=0.08, aa=(14, 15))
    assert v.error_text().endswith(
        "p99 within ±15% at 13/18 (8%); a second real run met them at 14/18, 15/18"
    )
    assert v.aa_cell() == "14/18, 15/18"
    assert replace(v, aa=None).aa_cell() == "–" and "second" not in replace(v, aa=None).error_text()
