"""Memory that speaks up: the few past turns that matter, added to the agent's context at
each prompt by the prompt hook, without the agent asking.

After the hook has stored the prompt (capture.py), it recalls for the prompt — through the
running server's recall socket when one answers (warm models), else by its own recall with
`inject.fallback_config` (the lexical preset: no model to load) — and keeps a passage only
when the ranking is sure of it and it shares enough words with the prompt:

- its ranking confidence (rank.ranking_confidence, 0..1: how far above the scope's typical
  passage every ranker puts it) is at least `inject.min_confidence`;
- it shares at least `inject.min_shared_words` content words (stems, no stopwords) with the
  prompt: "write a haiku" or "rename this variable" shares nothing with a stored decision,
  however the ranking calibrates its best passage (confidence is relative: a memory's best
  match for any prompt is near 1, so one shared word — "tests" — is no evidence either);
- it is in the prompt's own namespace (never the global one or another project's) and not in
  the current session: the prompt's just-stored turn and the session's earlier turns are in
  the agent's context already (after a compaction the agent can still call `recall`).

The passages kept go under a one-line header, dated and with their turn ids, within
`inject.max_tokens` (header included). Nothing is printed when none clears the bar. The
recall runs in a thread the hook abandons after `inject.time_limit_s`: the agent is never
kept waiting for memory, and the hook still exits 0.

This module imports no model code; the recall itself is imported only when it runs.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from smartsearch_mcp.config import Config
from smartsearch_mcp.pipeline.words import content_stems
from smartsearch_mcp.tokens import TokenCounter

log = logging.getLogger(__name__)

T = TypeVar("T")
THREAD_NAME = "smartsearch-inject"
HEADER = (
    "Past turns from this project's memory (smartsearch), recalled for this prompt; "
    "dated, with turn ids; call `recall` for anything they do not cover:"
)
# memory.MAX_QUERY_CHARS, not imported from there: memory imports the model code, which the
# hook must not load when a server answers (a longer prompt is recalled by its beginning).
MAX_QUERY_CHARS = 10_000
HOOK_EVENT_NAMES = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit"}


@dataclass(frozen=True, slots=True)
class InjectedPassage:
    """One past turn as the hook injects it."""

    id: int
    session_id: str
    timestamp: str | None
    speaker: str
    text: str
    confidence: float
    shared_words: int


@dataclass(frozen=True, slots=True)
class Injection:
    """What the hook adds to the context: `text` ("" when nothing) and why."""

    text: str
    passages: list[InjectedPassage]
    tokens: int
    reason: str  # injected | not confident | nothing recalled | time limit | error | off
    source: str = ""  # server | local


def shared_words(prompt_stems: set[str], text: str) -> int:
    """How many of the prompt's content-word stems `text` holds."""
    return len(prompt_stems & content_stems(text)) if prompt_stems else 0


def confident_passages(
    recalled: dict[str, Any],
    prompt: str,
    namespace: str,
    current_session: str | None,
    min_confidence: float,
    min_shared_words: int,
) -> list[InjectedPassage]:
    """The passages of a recall's structured result (`RecallOutput` as JSON) that clear the
    bar, best first: in `namespace`, not in `current_session`, confident and sharing enough
    words with the prompt (see the module docstring)."""
    stems = content_stems(prompt)
    kept: list[InjectedPassage] = []
    for item in recalled.get("passages") or []:
        if not isinstance(item, dict) or item.get("namespace") != namespace:
            continue
        if current_session is not None and item.get("session_id") == current_session:
            continue
        text = str(item.get("text") or "")
        confidence = float(item.get("confidence") or 0.0)
        if confidence < min_confidence or not text.strip():
            continue
        shared = shared_words(stems, text)
        if shared < min_shared_words:
            continue
        kept.append(
            InjectedPassage(
                id=int(item["id"]),
                session_id=str(item.get("session_id") or ""),
                timestamp=item.get("timestamp"),
                speaker=str(item.get("speaker") or item.get("role") or "?"),
                text=text,
                confidence=confidence,
                shared_words=shared,
            )
        )
    return kept


def passage_line(passage: InjectedPassage) -> str:
    """`- [2026-10-26 19:05] Dana #12: text` — date and time, speaker, turn id, text."""
    when = (passage.timestamp or "undated").replace("T", " ")[:16]
    return f"- [{when}] {passage.speaker} #{passage.id}: {' '.join(passage.text.split())}"


def render_injection(
    passages: Sequence[InjectedPassage], counter: TokenCounter, max_tokens: int
) -> tuple[str, list[InjectedPassage]]:
    """The header and as many passages (best first) as fit `max_tokens` in all; a first
    passage too long alone is cut at a word. ("", []) when none fits."""
    lines = [HEADER]
    kept: list[InjectedPassage] = []
    for passage in passages:
        line = passage_line(passage)
        if counter.count("\n".join([*lines, line])) <= max_tokens:
            lines.append(line)
            kept.append(passage)
        elif not kept:
            words = line.split(" ")
            while len(words) > 1 and counter.count("\n".join([*lines, " ".join(words)])) > (
                max_tokens - 1
            ):
                words = words[: max(1, len(words) * 3 // 4)]
            shorter = " ".join(words) + " …"
            if len(words) > 5 and counter.count("\n".join([*lines, shorter])) <= max_tokens:
                lines.append(shorter)
                kept.append(passage)
    if not kept:
        return "", []
    return "\n".join(lines), kept


def hook_output(client: str, text: str) -> str:
    """The hook's stdout: the documented JSON form (`hookSpecificOutput.additionalContext`),
    which both Claude Code and Codex add to the model's context for UserPromptSubmit."""
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": HOOK_EVENT_NAMES[client],
                "additionalContext": text,
            }
        }
    )


