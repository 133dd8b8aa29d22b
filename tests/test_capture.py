"""Capture hooks: recorded payloads on stdin, end to end into a temporary database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from smartsearch_mcp.capture import (
    HookEvent,
    capture_event,
    capture_into_database,
    parse_event,
    plan_new_turns,
)
from smartsearch_mcp.config import StoreConfig
from smartsearch_mcp.namespaces import project_namespace
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import InputError, Turn, TurnInput

ROOT = Path(__file__).parents[1]
TRANSCRIPT = Path(__file__).parent / "fixtures" / "claude_code" / "session.jsonl"
SESSION = "7f3c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
PROMPT = "The login page redirects to /undefined after sign-in. Can you find why?"
HEAVY = ("torch", "sentence_transformers", "spacy", "transformers", "pylate")


def _payload(event: str, transcript: Path, cwd: Path, **extra: object) -> str:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": str(transcript),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": event,
            **extra,
        }
    )


def _recorded_now() -> list[str]:
    """The fixture's lines with their timestamps moved so the prompt was typed a second ago,
    as when a hook runs live."""
    lines = TRANSCRIPT.read_text().splitlines()
    prompt_time = datetime(2025, 6, 2, 9, 15, 10, 500000, tzinfo=UTC)
    shift = datetime.now(UTC) - timedelta(seconds=1) - prompt_time
    moved = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            moved.append(line)
            continue
        if "timestamp" in record:
            when = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")) + shift
            millis = when.microsecond // 1000
            record["timestamp"] = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis:03d}Z"
        moved.append(json.dumps(record))
    return moved


def _run_hook(env: dict[str, str], *argv: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "smartsearch_mcp", "hook", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


async def _stored(db: Path) -> list[Turn]:
    store = await SQLiteStore.open(db)
    try:
        return [turn async for turn in store.iter_turns()]
    finally:
        await store.close()


@pytest.fixture
def hook_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(ROOT),
        SMARTSEARCH_DB=str(tmp_path / "data" / "memory.db"),
        HF_HUB_OFFLINE="1",
    )
    env.pop("SMARTSEARCH_NAMESPACE", None)
    env.pop("SMARTSEARCH_CONFIG", None)
    return env


@pytest.mark.slow
def test_prompt_then_stop_hooks_store_the_exchange_once_in_the_project_namespace(
    tmp_path: Path, hook_env: dict[str, str]
):
    project = tmp_path / "webapp"
    (project / ".git").mkdir(parents=True)
    transcript = tmp_path / "t.jsonl"
    # When UserPromptSubmit fires, the transcript does not hold the prompt yet.
    lines = _recorded_now()
    transcript.write_text("\n".join(lines[:3]) + "\n")
    prompt = _payload("UserPromptSubmit", transcript, project / "src", prompt=PROMPT)
    first = _run_hook(hook_env, "claude-code", "user-prompt", stdin=prompt)
    assert first.returncode == 0 and first.stdout == "", first.stderr
    transcript.write_text("\n".join(lines))
    stop = _payload("Stop", transcript, project, stop_hook_active=False)
    for _ in range(2):  # re-running a hook stores nothing new
        assert _run_hook(hook_env, "claude-code", "stop", stdin=stop).returncode == 0
        assert _run_hook(hook_env, "claude-code", "user-prompt", stdin=prompt).returncode == 0
    assert _run_hook(hook_env, "claude-code", "pre-compact", stdin=stop).returncode == 0

    turns = anyio.run(_stored, Path(hook_env["SMARTSEARCH_DB"]))
    assert [(t.role, t.text[:20]) for t in turns] == [
        ("user", PROMPT[:20]),
        ("assistant", "Let me look at the a"),
        ("assistant", "Found it: `params.ge"),
    ]
    assert {t.namespace for t in turns} == {project_namespace(project)}
    assert {t.session_id for t in turns} == {f"claude-code:{SESSION}"}
    line = json.loads(lines[5])
    assert turns[1].timestamp == line["timestamp"][:19] + "Z"  # the transcript's own time
    log = Path(hook_env["SMARTSEARCH_DB"]).parent / "hooks.log"
    assert "stored 1 turn in" in log.read_text()  # one turn, not "1 turns"


@pytest.mark.slow
def test_a_broken_payload_never_fails_the_hook_and_is_logged(
    tmp_path: Path, hook_env: dict[str, str]
):
    result = _run_hook(hook_env, "claude-code", "stop", stdin="{not json")
    assert result.returncode == 0 and result.stdout == ""
    log = Path(hook_env["SMARTSEARCH_DB"]).parent / "hooks.log"
    assert "hook claude-code stop failed" in log.read_text()
    assert "not JSON" in log.read_text()


@pytest.mark.slow
def test_the_hook_path_loads_no_model_libraries(tmp_path: Path, hook_env: dict[str, str]):
    transcript = tmp_path / "t.jsonl"
    shutil.copy(TRANSCRIPT, transcript)
    probe = (
        "import sys\n"
        "from smartsearch_mcp.cli import main\n"
        "code = main(['hook', 'claude-code', 'stop'])\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert code == 0 and not heavy, heavy\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        input=_payload("Stop", transcript, tmp_path),
        capture_output=True,
        text=True,
        env=hook_env,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert len(anyio.run(_stored, Path(hook_env["SMARTSEARCH_DB"]))) == 3


def test_capturing_into_a_database_stores_a_prompt_once_with_the_configs_redaction(
    tmp_path: Path,
):
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 4
    raw = json.dumps({"session_id": "c1", "turn_id": "t-1", "prompt": f"use {key}"})
    event = parse_event("codex", "user-prompt", raw)
    db = str(tmp_path / "m.db")

    async def run() -> tuple[int, int, list[Turn]]:
        first = await capture_into_database(db, StoreConfig(), event, "ns")
        again = await capture_into_database(db, StoreConfig(), event, "ns")
        store = await SQLiteStore.open(db)
        try:
            return first, again, [turn async for turn in store.iter_turns("ns")]
        finally:
            await store.close()

    first, again, turns = anyio.run(run)
    assert (first, again) == (1, 0)
    assert len(turns) == 1 and key not in turns[0].text and "[REDACTED:" in turns[0].text


def test_codex_prompt_and_reply_are_keyed_by_turn_id(tmp_path: Path):
    def event(kind: str, **extra: str) -> HookEvent:
        raw = json.dumps({"session_id": "c1", "turn_id": "t-9", "cwd": str(tmp_path), **extra})
        return parse_event("codex", kind, raw)

    async def run() -> list[Turn]:
        store = await SQLiteStore.open(tmp_path / "m.db")
        try:
            for now in (datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 2, tzinfo=UTC)):
                await capture_event(store, event("user-prompt", prompt="hi"), "ns", now)
                reply = event("stop", last_assistant_message="hello")
                await capture_event(store, reply, "ns", now)
            return await store.session_turns("ns", "codex:c1")
        finally:
            await store.close()

    turns = anyio.run(run)
    assert [(t.role, t.text, t.metadata["capture_key"]) for t in turns] == [
        ("user", "hi", "turn:t-9:user"),
        ("assistant", "hello", "turn:t-9:assistant"),
    ]


def test_unknown_hooks_and_payloads_without_a_session_are_rejected():
    with pytest.raises(InputError, match="unknown hook codex pre-compact"):
        parse_event("codex", "pre-compact", "{}")
    with pytest.raises(InputError, match="no session_id"):
        parse_event("claude-code", "stop", json.dumps({"cwd": "/x"}))


NOW = datetime(2025, 6, 2, 9, 15, 11, tzinfo=UTC)


def _stored_turn(role: str, text: str, when: datetime, **metadata: str) -> Turn:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return Turn(1, "ns", "s", 0, role, role, text, stamp, stamp, stamp, metadata)


def _input(role: str, text: str, when: datetime, **metadata: str) -> TurnInput:
    return TurnInput(text, role, role, when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), metadata)


def test_a_prompt_stored_from_the_payload_is_recognised_in_the_transcript_later():
    pending = _stored_turn("user", "fix it", NOW, capture="hook-payload")
    line = _input("user", "fix it", NOW - timedelta(seconds=1), capture_key="u-1")
    reply = _input("assistant", "done", NOW + timedelta(seconds=9), capture_key="a-1")
    assert plan_new_turns([pending], [line, reply], []) == [reply]


def test_the_same_prompt_typed_again_later_is_kept():
    earlier = _stored_turn("user", "continue", NOW, capture_key="u-1")
    again = _input("user", "continue", NOW + timedelta(hours=1), capture="hook-payload")
    assert plan_new_turns([earlier], [], [again]) == [again]
    rerun = _input("user", "continue", NOW + timedelta(minutes=2), capture="hook-payload")
    assert plan_new_turns([earlier], [], [rerun]) == []


CHAT = [
    ("My sister Priya runs a bakery in Leeds.", "A bakery in Leeds sounds lovely."),
    ("Priya bakes sourdough every weekend.", "Sourdough takes patience."),
    ("On weekends I mostly go climbing.", "Climbing is a great way to unwind."),
    ("What should I get Priya for her birthday?", "A good bread knife, perhaps?"),
]


async def _ranked_ids(turns: list[TurnInput], tmp_path: Path, speaker_features: bool) -> list:
    from smartsearch_mcp.config import Config
    from smartsearch_mcp.memory import Memory
    from smartsearch_mcp.types import Scope

    config = Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False, "speaker_bonus": 1.0 if speaker_features else 0.0},
        rank={"scorers": ["lexical", "speaker"] if speaker_features else ["lexical"]},
        truncation={"tokenizer": "estimate"},
    )
    memory = await Memory.open(config, tmp_path / f"m-{speaker_features}-{turns[0].speaker}.db")
    try:
        await memory.store.remember("ns", "s1", turns)
        ranking = await memory.pipeline.rank("What does Priya do on weekends?", Scope(("ns",)))
        return [(s.candidate.passage.turn.id, s.candidate.passage.start) for s in ranking.scored]
    finally:
        await memory.close()


@pytest.mark.anyio
async def test_captured_turns_have_roles_as_speakers_so_the_speaker_features_change_nothing(
    tmp_path: Path,
):
    """What the README says of the speaker-aware features: the hooks store speaker = role
    ("user", "assistant"), so a question naming a person ("Priya") ranks the same with the
    speaker bonus and ranker as without them; with named speakers (LoCoMo's shape) they
    change the order."""
    from smartsearch_mcp.capture import event_turns
    from smartsearch_mcp.pipeline.analyze import analyze_query
    from smartsearch_mcp.pipeline.retrieve import dense_query, said_by_named, speaker_names
    from smartsearch_mcp.types import Passage

    captured: list[TurnInput] = []
    for number, (prompt, reply) in enumerate(CHAT):
        for kind, text in (("user-prompt", prompt), ("stop", reply)):
            event = HookEvent("codex", kind, "s", None, None, text, text, f"t{number}")
            captured += event_turns(event, datetime(2024, 5, 1, tzinfo=UTC))[1]
    assert {t.speaker for t in captured} == {"user", "assistant"}
    question = "What does Priya do on weekends?"
    speakers = speaker_names(t.speaker for t in captured)
    assert dense_query(question, speakers) == question  # no speaker's name to drop
    passages = [Passage(_stored_turn(t.role or "", t.text, NOW), 0, len(t.text)) for t in captured]
    analysis = analyze_query(question, None)
    assert "priya" in {t.term for t in analysis.terms if t.kind in ("entity", "proper")}
    assert said_by_named(passages, analysis) == [0.0] * len(passages)  # no turn said by Priya

    with_features = await _ranked_ids(captured, tmp_path, speaker_features=True)
    assert with_features == await _ranked_ids(captured, tmp_path, speaker_features=False)

    named = [
        TurnInput(t.text, "Priya" if i in (5, 6) else t.speaker, t.role, t.timestamp)
        for i, t in enumerate(captured)
    ]  # the two middle turns said by Priya herself, as in a LoCoMo conversation
    assert await _ranked_ids(named, tmp_path, True) != await _ranked_ids(named, tmp_path, False)


def test_a_session_outside_any_git_repository_is_captured_in_the_default_namespace(
    tmp_path: Path, hook_env: dict[str, str]
):
    folder = tmp_path / "notes"  # a plain folder: no project, the namespace rule's default
    folder.mkdir()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(_recorded_now()) + "\n")
    stop = _payload("Stop", transcript, folder, stop_hook_active=False)
    assert _run_hook(hook_env, "claude-code", "stop", stdin=stop).returncode == 0
    turns = anyio.run(_stored, Path(hook_env["SMARTSEARCH_DB"]))
    assert turns and {t.namespace for t in turns} == {"default"}
