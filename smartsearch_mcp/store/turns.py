"""What a turn is on its way into and out of a store, whatever the backend: the checks and
normalization of `remember`'s input (limits, names, roles, timestamps, metadata), the content
key and call digest that re-sends are recognised by, and stored rows turned back into `Turn`s.
No SQL: both backends (store/sqlite.py, store/postgres.py) share it, so a turn checked,
hashed or read by one is the same turn for the other."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from smartsearch_mcp.dates import normalize_timestamp, stored_timestamp
from smartsearch_mcp.redact import redact as redact_secrets
from smartsearch_mcp.types import (
    ROLES,
    InputError,
    NotFoundError,
    SmartSearchError,
    Turn,
    TurnInput,
)

MAX_NAME_CHARS = 256
MAX_ID = 2**63 - 1  # the largest 64-bit integer (SQLite's and PostgreSQL's bigint)
# Characters of text one remember call may hold (10,000 turns of up to 1,000,000 characters
# each would be 10 GB in one transaction).
DEFAULT_MAX_CALL_CHARS = 20_000_000
RETRY_WINDOW = timedelta(hours=24)
# Embeddings whose model name ends so embed a turn together with the turn before it.
CONTEXT_SUFFIX = "#context"
ROLE_ALIASES = {"human": "user", "ai": "assistant", "bot": "assistant", "model": "assistant"}


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    speaker: str | None
    role: str
    text: str
    timestamp: str | None
    timestamp_raw: str | None
    metadata_json: str
    content_hash: str
    secrets_redacted: int = 0
    dated_now: bool = False  # given no timestamp: dated with the time it was stored


class TurnChecks:
    """The input checks of `remember`, under a store's limits (a base of both stores)."""

    max_turns_per_call: int
    max_text_chars: int
    max_call_chars: int
    # Secrets in a turn's text are replaced by placeholders before it is stored (redact.py),
    # except in these namespaces (config store.redact_secrets, store.verbatim_namespaces).
    redact_secrets: bool = True
    verbatim_namespaces: frozenset[str] = frozenset()

    def redacts(self, namespace: str | None) -> bool:
        return self.redact_secrets and namespace not in self.verbatim_namespaces

    def call_batches(self, turns: Sequence[TurnInput]) -> list[Sequence[TurnInput]]:
        """`turns` split into consecutive calls within max_turns_per_call and max_call_chars
        (a turn longer than the call limit alone in its call, for `remember` to refuse)."""
        batches: list[Sequence[TurnInput]] = []
        start = chars = 0
        for index, turn in enumerate(turns):
            size = len(turn.text) if isinstance(turn.text, str) else 0
            full = index - start >= self.max_turns_per_call or chars + size > self.max_call_chars
            if full and index > start:
                batches.append(turns[start:index])
                start, chars = index, 0
            chars += size
        if start < len(turns):
            batches.append(turns[start:])
        return batches

    def check_turns(
        self, turns: Sequence[TurnInput], namespace: str | None = None
    ) -> list[PreparedTurn]:
        """The turns of one `remember` call into `namespace`, checked (count, total size,
        each turn's fields) and prepared, secrets redacted; InputError naming the first
        problem. Writes nothing: an import checks every call with it before storing any."""
        if not turns:
            raise InputError("remember needs at least one turn")
        if len(turns) > self.max_turns_per_call:
            raise InputError(
                f"too many turns in one call ({len(turns)}); the limit is "
                f"{self.max_turns_per_call} (config store.max_turns_per_call) — split the "
                "turns into several calls"
            )
        total = sum(len(t.text) if isinstance(t.text, str) else 0 for t in turns)
        if total > self.max_call_chars:
            raise InputError(
                f"the turns of one call hold {total:,} characters; the limit is "
                f"{self.max_call_chars:,} (config store.max_call_chars) — split the turns "
                "into several calls with the same session_id"
            )
        redact = self.redacts(namespace)
        return [self._prepare(i, turn, redact) for i, turn in enumerate(turns)]

    def _prepare(self, index: int, turn: TurnInput, redact: bool = True) -> PreparedTurn:
        # Where the turn came from: "turns[3]", or the file and line an importer names.
        where = f"turns[{index}]" if turn.source is None else f"{turn.source}:"
        dot = "." if turn.source is None else " "
        text = turn.text
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}{dot}text must be a non-empty string")
        if len(text) > self.max_text_chars:
            raise InputError(
                f"{where}{dot}text has {len(text)} characters; the limit is {self.max_text_chars}"
            )
        check_encodable(f"{where}{dot}text", text)
        secrets = 0
        if redact:  # before anything keeps the text: its identity, the row, the index
            redacted = redact_secrets(text)
            text, secrets = redacted.text, redacted.count
        speaker = turn.speaker
        if speaker is not None:
            if not isinstance(speaker, str):
                raise InputError(f"{where}{dot}speaker must be a string")
            speaker = speaker.strip() or None
            if speaker and len(speaker) > MAX_NAME_CHARS:
                raise InputError(f"{where}{dot}speaker is longer than {MAX_NAME_CHARS} characters")
            if speaker:
                check_encodable(f"{where}{dot}speaker", speaker)
        role = (turn.role or "other").strip().lower() if isinstance(turn.role, str | None) else None
        role = ROLE_ALIASES.get(role or "", role)
        if role not in ROLES:
            raise InputError(f"{where}{dot}role must be one of {list(ROLES)}, got {turn.role!r}")
        raw = turn.timestamp
        try:
            timestamp = normalize_timestamp(raw) if raw is not None else None
        except InputError as exc:
            raise InputError(f"{where}{dot}timestamp: {exc}") from exc
        timestamp_raw = None if raw is None else str(raw)
        if timestamp_raw is not None:
            check_encodable(f"{where}{dot}timestamp", timestamp_raw)
        # Identity is what was given: a turn re-sent without a timestamp (a client retrying
        # after a lost answer, an import run again) is a duplicate, not a new turn "now".
        # (The identity keeps the form it had before timestamps were stored in UTC with "Z",
        # so turns stored then are recognised when sent again.)
        identity = [speaker, text, None if turn.timestamp_generated else timestamp]
        dated_now = timestamp is None
        if timestamp is None:
            timestamp = now()
        else:
            timestamp = stored_timestamp(timestamp)
            if turn.timestamp_generated:
                timestamp_raw = None
        metadata = turn.metadata if turn.metadata is not None else {}
        if not isinstance(metadata, dict):
            raise InputError(f"{where}{dot}metadata must be a JSON object")
        try:
            metadata_json = METADATA_JSON.encode(metadata) if metadata else "{}"
            check_encodable(f"{where}{dot}metadata", metadata_json)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{where}{dot}metadata is not valid JSON: {exc}") from exc
        except RecursionError as exc:
            raise InputError(f"{where}{dot}metadata is nested too deeply") from exc
        digest = identity_hash(identity)
        return PreparedTurn(
            speaker, role, text, timestamp, timestamp_raw, metadata_json, digest, secrets, dated_now
        )


