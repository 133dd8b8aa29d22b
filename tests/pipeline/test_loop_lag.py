"""Recall's CPU work runs in worker threads: the event loop, which every client of a server
shares, stays responsive while a heavy recall runs (issue 19)."""

from __future__ import annotations

import gc
import random
import time
from typing import Any

import anyio
import anyio.to_thread
import pytest
from given_models import GivenModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))
TURNS = 30_000
WORDS = (
    "garden",
    "kitchen",
    "hiking",
    "piano",
    "taxes",
    "chess",
    "sailing",
    "baking",
    "robots",
    "violin",
    "puppy",
    "beach",
    "mountain",
    "river",
    "city",
    "train",
    "coffee",
    "book",
    "movie",
    "painting",
    "dinner",
    "school",
    "office",
    "market",
    "friend",
    "sister",
    "brother",
    "mother",
    "father",
    "weekend",
    "summer",
    "winter",
    "morning",
    "evening",
    "plan",
    "trip",
)
NAMES = ["Ann", "Bo", "Clara", "Dev", "Eli", "Fay"]


def _turns(count: int) -> list[TurnInput]:
    rnd = random.Random(0)
    return [
        TurnInput(
            " ".join(rnd.choice(WORDS) for _ in range(25)) + f" with {rnd.choice(NAMES)}.",
            rnd.choice(NAMES),
            timestamp=f"2023-{1 + i % 12:02d}-{1 + i % 28:02d}",
        )
        for i in range(count)
    ]


async def _probe(lags: list[float], done: anyio.Event) -> None:
    """How late the loop wakes a task sleeping 5 ms, again and again."""
    while not done.is_set():
        started = time.perf_counter()
        await anyio.sleep(0.005)
        lags.append(time.perf_counter() - started - 0.005)


async def test_the_event_loop_stays_responsive_while_a_heavy_recall_runs(tmp_path: Any):
    store = await SQLiteStore.open(tmp_path / "m.db", max_turns_per_call=TURNS)
    try:
        await store.remember("ns", "s1", _turns(TURNS))
        config = Config().with_overrides(
            nlp={"spacy_models": []},
            retrieval={"dense": False, "mode": "grep"},
            rank={"scorers": ["lexical"]},
        )
        pipeline = RecallPipeline(store, config, GivenModels())  # type: ignore[arg-type]
        await anyio.to_thread.run_sync(pipeline.token_counter)  # a one-time load, not recall
        lags: list[float] = []
        done = anyio.Event()
        # Earlier tests' objects (models, corpora) stay out of the collector's full passes: a
        # pass over them holds the GIL for as long as it takes, which is not recall's doing.
        gc.collect()
        gc.freeze()
        async with anyio.create_task_group() as group:
            group.start_soon(_probe, lags, done)
            await anyio.sleep(0.05)
            started = time.perf_counter()
            # The first recall reads the scope and builds its corpus; both score it all.
            first = await pipeline.recall("Where did Ann go hiking with her sister?", SCOPE, 500)
            await pipeline.recall("What did Bo bake for the dinner with Clara?", SCOPE, 500)
            took = time.perf_counter() - started
            done.set()
        assert first.passages
        # Relative, not absolute: on main the loop stalled for most of a recall at once.
        assert max(lags) < took / 5, (max(lags), took)
    finally:
        gc.unfreeze()
        await store.close()
