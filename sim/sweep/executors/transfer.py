"""Inputs to and results from a point run on another host, by content, verified.

No shared filesystem is assumed. The driver sends a run's spec (which carries the
resolved config) with the bytes of every data file the config names — traces,
token files, a model's ``config.json`` — keyed by the config field that names
it. The host checks each file against the content hash the spec recorded when
the sweep was planned (the same hash resume keys on), writes it into a scratch
directory, and points the config's field there; the point is the same
experiment because its data is byte-identical, wherever it lies.

What comes back is every file the child wrote in its run directory, with a
SHA-256 of each taken on the host; the driver checks them before writing them
into ``RUN/points/<slug>/rep-<k>/`` (``status.json`` last, as a local child does).
Where the child's status records its files' sizes and checksums, that record is
kept true for the run directory (its ``spec.json`` is the driver's, not the host's).
Only file names a child writes are accepted, so a host cannot write elsewhere.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.config import ExperimentConfig
from sim.files.read import MAX_DATA_BYTES, MAX_RUN_FILE_BYTES, read_bounded
from sim.rundir.layout import LOG_FILE, SPEC_FILE, STATUS_FILE, spec_file, status_file
from sim.rundir.outputs import write_json
from sim.sweep.identity import config_hash, data_files

__all__ = [
    "InputFile",
    "TransferError",
    "collect_outputs",
    "digest",
    "place_inputs",
    "read_inputs",
    "write_outputs",
]


class TransferError(RuntimeError):
    """An input or a result did not arrive as it was sent (one line, names the file)."""


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class InputFile:
    """One data file of a run, as sent: the config field naming it and its bytes."""

    field: str
    #: File name to give it on the host (the original's, so its format is recognised).
    name: str
    #: The config field names a directory holding ``config.json`` (a model's hf_config).
    as_dir: bool
    sha256: str
    data: bytes


def _spec_config(spec: dict[str, Any]) -> Any:
    if not isinstance(spec.get("config"), dict):
        raise TransferError(
            "the point's spec carries no resolved config (written by an older kvsim); "
            "only such specs can run on another host"
        )
    return ExperimentConfig.model_validate(spec["config"])


def read_inputs(spec: dict[str, Any]) -> list[InputFile]:
    """Driver side: the bytes of every data file of the spec's config, checked against
    the content hashes planned (a file edited since fails the point, as it would locally)."""
    cfg = _spec_config(spec)
    planned = spec.get("data_files") or {}
    out = []
    for field, path in data_files(cfg):
        data = read_bounded(path, what=field, limit=MAX_DATA_BYTES, error=TransferError)
        sha = digest(data)
        if planned.get(field) not in (None, sha):
            raise TransferError(
                f"{field}: {path} changed since the sweep was planned "
                f"({str(planned[field])[:19]} → {sha[:19]}); rerun with --force"
            )
        as_dir = field == "model.hf_config" and Path(str(cfg.model.hf_config)).is_dir()
        out.append(InputFile(field, path.name, as_dir, sha, data))
    return out


def _set_field(tree: dict[str, Any], dotted: str, value: str) -> None:
    *parents, leaf = dotted.split(".")
    node = tree
    for key in parents:
        node = node[key]
    node[leaf] = value


def place_inputs(spec: dict[str, Any], files: list[InputFile], data_dir: Path) -> dict[str, Any]:
    """Host side: write the data files under ``data_dir`` and return the spec with the
    config pointing at them (and the point hash of that config, which names new paths
    for the same contents)."""
    config = json.loads(json.dumps(spec["config"]))
    for f in files:
        if digest(f.data) != f.sha256:
            raise TransferError(f"{f.field}: {f.name} arrived damaged (checksum differs)")
        where = data_dir / f.sha256.split(":", 1)[1][:16]
        where.mkdir(parents=True, exist_ok=True)
        target = where / ("config.json" if f.as_dir else Path(f.name).name)
        target.write_bytes(f.data)
        _set_field(config, f.field, str(where if f.as_dir else target))
    placed = {**spec, "config": config}
    placed["point_hash"] = config_hash(ExperimentConfig.model_validate(config))
    return placed


def _accepted(name: str) -> bool:
    """Names a child writes in its run directory (never the spec: the driver keeps its own)."""
    plain = name == Path(name).name and not name.startswith(".")
    return plain and (name in (STATUS_FILE, LOG_FILE) or name.endswith(".csv"))


def _keep_file_records(rep_dir: Path, status: dict[str, Any]) -> None:
    """When the child recorded its files' sizes and checksums (``status["files"]``), keep
    that record true here: the spec it names is the host's copy (config paths pointing at
    the host's scratch directory), the one in the run directory is the driver's."""
    records = status.get("files")
    if not isinstance(records, dict) or SPEC_FILE not in records:
        return
    data = read_bounded(
        spec_file(rep_dir),
        what="spec",
        limit=MAX_RUN_FILE_BYTES,
        error=TransferError,
        within=rep_dir,
    )
    records[SPEC_FILE] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def collect_outputs(rep_dir: Path) -> dict[str, tuple[str, bytes]]:
    """Host side: every file the child wrote, with its checksum, by name."""
    out = {}
    for path in sorted(rep_dir.iterdir()):
        if path.is_file() and not path.is_symlink() and _accepted(path.name):
            data = read_bounded(
                path, what="output", limit=MAX_RUN_FILE_BYTES, error=TransferError, within=rep_dir
            )
            out[path.name] = (digest(data), data)
    return out


def write_outputs(
    rep_dir: Path, outputs: dict[str, tuple[str, bytes]], extra_status: dict[str, Any]
) -> dict[str, Any] | None:
    """Driver side: check and write a host's results into ``rep_dir``, ``status.json`` last,
    with ``extra_status`` merged in. Returns that status (None when the child wrote none).

    TransferError when a file is damaged or not one a child writes; nothing of the
    status is written then, so the run stays unfinished.
    """
    for name, (sha, data) in outputs.items():
        if not _accepted(name):
            raise TransferError(f"the host sent {name!r}, which is not a file a point writes")
        if digest(data) != sha:
            raise TransferError(f"{name} arrived damaged from the host (checksum differs)")
    for name, (_sha, data) in outputs.items():
        if name != STATUS_FILE:
            (rep_dir / name).write_bytes(data)
    if STATUS_FILE not in outputs:
        return None
    try:
        status = json.loads(outputs[STATUS_FILE][1].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise TransferError("status.json from the host is not JSON") from None
    if not isinstance(status, dict):
        raise TransferError("status.json from the host is not a JSON object")
    _keep_file_records(rep_dir, status)
    status.update(extra_status)
    write_json(status_file(rep_dir), status)
    return status
