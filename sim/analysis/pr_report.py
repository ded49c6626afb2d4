"""One Markdown page a reviewer can read in a pull request: ``kvsim report RUN``.

Shaped like the tables of the upstream PRs this project reproduces (vLLM #48531,
#47474): per variant and workers value, the GIL hold per request, the p50 and p99
load latency and the stall, each with its ratio to the baseline, the ratio's
interval from the spread between repeats and a verdict in words
(``sim.analysis.compare`` → ``sim.analysis.verdict``; docs/statistics.md); the
machine and kvsim commit in one line; the warnings of the run's end table (points
where the harness fell behind its plan); the harness's noise floor; and the command
that reproduces the run. A ``kvsim bench connectors`` CSV adds the hold per call
and sustained, measured side by side in one process.
"""

from __future__ import annotations

import csv
import io
import math
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim import columns
from sim.analysis.compare import Comparison, compare
from sim.analysis.gil_onoff import gil_onoff_lines
from sim.analysis.point_notes import point_warnings
from sim.analysis.report import no_verdict_line
from sim.config.yaml_reader import read_yaml
from sim.files.read import MAX_DATA_BYTES, open_bounded
from sim.rundir.reader import RunResults, as_float

__all__ = ["REPORT_METRICS", "bench_rows", "pr_markdown", "reproduce_command"]

#: The metrics of the page, in column order, with their column titles; those a run
#: lacks (no engine, no probe) are left out.
REPORT_METRICS: tuple[tuple[str, str], ...] = (
    (columns.GIL_HOLD_MEAN_MS.name, "GIL hold / request"),
    (columns.LATENCY_P50_MS.name, "p50 load latency"),
    (columns.LATENCY_P99_MS.name, "p99 load latency"),
    (columns.STALL_P99_MS.name, "stall p99 (probe thread)"),
    (columns.ENGINE_STALL_P99_MS.name, "engine stall p99"),
)


def _ms(v: float) -> str:
    if math.isnan(v):
        return "–"
    return f"{v:.3g} ms" if abs(v) < 100 else f"{v:.0f} ms"


def _verdict(ratio: Any) -> str:
    if ratio is None:
        return ""
    if math.isnan(ratio.value):
        return " · no ratio"
    text = f" · **{ratio.value:.2f}×**"
    if math.isnan(ratio.low) or math.isnan(ratio.high):
        return text + " (no interval: 1 repeat)"
    text += f" [{ratio.low:.2f}, {ratio.high:.2f}]"
    if ratio.low > 1.0:
        return text + " higher"
    if ratio.high < 1.0:
        return text + " lower"
    return text + " no difference shown"


def machine_line(manifest: dict[str, Any]) -> str:
    """Machine, Python, kvsim and its commit, the key packages and the date, in one line."""
    m = manifest.get("machine") or {}
    pk = m.get("packages") or {}
    commit = str(m.get("git_commit") or "unknown commit")[:12]
    parts = [
        f"{m.get('cpu_model', '?')} · {m.get('cpu_count', '?')} CPUs",
        str(m.get("platform", "?")),
        f"{m.get('implementation', 'Python')} {m.get('python', '?')}",
        f"kvsim {pk.get('kvsim', '?')} @ {commit}",
        f"numpy {pk.get('numpy', '?')}",
        str(m.get("recorded_at", ""))[:10],
    ]
    return " · ".join(p for p in parts if p)


def reproduce_command(res: RunResults) -> str:
    """``kvsim run CONFIG --set … --plugin …`` as the run was made (its manifest)."""
    man = res.manifest
    config = str(man.get("config_path") or "CONFIG.yaml")
    argv = ["kvsim", "run", config]
    for o in man.get("overrides") or []:
        argv += ["--set", str(o)]
    # The page's next line reports res.dir: a run made with --out (not recorded in the
    # manifest) must be told to write there, or that line reports nothing.
    cfg = man.get("config") or {}
    output = cfg.get("output") if isinstance(cfg.get("output"), dict) else {}
    name = str(cfg.get("name") or res.dir.name)
    default = output.get("dir") or (
        f"results/{name}-model" if cfg.get("mode") == "model" else f"results/{name}"
    )
    if Path(default).absolute() != res.dir.absolute():
        argv += ["--out", str(res.dir)]
    listed = _listed_plugins(config)
    for path in (man.get("config") or {}).get("plugins") or []:
        if str(path) not in listed:
            argv += ["--plugin", str(path)]
    return shlex.join(argv)


