"""Automatic capture: turn a client's hook event into stored turns, without the agent's help.

Claude Code hooks (UserPromptSubmit, Stop, PreCompact) pass JSON on stdin with `session_id`,
`transcript_path`, `cwd`, `hook_event_name` and, for UserPromptSubmit, `prompt`. Every event
syncs the session's transcript (see importers.claude_code): each user and assistant text line
becomes a turn carrying the line's own timestamp and uuid, so running a hook again — or
importing the same transcript later — stores nothing new.

The prompt of a UserPromptSubmit event may not be in the transcript yet, and the payload has
no timestamp. It is then stored with the time the hook ran, marked `capture: "hook-payload"`.
When the transcript line for it appears (at Stop), the line is recognised as the same turn —
same role and text within `SAME_TURN_WINDOW` of it — and not stored twice. The same rule makes
re-running a hook on the same payload a no-op, while the same words typed again later (more
than the window apart, or as a new line of the transcript) are kept as a new turn.

Codex hooks (UserPromptSubmit, Stop) pass `session_id`, `turn_id`, `cwd`, `transcript_path`,
`prompt` and, on Stop, `last_assistant_message`; Codex's transcript format is not documented,
so its turns come from the payload, keyed by `turn_id`.

This module imports no model code: it runs on every prompt and must not slow the agent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smartsearch_mcp.dates import format_timestamp, parse_timestamp
from smartsearch_mcp.importers.claude_code import SESSION_PREFIX, read_transcript
from smartsearch_mcp.namespaces import NamespaceChoice, choose_namespace
from smartsearch_mcp.types import InputError, NotFoundError, RememberResult, Turn, TurnInput

if TYPE_CHECKING:
    from smartsearch_mcp.config import StoreConfig
    from smartsearch_mcp.store import Store

log = logging.getLogger(__name__)

CLIENTS: dict[str, tuple[str, ...]] = {
    "claude-code": ("user-prompt", "stop", "pre-compact"),
    "codex": ("user-prompt", "stop"),
}
SAME_TURN_WINDOW = timedelta(minutes=10)
MAX_PAYLOAD_BYTES = 10_000_000
HOOK_PAYLOAD = "hook-payload"


@dataclass(frozen=True, slots=True)
class HookEvent:
    """What a hook's stdin said, reduced to what capture needs."""

    client: str
    event: str
    session_id: str
    cwd: str | None
    transcript_path: str | None
    prompt: str | None
    last_assistant_message: str | None
    turn_id: str | None


