"""The README's commands: the examples it gives show what they are for."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sim.config import parse_config
from sim.workload.plan import request_bytes

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def readme_commands() -> list[str]:
    """Every command line of the README's bash blocks, comments dropped, in order."""
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


def test_the_search_example_is_bound_by_the_gil_not_the_store() -> None:
    """`kvsim search` on a config whose store saturates first says the same rate for every
    variant (the quickstart: ~9 GB a request, 43 req/s). The README's example must leave the
    store room: its capacity at least 10x the rate the search starts from, so that what the
    search finds is the rate the load threads' shared GIL allows (the README and the
    config's comment give the rates found)."""
    searches = [c for c in readme_commands() if c.startswith("kvsim search configs/")]
    assert searches, "the README shows no `kvsim search` on a shipped config"
    for command in searches:
        config = ROOT / shlex.split(command)[2]
        _cfg, points = parse_config(config)
        variants = {p.config.connector.variant for p in points}
        assert {"scalar", "numpy"} <= variants, command
        assert {p.config.connector.workers for p in points} == {4}, command
        for p in points:
            c = p.config
            nbytes = request_bytes(c.model, c.workload.tokens.value)
            store_capacity_rps = c.store.bandwidth_gb_per_s * 1e9 / nbytes
            assert store_capacity_rps >= 10 * c.workload.arrival.rate_rps, (
                f"{command}: the store saturates at {store_capacity_rps:.0f} req/s"
            )


def test_the_shipped_store_settings_are_the_ones_the_study_accounts_for() -> None:
    """configs/store_real_vs_model.yaml's modelled store is a fit from one busy day; the study
    README says where it comes from and what `kvsim calibrate store` changes. A re-fit that
    updates the config must update that account too."""
    config = ROOT / "configs" / "store_real_vs_model.yaml"
    study = (ROOT / "experiments" / "store_real_vs_model" / "README.md").read_text()
    cfg, _ = parse_config(config)
    shipped = (
        f"shipped: `latency_ms: {cfg.store.latency_ms:g}`,\n`bandwidth_gb_per_s: "
        f"{cfg.store.bandwidth_gb_per_s:g}`"
    )
    assert shipped in study
    assert "kvsim calibrate store results/store_real_vs_model" in config.read_text()
    assert "`kvsim calibrate store RUN` **changes no file**" in study
