"""Recall stages: analyze, retrieve, expand, rank, truncate."""

from __future__ import annotations

import time


def lap(timings: dict[str, float], name: str, since: float) -> float:
    """Record the milliseconds since `since` as `timings[name]`; returns now (the next
    stage's start)."""
    now = time.perf_counter()
    timings[name] = (now - since) * 1000
    return now
