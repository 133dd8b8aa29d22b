"""Memory that speaks up: the few past turns that matter, added to the agent's context at
each prompt by the prompt hook, without the agent asking.

After the hook has stored the prompt (capture.py), it recalls for the prompt — through the
running server's recall socket when one answers (warm models; the server also chooses and
renders what to inject, below, with its loaded vocabulary, and sends only that), else by
its own recall with `inject.fallback_config` (the lexical preset: no model to load) and, unless
`inject.fallback_spacy`, the rule-based entity extractor instead of spaCy — and keeps a
passage only when the ranking is sure of it and it shares enough words with the prompt:

- its ranking confidence (rank.ranking_confidence, 0..1: how far above the scope's typical
  passage every ranker puts it) is at least `inject.min_confidence`;
- it shares at least `inject.min_shared_words` content words (stems, no stopwords) with the
  prompt: "draft a limerick" or "sort these imports" shares nothing with a stored decision,
  however the ranking calibrates its best passage (confidence is relative: a memory's best
  match for any prompt is near 1, so one shared word — "tests" — is no evidence either);
- it is in the prompt's own namespace (never the global one or another project's) and not in
  the current session: the prompt's just-stored turn and the session's earlier turns are in
  the agent's context already (after a compaction the agent can still call `recall`).

The passages kept go under a one-line header, dated and with their turn ids, within
`inject.max_tokens` (header included). Nothing is printed when none clears the bar. The
recall runs in a thread the hook abandons `inject.time_limit_s` after the prompt is stored:
the agent is never kept waiting for memory, and the hook still exits 0.

The hook starts the recall as soon as it has read the prompt (`start_injection`), so a
running server recalls while the hook stores the prompt; with no server, the tokenizer's
vocabulary loads meanwhile, and the hook's own recall waits until the prompt is stored and
does not run when storing failed. Either recall reads only the turns stored before the hook began.

This module imports no model code, nor the pipeline (whose package imports anyio) where a
server chose: the recall itself is imported only when it runs, and the hook's own recall
hands its passages over without the pydantic output models.
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
from typing import Any, Generic, TypeVar

from smartsearch_mcp.config import Config, InjectConfig, NlpConfig
from smartsearch_mcp.tokens import TokenCounter
from smartsearch_mcp.types import RecallResult

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
    from smartsearch_mcp.pipeline.words import content_stems

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
    from smartsearch_mcp.pipeline.words import content_stems

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
    store, scope, truncation and inject settings (the configuration itself when empty), and
    no spaCy model unless `inject.fallback_spacy` (entities then come from the rule-based
    extractor: loading spaCy would take half the time limit)."""
    name = config.inject.fallback_config
    loaded = Config.load(name) if name else config
    nlp = loaded.nlp if config.inject.fallback_spacy else NlpConfig(spacy_models=())
    return dataclasses.replace(
        loaded,
        store=config.store,
        scope=config.scope,
        nlp=nlp,
        truncation=config.truncation,
        inject=config.inject,
    )


class Gate:
    """Opened once, with whether what it waits for went well (the prompt stored)."""

    def __init__(self) -> None:
        self._opened = threading.Event()
        self._ok = False

    def open(self, ok: bool) -> None:
        """Let the waiters go on (`ok`) or give up (not `ok`)."""
        self._ok = ok
        self._opened.set()

    def wait(self) -> bool:
        """Whether what the gate waits for went well, once it did or failed."""
        self._opened.wait()
        return self._ok


