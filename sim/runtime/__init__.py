"""The per-point runtime: the hybrid clock, worker threads, the load pipeline, one point's run."""
