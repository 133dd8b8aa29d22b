"""The store contract (smartsearch_mcp/store/base.py), one suite for both backends: every test
runs on SQLite (a file on tmp_path) and on PostgreSQL (a database of its own; skipped, saying
why, when no server can be had — see tests/postgres_server.py)."""

from __future__ import annotations

import itertools

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp.store import Store, open_store, reads
from smartsearch_mcp.store.queries import fts_any
from smartsearch_mcp.types import InputError, NotFoundError, Scope, TurnInput

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(database: str):
    s = await open_store(database)
    yield s
    await s.close()


async def test_remember_returns_ids_in_input_order_and_stores_text_verbatim(store):
    texts = ["  leading space", "emoji 🎉 and RTL שלום", "tabs\tand\nnewlines", "quote ' \\ %s ?"]
    result = await store.remember("ns", "s1", [TurnInput(t, speaker="Ann") for t in texts])
    turns = await store.get_turns(result.ids)
    assert [t.text for t in turns] == texts
    assert [t.position for t in turns] == [0, 1, 2, 3]
    assert result.ids == sorted(result.ids)
    assert result.stored == 4 and result.duplicates_skipped == 0


async def test_turns_read_together_share_their_repeated_values_and_no_metadata(store):
    inputs = [TurnInput(f"turn {i}", speaker="Ann", timestamp="2024-05-01") for i in range(3)]
    inputs.append(TurnInput("tagged", speaker="Bob", metadata={"tag": "x"}))
    await store.remember("ns", "s1", inputs)

    turns = await store.scope_turns(Scope(namespaces=("ns",)))

    first, second = turns[0], turns[1]
    assert first.session_id is second.session_id and first.speaker is second.speaker
    assert first.timestamp is second.timestamp and first.created_at is second.created_at
    assert first.metadata == {} and first.metadata is second.metadata
    with pytest.raises(TypeError, match="read-only"):
        first.metadata["key"] = "value"  # shared: a change would reach every turn
    assert second.metadata == {} and turns[3].metadata == {"tag": "x"}


async def test_duplicate_turns_are_skipped_counted_and_mapped_to_the_stored_id(store):
    first = await store.remember("ns", "s1", [TurnInput("hi", "A", timestamp="2024-01-01")])
    again = await store.remember(
        "ns", "s1", [TurnInput("hi", "A", timestamp="2024-01-01"), TurnInput("new", "A")]
    )
    assert again.duplicates_skipped == 1 and again.stored == 1
    assert again.ids[0] == first.ids[0]
    # Same text in another session, or by another speaker, is not a duplicate.
    other = await store.remember("ns", "s2", [TurnInput("hi", "A", timestamp="2024-01-01")])
    assert other.stored == 1


async def test_a_turn_resent_later_without_a_timestamp_is_a_duplicate(store, monkeypatch):
    from smartsearch_mcp.store import turns as module

    first = await store.remember("ns", "s1", [TurnInput("retry me", "A")])
    monkeypatch.setattr(module, "now", lambda: "2031-01-01T00:00:00Z")  # a later call
    again = await store.remember("ns", "s1", [TurnInput("retry me", "A")])
    assert again.ids == first.ids and again.duplicates_skipped == 1
    assert (await store.stats()).turns == 1