def fallback_config(config: Config) -> Config:
    """The settings of the hook's own recall: `inject.fallback_config` with the user's
    store, scope, truncation and inject settings (the configuration itself when empty)."""
    name = config.inject.fallback_config
    if not name:
        return config
    loaded = Config.load(name)
    return dataclasses.replace(
        loaded,
        store=config.store,
        scope=config.scope,
        truncation=config.truncation,
        inject=config.inject,
    )


def recall_for_prompt(
    db: str | Path, config: Config, prompt: str, namespace: str, until: str
) -> tuple[dict[str, Any], str] | None:
    """(the structured recall result as JSON, "server" or "local") for `prompt` in
    `namespace` over the turns stored before `until` (the moment the hook began: the prompt
    just stored is not a candidate, so it neither comes back nor, as the best match of
    itself, lowers the confidence of the turns that answer it). The running server's recall
    when one answers with these settings, else a recall of this process with
    `fallback_config`. None when the prompt cannot be a query."""
    from smartsearch_mcp.recall_socket import ask_running_server

    query = prompt.strip()[:MAX_QUERY_CHARS]
    if not query:
        return None
    options = {"namespace": namespace, "until": until}
    answer = ask_running_server(db, config, query, options)
    if answer is not None:
        return answer.json, "server"
    import anyio

    return anyio.run(_local_recall, db, fallback_config(config), query, options), "local"


async def _local_recall(
    db: str | Path, config: Config, query: str, options: dict[str, str]
) -> dict[str, Any]:
    from smartsearch_mcp.memory import Memory
    from smartsearch_mcp.output import recall_output

    memory = await Memory.open(config, db, options["namespace"], read_only=True)
    try:
        result = await memory.recall(query, namespace=options["namespace"], until=options["until"])
    finally:
        await memory.close()
    return recall_output(result).model_dump(mode="json")


def build_injection(
    recall: Callable[[], tuple[dict[str, Any], str] | None],
    prompt: str,
    namespace: str,
    current_session: str | None,
    config: Config,
    counter: TokenCounter,
) -> Injection:
    """Run `recall` within `inject.time_limit_s` and keep what clears the bar; an Injection
    with empty text (and the reason) otherwise. Never raises."""
    settings = config.inject
    outcome = run_with_time_limit(recall, settings.time_limit_s)
    if outcome is TIMED_OUT:
        return Injection("", [], 0, "time limit")
    if outcome is FAILED:
        return Injection("", [], 0, "error")
    if outcome is None:
        return Injection("", [], 0, "nothing recalled")
    recalled, source = outcome
    chosen = confident_passages(
        recalled,
        prompt,
        namespace,
        current_session,
        settings.min_confidence,
        settings.min_shared_words,
    )
    if not chosen:
        why = "not confident" if recalled.get("passages") else "nothing recalled"
        return Injection("", [], 0, why, source)
    text, kept = render_injection(chosen, counter, settings.max_tokens)
    if not kept:
        return Injection("", [], 0, "not confident", source)
    return Injection(text, kept, counter.count(text), "injected", source)


def injection_for_prompt(
    config: Config, db: str, prompt: str, session: str, namespace: str, began: datetime
) -> Injection:
    """What to add to the agent's context for `prompt` (a user-prompt hook's, in `session`),
    from the turns of `namespace` stored before the hook `began`: `build_injection` over
    `recall_for_prompt`. Never raises."""
    from smartsearch_mcp.dates import format_timestamp
    from smartsearch_mcp.tokens import get_token_counter

    until = format_timestamp(began)
    return build_injection(
        lambda: recall_for_prompt(db, config, prompt, namespace, until),
        prompt,
        namespace,
        session,
        config,
        get_token_counter(config.truncation.tokenizer),
    )


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


TIMED_OUT: Any = _Marker("TIMED_OUT")
FAILED: Any = _Marker("FAILED")


def run_with_time_limit(work: Callable[[], T], seconds: float) -> T | Any:
    """`work()` in a daemon thread: its result, `TIMED_OUT` when it has not finished after
    `seconds` (the thread is abandoned: see `abandoned`), `FAILED` when it raised (logged)."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(work())
        except BaseException:  # a recall that fails must not fail the hook: record it
            log.exception("recall for the prompt failed")
            box.append(FAILED)

    thread = threading.Thread(target=run, name=THREAD_NAME, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        log.warning("recall for the prompt took over %.2f s; nothing injected", seconds)
        return TIMED_OUT
    return box[0] if box else FAILED


def abandoned() -> bool:
    """Whether a recall thread is still running after its time limit (the process should
    then exit at once rather than wait for it or finalize under it)."""
    return any(t.name == THREAD_NAME and t.is_alive() for t in threading.enumerate())


__all__ = [
    "HEADER",
    "InjectedPassage",
    "Injection",
    "abandoned",
    "build_injection",
    "confident_passages",
    "fallback_config",
    "hook_output",
    "passage_line",
    "recall_for_prompt",
    "render_injection",
    "run_with_time_limit",
    "shared_words",
]
