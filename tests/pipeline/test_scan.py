"""Grep mode over a scope streamed from the store (`retrieval.scope_cache_mb`) retrieves what
the cached path retrieves: same scores, candidates, expansion hops and ranking."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from given_models import GivenModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.importers.locomo import load_locomo
from smartsearch_mcp.pipeline.analyze import QueryAnalysis, analyze_query
from smartsearch_mcp.pipeline.corpus import StreamedScope
from smartsearch_mcp.pipeline.passages import split_into_passages
from smartsearch_mcp.pipeline.recall import Ranking, RecallPipeline
from smartsearch_mcp.pipeline.scan import ScanResult, scan_scope
from smartsearch_mcp.pipeline.scope_view import Pages
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import ConfigError, Passage, Scope, Turn, TurnInput

pytestmark = pytest.mark.anyio

SLICE = Path(__file__).parents[1] / "fixtures" / "locomo_slice" / "30.json"
SCOPE = Scope(("ns",))


def _config(cache_mb: int, **retrieval: Any) -> Config:
    return Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False, "scope_cache_mb": cache_mb, **retrieval},
        rank={
            "scorers": ["lexical", "bm25", "speaker"],
            "adjust": ["session_support", "time_range"],
        },
        passages={"max_words": 40, "overlap_words": 8},
    )


@pytest.fixture
async def store(tmp_path):
    """The LoCoMo slice (162 chat turns), plus user/assistant sessions whose long assistant
    turns are split into several passages."""
    s = await SQLiteStore.open(tmp_path / "m.db")
    (conversation,) = load_locomo(SLICE)
    texts: list[str] = []
    for session in conversation.sessions:
        await s.remember("ns", session.session_id, session.turns)
        texts.extend(t.text for t in session.turns)
    for n in range(6):
        turns = []
        for k in range(4):
            said = texts[(n * 4 + k) * 5 % len(texts)]
            reply = " ".join(texts[(n * 7 + k * 3 + j) % len(texts)] for j in range(6))
            turns += [TurnInput(said, role="user"), TurnInput(reply, role="assistant")]
        await s.remember("ns", f"chat-{n}", turns)
    yield s
    await s.close()


def _questions() -> list[str]:
    (conversation,) = load_locomo(SLICE)
    return [q.question for q in conversation.questions] + [
        "What did the assistant suggest about the dance studio?",
        "When did Jon lose his job?",
        # questions naming a time range: the date channel (sessions 3-5 are in February)
        "What did Jon do in February 2023?",
        "What happened in January 2023?",
        "What did Gina say about the store on 16 March, 2023?",
        "",
        "!!!",
    ]


def _summary(ranking: Ranking) -> tuple[Any, ...]:
    return (
        [(c.passage.key, c.lexical_score, c.sources) for c in ranking.candidates],
        [(h.entity, h.found_in, h.turn_ids) for h in ranking.hops],
        [(s.candidate.passage.key, s.score) for s in ranking.scored],
    )


@pytest.mark.parametrize(
    "retrieval",
    [{}, {"prf_docs": 0}, {"bm25_candidates": 0, "max_candidates": 12}],
    ids=["default", "no-feedback", "few-candidates"],
)
async def test_a_streamed_scope_retrieves_exactly_what_the_cached_scope_does(store, retrieval):
    cached = RecallPipeline(store, _config(10_000, **retrieval), GivenModels())  # type: ignore[arg-type]
    streamed = RecallPipeline(store, _config(0, **retrieval), GivenModels())  # type: ignore[arg-type]
    assert not isinstance(await cached.corpora.scope_corpus(SCOPE), StreamedScope)
    assert isinstance(await streamed.corpora.scope_corpus(SCOPE), StreamedScope)
    hops = 0
    for question in _questions():
        expected = await cached.rank(question, SCOPE)
        got = await streamed.rank(question, SCOPE)
        assert _summary(got) == _summary(expected), question
        if got.analysis.has_content:  # a query with no content reads no scope
            assert any("retrieval.mode" in w for w in got.warnings)
        assert not any("retrieval.mode" in w for w in expected.warnings)
        hops += len(got.hops)
    assert hops > 0  # expansion was exercised


# Turns that the question-side signals need: a relation named once, misspellings both
# ways, and a thought sent as a burst of short messages seconds apart.
SIGNAL_SESSIONS = {
    "family": [
        ("Ana", "I booked a long weekend in Bled with my brother Anselm for the spring."),
        ("Ana", "Anselm moved to Graz last month, he loves the mountains."),
        ("Ana", "We tried the new restuarant by the harbour on Friday."),
        ("Ana", "The vegetable lasagne there was amazing, we should go back."),
    ],
    "texts": [
        ("Rui", "omg"),
        ("Rui", "just got the job"),
        ("Rui", "starting monday at the bakery on Elm street"),
        ("Ana", "congrats!! which shift?"),
        ("Rui", "early one, 5am"),
        ("Rui", "ugh"),
    ],
}
SIGNAL_QUESTIONS = [
    "Where does my brother live?",
    "Where is Anselm staying in the spring?",
    "Which restaurant by the harbour did we try?",
    "Whta did we eat at the harbour restaurnt?",
    "When does Rui start at the bakery?",
    "Which shift did Rui get at the new job?",
]


@pytest.fixture
async def signals_store(store):
    """`store` plus sessions for misspellings, relation names and bursts."""
    for session, said in SIGNAL_SESSIONS.items():
        turns = [
            TurnInput(
                text, speaker=who, timestamp=f"2023-06-0{1 + len(session) % 5}T10:00:{i * 7:02d}Z"
            )
            for i, (who, text) in enumerate(said)
        ]
        await store.remember("ns", session, turns)
    return store


@pytest.mark.parametrize("page", [7, 2000], ids=["small-pages", "one-page"])
async def test_a_streamed_scope_gets_every_signal_the_cached_scope_gets(
    signals_store, monkeypatch, page
):
    """Misspellings, the names a memory gives relations and burst matching: the same
    candidates, hops and ranking whether the scope is cached or streamed (in pages small
    enough that a burst spans two)."""
    import smartsearch_mcp.pipeline.gather as gather_module

    monkeypatch.setattr(gather_module, "SCAN_PAGE", page)
    signals = {"misspellings": True}
    passages = {"burst_seconds": 60}
    cached = RecallPipeline(
        signals_store, _config(10_000, **signals).with_overrides(passages=passages), GivenModels()
    )  # type: ignore[arg-type]
    streamed = RecallPipeline(
        signals_store, _config(0, **signals).with_overrides(passages=passages), GivenModels()
    )  # type: ignore[arg-type]
    assert isinstance(await streamed.corpora.scope_corpus(SCOPE), StreamedScope)
    hops = 0
    for question in SIGNAL_QUESTIONS + _questions():
        expected = await cached.rank(question, SCOPE)
        got = await streamed.rank(question, SCOPE)
        assert got.analysis.terms == expected.analysis.terms, question
        assert _summary(got) == _summary(expected), question
        hops += len(got.hops)
    assert hops > 0


async def test_a_streamed_scope_keeps_only_what_later_stages_can_use(store):
    config = _config(0, max_candidates=20)
    analysis = analyze_query("Why did Gina open her online clothing store?", None)
    scope_turns = await store.scope_turns(SCOPE)
    passages = [p for t in scope_turns for p in _split(t)]

    def pages() -> AsyncIterator[list[Turn]]:
        return store.scope_pages(SCOPE, 50)

    result = await _scan(pages, analysis, config, {scope_turns[3].id: 1.5}, 20)
    assert result.passages == len(passages)
    assert result.corpus.partial
    assert len(result.corpus.passages) < len(passages) // 4
    # Every kept passage is one of the scope's, in scope order; candidates are among them.
    keys = [p.key for p in passages]
    kept = [p.key for p in result.corpus.passages]
    assert kept == sorted(kept, key=keys.index)
    assert (scope_turns[3].id, 0) in kept  # BM25 found it: kept whatever its grep score
    assert len(result.chosen) <= 20 and set(result.chosen) <= set(range(len(kept)))
    assert set(result.timings_ms) == {"count", "score", "feedback", "select"}  # no expansion


async def test_turns_deleted_or_added_while_a_scope_is_read_are_skipped(store):
    config = _config(0)
    analysis = analyze_query("Gina clothing store", None)
    turns = await store.scope_turns(SCOPE)
    gina = next(t for t in turns if "clothing" in t.text.lower())
    reads = 0

    async def pages() -> AsyncIterator[list[Turn]]:
        nonlocal reads
        reads += 1
        if reads == 1:
            yield turns
            return
        # Later reads: Gina's turn is gone and a new one (unknown to the first read) exists.
        new = dataclasses.replace(gina, id=10_000, text="Gina's clothing store!")
        yield [t for t in turns if t.id != gina.id] + [new]

    result = await _scan(pages, analysis, config, None, 50)
    ids = {p.turn.id for p in result.corpus.passages}
    assert gina.id not in ids and 10_000 not in ids
    assert result.chosen and ids


def test_scope_cache_mb_must_not_be_negative():
    with pytest.raises(ConfigError, match="scope_cache_mb"):
        Config().with_overrides(retrieval={"scope_cache_mb": -1})


def _split(turn: Turn) -> list[Passage]:
    return split_into_passages(turn, 40, 8)


async def test_cached_scopes_together_stay_within_the_cache_budget(store, monkeypatch):
    import smartsearch_mcp.pipeline.corpus as corpus_module

    await store.remember("other", "s", [TurnInput("Gina opened a store.")])
    monkeypatch.setattr(corpus_module, "estimated_corpus_mb", lambda turns, chars: 0.6)
    pipeline = RecallPipeline(store, _config(1), GivenModels())  # type: ignore[arg-type]
    first = await pipeline.corpora.scope_corpus(SCOPE)
    assert await pipeline.corpora.scope_corpus(SCOPE) is first  # cached
    await pipeline.corpora.scope_corpus(Scope(("other",)))  # 0.6 + 0.6 MB > 1 MB: SCOPE goes
    again = await pipeline.corpora.scope_corpus(SCOPE)
    assert again is not first and not isinstance(again, StreamedScope)


async def _scan(
    pages: Pages,
    analysis: QueryAnalysis,
    config: Config,
    bm25_by_turn: dict[int, float] | None,
    total_candidates: int,
) -> ScanResult:
    """`scan_scope` without expansion, passages split as by `_config`."""
    return await scan_scope(
        pages,
        _split,
        analysis,
        config.retrieval,
        config.expansion,
        bm25_by_turn=bm25_by_turn,
        total_candidates=total_candidates,
        rrf_k=60,
        find_mentions=None,
    )