async def test_timestamps_are_normalized_and_the_original_kept(store):
    result = await store.remember(
        "ns",
        "s1",
        [
            TurnInput("a", timestamp="1:56 pm on 8 May, 2023"),
            TurnInput("b", timestamp="2023/05/20 (Sat) 02:21"),
            TurnInput("c", timestamp="2024-03-15T10:00:00+02:00"),
            TurnInput("d", timestamp=1700000000),
        ],
    )
    turns = await store.get_turns(result.ids)
    # One form, UTC with "Z": a time given without an offset is taken as UTC.
    assert [t.timestamp for t in turns] == [
        "2023-05-08T13:56:00Z",
        "2023-05-20T02:21:00Z",
        "2024-03-15T08:00:00Z",
        "2023-11-14T22:13:20Z",
    ]
    assert turns[0].timestamp_raw == "1:56 pm on 8 May, 2023"


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (TurnInput(""), "non-empty"),
        (TurnInput("x", role="robot"), "role"),
        (TurnInput("x", timestamp="not a date"), "timestamp"),
        (TurnInput("x", timestamp="99999-01-01"), "timestamp"),
        (TurnInput("bad \ud800 surrogate"), "surrogate"),
        (TurnInput("x", metadata=["not", "an", "object"]), "metadata"),  # type: ignore[arg-type]
    ],
)
async def test_bad_turns_raise_a_clear_error_and_store_nothing(store, turn, message):
    with pytest.raises(InputError, match=message):
        await store.remember("ns", "s1", [TurnInput("good one"), turn])
    assert (await store.stats()).turns == 0


async def test_ten_thousand_turns_are_stored_in_one_call(store):
    result = await store.remember("ns", None, [TurnInput(f"turn {i}") for i in range(10_000)])
    assert result.stored == 10_000 and len(set(result.ids)) == 10_000
    sessions = await store.list_sessions("ns")
    assert sessions[0].turn_count == 10_000


async def test_sessions_track_first_and_last_timestamp_and_count(store):
    await store.remember(
        "ns", "s1", [TurnInput("a", timestamp="2023-05-08"), TurnInput("b", timestamp="2023-05-01")]
    )
    (info,) = await store.list_sessions("ns")
    assert (info.first_timestamp, info.last_timestamp, info.turn_count) == (
        "2023-05-01T00:00:00Z",
        "2023-05-08T00:00:00Z",
        2,
    )


async def test_a_session_is_read_a_page_at_a_time_with_its_speakers(store):
    turns = [TurnInput(f"turn {i}", "Ann" if i % 3 else "Bo") for i in range(7)]
    await store.remember("ns", "s1", turns)
    await store.remember("ns", "s2", [TurnInput("alone", role="assistant")])
    await store.remember("other", "s1", [TurnInput("elsewhere", "Eve")])
    first = await store.session_page("ns", "s1", 3)
    rest = await store.session_page("ns", "s1", 10, offset=3)
    assert [t.text for t in first + rest] == [f"turn {i}" for i in range(7)]
    assert await store.session_page("ns", "s1", 3, offset=7) == []
    speakers = await store.session_speakers("ns", ["s1", "s2", "missing"])
    assert speakers == {"s1": ["Ann", "Bo"], "s2": ["assistant"]}


async def test_forget_by_ids_session_and_namespace(store):
    a = await store.remember("ns", "s1", [TurnInput("one"), TurnInput("two")])
    await store.remember("ns", "s2", [TurnInput("three")])
    await store.remember("other", "s1", [TurnInput("kept")])
    gone = await store.forget("ns", ids=[a.ids[0]])
    assert gone.deleted_turn_ids == [a.ids[0]]
    gone = await store.forget("ns", session_id="s1")
    assert gone.deleted_turn_ids == [a.ids[1]] and gone.deleted_sessions == ["s1"]
    await store.forget("ns", whole_namespace=True)
    stats = await store.stats()
    assert stats.namespaces == {"other": 1}
    assert await store.search_fts(fts_any(["one", "two", "three"]), Scope(("ns",)), 10) == []


async def test_forget_unknown_ids_deletes_nothing(store):
    a = await store.remember("ns", "s1", [TurnInput("one")])
    with pytest.raises(NotFoundError, match="999"):
        await store.forget("ns", ids=[a.ids[0], 999])
    assert (await store.stats()).turns == 1