def parse_event(client: str, event: str, raw: str) -> HookEvent:
    """Read a hook payload; InputError when it is not a JSON object with a session_id."""
    if client not in CLIENTS or event not in CLIENTS[client]:
        choices = "; ".join(f"{c}: {', '.join(e)}" for c, e in CLIENTS.items())
        raise InputError(f"unknown hook {client} {event}; known hooks — {choices}")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InputError(f"hook payload is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError("hook payload must be a JSON object")
    session_id = _string(data.get("session_id"))
    if session_id is None:
        raise InputError("hook payload has no session_id")
    return HookEvent(
        client=client,
        event=event,
        session_id=session_id,
        cwd=_string(data.get("cwd")),
        transcript_path=_string(data.get("transcript_path")),
        prompt=_string(data.get("prompt")),
        last_assistant_message=_string(data.get("last_assistant_message")),
        turn_id=_string(data.get("turn_id")),
    )


def event_from_json(data: Any) -> HookEvent:
    """A HookEvent sent as JSON (`dataclasses.asdict`); InputError when it is not one."""
    if not isinstance(data, dict) or set(data) != set(HookEvent.__dataclass_fields__):
        raise InputError("a hook event needs exactly the fields of HookEvent")
    if any(value is not None and not isinstance(value, str) for value in data.values()):
        raise InputError("a hook event's fields are strings or null")
    client, event, session = data["client"], data["event"], data["session_id"]
    if client not in CLIENTS or event not in CLIENTS[client] or not session:
        raise InputError(f"not a hook event: {client} {event}, session {session!r}")
    return HookEvent(**data)


def event_namespace(
    event: HookEvent,
    given: str | None,
    from_env: str | None,
    fallback_cwd: str,
    default_namespace: str,
) -> NamespaceChoice:
    """The namespace rule of `smartsearch_mcp.namespaces`, applied to the session's working
    directory (else `fallback_cwd`): --namespace, $SMARTSEARCH_NAMESPACE, the git project,
    the default. A working directory that cannot be read (a symlink loop, a NUL, a path too
    long) is the default namespace's: the prompt is stored all the same."""
    try:
        return choose_namespace(given, from_env, event.cwd or fallback_cwd, default_namespace)
    except (OSError, ValueError, RuntimeError) as exc:  # pathlib: RuntimeError on a loop
        log.warning("the session's directory cannot be read (%s): using the default namespace", exc)
        return choose_namespace(given, from_env, Path("/"), default_namespace)


def session_key(event: HookEvent) -> str:
    prefix = SESSION_PREFIX if event.client == "claude-code" else f"{event.client}:"
    return prefix + event.session_id


def event_turns(event: HookEvent, now: datetime) -> tuple[list[TurnInput], list[TurnInput]]:
    """(turns from the transcript, turns from the payload) for one event."""
    transcript: list[TurnInput] = []
    if event.client == "claude-code" and event.transcript_path:
        path = Path(event.transcript_path).expanduser()
        if path.is_file():
            transcript = [
                item.turn
                for item in read_transcript(path)
                if item.session_id in (None, event.session_id)
            ]
        else:
            log.warning("transcript %s not found; capturing the payload only", path)
    payload: list[TurnInput] = []
    stamp = format_timestamp(now)
    base = {"source": event.client, "capture": HOOK_PAYLOAD}
    if event.event == "user-prompt" and event.prompt and event.prompt.strip():
        key = {"capture_key": f"turn:{event.turn_id}:user"} if event.turn_id else {}
        payload.append(TurnInput(event.prompt, "user", "user", stamp, {**base, **key}))
    if event.event == "stop" and event.last_assistant_message and not transcript:
        text = event.last_assistant_message
        key = {"capture_key": f"turn:{event.turn_id}:assistant"} if event.turn_id else {}
        if text.strip():
            payload.append(TurnInput(text, "assistant", "assistant", stamp, {**base, **key}))
    return transcript, payload


def plan_new_turns(
    existing: Sequence[Turn],
    transcript: Sequence[TurnInput],
    payload: Sequence[TurnInput],
    as_stored: Callable[[str], str] = str,
) -> list[TurnInput]:
    """The turns to store: transcript lines and payload turns not stored yet (see the module
    docstring for how a turn is recognised). `as_stored` turns a text into what the store
    keeps of it (secrets redacted) before it is compared with stored turns; only the turns
    not recognised by their key get there."""
    known_keys = {t.metadata.get("capture_key") for t in existing} - {None}
    pending = [
        (t.role, t.text, _moment(t.timestamp))
        for t in existing
        if t.metadata.get("capture") == HOOK_PAYLOAD and "capture_key" not in t.metadata
    ]
    seen = [(t.role, t.text, _moment(t.timestamp)) for t in existing]
    new: list[TurnInput] = []
    for turn in transcript:
        key = (turn.metadata or {}).get("capture_key")
        if key is not None and key in known_keys:
            continue
        entry = (turn.role or "", as_stored(turn.text), _moment(turn.timestamp))
        match = _find_same(pending, entry)
        if match is not None:
            pending.pop(match)
            continue
        new.append(turn)
        seen.append(entry)
        if key is not None:
            known_keys.add(key)
    for turn in payload:
        key = (turn.metadata or {}).get("capture_key")
        if key is not None and key in known_keys:
            continue
        entry = (turn.role or "", turn.text, _moment(turn.timestamp))
        kept = (entry[0], as_stored(turn.text), entry[2])
        if (
            _find_same(seen, kept) is not None
            or _find_same([(t.role or "", t.text, _moment(t.timestamp)) for t in transcript], entry)
            is not None
        ):
            continue
        new.append(turn)
        seen.append(kept)
    return new


async def capture_event(
    store: Store,
    event: HookEvent,
    namespace: str,
    now: datetime | None = None,
) -> RememberResult | None:
    """Store what `event` adds to its session; None when nothing is new."""
    transcript, payload = event_turns(event, now or datetime.now(UTC))
    return await store_new_turns(store, event, namespace, transcript, payload)


async def store_new_turns(
    store: Store,
    event: HookEvent,
    namespace: str,
    transcript: Sequence[TurnInput],
    payload: Sequence[TurnInput],
) -> RememberResult | None:
    """Store the turns of `event` (`event_turns`) its session does not hold yet; None when
    there are none."""
    session_id = session_key(event)
    try:
        existing = await store.session_turns(namespace, session_id)
    except NotFoundError:
        existing = []
    new = plan_new_turns(existing, transcript, payload, _as_stored(store, namespace))
    if not new:
        return None
    result: RememberResult | None = None
    for batch in store.call_batches(new):
        result = await store.remember(namespace, session_id, batch)
    return result


async def capture_into_database(
    db: str, settings: StoreConfig, event: HookEvent, namespace: str
) -> int:
    """`capture_event` on the database at `db`, opened with the config's [store] settings
    and closed afterwards; the turns the last `remember` call stored (0: nothing new)."""
    from smartsearch_mcp.store import open_configured_store

    store = await open_configured_store(db, settings)
    try:
        result = await capture_event(store, event, namespace)
    finally:
        await store.close()
    return result.stored if result else 0


def _as_stored(store: Store, namespace: str) -> Callable[[str], str]:
    """What `store` keeps of a text in `namespace`: its secrets redacted, or the text."""
    if not store.redacts(namespace):
        return str
    from smartsearch_mcp.redact import redact

    return lambda text: redact(text).text


def _find_same(
    entries: Sequence[tuple[str, str, datetime | None]], target: tuple[str, str, datetime | None]
) -> int | None:
    role, text, moment = target
    for index, (other_role, other_text, other_moment) in enumerate(entries):
        if other_role != role or other_text != text:
            continue
        if moment is None or other_moment is None or abs(moment - other_moment) <= SAME_TURN_WINDOW:
            return index
    return None


def _moment(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = parse_timestamp(value)
    except InputError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
