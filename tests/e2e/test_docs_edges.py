"""Names and docs from the newcomer trial: README column lists match the code, variant
options are documented, first paragraphs are whole, "1 byte", tokens rounding is said."""

from __future__ import annotations

import re
from pathlib import Path

from sim.cli import main
from sim.instruments.engine import STEP_COLUMNS
from sim.point.records import REQUEST_COLUMNS

ROOT = Path(__file__).resolve().parents[2]


def _row(stem: str) -> str:
    results = (ROOT / "docs" / "results.md").read_text()  # the run directory, moved from README
    return next(ln for ln in results.splitlines() if ln.startswith(f"| `{stem}` |"))


def test_readme_lists_every_requests_and_steps_column() -> None:
    for stem, cols in (("requests.csv", REQUEST_COLUMNS), ("steps.csv", STEP_COLUMNS)):
        listed = set(re.findall(r"`([a-z0-9_]+)`", _row(stem)))
        assert set(cols) <= listed, (stem, set(cols) - listed)
    assert "cpu_ms" not in REQUEST_COLUMNS and "stage_wall_ms" in REQUEST_COLUMNS


def test_config_reference_has_whole_sentences_and_variant_options() -> None:
    doc = (ROOT / "docs" / "config.md").read_text()
    trace = doc.split("— TraceArrival\n\n", 1)[1].split("\n", 1)[0]
    assert trace.endswith("already holds.")  # the whole first paragraph, not its first line
    assert "## `connector.options` — per variant" in doc
    assert "### `rows`" in doc and "| `pause_gc` | true/false | `true` |" in doc


def test_variants_name_prints_every_option(capsys) -> None:
    assert main(["variants", "rows"]) == 0
    out = capsys.readouterr().out
    for opt in ("pause_gc", "share_size_rows", "promote_young"):
        assert f"    {opt}  (true/false, default " in out
    assert main(["variants", "scalar"]) == 0
    assert "options: none" in capsys.readouterr().out
    assert main(["variants", "rowz"]) == 2
    assert "did you mean 'rows'" in capsys.readouterr().err


def test_geometry_says_one_byte(capsys) -> None:
    assert main(["geometry", "deepseek-v3", "--kv-dtype", "fp8"]) == 0
    out = capsys.readouterr().out
    assert "(1 byte)" in out and "1 bytes" not in out


def test_validate_reports_token_rounding(write_config, capsys) -> None:
    path = write_config({"workload": {"tokens": 1000}, "model": {"block_size": 128}})
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "workload.tokens 1000 is rounded down to 896" in out
    exact = write_config(
        {"workload": {"tokens": 1024}, "model": {"block_size": 128}}, name="b.yaml"
    )
    assert main(["validate", str(exact)]) == 0
    assert "rounded" not in capsys.readouterr().out
