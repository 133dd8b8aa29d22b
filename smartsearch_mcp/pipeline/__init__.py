"""Recall stages: analyze, retrieve, expand, rank, truncate."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")


def lap(timings: dict[str, float], name: str, since: float) -> float:
    """Record the milliseconds since `since` as `timings[name]`; returns now (the next
    stage's start)."""
    now = time.perf_counter()
    timings[name] = (now - since) * 1000
    return now


async def off_loop(
    limiter: anyio.CapacityLimiter | None, fn: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """`fn(*args, **kwargs)` in a worker thread, at most `limiter` at once: CPU-bound work
    of a recall never runs on the event loop, which other clients' requests share (None:
    anyio's default limiter)."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=limiter)
