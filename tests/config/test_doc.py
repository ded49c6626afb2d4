"""docs/config.md is generated from the models and must not drift from them."""

from __future__ import annotations

from pathlib import Path

from sim.config import ExperimentConfig
from sim.config.doc import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def test_reference_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/config.md is stale: run `python -m sim.config.doc > docs/config.md`"
    )


def test_every_section_field_has_help_text() -> None:
    missing = []
    for name, field in ExperimentConfig.model_fields.items():
        if not field.description:
            missing.append(name)
        ann = field.annotation
        if isinstance(ann, type) and hasattr(ann, "model_fields"):
            for sub, f in ann.model_fields.items():
                if not f.description and sub not in ("kind", "dist"):
                    missing.append(f"{name}.{sub}")
    assert missing == []
