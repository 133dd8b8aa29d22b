"""Bench test set-up: fixture paths, a fast lexical-only config, and a deterministic fake
pipeline (BM25 ranking, whitespace-token truncation) for testing the harness on its own."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from shared_data import shared_path

from smartsearch_mcp.bench.baselines import bm25_ranking
from smartsearch_mcp.config import Config
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import (
    Candidate,
    Passage,
    RecallResult,
    RememberResult,
    Scope,
    Scored,
    TurnInput,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    """tests/fixtures (LoCoMo, BEAM and LongMemEval slices)."""
    return FIXTURES


@pytest.fixture
def shared_data() -> Any:
    """A function giving a path under the shared data folder (tests/shared_data.py),
    skipping the test, with the reason, when it is absent."""
    return shared_path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# Token counts by the documented estimate: loading a BPE vocabulary takes seconds.
FAST = Config().with_overrides(truncation={"tokenizer": "estimate"})


@pytest.fixture
def fast_config() -> Config:
    """The default configuration with estimated token counts (for fake-pipeline tests)."""
    return FAST


@pytest.fixture
def lexical_config() -> Config:
    """Recall with the lexical ranker only and rule-based entities: no model is loaded."""
    return FAST.with_overrides(
        rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
    )


# ---------------------------------------------------------------------- fake pipeline


@dataclass
class FakeRanking:
    scored: list[Scored]
    candidates: list[Candidate]
    rankers: list[str] = field(default_factory=lambda: ["fake"])
    warnings: list[str] = field(default_factory=list)
    hops: list[Any] = field(default_factory=list)
    timings_ms: dict[str, float] = field(
        default_factory=lambda: {"analyze": 0.5, "retrieve": 2.0, "expand": 0.0, "rank": 1.0}
    )


class FakePipeline:
    """Ranks turns by FTS5 BM25 and truncates by whitespace words as tokens."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self.calls: list[tuple[str, datetime | None]] = []

    async def rank(self, query: str, scope: Scope, reference: datetime | None) -> FakeRanking:
        self.calls.append((query, reference))
        ids = await bm25_ranking(self.store, query, scope, limit=20)
        turns = {t.id: t for t in await self.store.get_turns(ids)}
        candidates = [
            Candidate(Passage(turns[i], 0, len(turns[i].text)), float(20 - rank))
            for rank, i in enumerate(ids)
        ]
        scored = [Scored(c, c.lexical_score) for c in candidates]
        return FakeRanking(scored, candidates)

    def truncate(
        self, ranking: FakeRanking, max_tokens: int, alpha: float | None = None
    ) -> RecallResult:
        """Greedy word fill; with `alpha` > 0 only passages scoring at least alpha x the best."""
        kept: list[Scored] = []
        used = 0
        best = ranking.scored[0].score if ranking.scored else 0.0
        for scored in ranking.scored:
            if alpha and scored.score < alpha * best:
                break
            cost = len(scored.candidate.passage.text.split())
            if used + cost > max_tokens:
                break
            kept.append(scored)
            used += cost
        return RecallResult(kept, used, max_tokens, ranking.rankers, ranking.warnings)

    def invalidate(self) -> None:
        pass

    async def embed_backlog(self) -> int:
        return 0


class FakeMemory:
    def __init__(self, store: SQLiteStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self.pipeline = FakePipeline(store)

    async def remember(
        self, turns: Sequence[TurnInput], session_id: str | None = None
    ) -> RememberResult:
        return await self.store.remember(self.namespace, session_id, turns)


class FakePool:
    embed_cache_hits = 0  # no embedding cache

    def __init__(self) -> None:
        self.opened: list[FakeMemory] = []
        self.closed = False

    async def open(self, db_path: str | Path, namespace: str) -> Any:
        memory = FakeMemory(await SQLiteStore.open(db_path), namespace)
        self.opened.append(memory)
        return memory

    async def release(self, memory: Any) -> None:
        await memory.store.close()

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_pool() -> FakePool:
    return FakePool()


@pytest.fixture(scope="session")
def fake_pool_class() -> type[FakePool]:
    """FakePool itself, for fixtures of wider scope."""
    return FakePool


# ---------------------------------------------------------------------- fake LLM endpoint


class FakeLLM:
    """A local OpenAI-compatible endpoint: answers "sunset" and judges answers that contain
    the gold answer CORRECT. Records every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.base_url = ""


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    state = FakeLLM()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            state.requests.append(body)
            state.headers.append(dict(self.headers))
            if self.path != "/v1/chat/completions":
                self.send_response(404)
                self.end_headers()
                return
            prompt = body["messages"][-1]["content"]
            if prompt.startswith("Label an answer"):
                gold = prompt.split("Gold answer: ", 1)[1].split("\n", 1)[0].lower()
                given = prompt.split("Answer to label: ", 1)[1].split("\n", 1)[0].lower()
                content = "CORRECT" if gold and gold in given else "WRONG"
            else:
                content = "support group" if "support group" in prompt else "not mentioned"
            payload = json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": content}}]}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
