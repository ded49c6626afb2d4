"""Print the real-vs-model table of the study: p50/p99 load latency, real and calibrated model.

python experiments/store_real_vs_model/report.py REAL_RUN MODEL_RUN
"""

from __future__ import annotations

import sys

from sim.rundir.reader import as_float, load_results


def main(real_dir: str, model_dir: str) -> int:
    real = load_results(real_dir)
    model = {(r["variant"], r["workers"]): r for r in load_results(model_dir).summary}
    print(
        "| variant | threads | real p50 | model p50 | error | real p99 | model p99 | error "
        "| transfer p50 real / model | real get GB/s | harness lag p99 real / model |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in real.summary:
        m = model.get((r["variant"], r["workers"]))
        if m is None:
            continue
        cells = [r["variant"], r["workers"]]
        for q in ("latency_p50_ms", "latency_p99_ms"):
            a, b = as_float(r[q]), as_float(m[q])
            cells += [f"{a:.2f}", f"{b:.2f}", f"{(b - a) / a:+.0%}"]
        t_real, t_model = as_float(r["transfer_p50_ms"]), as_float(m["transfer_p50_ms"])
        lag_real, lag_model = as_float(r["inject_lag_p99_ms"]), as_float(m["inject_lag_p99_ms"])
        cells += [
            f"{t_real:.2f} / {t_model:.2f}",
            f"{as_float(r['store_get_gbps']):.2f}",
            f"{lag_real:.1f} / {lag_model:.1f}",
        ]
        print("| " + " | ".join(cells) + " |")
    print(
        "latencies in ms; error = (model - real) / real; harness lag: how late the harness "
        "handed requests to the pipeline (part of every latency)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
