"""Part of `bench rankers`: a whole recall with the rankers' shapes, at LoCoMo size.

One LoCoMo conversation is remembered into a temporary database, with the random-weight
models `bench rankers` builds in place of the configured cross-encoder and ColBERT (the other
models of the configuration as configured: spaCy, the bi-encoder). Then, as a server would:

- the background embedding (bi-encoder passage vectors, then ColBERT token vectors), the
  ColBERT part timed: indexing throughput in passages per second;
- the database's growth per turn from the ColBERT token vectors: the bytes stored, and the
  database file before and after (each measured with every connection closed, so the
  write-ahead log is checkpointed into the file);
- recall of the conversation's questions, timed whole (analyze to truncate) and its rank stage;
  with a cascade (`rank.expensive_candidates` > 0), the same questions again without it
  (the cross-encoder and ColBERT on every candidate), in the same run.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline.token_vectors import model_key, stores_tokens
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import InputError, Scope

NAMESPACE = "bench"


def locomo_folder(data: Path | None) -> Path | None:
    """The LoCoMo data under `data` (the shared data folder, or LoCoMo itself), if any."""
    if data is None or not data.exists():
        return None
    folder = data / "locomo" if (data / "locomo").is_dir() else data
    return folder if any(folder.glob("*.json")) else None


async def time_whole_recall(
    config: Config,
    paths: dict[str, Path],
    locomo: Path,
    *,
    questions: int = 40,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Remember one LoCoMo conversation, index it and time its questions' recalls (see the
    module doc); returns the measurements."""
    from smartsearch_mcp.bench.datasets import load_locomo_bench
    from smartsearch_mcp.bench.runner import _remember
    from smartsearch_mcp.memory import Memory

    overrides = {kind: str(path) for kind, path in paths.items()}
    cfg = config.with_overrides(models=overrides)
    haystacks = load_locomo_bench(locomo).haystacks
    if not haystacks:
        raise InputError(f"no LoCoMo conversation in {locomo}")
    haystack = haystacks[0]
    models = ModelRegistry.from_config(cfg)
    out: dict[str, Any] = {"conversation": haystack.name}
    with tempfile.TemporaryDirectory(prefix="smartsearch-bench-recall-") as folder:
        db = Path(folder) / "memory.db"

        async def open_memory(config: Config = cfg) -> Memory:
            store = await SQLiteStore.open(
                db,
                max_turns_per_call=config.store.max_turns_per_call,
                max_text_chars=config.store.max_text_chars,
            )
            return Memory(store, config, models, NAMESPACE)

        progress(f"whole recall: remembering LoCoMo {haystack.name}")
        memory = await open_memory()
        try:
            _, _, stored = await _remember(memory, haystack, cfg)
            out["turns"] = stored
            bi_encoder = await _loaded(memory, "bi_encoder")
            if bi_encoder is not None and memory.pipeline.embedding_variants():
                await memory.pipeline.embeddings.embed_backlog(bi_encoder)
        finally:
            await memory.close()
        before = db.stat().st_size

        progress("whole recall: background ColBERT indexing")
        memory = await open_memory()
        try:
            colbert = await _loaded(memory, "colbert")
            if colbert is not None and stores_tokens(colbert):
                started = time.perf_counter()
                indexed = await memory.pipeline.token_vectors.index_backlog(colbert)
                seconds = time.perf_counter() - started
                keys = [p.key for p in await _passages(memory)]
                blobs = await memory.store.get_embeddings(model_key(colbert), keys)
                out["colbert_indexed_passages"] = indexed
                out["colbert_index_passages_per_s"] = round(indexed / seconds, 1)
                out["colbert_bytes_per_turn"] = round(
                    sum(len(b) for b in blobs.values()) / max(1, stored), 1
                )
        finally:
            await memory.close()
        out["db_bytes_before_colbert"] = before
        out["db_bytes_after_colbert"] = db.stat().st_size
        out["db_growth_per_turn_bytes"] = round((db.stat().st_size - before) / max(1, stored), 1)

        asked = haystack.questions[:questions]
        cut = cfg.rank.expensive_candidates
        progress(f"whole recall: {len(asked)} questions" + (f", cascade at {cut}" if cut else ""))
        memory = await open_memory()
        try:
            out.update(await _time_questions(memory, asked))
            out["max_candidates"] = cfg.retrieval.max_candidates
            out["expensive_candidates"] = cut
        finally:
            await memory.close()
        if cut > 0:  # the same questions with the expensive rankers on every candidate
            progress(f"whole recall: {len(asked)} questions, without the cascade")
            memory = await open_memory(cfg.with_overrides(rank={"expensive_candidates": 0}))
            try:
                out["without_cascade"] = await _time_questions(memory, asked)
            finally:
                await memory.close()
    return out


async def _time_questions(memory: Any, questions: list[Any]) -> dict[str, Any]:
    await memory.recall("warm-up question about the conversation")  # loads and caches
    whole: list[float] = []
    rank: list[float] = []
    rankers: set[str] = set()
    warnings: set[str] = set()
    stages: dict[str, list[float]] = {}
    for question in questions:
        started = time.perf_counter()
        result = await memory.recall(question.question, reference=question.reference)
        whole.append((time.perf_counter() - started) * 1000)
        rank.append(result.timings_ms.get("rank", 0.0))
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
        rankers.update(result.rankers)
        warnings.update(result.warnings)
    return {
        "questions": len(questions),
        "recall_p50_ms": _percentile(whole, 50),
        "recall_p95_ms": _percentile(whole, 95),
        "recall_rank_stage_p50_ms": _percentile(rank, 50),
        "recall_rank_stage_p95_ms": _percentile(rank, 95),
        "recall_rankers": sorted(rankers),
        # each stage's (and rank sub-step's) p50, as recall reports them in `timings_ms`
        "stage_p50_ms": {stage: _percentile(ms, 50) for stage, ms in sorted(stages.items())},
        # e.g. a ranker that failed to load; the bench reports what recall actually did
        "recall_warnings": sorted(w for w in warnings if "loading" in w or "failed" in w),
    }


async def _loaded(memory: Any, kind: str) -> Any | None:
    import anyio.to_thread

    if kind == "bi_encoder":
        return await anyio.to_thread.run_sync(memory.models.get_bi_encoder)
    return await anyio.to_thread.run_sync(memory.models.get_scorer, kind)


async def _passages(memory: Any) -> list[Any]:
    turns = await memory.store.scope_turns(Scope(namespaces=(NAMESPACE,)))
    return memory.pipeline.corpora.passages.split(turns)


def _percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 1) if values else 0.0