@pytest.mark.parametrize("bad", [0, -1, 2**63, True, "1"])
async def test_ids_outside_64_bit_integers_are_a_clear_error(store, bad):
    a = await store.remember("ns", "s1", [TurnInput("one")])
    with pytest.raises(InputError, match="turn ids are integers from 1 to"):
        await store.forget("ns", ids=[a.ids[0], bad])
    with pytest.raises(InputError, match="turn ids are integers from 1 to"):
        await store.get_turns([bad])
    assert (await store.stats()).turns == 1
    assert await store.get_turns([2**63 - 1]) == []


async def test_fts_index_stays_in_step_with_turns(store):
    await store.remember(
        "ns", "s1", [TurnInput("Margaret went hiking"), TurnInput("Tobias paints")]
    )
    hits = await store.search_fts(fts_any(["hiking"]), Scope(("ns",)), 10)
    assert len(hits) == 1
    assert await store.integrity_check() == []


async def test_fts_search_is_exact_for_a_small_scope_inside_a_large_memory(store):
    # The index's best rows all belong to another namespace: the scoped search must still
    # return the scope's own best matches, best first.
    await store.remember("big", "s", [TurnInput(f"apple {i}") for i in range(40)])
    small = await store.remember(
        "small",
        "s",
        [
            TurnInput("an apple " + "filler " * 5),
            TurnInput("apple apple " + "filler " * 40),
            TurnInput("an apple " + "filler " * 80),
        ],
    )
    hits = await store.search_fts(fts_any(["apple"]), Scope(("small",)), 2)
    assert [turn_id for turn_id, _ in hits] == small.ids[:2]
    assert hits[0][1] >= hits[1][1]
    everything = await store.search_fts(fts_any(["apple"]), Scope(("big", "small")), 100)
    assert len(everything) == 43


async def test_fts_doc_counts_and_turn_count_estimate(store):
    assert await store.turn_count_estimate() == 0
    await store.remember("a", "s", [TurnInput("red fox"), TurnInput("red hen")])
    await store.remember("b", "s", [TurnInput("blue fox")])
    counts = await store.fts_doc_counts(['"red"', '"fox"', '"owl"'])
    assert counts == {'"red"': 2, '"fox"': 2, '"owl"': 0}
    # Counting may stop past `at_most`: counts up to it are exact, larger ones stay larger.
    capped = await store.fts_doc_counts(['"red"', '"blue"', '"owl"'], at_most=1)
    assert capped['"red"'] > 1 and capped['"blue"'] == 1 and capped['"owl"'] == 0
    assert await store.turn_count_estimate() >= 3


async def test_scope_filters_by_session_and_dates(store):
    await store.remember("ns", "s1", [TurnInput("old", timestamp="2020-01-01")])
    await store.remember("ns", "s2", [TurnInput("new", timestamp="2024-01-01")])
    from datetime import datetime

    recent = await store.scope_turns(Scope(("ns",), since=datetime(2023, 1, 1)))
    assert [t.text for t in recent] == ["new"]
    only_s1 = await store.scope_turns(Scope(("ns",), session_id="s1"))
    assert [t.text for t in only_s1] == ["old"]


async def test_concurrent_writes_in_one_process_commit_each_their_own_turns(store):
    # Tasks of one process (e.g. several HTTP sessions) share the writer connection: each
    # transaction must run alone, and a failing one must not roll back another's turns.
    acknowledged: dict[str, int] = {}
    failures: list[str] = []

    async def writer(n: int) -> None:
        for batch in range(3):
            texts = [f"task {n} batch {batch} turn {i}" for i in range(10)]
            result = await store.remember("ns", f"s{n}", [TurnInput(t) for t in texts])
            acknowledged.update(zip(texts, result.ids, strict=True))
            try:
                await store.forget("ns", ids=[10**9 + n])
            except NotFoundError as exc:
                failures.append(str(exc))

    async with anyio.create_task_group() as group:
        for n in range(12):
            group.start_soon(writer, n)
    assert len(failures) == 36
    stored = {t.text: t.id async for t in store.iter_turns()}
    assert stored == acknowledged and len(stored) == 360
    assert await store.integrity_check() == []


