"""Is a run complete? Warnings that ``compare`` and ``plot`` print before their results.

A run stopped half-way still has consistent files for the points it finished,
and compare or plot will happily read them; what they must not do is let those
figures pass for the whole experiment. Each warning says what is missing and how
to finish the run.
"""

from __future__ import annotations

import shlex

from sim.rundir.reader import RunResults, as_float

__all__ = ["completeness_warnings"]


def _resume_hint(res: RunResults) -> str:
    cmd = ["kvsim", "run", str(res.manifest.get("config_path") or "CONFIG")]
    for s in res.manifest.get("overrides") or []:
        cmd += ["--set", str(s)]
    cmd += ["--out", str(res.dir), "--resume"]
    return f"`{shlex.join(cmd)}` finishes it"


def completeness_warnings(res: RunResults) -> list[str]:
    """One line per way ``res`` falls short of the run its config planned (empty: complete)."""
    out: list[str] = []
    status = res.manifest.get("status")
    runs = res.manifest.get("runs") if isinstance(res.manifest.get("runs"), dict) else {}
    done, total = runs.get("done"), runs.get("total")
    counted = f" ({done} of {total} point runs finished)" if done is not None and total else ""
    if res.note:  # another process is writing the run now (sim.rundir.state)
        out.append(
            f"{res.dir}: made while the run was still being written{counted}: a partial "
            "result; compare or plot it again when the run ends (the run then removes what "
            "was made inside its directory; an --out elsewhere stays as it is)"
        )
    elif status in ("interrupted", "running"):
        out.append(f"{res.dir}: the run was interrupted{counted}; {_resume_hint(res)}")
    elif status == "failed":
        out.append(f"{res.dir}: some point runs failed{counted}; see summary.csv's error column")
    planned = int(as_float(res.manifest.get("repeats")) or 1) if res.manifest else 1
    short = []
    for row in res.summary:
        got = as_float(row.get("repeats"))
        if row.get("status") == "partial" or (got == got and got < planned):
            label = ", ".join(f"{a}={row.get(a, '')}" for a in res.axes)
            short.append(f"{label} ({got:.0f} of {planned})")
    if short:
        out.append(
            f"{res.dir}: {len(short)} point(s) have fewer repeats than planned: "
            + "; ".join(short[:4])
            + (" …" if len(short) > 4 else "")
        )
    points = res.manifest.get("points")
    if isinstance(points, list) and len(points) > len(res.summary) and status == "complete":
        out.append(f"{res.dir}: {len(points) - len(res.summary)} planned point(s) have no result")
    return out
