"""Runs a benchmark: each haystack is remembered into a fresh temporary database through
`Memory` (the `remember` tool's code path), then every question is ranked once and truncated
at each budget, beside the baselines. Produces one JSON-ready outcome per question.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from smartsearch_mcp.bench.ablation import ABLATION_PREFIX
from smartsearch_mcp.bench.baselines import bm25_ranking, fill_rendered
from smartsearch_mcp.bench.datasets import Benchmark, BenchQuestion, Haystack
from smartsearch_mcp.bench.embed_cache import EmbeddingCache
from smartsearch_mcp.bench.metrics import (
    ALPHA_PREFIX,
    BM25,
    FULL_CONTEXT,
    SMARTSEARCH,
    SMARTSEARCH_FIXED,
    evidence_recall,
    word_count,
)
from smartsearch_mcp.bench.progress import progress_bar
from smartsearch_mcp.bench.qa import QAEvaluator
from smartsearch_mcp.config import Config
from smartsearch_mcp.pipeline.retrieve import ranking_text
from smartsearch_mcp.store import open_store
from smartsearch_mcp.tokens import TokenCounter, get_token_counter
from smartsearch_mcp.types import Passage, Scope, Turn

if TYPE_CHECKING:
    from smartsearch_mcp.memory import Memory
    from smartsearch_mcp.pipeline.recall import RecallPipeline
    from smartsearch_mcp.pipeline.truncate import Ranking

log = logging.getLogger(__name__)

NAMESPACE = "bench"
WARM_UP_QUERY = "What did we talk about last time?"
BASELINES: tuple[str, ...] = (BM25, FULL_CONTEXT)


@dataclass(frozen=True)
class RunOptions:
    """How to run: token budgets, which baselines, an optional QA evaluator, progress bars,
    and at most `limit` questions in all."""

    budgets: tuple[int, ...]
    baselines: tuple[str, ...] = ()
    limit: int | None = None
    progress: bool = True
    qa: QAEvaluator | None = None
    qa_budget: int | None = None
    embed_cache: Path | None = None
    # Thresholds to compare at the default budget, on the same rankings: recall against
    # tokens returned (the fixed budget, alpha 0, is always measured at every budget).
    alphas: tuple[float, ...] = ()
    # Configurations ranked besides the one benchmarked, each at the main budget, by name
    # (`ablation.ablations`: the preset without one adjustment).
    ablations: tuple[tuple[str, Config], ...] = ()
    # A PostgreSQL URL: each haystack goes into a schema of its own in that database (fresh
    # tables, ids from 1 as in a new file; dropped afterwards) instead of an SQLite file.
    database: str | None = None
    # Cascade cuts (rank.expensive_candidates values) at which to count the gold turns that
    # a cascade's first pass keeps among its best N passages: the most the expensive
    # rankers can reach after the cut.
    cascade_cuts: tuple[int, ...] = ()
    # Keep each question's best N ranked passages with the texts the rankers read (0: none):
    # the hard negatives that training/ builds its ranker data from.
    ranking_depth: int = 0


@dataclass
class RunOutput:
    """What a run produced: per-question outcomes, per-haystack facts, rankers and warnings."""

    outcomes: list[dict[str, Any]] = field(default_factory=list)
    haystacks: list[dict[str, Any]] = field(default_factory=list)
    rankers: dict[str, int] = field(default_factory=dict)
    warnings: dict[str, int] = field(default_factory=dict)
    # With `RunOptions.ranking_depth`: one record per question (see `ranking_record`).
    rankings: list[dict[str, Any]] = field(default_factory=list)


class MemoryFactory(Protocol):
    """Opens a Memory per haystack database; `MemoryPool` is the real one."""

    @property
    def embed_cache_hits(self) -> int:
        """Passage vectors served by an embedding cache so far (0 without one)."""
        ...

    async def open(self, db_path: str | Path, namespace: str) -> Memory: ...

    async def release(self, memory: Memory) -> None: ...

    async def close(self) -> None: ...


class MemoryPool:
    """Opens one `Memory` per database, all sharing one set of loaded models (held by a
    Memory over an in-memory database, so they load once per run, not once per haystack).
    With `embed_cache`, passage embeddings are looked up in (and added to) that file first."""

    def __init__(
        self, config: Config, embed_cache: Path | None = None, database: str | None = None
    ) -> None:
        self.config = config
        self.embed_cache_path = embed_cache
        self.database = database
        self._schemas: dict[int, str] = {}  # id(memory) -> its schema in `database`
        self._cache: EmbeddingCache | None = None
        self._owner: Memory | None = None

    async def open(self, db_path: str | Path, namespace: str) -> Memory:
        """A Memory over a (new) database file."""
        from smartsearch_mcp.memory import Memory

        if self._owner is None:
            self._owner = await Memory.open(self.config, ":memory:", namespace)
            if self.embed_cache_path is not None:
                self._cache = EmbeddingCache(self.embed_cache_path)
                self._owner.models.wrap("bi_encoder", self._cache.wrap)
                self._owner.models.wrap("splade", self._cache.wrap_splade)
        store_config = self.config.store
        schema = None
        if self.database is not None:  # a schema per haystack, in the shared database
            from smartsearch_mcp.postgres_url import with_search_path
            from smartsearch_mcp.store.postgres import create_schema

            schema = f"bench_{uuid.uuid4().hex[:12]}"
            await create_schema(self.database, schema)
            db_path = with_search_path(self.database, schema)
        store = await open_store(
            db_path,
            busy_timeout_ms=store_config.busy_timeout_ms,
            max_turns_per_call=store_config.max_turns_per_call,
            max_text_chars=store_config.max_text_chars,
        )
        memory = Memory(store, self.config, self._owner.models, namespace)
        if schema is not None:
            self._schemas[id(memory)] = schema
        return memory

    @property
    def embed_cache_hits(self) -> int:
        """How many passage vectors the embedding cache has served in this run."""
        return self._cache.hits if self._cache is not None else 0

    async def release(self, memory: Memory) -> None:
        """Close a Memory's database (the shared models stay loaded); in a shared database
        its haystack's schema is dropped."""
        await memory.store.close()
        schema = self._schemas.pop(id(memory), None)
        if schema is not None and self.database is not None:
            from smartsearch_mcp.store.postgres import drop_schema

            await drop_schema(self.database, schema)

    async def close(self) -> None:
        """Release the shared models."""
        if self._owner is not None:
            await self._owner.close()
            self._owner = None
        if self._cache is not None:
            log.info(
                "embedding cache %s: %d hits, %d misses",
                self.embed_cache_path,
                self._cache.hits,
                self._cache.misses,
            )
            self._cache.close()
            self._cache = None