def bench_command(rows: Sequence[dict[str, str]], plugins: Sequence[str], csv_path: str) -> str:
    """``kvsim bench connectors …`` that remakes the bench CSV ``rows`` (its geometry,
    handler, repeats and variants are columns of it; ``plugins`` are the run's files).
    A comment instead where a setting cannot be given on the command line (a hash block
    size other than the block size, a variant given with options)."""
    first = rows[0]
    labels = [r["variant"] for r in rows if not r.get("variant", "").startswith("floor")]
    simple = all(re.fullmatch(r"[A-Za-z0-9_.-]+", v) for v in labels)
    if first.get("hash_block_size") != first.get("block_size") or not simple:
        return f"# the bench table: kvsim bench connectors, with the settings in {csv_path}"
    argv = ["kvsim", "bench", "connectors"]
    for flag, column in (
        ("--regions", "regions"),
        ("--block-len", "block_len"),
        ("--block-size", "block_size"),
        ("--groups", "groups"),
        ("--chunks", "chunks"),
        ("--handler", "handler"),
        ("--repeats", "repeats"),
    ):
        argv += [flag, str(first.get(column, ""))]
    argv += ["--variants", ",".join(dict.fromkeys(labels))]
    # The run's plug-ins only where the bench timed a variant kvsim does not have
    # built in: a bench of scalar and numpy needs none of them.
    from connectors.registry import address_variant_names  # loads the variants: here only

    if set(labels) - set(address_variant_names()):
        for path in plugins:
            argv += ["--plugin", str(path)]
    return shlex.join([*argv, "--csv", csv_path])


def _listed_plugins(config: str) -> set[str]:
    """Absolute paths of the plug-ins the config file itself names (others came by --plugin)."""
    try:
        raw, _node = read_yaml(Path(config))
    except Exception:  # the file moved or changed: every plug-in is spelled out
        return set()
    listed = raw.get("plugins") if isinstance(raw, dict) else None
    base = Path(config).absolute().parent
    return {
        str((base / p).absolute() if not Path(p).is_absolute() else Path(p))
        for p in listed or []
        if isinstance(p, str)
    }


