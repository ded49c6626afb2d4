"""What makes two configs "the same experiment", so a resume never mixes results.

The identity of an experiment is its resolved config (defaults filled in) minus
where the results go: moving a run directory or passing ``--out`` does not change
what was measured, any other field does. The config names its data files (a
trace, an empirical token file, a model's ``hf_config``) by path only, so the
identity also carries a content hash of each: an edited trace is a different
experiment even though the config text is the same. A plug-in's text is in the
config itself (sim.config.plugins); the identity keeps its hash beside the data
files', so a resume after an edit names the file.

A sweep reads each data file once, when it is planned (:class:`DataDigests`): the
manifest, every point's spec and the resume check use those hashes, and each point's
child hashes its files again and refuses to run when they differ — so a trace
replaced while point 0 ran fails point 1 instead of giving it another workload.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sim.config import ExperimentConfig
from sim.config.sections import BASE_PERCENTILES
from sim.errors import ConfigError
from sim.files.read import MAX_DATA_BYTES, open_bounded

__all__ = [
    "DATA_FILES_KEY",
    "DataDigests",
    "config_hash",
    "config_identity",
    "data_files",
    "first_difference",
    "plugin_digest",
]

_IGNORED = ("output",)

#: Identity key holding ``{field: "sha256:<hex>"}`` of the config's data files.
DATA_FILES_KEY = "data_files"


def data_files(cfg: ExperimentConfig) -> list[tuple[str, Path]]:
    """(field, file) of every file whose contents the experiment's results depend on."""
    out = [(field, Path(path)) for field, path in cfg.workload.data_files()]
    if cfg.model.hf_config is not None:
        hf = Path(cfg.model.hf_config)
        out.append(("model.hf_config", hf / "config.json" if hf.is_dir() else hf))
    return out


def _file_digest(path: Path) -> str:
    """``sha256:<hex>`` of the file's bytes, or ``missing`` when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open_bounded(path, what="data file", limit=MAX_DATA_BYTES) as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except (OSError, ConfigError):  # a FIFO or /dev/zero is refused, never read
        return "missing"
    return f"sha256:{h.hexdigest()}"


class DataDigests:
    """The content hash of each data file of a sweep, read once: at planning.

    Everything the parent says about the sweep (manifest, specs, resume) uses these;
    a point's child reads its files again (``config_hash`` without digests) and
    compares. Picklable, so the model-mode worker processes get the planned hashes."""

    def __init__(self) -> None:
        self._by_path: dict[str, str] = {}

    def __call__(self, path: Path) -> str:
        key = str(Path(path).absolute())
        found = self._by_path.get(key)
        if found is None:
            found = self._by_path[key] = _file_digest(Path(key))
        return found

    def plan(self, configs: Iterable[ExperimentConfig]) -> DataDigests:
        """Hash every data file ``configs`` name (each file once); return self."""
        for cfg in configs:
            for _field, path in data_files(cfg):
                self(path)
        return self


def plugin_digest(text: str) -> str:
    """``sha256:<hex>`` of a plug-in's text (as ``_file_digest`` is of a data file's bytes)."""
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def config_identity(
    cfg: ExperimentConfig,
    digests: DataDigests | None = None,
    dumped: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The resolved config without ``output`` (but with ``output.percentiles`` when they
    add columns), plus the data files' content hashes
    (under ``data_files``, present only when the config names any, so that the
    identity of a config without data files is what it always was). ``digests``: the
    sweep's planned hashes; without them the files are read now. ``dumped``: the
    config's ``model_dump(mode="json")`` where the caller has it already (a point child:
    its spec's), so that no serializer is built for it (sim.config.types, defer_build)."""
    data = dict(dumped) if dumped is not None else cfg.model_dump(mode="json")
    for key in _IGNORED:
        data.pop(key, None)
    if cfg.interpreter.is_default:  # a config without one is the experiment it always was
        data.pop("interpreter", None)
    if cfg.output.all_percentiles != BASE_PERCENTILES:
        # The percentiles change summary.csv's columns: a resume must not mix two sets.
        data["output_percentiles"] = list(cfg.output.all_percentiles)
    digest = digests if digests is not None else _file_digest
    files = {field: digest(path) for field, path in data_files(cfg)}
    if cfg.plugins:
        # The text is in the config; the identity keeps each file's path and a hash of
        # its text, so an edited plug-in is reported as that file, not as a text diff.
        data["plugins"] = [p.path for p in cfg.plugins]
        for i, plugin in enumerate(cfg.plugins):
            files[f"plugins[{i}] {plugin.path}"] = plugin_digest(plugin.source)
    if files:
        data[DATA_FILES_KEY] = files
    return data


def config_hash(
    cfg: ExperimentConfig,
    digests: DataDigests | None = None,
    dumped: dict[str, Any] | None = None,
) -> str:
    """SHA-256 of the identity, as canonical JSON (sorted keys)."""
    text = json.dumps(
        config_identity(cfg, digests, dumped), sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _short(digest: Any) -> str:
    text = str(digest)
    return text[:19] if text.startswith("sha256:") else text  # "sha256:" + 12 hex digits


def _files_difference(old: Any, new: Any) -> str | None:
    """The first data file whose contents differ, said as such (not as a hash path)."""
    old = old if isinstance(old, dict) else {}
    new = new if isinstance(new, dict) else {}
    for field in sorted(set(old) | set(new)):
        a, b = old.get(field), new.get(field)
        if a != b:
            if a is None:
                return f"{field}: the run recorded no content hash for this file"
            return f"{field}: the file's contents changed ({_short(a)} → {_short(b)})"
    return None


def first_difference(old: Any, new: Any) -> str | None:
    """``"dotted.path: old → new"`` for the first place two identities differ, else None.

    The data files' hashes are compared last, so a changed path is reported as
    the field that changed, and an edited file as ``"workload.arrival.path: the
    file's contents changed (sha256:… → sha256:…)"``.
    """
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return _tree_difference(old, new, "")
    found = _tree_difference(
        {k: v for k, v in old.items() if k not in (*_IGNORED, DATA_FILES_KEY)},
        {k: v for k, v in new.items() if k not in (*_IGNORED, DATA_FILES_KEY)},
        "",
    )
    return found or _files_difference(old.get(DATA_FILES_KEY), new.get(DATA_FILES_KEY))


#: Top-level fields a config writes elsewhere, by the name the user wrote.
_WRITTEN_AS = {"sweep_order": "sweep.order"}


def _tree_difference(old: Any, new: Any, path: str) -> str | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else _WRITTEN_AS.get(str(key), str(key))
            if key not in old:
                return f"{sub}: (absent) → {new[key]!r}"
            if key not in new:
                return f"{sub}: {old[key]!r} → (absent)"
            found = _tree_difference(old[key], new[key], sub)
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = _tree_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if old == new else f"{path or '(config)'}: {old!r} → {new!r}"