# json.dumps(value, **options) builds one of these per call; bulk imports encode two values
# per turn. Output is identical (content hashes of stored turns depend on it).
METADATA_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
IDENTITY_JSON = json.JSONEncoder(ensure_ascii=False)


def identity_hash(identity: list[str | None]) -> str:
    """The content hash of a turn: of [speaker, text, the timestamp it was given or None]."""
    return hashlib.sha256(
        IDENTITY_JSON.encode(identity).encode("utf-8", "surrogatepass")
    ).hexdigest()


def stored_identity_hash(turn: Turn, text: str) -> str:
    """The content hash `turn` would have with `text` (a rewrite by `redact --apply`): a
    stored turn keeps the timestamp it was given as `timestamp_raw` (None when none was, or
    it was generated)."""
    given = None if turn.timestamp_raw is None else normalize_timestamp(turn.timestamp_raw)
    return identity_hash([turn.speaker, text, given])


def check_name(kind: str, value: object) -> str:
    """Validate a namespace or session id: a short printable string."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{kind} must be a non-empty string")
    if len(value) > MAX_NAME_CHARS:
        raise InputError(f"{kind} is longer than {MAX_NAME_CHARS} characters")
    if any(ord(c) < 32 for c in value):
        raise InputError(f"{kind} must not contain control characters")
    check_encodable(kind, value)
    return value


def check_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise InputError(f"turn ids are integers from 1 to {MAX_ID}, got {value!r}")
    return value


def check_encodable(where: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{where} is not valid Unicode (unpaired surrogate at index {exc.start}); "
            "send UTF-8 text"
        ) from exc


class StorageFullError(SmartSearchError):
    """The database's disk (or its size limit) is full: the write was rolled back."""


class _ReadOnlyDict(dict[str, Any]):
    """An empty metadata dict shared by every turn stored without metadata (most of them),
    instead of one empty dict per turn; it refuses changes, so sharing it is safe."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the metadata of a stored turn is read-only")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse


NO_METADATA = _ReadOnlyDict()


class SharedValues:
    """One string object per distinct value among the rows of one read.

    Turns repeat their namespace, session, speaker, role and timestamps: a read of a million
    turns (what grep mode keeps in memory) would otherwise hold a million copies of each —
    about 350 bytes per turn. Bounded: past `limit` distinct values it starts afresh.
    """

    def __init__(self, limit: int = 50_000) -> None:
        self._values: dict[Any, Any] = {}
        self._limit = limit

    def __call__(self, value: Any) -> Any:
        values = self._values
        found = values.get(value)
        if found is None:
            if len(values) >= self._limit:
                values.clear()
            values[value] = found = value
        return found


def rows_to_turns(rows: list[Any], same: SharedValues) -> list[Turn]:
    return [row_to_turn(row, same) for row in rows]


def row_to_turn(row: Sequence[Any], same: SharedValues) -> Turn:
    return Turn(
        id=int(row[0]),
        namespace=same(row[1]),
        session_id=same(row[2]),
        position=int(row[3]),
        speaker=same(row[4]),
        role=same(row[5]),
        text=row[6],
        timestamp=None if row[7] is None else stored_timestamp(row[7]),
        timestamp_raw=same(row[8]),
        created_at=same(row[9]),
        metadata=json.loads(row[10]) if row[10] not in (None, "", "{}") else NO_METADATA,
    )


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def now() -> str:
    return iso(datetime.now(UTC))


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def call_digest(namespace: str, session_id: str | None, turns: Sequence[PreparedTurn]) -> str:
    """What identifies a remember call as given: its namespace, its session_id (or none) and
    each turn's key, role and metadata, in order."""
    described = [
        namespace,
        session_id,
        [[t.content_hash, t.role, t.metadata_json] for t in turns],
    ]
    return hashlib.sha256(
        IDENTITY_JSON.encode(described).encode("utf-8", "surrogatepass")
    ).hexdigest()