async def test_embeddings_are_cached_and_dropped_with_their_turn(store):
    r = await store.remember("ns", "s1", [TurnInput("a"), TurnInput("b")])
    await store.put_embeddings("m", [(r.ids[0], 0, b"\x01\x02"), (999, 0, b"x")])
    assert await store.get_embeddings("m", [(r.ids[0], 0), (r.ids[1], 0)]) == {
        (r.ids[0], 0): b"\x01\x02"
    }
    assert [t.id for t in await store.turns_without_embeddings("m", 10)] == [r.ids[1]]
    await store.forget("ns", ids=[r.ids[0]])
    assert await store.get_embeddings("m", [(r.ids[0], 0)]) == {}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
        min_size=1,
        max_size=200,
    )
)
async def test_any_text_is_a_safe_fts_query_that_finds_the_turn_it_came_from(store, text):
    """Any user text is safe as a query (no FTS5 syntax error) and finds nothing but the
    turn that says it — that turn, when a plain (ASCII) word of it is asked for."""
    namespace = f"fts-{next(_EXAMPLES)}"  # a namespace of its own per example
    ids = (await store.remember(namespace, None, [TurnInput(text)])).ids if text.strip() else []
    match = fts_any(text.split() or [text])
    found = [turn_id for turn_id, _ in await store.search_fts(match, Scope((namespace,)), 5)]
    assert set(found) <= set(ids)
    if any(word.isascii() and word.isalnum() for word in text.split()):
        assert found == ids


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(
        # NUL aside: PostgreSQL cannot store it (test_store.py: SQLite keeps it verbatim).
        st.text(
            st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), min_size=1
        ).filter(str.strip),
        min_size=1,
        max_size=5,
    ),
    speaker=st.none() | st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=20),
)
async def test_whatever_is_remembered_reads_back_verbatim(store, texts, speaker):
    result = await store.remember("prop", None, [TurnInput(t, speaker=speaker) for t in texts])
    turns = await store.get_turns(result.ids)
    stored_texts = {t.id: t.text for t in turns}
    assert [stored_texts[i] for i in result.ids] == texts


async def test_previous_turns_are_the_ones_said_just_before_in_the_same_session(store):
    a = await store.remember("ns", "s1", [TurnInput("q1"), TurnInput("a1"), TurnInput("q2")])
    b = await store.remember("ns", "s2", [TurnInput("other")])
    previous = await store.previous_turns([*a.ids, *b.ids])
    assert {k: v.text for k, v in previous.items()} == {a.ids[1]: "q1", a.ids[2]: "a1"}


async def test_forgetting_a_turn_drops_the_context_vector_of_the_turn_after_it(store):
    r = await store.remember("ns", "s1", [TurnInput("secret"), TurnInput("reply")])
    await store.put_embeddings("m#context", [(r.ids[1], 0, b"ctx")])
    await store.put_embeddings("m", [(r.ids[1], 0, b"own")])
    await store.forget("ns", ids=[r.ids[0]])
    assert await store.get_embeddings("m#context", [(r.ids[1], 0)]) == {}
    assert await store.get_embeddings("m", [(r.ids[1], 0)]) == {(r.ids[1], 0): b"own"}


async def test_scope_pages_read_a_scope_in_id_order_up_to_a_turn(store):
    first = await store.remember("ns", "a", [TurnInput(f"a{i}") for i in range(5)])
    await store.remember("other", "b", [TurnInput(f"b{i}") for i in range(3)])
    second = await store.remember("ns", "c", [TurnInput(f"c{i}") for i in range(4)])
    scope = Scope(("ns",))

    pages = [[t.id for t in page] async for page in store.scope_pages(scope, batch=4)]
    assert [len(p) for p in pages] == [4, 4, 1]
    assert [i for page in pages for i in page] == [t.id for t in await store.scope_turns(scope)]

    upto = [t.id async for page in store.scope_pages(scope, 4, first.ids[-1]) for t in page]
    assert upto == first.ids
    assert second.ids[0] not in upto


