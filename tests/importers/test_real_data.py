"""The full shared benchmark files load (skipped, saying why, when the shared data is not
found: see tests/shared_data.py; the importers' own tests run on slices in tests/fixtures)."""

from shared_data import shared_path as shared

from smartsearch_mcp.dates import parse_timestamp
from smartsearch_mcp.importers.beam import load_beam
from smartsearch_mcp.importers.locomo import load_locomo
from smartsearch_mcp.importers.longmemeval import load_longmemeval
from smartsearch_mcp.types import SessionInput


def assert_timestamps_parse(sessions: list[SessionInput]) -> None:
    for timestamp in {turn.timestamp for session in sessions for turn in session.turns}:
        assert timestamp is not None
        parse_timestamp(timestamp)


def test_real_locomo_conversations_load_with_every_evidence_entry_resolved() -> None:
    conversations = load_locomo(shared("locomo"))

    assert [c.sample_id for c in conversations] == ["26", "30", "41", "43", "44", "48", "49"]
    assert sum(len(c.questions) for c in conversations) == 1332
    assert all(not q.unresolved_evidence for c in conversations for q in c.questions)
    for conversation in conversations:
        locations = conversation.dia_locations()
        assert all(e in locations for q in conversation.questions for e in q.evidence)
        assert_timestamps_parse(conversation.sessions)


def test_real_beam_split_loads_with_gold_ids_that_name_chat_messages() -> None:
    conversations = load_beam(shared("beam-100k"))

    assert [c.conversation_id for c in conversations] == [str(n) for n in range(1, 21)]
    for conversation in conversations:
        message_ids = {
            turn.metadata["message_id"]
            for session in conversation.sessions
            for turn in session.turns
            if turn.metadata
        }
        assert len(conversation.questions) == 20
        assert all(set(q.gold_message_ids) <= message_ids for q in conversation.questions)
        assert_timestamps_parse(conversation.sessions)
        assert not any("->->" in t.text[-30:] for s in conversation.sessions for t in s.turns)


def test_real_longmemeval_record_loads_its_full_haystack() -> None:
    [record] = load_longmemeval(shared("longmemeval-sample/longmemeval_s_one_question.json"))

    assert len(record.sessions) == 53
    assert sum(len(s.turns) for s in record.sessions) == 550
    assert record.gold_turns == [("answer_280352e9", 4), ("answer_280352e9", 5)]
    assert_timestamps_parse(record.sessions)
    parse_timestamp(str(record.question_date))