def primary_budget(budgets: Sequence[int], default: int) -> int:
    """The budget latency and QA are reported at: the one closest to the configured default."""
    return min(budgets, key=lambda b: (abs(b - default), b))


async def run_benchmark(
    benchmark: Benchmark,
    config: Config,
    options: RunOptions,
    pool: MemoryFactory | None = None,
) -> RunOutput:
    """Remember each haystack into a fresh temporary database and evaluate its questions.

    `pool` opens the Memory of each haystack (default: a `MemoryPool` sharing one set of
    models across the run)."""
    counter = get_token_counter(config.truncation.tokenizer)
    plan = _plan(benchmark.haystacks, options.limit)
    output = RunOutput()
    if pool is None:
        pool = MemoryPool(config, embed_cache=options.embed_cache, database=options.database)
    total = sum(len(questions) for _, questions in plan)
    progress = progress_bar(options.progress, total, benchmark.name, " q")
    run = _Run(config, options, counter, output, progress, pool)
    try:
        for index, (haystack, questions) in enumerate(plan):
            with tempfile.TemporaryDirectory(prefix="smartsearch-bench-") as tmp:
                memory = await pool.open(Path(tmp) / "memory.db", NAMESPACE)
                try:
                    await _run_haystack(run, memory, haystack, questions, warm_up=index == 0)
                finally:
                    await pool.release(memory)
    finally:
        progress.close()
        await pool.close()
    return output