async def test_scope_size_counts_turns_and_characters_exactly_or_by_sampling(store, monkeypatch):
    texts = [("x" * (i % 7 + 1)) + f" {i}" for i in range(300)]
    result = await store.remember("ns", "s", [TurnInput(t) for t in texts])
    await store.remember("other", "s", [TurnInput("y" * 1000)])
    chars = sum(len(t) for t in texts)
    assert await store.scope_size(Scope(("ns",))) == (300, chars, result.ids[-1])

    monkeypatch.setattr(reads, "SIZE_EXACT_TURNS", 10)
    turns, estimate, last = await store.scope_size(Scope(("ns",)))
    assert (turns, last) == (300, result.ids[-1])
    assert abs(estimate - chars) < 0.1 * chars  # never counting the other namespace's text
    assert await store.scope_size(Scope(("empty",))) == (0, 0, 0)


async def test_the_scope_fingerprint_changes_exactly_when_a_turn_enters_or_leaves(store):
    scope = Scope(("ns",))
    empty = await store.scope_fingerprint(scope)
    first = await store.remember("ns", "s", [TurnInput("one"), TurnInput("two")])
    after_add = await store.scope_fingerprint(scope)
    assert empty == (0, 0) and after_add == (2, first.ids[-1])

    await store.remember("other", "s", [TurnInput("three")])
    await store.put_embeddings("m:1", [(first.ids[0], 0, b"\0\0\0\0")])
    assert await store.scope_fingerprint(scope) == after_add

    await store.forget("ns", ids=[first.ids[-1]])
    replaced = await store.remember("ns", "s", [TurnInput("four")])
    # one turn left and one came: same count, but a new id is never an old one
    assert await store.scope_fingerprint(scope) == (2, replaced.ids[0])
    assert replaced.ids[0] > first.ids[-1]


async def test_the_turns_a_scope_gained_after_an_id_are_read_in_id_order(store):
    scope = Scope(("ns",))
    first = await store.remember("ns", "s", [TurnInput("one"), TurnInput("two")])
    await store.remember("other", "s", [TurnInput("elsewhere")])
    later = await store.remember("ns", "t", [TurnInput("three"), TurnInput("four")])
    after = await store.scope_turns_after(scope, first.ids[-1], later.ids[0])
    assert [t.text for t in after] == ["three"]  # not the other namespace's, not past the last
    after = await store.scope_turns_after(scope, first.ids[0], later.ids[-1])
    assert [t.text for t in after] == ["two", "three", "four"]
    assert await store.scope_turns_after(scope, later.ids[-1], later.ids[-1] + 5) == []


async def test_forget_takes_any_number_of_ids(store):
    stored = await store.remember("ns", "s", [TurnInput(f"turn {i}") for i in range(1200)])
    with pytest.raises(NotFoundError, match=r"\(300000 in all\).*nothing was deleted"):
        await store.forget("ns", ids=list(range(10**9, 10**9 + 300_000)))
    assert (await store.stats()).turns == 1200
    done = await store.forget("ns", ids=stored.ids)
    assert len(done.deleted_turn_ids) == 1200 and (await store.stats()).turns == 0


_EXAMPLES = itertools.count()