def recall_for_prompt(
    db: str | Path,
    config: Config,
    prompt: str,
    namespace: str,
    until: str,
    stored: Gate | None = None,
) -> tuple[dict[str, Any], str] | None:
    """(the structured recall result as JSON, "server" or "local") for `prompt` in
    `namespace` over the turns stored before `until` (the moment the hook began: the prompt
    just stored is not a candidate, so it neither comes back nor, as the best match of
    itself, lowers the confidence of the turns that answer it). The running server's recall
    when one answers with these settings, else a recall of this process with
    `fallback_config`, once the `stored` gate opens (none when it opens on a failure). None
    when the prompt cannot be a query."""
    from smartsearch_mcp.recall_socket import ask_running_server

    query = prompt.strip()[:MAX_QUERY_CHARS]
    if not query:
        return None
    options = {"namespace": namespace, "until": until}
    answer = ask_running_server(db, config, query, options)
    if answer is not None:
        return answer.json, "server"
    local = fallback_config(config)
    # the recall code loads while the prompt is stored; the recall reads once it is
    import anyio

    from smartsearch_mcp.memory import Memory  # noqa: F401

    if stored is not None and not stored.wait():
        return None
    return anyio.run(_local_recall, db, local, query, options), "local"


async def _local_recall(
    db: str | Path, config: Config, query: str, options: dict[str, str]
) -> dict[str, Any]:
    from smartsearch_mcp.memory import Memory

    memory = await Memory.open(config, db, options["namespace"], read_only=True)
    try:
        result = await memory.recall(query, namespace=options["namespace"], until=options["until"])
    finally:
        await memory.close()
    return recalled_passages(result)


def recalled_passages(result: RecallResult) -> dict[str, Any]:
    """What `confident_passages` reads of a recall's structured result — each passage's
    `id`, `session_id`, `namespace`, `speaker`, `role`, `text`, `timestamp` and
    `confidence`, and the `rankers` — as `output.recall_output(result)` gives them in JSON,
    without its pydantic models: the hook's own recall does not import pydantic for them."""
    passages = []
    for scored, confidence in zip(result.passages, result.passage_confidences(), strict=True):
        turn = scored.candidate.passage.turn
        passages.append(
            {
                "id": turn.id,
                "session_id": turn.session_id,
                "namespace": turn.namespace,
                "speaker": turn.speaker,
                "role": turn.role,
                "text": scored.candidate.passage.text,
                "timestamp": turn.timestamp,
                "confidence": round(confidence, 4),
            }
        )
    return {"passages": passages, "rankers": list(result.rankers)}


@dataclass(frozen=True)
class PendingInjection:
    """A recall for the prompt running in its thread (`recall_for_prompt`), and how to
    choose and render what it returns (`finish`)."""

    recall: TimedWork[tuple[dict[str, Any], str] | None]
    counter: Callable[[], TokenCounter]
    prompt: str
    namespace: str
    current_session: str | None
    config: Config

    def finish(self) -> Injection:
        """Wait at most `inject.time_limit_s` for the recall and keep what clears the bar;
        an Injection with empty text (and the reason) otherwise. Never raises."""
        outcome = self.recall.outcome(self.config.inject.time_limit_s)
        if outcome is TIMED_OUT:
            return Injection("", [], 0, "time limit")
        if outcome is FAILED:
            return Injection("", [], 0, "error")
        if outcome is None:
            return Injection("", [], 0, "nothing recalled")
        recalled, source = outcome
        return choose_injection(
            recalled,
            self.prompt,
            self.namespace,
            self.current_session,
            self.config.inject,
            self.counter,
            source,
        )


def choose_injection(
    recalled: dict[str, Any],
    prompt: str,
    namespace: str,
    current_session: str | None,
    settings: InjectConfig,
    counter: Callable[[], TokenCounter],
    source: str = "",
) -> Injection:
    """What to inject of a recall's structured result (`recalled`): the passages that clear
    the bar (`confident_passages`) under the header, within `settings.max_tokens` as
    `counter()` counts them (called only when a passage clears the bar: loading a
    vocabulary costs time). The hook's own recall and the running server's both choose
    here. Never raises: a counter that fails (RuntimeError) injects nothing."""
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
    try:
        loaded = counter()
    except RuntimeError:  # no tokenizer (logged), nothing measured: inject nothing
        return Injection("", [], 0, "error", source)
    text, kept = render_injection(chosen, loaded, settings.max_tokens)
    if not kept:
        return Injection("", [], 0, "not confident", source)
    return Injection(text, kept, loaded.count(text), "injected", source)