def _plan(
    haystacks: Sequence[Haystack], limit: int | None
) -> list[tuple[Haystack, list[BenchQuestion]]]:
    plan = []
    left = limit
    for haystack in haystacks:
        questions = haystack.questions if left is None else haystack.questions[:left]
        if not questions:
            continue
        plan.append((haystack, list(questions)))
        if left is not None:
            left -= len(questions)
            if left <= 0:
                break
    return plan


@dataclass(frozen=True)
class _Run:
    config: Config
    options: RunOptions
    counter: TokenCounter
    output: RunOutput
    progress: Any
    pool: MemoryFactory


async def _run_haystack(
    run: _Run,
    memory: Memory,
    haystack: Haystack,
    questions: list[BenchQuestion],
    warm_up: bool,
) -> None:
    """Remember the haystack and ask its questions: those asked during the conversation
    (`asked_at`) once what precedes them is remembered, the others after all of it."""
    config, counter, output, progress = run.config, run.counter, run.output, run.progress
    writer = _HaystackWriter(memory, haystack, max(1, config.store.max_turns_per_call))
    token_counts: dict[int, int] = {}
    embedded, embed_s, cached = 0, 0.0, 0
    context: _HaystackContext | None = None
    # the same store and models ranked by each ablated configuration (their corpora follow
    # the store's changes as the main pipeline's do)
    from smartsearch_mcp.pipeline.recall import RecallPipeline

    ablated = {
        name: RecallPipeline(memory.store, other, memory.models)
        for name, other in run.options.ablations
    }
    for stop, asked in _stages(questions):
        progress.set_description(f"{haystack.name}: remembering")
        await writer.remember_until(stop)
        # What a running server does in the background after `remember`: embed the new
        # turns (a no-op without a bi-encoder), so questions are timed at steady state.
        progress.set_description(f"{haystack.name}: embedding")
        hits_before = run.pool.embed_cache_hits
        started = time.perf_counter()
        embedded += await memory.pipeline.embed_backlog()
        embed_s += time.perf_counter() - started
        cached += run.pool.embed_cache_hits - hits_before
        context = await _context(memory, writer.labels, counter, token_counts)
        if warm_up:  # load the models before anything is timed
            started = time.perf_counter()
            await memory.pipeline.rank(WARM_UP_QUERY, context.scope, None)
            log.info("warm-up recall (model loading) took %.1f s", time.perf_counter() - started)
            warm_up = False
        progress.set_description(haystack.name)
        for question in asked:
            outcome, ranking = await _evaluate(
                memory, haystack, question, config, run.options, context
            )
            if run.options.ranking_depth:
                output.rankings.append(
                    ranking_record(outcome, ranking, context.turns, run.options.ranking_depth)
                )
            await _evaluate_ablations(outcome, question, context, ablated, run.options)
            for ranker in outcome["rankers"]:
                output.rankers[ranker] = output.rankers.get(ranker, 0) + 1
            for warning in outcome["warnings"]:
                output.warnings[warning] = output.warnings.get(warning, 0) + 1
            output.outcomes.append(outcome)
            progress.update(1)
    stored = writer.stored
    output.haystacks.append(
        {
            "name": haystack.name,
            "half": haystack.half,
            "sessions": len(haystack.sessions),
            "input_turns": sum(len(session.turns) for session in haystack.sessions),
            # stored (a turn repeated within a session is kept once), by the last question:
            # a haystack asked during the conversation is remembered only that far
            "turns": len(context.turns) if context else 0,
            "questions": len(questions),
            "full_context_tokens": context.full_tokens if context else 0,
            "full_context_words": context.full_words if context else 0,
            "remember_s": round(writer.elapsed, 4),
            "remember_turns_per_s": round(stored / writer.elapsed, 1) if writer.elapsed else None,
            "embedded_passages": embedded,
            "embed_s": round(embed_s, 4),
            "embed_cache_hits": cached,  # of those, vectors found in `--embed-cache`
        }
    )


def _stages(
    questions: Sequence[BenchQuestion],
) -> list[tuple[tuple[int, int] | None, list[BenchQuestion]]]:
    """The questions grouped by where they are asked, in conversation order (those asked
    after the whole haystack last); each group keeps the questions' order."""
    groups: dict[tuple[int, int] | None, list[BenchQuestion]] = {}
    for question in questions:
        groups.setdefault(question.asked_at, []).append(question)
    return sorted(groups.items(), key=lambda item: (item[0] is None, item[0] or (0, 0)))