async def test_a_second_store_on_the_same_database_sees_the_first_ones_writes_and_deletes(
    database,
):
    """Two stores (two processes, or two machines on PostgreSQL) on one database: what one
    writes or deletes changes the other's data_version and scope fingerprint, so caches
    keyed on them are read again."""
    first = await open_store(database)
    second = await open_store(database)
    try:
        scope = Scope(("team",))
        version = await second.data_version()
        stored = await first.remember("team", "s", [TurnInput("the deploy key rotates")])
        assert await second.data_version() != version
        assert await second.scope_fingerprint(scope) == (1, stored.ids[0])
        assert [t.text for t in await second.scope_turns(scope)] == ["the deploy key rotates"]
        hits = await second.search_fts(fts_any(["deploy"]), scope, 10)
        assert [i for i, _ in hits] == stored.ids

        version = await second.data_version()
        await first.forget("team", ids=stored.ids)
        assert await second.data_version() != version
        assert await second.scope_fingerprint(scope) == (0, 0)
        assert await second.search_fts(fts_any(["deploy"]), scope, 10) == []
    finally:
        await first.close()
        await second.close()


async def test_two_stores_writing_one_session_at_once_store_each_turn_once(database):
    """Writers on two stores (two pools) at once: every acknowledged turn stored exactly
    once, positions in order, no error."""
    stores = [await open_store(database) for _ in range(2)]
    acknowledged: dict[str, int] = {}
    try:

        async def writer(n: int) -> None:
            for batch in range(5):
                texts = [f"writer {n} batch {batch} turn {i}" for i in range(20)]
                result = await stores[n % 2].remember("ns", "shared", [TurnInput(t) for t in texts])
                acknowledged.update(zip(texts, result.ids, strict=True))

        async with anyio.create_task_group() as group:
            for n in range(6):
                group.start_soon(writer, n)
        turns = await stores[0].session_turns("ns", "shared")
        assert {t.text: t.id for t in turns} == acknowledged and len(turns) == 600
        assert [t.position for t in turns] == list(range(600))
        assert [t.id for t in turns] == sorted(t.id for t in turns)
    finally:
        for s in stores:
            await s.close()


async def test_a_grep_prefilter_finds_every_turn_containing_the_text_ignoring_case(store):
    texts = ["Deploy at NOON", "the deployment", "nothing here", "100% sure_thing", "KELVIN \u212a"]
    await store.remember("ns", "s", [TurnInput(t) for t in texts])
    scope = Scope(("ns",))

    async def containing(text: str) -> list[str]:
        return sorted([t.text async for t in store.iter_scope_turns(scope, contains=text)])

    assert await containing("deploy") == ["Deploy at NOON", "the deployment"]
    assert await containing("0% s") == ["100% sure_thing"]
    assert await containing("e_t") == ["100% sure_thing"]  # _ and % are no wildcards
    assert await containing("kelvin k") == ["KELVIN \u212a"]  # the Kelvin sign folds to k
    assert await containing("absent") == []


async def test_timeline_and_sessions_sort_as_sqlite_does(store):
    await store.remember("ns", "b", [TurnInput("undated")])
    await store.remember("ns", "a", [TurnInput("old", timestamp="2020-01-01")])
    await store.remember("ns", "c", [TurnInput("new", timestamp="2024-01-01")])
    scope = Scope(("ns",))
    # a turn given without a time is stamped when stored (now): the latest
    assert [t.text for t in await store.timeline_turns(scope, 10)] == ["old", "new", "undated"]
    latest = await store.timeline_turns(scope, 2, latest=True)
    assert [t.text for t in latest] == ["new", "undated"]
    sessions = [s.id for s in await store.list_sessions("ns")]
    assert sorted(sessions) == ["a", "b", "c"]
    assert [t.text async for t in store.iter_turns("ns")] == ["undated", "old", "new"]


async def test_a_retried_call_without_a_session_gets_the_first_ones_session_and_ids(store):
    turns = [TurnInput("first try", "Ann"), TurnInput("and more", "Ann")]
    first = await store.remember("ns", None, turns)
    again = await store.remember("ns", None, turns)
    assert (again.session_id, again.ids, again.stored) == (first.session_id, first.ids, 0)


async def test_every_backend_satisfies_the_store_contract(store):
    checked: Store = store  # mypy checks the assignment; this checks the attributes
    assert isinstance(checked.path, str) and isinstance(checked.read_only, bool)
    assert await checked.schema_version() >= 1
