"""Baselines: BM25 over the store's FTS5 index, filling the budget greedily."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.bench.baselines import bm25_ranking, bm25_terms, fill_budget
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio


def test_fill_budget_takes_turns_in_order_and_skips_those_that_do_not_fit() -> None:
    tokens = {1: 40, 2: 70, 3: 30, 4: 20}

    filled = fill_budget([1, 2, 3, 4], tokens, 100)

    assert filled.turn_ids == [1, 3, 4]
    assert filled.tokens == 90


def test_fill_budget_never_exceeds_the_budget() -> None:
    assert fill_budget([1], {1: 101}, 100).turn_ids == []
    assert fill_budget([], {}, 100).tokens == 0


def test_bm25_terms_drop_stopwords_but_keep_something() -> None:
    assert bm25_terms("What did Caroline paint?") == ["caroline", "paint"]
    assert bm25_terms("what is it") != []


async def test_bm25_ranking_orders_matching_turns_by_score(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "m.db")
    try:
        result = await store.remember(
            "ns",
            "s1",
            [
                TurnInput("We talked about the weather."),
                TurnInput("Caroline painted a sunset; the sunset painting is lovely."),
                TurnInput("Melanie went to a concert."),
            ],
        )
        ranked = await bm25_ranking(store, "the sunset Caroline painted", Scope(("ns",)))
        assert ranked[0] == result.ids[1]
        assert result.ids[2] not in ranked
        assert await bm25_ranking(store, "???", Scope(("ns",))) == []
    finally:
        await store.close()


@given(
    costs=st.lists(st.integers(min_value=0, max_value=500), max_size=40),
    budget=st.integers(min_value=0, max_value=2000),
)
def test_fill_budget_never_exceeds_the_budget_and_keeps_ranked_order(
    costs: list[int], budget: int
) -> None:
    tokens = dict(enumerate(costs))

    filled = fill_budget(list(tokens), tokens, budget)

    assert filled.tokens == sum(tokens[i] for i in filled.turn_ids) <= budget
    assert filled.turn_ids == sorted(filled.turn_ids)