@dataclass(frozen=True)
class _HaystackContext:
    turns: dict[int, Turn]
    turn_tokens: dict[int, int]
    full_tokens: int
    full_words: int
    labels: dict[str, list[int]]
    scope: Scope
    counter: TokenCounter


async def _context(
    memory: Memory,
    labels: dict[str, list[int]],
    counter: TokenCounter,
    token_counts: dict[int, int],
) -> _HaystackContext:
    """What the memory holds now (`token_counts` caches turns' counts across calls)."""
    scope = Scope(namespaces=(memory.namespace,))
    turns = {turn.id: turn for turn in await memory.store.scope_turns(scope)}
    for turn_id, turn in turns.items():
        if turn_id not in token_counts:
            token_counts[turn_id] = counter.count(turn.text)
    turn_tokens = {turn_id: token_counts[turn_id] for turn_id in turns}
    full_words = sum(word_count(turn.text) for turn in turns.values())
    return _HaystackContext(
        turns, turn_tokens, sum(turn_tokens.values()), full_words, labels, scope, counter
    )


async def _remember(
    memory: Memory, haystack: Haystack, config: Config
) -> tuple[dict[str, list[int]], float, int]:
    """Store every session; return the gold labels' turn ids, the seconds it took and the
    turns stored."""
    writer = _HaystackWriter(memory, haystack, max(1, config.store.max_turns_per_call))
    await writer.remember_until(None)
    return writer.labels, writer.elapsed, writer.stored


class _HaystackWriter:
    """Remembers a haystack's sessions in order (in chunks the store accepts), up to a
    point and later on from there; maps gold labels to the stored turn ids."""

    def __init__(self, memory: Memory, haystack: Haystack, chunk: int) -> None:
        self.memory = memory
        self.haystack = haystack
        self.chunk = chunk
        self.labels: dict[str, list[int]] = {}
        self.elapsed = 0.0
        self.stored = 0
        self._next = (0, 0)  # the first turn not remembered yet: (session, position)
        self._session_ids: dict[int, str | None] = {}

    async def remember_until(self, stop: tuple[int, int] | None) -> None:
        """Remember every turn before `stop` (session index, position), or all with None."""
        sessions = self.haystack.sessions
        end = stop if stop is not None else (len(sessions), 0)
        while self._next < end and self._next[0] < len(sessions):
            index, position = self._next
            session = sessions[index]
            last = end[1] if index == end[0] else len(session.turns)
            for start in range(position, min(last, len(session.turns)), self.chunk):
                await self._remember(index, start, min(start + self.chunk, last))
            self._next = (index, last) if index == end[0] else (index + 1, 0)

    async def _remember(self, index: int, start: int, end: int) -> None:
        session = self.haystack.sessions[index]
        chunk = session.turns[start:end]
        session_id = self._session_ids.get(index, session.session_id)
        started = time.perf_counter()
        result = await self.memory.remember(chunk, session_id=session_id)
        self.elapsed += time.perf_counter() - started
        self._session_ids[index] = result.session_id
        self.stored += result.stored
        for offset, (turn, turn_id) in enumerate(zip(chunk, result.ids, strict=True)):
            for label in self.haystack.labeler(str(session.session_id), start + offset, turn):
                ids = self.labels.setdefault(label, [])
                if turn_id not in ids:
                    ids.append(turn_id)


async def _evaluate_ablations(
    outcome: dict[str, Any],
    question: BenchQuestion,
    context: _HaystackContext,
    ablated: dict[str, RecallPipeline],
    options: RunOptions,
) -> None:
    """Each ablated configuration's result at the main budget, as a system of `outcome`."""
    if not ablated:
        return
    budget = primary_budget(
        options.budgets, next(iter(ablated.values())).config.truncation.max_tokens
    )
    for name, pipeline in ablated.items():
        ranking = await pipeline.rank(question.question, context.scope, question.reference)
        result = pipeline.truncate(ranking, budget)
        outcome["systems"][f"{ABLATION_PREFIX}{name}"] = {
            str(budget): _returned(result, outcome["gold"])
        }


