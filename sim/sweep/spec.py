"""What a child process is told to run: one point × repeat, with its whole resolved config.

The spec carries the point's validated config as JSON (every default filled in,
every data-file path already absolute), not the name of a YAML file. So a config
built in Python runs in isolated child processes exactly like one loaded from a
file, and a spec could be shipped to another process or host as it is. The
parent writes it to ``RUN/points/<slug>/rep-<k>/spec.json``; the child rebuilds
the config from it and checks the point's hash, which covers the contents of
the data files it names (traces, token files, a model's ``config.json``), so a
file edited mid-sweep fails the point instead of silently mixing experiments.

Beside the JSON the spec carries the validated config pickled, with the digest of the
JSON it was pickled beside: a child whose JSON still has that digest unpickles it
instead of validating the JSON again, and hashes the JSON it has instead of dumping
the config, so it never builds the config models' validators and serializers
(sim.config.types: ``defer_build``; kvsim bench startup). A spec whose JSON was
rewritten (a Ray host's paths, sim.sweep.executors.transfer) or written by another
kvsim is validated as before. The spec is kvsim's own file and already carries code
the child runs (its plug-ins' text): the pickle is no new trust.
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sim.config import ExperimentConfig
from sim.config.sweep_axes import field_paths
from sim.errors import SpecError
from sim.files.read import read_bounded
from sim.rundir.layout import RepRun, spec_file
from sim.rundir.outputs import write_json
from sim.sweep.identity import (
    DATA_FILES_KEY,
    DataDigests,
    config_hash,
    config_identity,
    data_files,
    first_difference,
)

__all__ = [
    "CHANGED_SINCE_PLANNED",
    "SPEC_VERSION",
    "PointSpec",
    "SpecError",
    "read_spec",
    "read_spec_data",
    "spec_plugins",
    "write_spec",
]

#: What a point run's error says when its data files changed after planning (the run's
#: last line then says --resume will refuse: sim.commands.run_report).
CHANGED_SINCE_PLANNED = "changed since the sweep was planned"
#: Version of the spec.json format; 2 carries the resolved config (1 named a YAML file).
SPEC_VERSION = 2
#: A spec carries one resolved config; far more is not one kvsim wrote.
MAX_SPEC_BYTES = 64 << 20


@dataclass(frozen=True)
class PointSpec:
    """One point × repeat, self-contained: everything a child needs, nothing it must re-read."""

    #: The point's resolved config.
    config: ExperimentConfig
    #: Index of the point in the sweep (its directory's ``NNN_`` prefix).
    index: int
    repeat: int
    #: The point's axis values by column label.
    axes: dict[str, Any]
    #: Axis columns of the whole sweep, in order: every table of every point has them all.
    columns: tuple[str, ...]
    #: ``config_hash`` of ``config`` when the parent planned the sweep (data files included).
    point_hash: str
    #: Content hashes of the data files when planned (``{field: "sha256:…"}``).
    data_files: dict[str, str]
    #: Where the config came from (a file path), or "" when it was built in Python.
    source: str = ""
    #: ``config_hash`` of the whole sweep's config (the manifest's): a resume counts this
    #: point run only when it belongs to this run (sim.sweep.plan).
    run_hash: str = ""
    #: The config's JSON as the spec carried it (child side; None on the parent's).
    config_json: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def for_rep(
        cls,
        rep: RepRun,
        columns: Sequence[str],
        source: str | Path = "",
        digests: DataDigests | None = None,
        run_hash: str = "",
    ) -> PointSpec:
        """``digests``: the sweep's planned data-file hashes (without: read now)."""
        identity = config_identity(rep.point.config, digests)
        return cls(
            config=rep.point.config,
            index=rep.point.index,
            repeat=rep.repeat,
            axes=dict(rep.point.axes),
            columns=tuple(columns),
            point_hash=config_hash(rep.point.config, digests),
            data_files=dict(identity.get(DATA_FILES_KEY, {})),
            source=str(source),
            run_hash=run_hash,
        )

    def to_json(self) -> dict[str, Any]:
        config = self.config.model_dump(mode="json")
        return {
            "version": SPEC_VERSION,
            "index": self.index,
            "repeat": self.repeat,
            "axes": self.axes,
            "columns": list(self.columns),
            "point_hash": self.point_hash,
            "data_files": self.data_files,
            "source": self.source,
            "run_hash": self.run_hash,
            "config": config,
            PICKLE_KEY: base64.b64encode(pickle.dumps(self.config)).decode("ascii"),
            PICKLED_OF_KEY: _json_digest(config),
            PICKLED_FIELDS_KEY: fields_digest(),
        }

    @classmethod
    def from_json(cls, data: Any) -> PointSpec:
        """Rebuild the spec (and validate its config); SpecError with one line otherwise."""
        if not isinstance(data, dict) or data.get("version") != SPEC_VERSION:
            version = data.get("version", 1) if isinstance(data, dict) else None
            raise SpecError(
                f"spec version {version!r} is not {SPEC_VERSION} (written by another kvsim); "
                "rerun with --force"
            )
        try:
            config = _unpickled(data) or ExperimentConfig.model_validate(data["config"])
            return cls(
                config=config,
                index=int(data["index"]),
                repeat=int(data["repeat"]),
                axes=dict(data["axes"]),
                columns=tuple(str(c) for c in data["columns"]),
                point_hash=str(data["point_hash"]),
                data_files={str(k): str(v) for k, v in dict(data.get("data_files", {})).items()},
                source=str(data.get("source", "")),
                run_hash=str(data.get("run_hash", "")),
                config_json=data["config"] if isinstance(data["config"], dict) else None,
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "(top level)"
            raise SpecError(f"spec config: {where}: {err['msg']}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise SpecError(f"spec is malformed ({type(exc).__name__}: {exc})") from None

    def check(self) -> None:
        """Raise SpecError when the point is no longer what the parent planned.

        The config itself travels in the spec, so what can change is the contents
        of a data file it names; the message says which one.
        """
        if config_hash(self.config, dumped=self.config_json) == self.point_hash:
            return
        # The identity as planned: the same rules (sim.sweep.identity), the planned hashes.
        by_path = {path: self.data_files.get(field, "") for field, path in data_files(self.config)}
        planned = config_identity(self.config, lambda path: by_path.get(path, ""))
        diff = first_difference(planned, config_identity(self.config)) or "its hash differs"
        where = f"{self.source}: " if self.source else ""
        raise SpecError(
            f"{where}point {self.index} {CHANGED_SINCE_PLANNED} ({diff}); rerun with --force"
        )


#: The spec's keys for the pickled config, the digest of the JSON beside it, and the
#: digest of the config models' fields it was pickled with (fields_digest).
PICKLE_KEY = "config_pickle"
PICKLED_OF_KEY = "config_pickled_of"
PICKLED_FIELDS_KEY = "config_pickled_fields"


@cache
def fields_digest() -> str:
    """The config models' dotted field paths, digested. A config pickled by a kvsim whose
    models had other fields unpickles without the new ones (pickle restores the old
    instance dict), and fails at their first use: validate-model --no-run on a run from
    before ``gil.own_releases`` did. Such a pickle is not used; the JSON is validated."""
    text = "\n".join(sorted(field_paths(ExperimentConfig)))
    return hashlib.sha256(text.encode()).hexdigest()


def _json_digest(config: Any) -> str:
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _unpickled(data: dict[str, Any]) -> ExperimentConfig | None:
    """The pickled config when the spec's JSON is the one it was pickled beside (else
    None: the JSON is validated)."""
    blob, of = data.get(PICKLE_KEY), data.get(PICKLED_OF_KEY)
    if not isinstance(blob, str) or not isinstance(of, str) or _json_digest(data["config"]) != of:
        return None
    if data.get(PICKLED_FIELDS_KEY) != fields_digest():  # other config models: validate
        return None
    try:
        config = pickle.loads(base64.b64decode(blob))  # kvsim's own spec (module docstring)
    except Exception:  # another kvsim's or pydantic's pickle: validate the JSON instead
        return None
    return config if isinstance(config, ExperimentConfig) else None


def write_spec(
    rep: RepRun,
    columns: Sequence[str],
    source: str | Path = "",
    durable: bool = True,
    *,
    digests: DataDigests | None = None,
    run_hash: str = "",
) -> Path:
    """Write ``rep``'s spec.json (parent side) and return its path (``durable=False``:
    without fsync, see ``sim.rundir.outputs.atomic_write_text``; ``digests`` and
    ``run_hash``: what the sweep planned, see :meth:`PointSpec.for_rep`)."""
    spec = PointSpec.for_rep(rep, columns, source, digests, run_hash)
    write_json(rep.spec, spec.to_json(), durable)
    return rep.spec


def read_spec_data(rep_dir: Path) -> Any:
    """The JSON of ``rep_dir``'s spec.json, not yet validated; SpecError if unreadable."""
    path = spec_file(rep_dir)
    raw = read_bounded(path, what="spec", limit=MAX_SPEC_BYTES, error=SpecError, within=rep_dir)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise SpecError(f"{path}: cannot read the spec ({exc})") from None


def spec_plugins(data: Any) -> list[dict[str, Any]]:
    """The plug-ins a spec's config carries (sim.config.plugins), read before the config
    is validated: their variants must be registered for it to validate."""
    config = data.get("config") if isinstance(data, dict) else None
    plugins = config.get("plugins") if isinstance(config, dict) else None
    if not plugins:
        return []
    if not isinstance(plugins, list) or not all(
        isinstance(p, dict) and isinstance(p.get("path"), str) and isinstance(p.get("source"), str)
        for p in plugins
    ):
        raise SpecError("spec config: plugins: expected [{path, source}, ...]")
    return plugins


def read_spec(rep_dir: Path) -> PointSpec:
    """The spec of the point run in ``rep_dir`` (child side); SpecError if unusable.

    Call inside the spec's plug-in scope when it has plug-ins (``spec_plugins``)."""
    return PointSpec.from_json(read_spec_data(rep_dir))
