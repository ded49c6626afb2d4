"""Real mode's point: the hybrid clock, worker threads, the load pipeline, its add-ons."""

from __future__ import annotations

__all__: list[str] = []