async def _evaluate(
    memory: Memory,
    haystack: Haystack,
    question: BenchQuestion,
    config: Config,
    options: RunOptions,
    context: _HaystackContext,
) -> tuple[dict[str, Any], Ranking]:
    gold: list[int] = []
    unresolved = list(question.unresolved_evidence)
    for label in question.gold_labels:
        ids = context.labels.get(label)
        if ids is None:
            unresolved.append(label)
            continue
        gold.extend(i for i in ids if i not in gold)
    main_budget = primary_budget(options.budgets, config.truncation.max_tokens)

    started = time.perf_counter()
    ranking = await memory.pipeline.rank(question.question, context.scope, question.reference)
    rank_ms = (time.perf_counter() - started) * 1000
    ours: dict[str, dict[str, Any]] = {}
    truncate_ms: dict[int, float] = {}
    results = {}
    for budget in options.budgets:
        started = time.perf_counter()
        result = memory.pipeline.truncate(ranking, budget)
        truncate_ms[budget] = (time.perf_counter() - started) * 1000
        results[budget] = result
        ours[str(budget)] = _returned(result, gold)
    fixed = {
        str(budget): _returned(memory.pipeline.truncate(ranking, budget, alpha=0.0), gold)
        for budget in options.budgets
    }
    curve = {
        f"{ALPHA_PREFIX}{alpha:g}": {
            str(main_budget): _returned(
                memory.pipeline.truncate(ranking, main_budget, alpha=alpha), gold
            )
        }
        for alpha in options.alphas
    }
    candidate_ids = {c.passage.turn.id for c in ranking.candidates}
    latency = {stage: round(float(ms), 3) for stage, ms in ranking.timings_ms.items()}
    latency["truncate"] = round(truncate_ms[main_budget], 3)
    latency["end_to_end"] = round(rank_ms + truncate_ms[main_budget], 3)

    systems: dict[str, dict[str, dict[str, Any]]] = {SMARTSEARCH: ours, **curve}
    if config.truncation.alpha > 0:  # else the adaptive system is the fixed one
        systems[SMARTSEARCH_FIXED] = fixed
    if BM25 in options.baselines:
        started = time.perf_counter()
        ranked = await bm25_ranking(memory.store, question.question, context.scope)
        bm25: dict[str, dict[str, Any]] = {}
        for budget in options.budgets:
            filled = fill_rendered(
                question.question, ranked, context.turns, budget, context.counter
            )
            bm25[str(budget)] = {
                "recall": evidence_recall(gold, filled.turn_ids),
                "found": [i for i in gold if i in filled.turn_ids],
                "returned": filled.turn_ids,
                "passages": len(filled.turn_ids),
                "tokens": filled.tokens,
                "words": sum(word_count(context.turns[i].text) for i in filled.turn_ids),
            }
            if budget == main_budget:
                latency[BM25] = round((time.perf_counter() - started) * 1000, 3)
        systems[BM25] = bm25
    if FULL_CONTEXT in options.baselines:
        systems[FULL_CONTEXT] = {
            "all": {
                "recall": evidence_recall(gold, context.turns),
                "found": [i for i in gold if i in context.turns],
                "tokens": context.full_tokens,
                "words": context.full_words,
            }
        }

    first = _first_pass_found(ranking, gold, config, options.cascade_cuts)
    outcome: dict[str, Any] = {
        "id": question.qid,
        "haystack": haystack.name,
        "half": haystack.half,
        "question": question.question,
        "category": question.category,
        "answer": question.answer,
        "reference": question.reference.isoformat() if question.reference else None,
        "gold": gold,
        "gold_labels": list(question.gold_labels),
        "gold_turns": {str(i): _turn_brief(context.turns[i]) for i in gold if i in context.turns},
        "unresolved_evidence": unresolved,
        "candidates": len(ranking.candidates),
        "candidate_found": [i for i in gold if i in candidate_ids],
        "candidate_recall": evidence_recall(gold, candidate_ids),
        "first_pass_found": first,
        "systems": systems,
        "full_context_tokens": context.full_tokens,
        "latency_ms": latency,
        "rankers": list(ranking.rankers),
        "warnings": list(ranking.warnings),
        "qa": None,
    }
    if options.qa is not None:
        qa_budget = options.qa_budget or main_budget
        qa_result = results.get(qa_budget) or memory.pipeline.truncate(ranking, qa_budget)
        outcome["qa"] = await options.qa.evaluate(
            question.question, question.answer, qa_result.passages, question.reference
        )
        outcome["qa"]["budget"] = qa_budget
    return outcome, ranking


