"""Storing imported sessions in a memory (the `import` command): the whole file is planned and
checked first, as `remember` will check it, so a bad turn anywhere stores nothing; then the
plan is stored call by call, deduplicated like any `remember`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from smartsearch_mcp.store import check_name
from smartsearch_mcp.types import InputError, TurnInput

if TYPE_CHECKING:
    from smartsearch_mcp.importers import ImportedSession
    from smartsearch_mcp.memory import Memory


@dataclass(frozen=True)
class PlannedSession:
    """One imported session: where it goes and its turns, split into `remember` calls."""

    namespace: str
    session_id: str | None
    batches: list[Sequence[TurnInput]]


@dataclass
class ImportTotals:
    """What an import stored: turns, duplicates skipped, sessions, secrets redacted, turns
    dated at import time, and turns stored per namespace."""

    stored: int = 0
    skipped: int = 0
    sessions: int = 0
    redacted: int = 0
    dated: int = 0
    filled: dict[str, int] = field(default_factory=dict)


def plan_import(
    memory: Memory,
    imported_sessions: Iterable[ImportedSession],
    explicit: str | None,
    fallback: str | None,
) -> list[PlannedSession]:
    """Every non-empty session of an import with its namespace (`explicit`, else the one the
    file names, else `fallback`) and its `remember` calls, each checked as `remember` will
    check it: a problem anywhere in the file (a turn too long, a bad name, a lone surrogate)
    is an InputError naming where it is, before anything is stored."""
    plan: list[PlannedSession] = []
    for number, imported in enumerate(imported_sessions, start=1):
        turns = imported.session.turns
        if not turns:
            continue
        session_id = imported.session.session_id
        label = f"session {number}" + (f" ({session_id[:80]!r})" if session_id else "")
        try:
            # An explicit namespace wins over one the file (or transcript) carries.
            namespace = memory.resolve_namespace(explicit or imported.namespace or fallback)
            if session_id is not None:
                check_name("session_id", session_id)
            batches = memory.store.call_batches(turns)
            offset = 0
            for batch in batches:
                try:
                    memory.store.check_turns(batch)
                except InputError as exc:
                    raise renumbered(exc, offset) from exc
                offset += len(batch)
        except InputError as exc:
            raise InputError(f"{label}: {exc}; nothing was imported") from exc
        plan.append(PlannedSession(namespace, session_id, batches))
    return plan


def renumbered(exc: Exception, offset: int) -> InputError:
    """`exc` with "turns[i]" read as the turn's place in its session, not in its call (whose
    first turn is the session's `offset`-th)."""
    text = re.sub(r"^turns\[(\d+)\]", lambda m: f"turn {int(m.group(1)) + offset + 1}", str(exc))
    return InputError(text)


async def store_import(
    memory: Memory,
    plan: Sequence[PlannedSession],
    progress: Callable[[int], object] | None = None,
) -> ImportTotals:
    """Store the sessions of `plan` in `memory`; `progress` is told the turns of each call."""
    totals = ImportTotals()
    for planned in plan:
        session_id = planned.session_id
        for batch in planned.batches:
            result = await memory.remember(
                batch, session_id=session_id, namespace=planned.namespace
            )
            session_id = result.session_id
            totals.stored += result.stored
            totals.skipped += result.duplicates_skipped
            totals.redacted += result.secrets_redacted
            totals.dated += result.dated_now
            totals.filled[result.namespace] = totals.filled.get(result.namespace, 0) + result.stored
            if progress is not None:
                progress(len(batch))
        totals.sessions += 1
    return totals