def injection_json(injection: Injection) -> dict[str, Any]:
    """`injection` as the recall socket sends it (`injection_from_json` reads it back)."""
    return {
        "text": injection.text,
        "passages": [dataclasses.asdict(p) for p in injection.passages],
        "tokens": injection.tokens,
        "reason": injection.reason,
    }


def injection_from_json(data: Any, source: str) -> Injection | None:
    """The Injection a running server sent (`injection_json`); None when it is not one."""
    try:
        passages = [InjectedPassage(**item) for item in data["passages"]]
        text, tokens, reason = data["text"], data["tokens"], data["reason"]
    except (KeyError, TypeError):
        return None
    if not (isinstance(text, str) and isinstance(tokens, int) and isinstance(reason, str)):
        return None
    return Injection(text, passages, tokens, reason, source)


def start_injection(
    config: Config,
    db: str,
    prompt: str,
    session: str,
    namespace: str,
    began: datetime,
    stored: Gate,
) -> PendingInjection:
    """Start the recall for `prompt` (a user-prompt hook's, in `session`) over the turns of
    `namespace` stored before the hook `began`, and the loading of the token counter, each
    in a thread: a running server recalls while the hook stores the prompt; the hook's own
    recall waits for the `stored` gate. `PendingInjection.finish` then says what to add to
    the agent's context."""
    from smartsearch_mcp.dates import format_timestamp
    from smartsearch_mcp.tokens import get_token_counter

    until = format_timestamp(began)
    tokenizer = config.truncation.tokenizer
    counter = TimedWork(lambda: get_token_counter(tokenizer), "loading the tokenizer")
    return PendingInjection(
        TimedWork(lambda: recall_for_prompt(db, config, prompt, namespace, until, stored)),
        lambda: counter.wait(),
        prompt,
        namespace,
        session,
        config,
    )


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


TIMED_OUT: Any = _Marker("TIMED_OUT")
FAILED: Any = _Marker("FAILED")


class TimedWork(Generic[T]):
    """`work()` running in a daemon thread from the moment this is made."""

    def __init__(self, work: Callable[[], T], what: str = "recall for the prompt") -> None:
        self._what = what
        self._box: list[Any] = []
        self._thread = threading.Thread(
            target=self._run, args=(work,), name=THREAD_NAME, daemon=True
        )
        self._thread.start()

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self._box.append(work())
        except BaseException:  # a recall that fails must not fail the hook: record it
            log.exception("%s failed", self._what)
            self._box.append(FAILED)

    def outcome(self, seconds: float) -> T | Any:
        """Its result, `TIMED_OUT` when it has not finished within `seconds` more (the
        thread is abandoned: see `abandoned`), `FAILED` when it raised (logged)."""
        self._thread.join(seconds)
        if self._thread.is_alive():
            log.warning("%s took over %.2f s; nothing injected", self._what, seconds)
            return TIMED_OUT
        return self._box[0] if self._box else FAILED

    def wait(self) -> T:
        """Its result, once it is done; raises RuntimeError when it failed."""
        self._thread.join()
        if not self._box or self._box[0] is FAILED:
            raise RuntimeError("the work failed (logged)")
        result: T = self._box[0]
        return result


def abandoned() -> bool:
    """Whether a recall thread is still running after its time limit (the process should
    then exit at once rather than wait for it or finalize under it)."""
    return any(t.name == THREAD_NAME and t.is_alive() for t in threading.enumerate())


__all__ = [
    "HEADER",
    "Gate",
    "InjectedPassage",
    "Injection",
    "PendingInjection",
    "TimedWork",
    "abandoned",
    "choose_injection",
    "confident_passages",
    "fallback_config",
    "hook_output",
    "injection_from_json",
    "injection_json",
    "passage_line",
    "recall_for_prompt",
    "recalled_passages",
    "render_injection",
    "shared_words",
    "start_injection",
]