def ranking_record(
    outcome: dict[str, Any], ranking: Ranking, turns: dict[int, Turn], depth: int
) -> dict[str, Any]:
    """A question's best `depth` ranked passages (turn id, character span, the text the
    rankers read, when it was said, the fused score, gold or not), and the gold turns'
    passages ranked below them or never found (their rank then None; the turn's text)."""
    gold = set(outcome["gold"])
    passages = []
    ranked_gold: set[int] = set()
    for rank, item in enumerate(ranking.scored):
        passage = item.candidate.passage
        is_gold = passage.turn.id in gold
        if is_gold:
            ranked_gold.add(passage.turn.id)
        elif rank >= depth:
            continue
        passages.append(_passage_record(passage, rank, round(item.score, 6), is_gold))
    for turn_id in outcome["gold"]:
        if turn_id not in ranked_gold and turn_id in turns:
            turn = turns[turn_id]
            passages.append(_passage_record(Passage(turn, 0, len(turn.text)), None, None, True))
    return {
        "id": outcome["id"],
        "haystack": outcome["haystack"],
        "half": outcome["half"],
        "category": outcome["category"],
        "question": outcome["question"],
        "reference": outcome["reference"],
        "gold": outcome["gold"],
        "candidates": outcome["candidates"],
        "passages": passages,
    }


def _passage_record(
    passage: Passage, rank: int | None, score: float | None, gold: bool
) -> dict[str, Any]:
    return {
        "rank": rank,
        "turn": passage.turn.id,
        "span": [passage.start, passage.end],
        "text": ranking_text(passage),
        "time": passage.turn.timestamp,
        "score": score,
        "gold": gold,
    }


def _first_pass_found(
    ranking: Any, gold: list[int], config: Config, cuts: Sequence[int]
) -> dict[str, list[int]]:
    """For each cut N, the gold turns among the best N passages of a cascade's first pass
    (`rank.first_pass`: the ranking's candidates ranked by its rankers other than the
    cross-encoder and ColBERT, as recall's cascade ranks them)."""
    from smartsearch_mcp.pipeline.adjust import Context
    from smartsearch_mcp.pipeline.rank import first_pass

    candidates = ranking.candidates
    by_key = {item.candidate.passage.key: item.ranker_scores for item in ranking.scored}
    names = {name for item in ranking.scored for name in item.ranker_scores}
    scores = {
        name: [by_key[c.passage.key].get(name, math.nan) for c in candidates] for name in names
    }
    ordered = first_pass(candidates, scores, Context(config.rank, config.passages.burst_seconds))
    found: dict[str, list[int]] = {}
    for cut in cuts:
        kept = {item.candidate.passage.turn.id for item in ordered[:cut]}
        found[str(cut)] = [turn_id for turn_id in gold if turn_id in kept]
    return found


def _returned(result: Any, gold: list[int]) -> dict[str, Any]:
    """What one truncation returned, as a system's entry at one budget."""
    found = _unique(scored.candidate.passage.turn.id for scored in result.passages)
    return {
        "recall": evidence_recall(gold, found),
        "found": [i for i in gold if i in found],
        "returned": found,
        "passages": len(result.passages),
        "tokens": result.tokens_used,
        "words": sum(word_count(scored.candidate.passage.text) for scored in result.passages),
    }


def _unique(ids: Any) -> list[int]:
    return list(dict.fromkeys(ids))


def _turn_brief(turn: Turn) -> dict[str, Any]:
    return {
        "session_id": turn.session_id,
        "speaker": turn.speaker,
        "timestamp": turn.timestamp,
        "text": turn.text if len(turn.text) <= 300 else turn.text[:300] + "…",
    }