def new_session_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


# What `migrate` copies, table by table, in this order (turns need their sessions): each
# table's columns as both backends name them, and its key (rows are read in key order, so a
# copy that stopped resumes after the last key the target holds).
TRANSFER_TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "sessions": (
        ("namespace", "id", "first_timestamp", "last_timestamp", "turn_count", "created_at"),
        ("namespace", "id"),
    ),
    "turns": (
        (
            "id",
            "namespace",
            "session_id",
            "position",
            "speaker",
            "role",
            "text",
            "timestamp",
            "timestamp_raw",
            "created_at",
            "metadata",
            "content_hash",
        ),
        ("id",),
    ),
    "embeddings": (("model", "turn_id", "start", "vector"), ("model", "turn_id", "start")),
    "remember_calls": (
        ("namespace", "digest", "session_id", "ids", "created_at"),
        ("namespace", "digest"),
    ),
}


def new_turn_rows(
    prepared: Sequence[PreparedTurn],
    matches: Sequence[int | None],
    stored: Sequence[tuple[int, str, int]],
    first_id: int,
    where: tuple[str, str, int, str],
) -> tuple[list[int], list[tuple[Any, ...]]]:
    """The ids a `remember` call answers with, in input order, and the rows of its new turns.

    `matches[i]` is the index in `stored` (the session's turns as (id, content hash,
    position)) of the turn that input `i` re-sends, or None for a new turn; new turns get ids
    from `first_id` and positions from the session's next one, in order. `where` is
    (namespace, session id, next position, created_at). Rows hold the turn columns in
    order of the stores' `_TURN_COLUMNS`, followed by the content hash."""
    namespace, session, position, created_at = where
    next_id = first_id
    ids: list[int] = []
    rows: list[tuple[Any, ...]] = []
    for turn, match in zip(prepared, matches, strict=True):
        if match is not None:
            ids.append(stored[match][0])
            continue
        ids.append(next_id)
        rows.append(
            (
                next_id,
                namespace,
                session,
                position,
                turn.speaker,
                turn.role,
                turn.text,
                turn.timestamp,
                turn.timestamp_raw,
                created_at,
                turn.metadata_json,
                turn.content_hash,
            )
        )
        next_id += 1
        position += 1
    return ids, rows


def forget_request(
    namespace: str,
    ids: Sequence[int] | None,
    session_id: str | None,
    whole_namespace: bool,
) -> tuple[str, str | None, list[int] | None]:
    """A `forget` call's namespace, session (or None) and sorted distinct ids (or None),
    checked; InputError when it names nothing to delete."""
    namespace = check_name("namespace", namespace)
    if not ids and not session_id and not whole_namespace:
        raise InputError("forget needs ids, a session_id, or the whole namespace")
    session = check_name("session_id", session_id) if session_id else None
    wanted = sorted({check_id(i) for i in ids}) if ids else None
    return namespace, session, wanted


def check_forget_found(
    namespace: str, wanted: Sequence[int] | None, session_id: str | None, found: Sequence[int]
) -> None:
    """NotFoundError (before anything is deleted) when ids asked for, or the session, are not
    in `namespace`; `found` is the ids of the turns the call would delete."""
    if wanted is not None:
        missing = sorted(set(wanted) - set(found))
        if missing:
            more = f" ({len(missing)} in all)" if len(missing) > 20 else ""
            raise NotFoundError(
                f"no turns with ids {missing[:20]}{more} in namespace {namespace!r}; "
                "nothing was deleted (recall, grep and timeline show each turn's id)"
            )
    if session_id and not found:
        raise NotFoundError(
            f"no session {session_id!r} in namespace {namespace!r}; nothing was deleted"
        )


def recorded_call_outcome(
    session: str, ids: list[int], present: set[int]
) -> tuple[str | None, list[int] | None]:
    """What a call recorded within the retry window means now, given the ids of its
    session's turns still `present`: (session, ids) when all its turns are still stored,
    (session, None) when some were forgotten since, (None, None) when its session is gone."""
    if present.issuperset(ids):
        return session, ids
    return (session if present else None), None
