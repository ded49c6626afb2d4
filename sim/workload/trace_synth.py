"""A small synthetic trace in Mooncake's format, with the sharing structure of chat traffic.

kvsim ships no downloaded trace; tests and the replay example use one made here
(``experiments/make_sample_trace.py`` writes ``configs/traces/mooncake_sample.jsonl``).
Conversations start as a Poisson process; most begin with one of a few system
prompts (shared by every conversation that uses it), and each later turn
resends the whole conversation so far (previous prompt + answer + new message),
so its prompt shares every full block of the previous turn's prompt. Some
conversations have no system prompt and share nothing. Hash ids are numbered in
order of first appearance, as in the published traces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SynthSpec", "synthesize_trace"]


@dataclass(frozen=True)
class SynthSpec:
    """Knobs of the synthetic traffic; the defaults give ~300 requests over ~2 minutes."""

    sessions: int = 90
    session_rate_rps: float = 0.75
    #: System prompts, in 512-token blocks, and how often each opens a conversation; the
    #: remaining probability opens one with no system prompt.
    system_blocks: tuple[int, ...] = (12, 6, 3, 20)
    system_weights: tuple[float, ...] = (0.35, 0.25, 0.15, 0.1)
    mean_turns: float = 3.5
    think_mean_s: float = 6.0
    message_median_tokens: float = 700.0
    answer_median_tokens: float = 300.0
    max_input_tokens: int = 65536
    block_tokens: int = 512


def _lognormal_int(rng: np.random.Generator, median: float, sigma: float = 0.8) -> int:
    return max(1, int(np.exp(rng.normal(np.log(median), sigma))))


def synthesize_trace(seed: int = 0, spec: SynthSpec | None = None) -> list[dict[str, Any]]:
    """Rows with timestamp (ms), input_length, output_length and hash_ids, sorted by time."""
    spec = spec or SynthSpec()
    rng = np.random.default_rng(seed)
    bt = spec.block_tokens
    weights = np.asarray([*spec.system_weights, 1.0 - sum(spec.system_weights)])
    # Every draw happens here, session by session, before any id is assigned.
    turns: list[tuple[float, int, int, int, int]] = []  # time_ms, session, turn, msg, answer
    system_of: list[int] = []
    start = 0.0
    for s in range(spec.sessions):
        start += rng.exponential(1.0 / spec.session_rate_rps)
        system_of.append(int(rng.choice(len(weights), p=weights)))
        n_turns = int(rng.geometric(1.0 / spec.mean_turns))
        t = start
        for k in range(n_turns):
            msg = _lognormal_int(rng, spec.message_median_tokens)
            answer = _lognormal_int(rng, spec.answer_median_tokens)
            turns.append((round(t * 1e3), s, k, msg, answer))
            t += rng.exponential(spec.think_mean_s)
    turns.sort(key=lambda x: (x[0], x[1], x[2]))

    next_id = 0
    system_ids: dict[int, list[int]] = {}
    state: dict[int, tuple[int, list[int], int]] = {}  # session -> (input, ids, answer)
    ended: set[int] = set()
    rows: list[dict[str, Any]] = []
    for time_ms, s, _k, msg, answer in turns:
        if s in ended:
            continue
        if s in state:
            prev_input, prev_ids, prev_answer = state[s]
            shared = prev_ids[: prev_input // bt]
            input_len = prev_input + prev_answer + msg
        else:
            sysp = system_of[s]
            if sysp < len(spec.system_blocks) and sysp not in system_ids:
                system_ids[sysp] = list(range(next_id, next_id + spec.system_blocks[sysp]))
                next_id += spec.system_blocks[sysp]
            shared = system_ids.get(sysp, [])
            input_len = len(shared) * bt + msg
        if input_len > spec.max_input_tokens:
            ended.add(s)  # the conversation outgrew the context window: it ends here
            continue
        fresh = -(-input_len // bt) - len(shared)
        ids = shared + list(range(next_id, next_id + fresh))
        next_id += fresh
        state[s] = (input_len, ids, answer)
        rows.append(
            {
                "timestamp": time_ms,
                "input_length": input_len,
                "output_length": answer,
                "hash_ids": ids,
            }
        )
    return rows
