"""The spec's pickled config: a child unpickles it instead of validating the JSON (its
start-up, kvsim bench startup), only while the JSON is the one it was pickled beside."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from sim.config import ExperimentConfig, expand_points
from sim.config.sections import GilConfig
from sim.rundir.layout import rep_runs
from sim.sweep.spec import PICKLE_KEY, PointSpec, read_spec, write_spec

RAW = {
    "name": "tiny",
    "seed": 3,
    "repeats": 1,
    "model": {"regions": 4, "block_len": [1024], "block_size": 16, "num_blocks": 256},
    "workload": {"requests": 8, "arrival": {"kind": "poisson", "rate_rps": 400}, "tokens": 160},
    "connector": {"variant": "numpy", "workers": 2},
}


def _spec(tmp_path: Path) -> Path:
    points = expand_points(RAW, lambda r, where: ExperimentConfig.model_validate(r))
    rep = rep_runs(tmp_path / "out", points, 1)[0]
    rep.dir.mkdir(parents=True)
    write_spec(rep, ["variant"], "")
    return rep.dir


def _no_validation(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = ExperimentConfig.model_validate

    def spy(data: object, *a: object, **k: object) -> ExperimentConfig:
        calls.append(data)
        return real(data, *a, **k)

    monkeypatch.setattr(ExperimentConfig, "model_validate", spy)
    return calls


def test_the_child_unpickles_the_config_it_was_given(tmp_path, monkeypatch) -> None:
    rep_dir = _spec(tmp_path)
    calls = _no_validation(monkeypatch)
    spec = read_spec(rep_dir)
    assert calls == []  # not validated again
    want = ExperimentConfig.model_validate(RAW)
    assert spec.config == want
    assert spec.config.model_dump(mode="json") == want.model_dump(mode="json")
    spec.check()  # its hash, from the JSON it carried, is the planned one


def test_a_rewritten_json_is_validated_and_its_values_used(tmp_path, monkeypatch) -> None:
    rep_dir = _spec(tmp_path)
    path = rep_dir / "spec.json"
    data = json.loads(path.read_text())
    data["config"]["workload"]["requests"] = 5  # as a Ray host rewrites its paths
    path.write_text(json.dumps(data))
    calls = _no_validation(monkeypatch)
    assert read_spec(rep_dir).config.workload.requests == 5
    assert len(calls) == 1


def test_a_pickle_that_does_not_load_falls_back_to_the_json(tmp_path, monkeypatch) -> None:
    rep_dir = _spec(tmp_path)
    path = rep_dir / "spec.json"
    data = json.loads(path.read_text())
    data[PICKLE_KEY] = base64.b64encode(b"not a pickle").decode()
    path.write_text(json.dumps(data))
    calls = _no_validation(monkeypatch)
    assert read_spec(rep_dir).config == ExperimentConfig.model_validate(RAW)
    assert len(calls) == 2  # the fallback's, and the comparison's here
    roundtrip = PointSpec.from_json(json.loads(json.dumps(read_spec(rep_dir).to_json())))
    assert roundtrip.config == read_spec(rep_dir).config


def test_a_pickle_from_other_config_models_falls_back_to_the_json(tmp_path) -> None:
    """A run directory from a kvsim before a config field existed: its pickle restores the
    old instance (no such attribute); the JSON is validated and the default filled in."""
    import pickle

    from sim.sweep.spec import PICKLED_FIELDS_KEY, PICKLED_OF_KEY, _json_digest

    rep_dir = _spec(tmp_path)
    path = rep_dir / "spec.json"
    data = json.loads(path.read_text())
    old = ExperimentConfig.model_validate(RAW)
    del old.gil.__dict__["own_releases"]  # as a pickle from before the field unpickles
    data[PICKLE_KEY] = base64.b64encode(pickle.dumps(old)).decode()
    del data[PICKLED_FIELDS_KEY]  # that kvsim wrote none
    del data["config"]["gil"]["own_releases"]
    data[PICKLED_OF_KEY] = _json_digest(data["config"])  # pickled beside that JSON
    path.write_text(json.dumps(data))
    with pytest.raises(AttributeError):
        pickle.loads(base64.b64decode(data[PICKLE_KEY])).gil.own_releases  # noqa: B018
    default = GilConfig.model_fields["own_releases"].default
    assert read_spec(rep_dir).config.gil.own_releases is default