def bench_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a ``kvsim bench connectors`` CSV (ValueError naming the file if not one)."""
    raw = open_bounded(path, what="bench CSV", limit=MAX_DATA_BYTES, error=ValueError)
    try:
        with io.TextIOWrapper(raw, encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: cannot read the bench CSV ({exc})") from None
    need = {
        "variant",
        columns.GIL_HOLD_MS.name,
        "sustained_hold_ms",
        "hold_vs_scalar",
        "sustained_vs_scalar",
    }
    if not rows or not need <= set(rows[0]):
        raise ValueError(f"{path}: not a `kvsim bench connectors` CSV (needs {sorted(need)})")
    return rows


def _bench_section(rows: Sequence[dict[str, str]], variants: Sequence[str]) -> list[str]:
    first = rows[0]
    lines = [
        "",
        "### GIL hold per call, measured side by side (`kvsim bench connectors`)",
        "",
        f"{first.get('regions')} regions × {first.get('chunks')} chunks, "
        f"{first.get('handler')}, median of {first.get('repeats')} requests; ratios to "
        "scalar in the same process (no interval: one process, medians).",
        "",
        "| variant | hold per call | × scalar | sustained per request | × scalar |",
        "|:--|--:|--:|--:|--:|",
    ]
    for r in rows:
        if r.get("variant") not in variants and r.get("variant") != "scalar":
            continue
        lines.append(
            f"| {r['variant']} | {_ms(as_float(r[columns.GIL_HOLD_MS.name]))} | "
            f"{as_float(r['hold_vs_scalar']):.2f}× | {_ms(as_float(r['sustained_hold_ms']))} | "
            f"{as_float(r['sustained_vs_scalar']):.2f}× |"
        )
    return lines


def _noise_line(res: RunResults) -> str:
    floors = [as_float(r.get(columns.NOISE_FLOOR_P99_MS.name)) for r in res.summary]
    floors = [f for f in floors if not math.isnan(f)]
    if not floors:
        return ""
    return (
        f"Harness noise floor (a request that does nothing, same path): p99 ≤ "
        f"{max(floors):.3g} ms; differences in latency below it are the harness's."
    )


def pr_markdown(
    res: RunResults,
    baseline: str | None = None,
    bench: Sequence[dict[str, str]] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    bench_path: str | None = None,
) -> str:
    """The page for ``res``: one table, variant by variant, each workers value a row
    (``bench_path``: where the ``bench`` rows were read, for the reproduce lines)."""
    metrics = [(n, t) for n, t in REPORT_METRICS if res.summary_has(n)]
    comp: Comparison = compare(res, baseline, [n for n, _ in metrics], n_boot, seed)
    variants = list(dict.fromkeys(v for lv in comp.levels for v in comp.variants[lv]))
    variants.sort(key=lambda v: v != comp.baseline)
    shown = [n for n, _ in metrics]
    # Axes with one value at every point (mode: real) say nothing in a row: left out.
    cols = [i for i, _ in enumerate(comp.level_axes) if len({lv[i] for lv in comp.levels}) > 1]
    axes = [comp.level_axes[i] for i in cols]
    others = ", ".join(v for v in variants if v != comp.baseline) or "(none)"
    lines = [
        f"## kvsim: {others} against {comp.baseline}",
        "",
        f"`{machine_line(res.manifest)}`",
        "",
        f"{comp.repeats} repeat(s) per point. Each cell: the value, then **its ratio to "
        f"{comp.baseline}** at the same {', '.join(axes) or 'settings'}"
        + (
            ", with the 95 % interval from the spread between repeats and the verdict "
            "(lower/higher: the interval excludes 1; docs/statistics.md)."
            if comp.interval_cells
            else f". {no_verdict_line(comp)}"
        ),
        "",
        "| " + " | ".join(["variant", *axes, *(t for _, t in metrics)]) + " |",
        "|:--" + "|--:" * (len(axes) + len(metrics)) + "|",
    ]
    for variant in variants:
        for lv in comp.levels:
            if variant not in comp.variants[lv]:
                continue
            name = f"{variant} (baseline)" if variant == comp.baseline else variant
            cells = [comp.cells[(lv, variant, n)] for n in shown]
            row = [name, *(lv[i] for i in cols)]
            row += [_ms(c.value) + _verdict(c.ratio) for c in cells]
            lines.append("| " + " | ".join(row) + " |")
    warnings = point_warnings(res.summary, res.axes)
    if warnings:
        # Where the harness fell behind its plan (or the audit disagrees), a figure is not
        # what it seems: the page says so under the table, as the run's end table does.
        lines += ["", "Warnings:", ""] + [f"- {w}" for w in warnings]
    onoff = gil_onoff_lines(res, n_boot, seed)  # a run that swept interpreter.gil: on, off
    if onoff:
        lines += ["", "### The GIL's own cost", "", "```", *onoff, "```"]
    if bench:
        lines += _bench_section(bench, variants)
    noise = _noise_line(res)
    lines += ["", noise] if noise else []
    lines += [
        "",
        "Reproduce:",
        "",
        "```bash",
        reproduce_command(res),
    ]
    plugins = (res.manifest.get("config") or {}).get("plugins") or []
    report = ["kvsim", "report", str(res.dir)]
    if bench and bench_path:  # the page's bench table is reproduced too
        lines.append(bench_command(bench, [str(p) for p in plugins], bench_path))
        report += ["--bench", bench_path]
    lines += [shlex.join(report), "```"]
    hashes = (res.manifest.get("config") or {}).get("data_files") or {}
    for i, path in enumerate(plugins):
        digest = str(hashes.get(f"plugins[{i}] {path}", ""))[:19]
        lines.append(f"\nPlug-in `{path}` ({digest}).")
    return "\n".join(lines) + "\n"
