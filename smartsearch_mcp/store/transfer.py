"""Moving a memory between databases (`smartsearch-mcp migrate --from A --to B`): SQLite to
PostgreSQL, back, or between two of either kind.

Rows are copied as they are — turn ids, sessions, cached embeddings, the re-send records —
table by table in key order, a batch per transaction. A copy that stopped (a lost
connection, Ctrl-C) resumes where the target's rows end: it is run again with the same
arguments. A target that already holds turns the source does not is refused untouched. At the
end every table's rows are counted on both sides; a difference is an error saying what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from smartsearch_mcp.store.files import DatabaseError
from smartsearch_mcp.store.turns import TRANSFER_TABLES

if TYPE_CHECKING:
    from smartsearch_mcp.config import StoreConfig

log = logging.getLogger(__name__)

BATCH_ROWS = 5_000


class TransferStore(Protocol):
    """What a store offers for copying (both backends implement it)."""

    path: str

    async def table_rows(
        self, table: str, after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]: ...

    async def table_count(self, table: str) -> int: ...

    async def turn_count_estimate(self) -> int: ...

    async def put_table_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> int: ...


@dataclass
class TransferReport:
    """Rows per table: in the source, copied by this run, and in the target at the end."""

    source: dict[str, int] = field(default_factory=dict)
    copied: dict[str, int] = field(default_factory=dict)
    target: dict[str, int] = field(default_factory=dict)


async def copy_memory(
    source: TransferStore,
    target: TransferStore,
    batch: int = BATCH_ROWS,
    progress: Callable[[str, int], None] | None = None,
) -> TransferReport:
    """Copy every row of `source` into `target` (resuming a copy that stopped) and verify
    the counts; DatabaseError when the target holds turns of another memory or the counts
    differ at the end."""
    await _check_target(source, target)
    report = TransferReport()
    for table, (_columns, key) in TRANSFER_TABLES.items():
        copied = 0
        after: Sequence[Any] | None = None
        if table == "turns" and (last := await target.turn_count_estimate()):
            after = (last,)  # resume after the target's highest turn id
        while rows := await source.table_rows(table, after, batch):
            copied += await target.put_table_rows(table, rows)
            after = rows[-1][: len(key)]
            if progress is not None:
                progress(table, copied)
            if len(rows) < batch:
                break
        report.copied[table] = copied
        log.info("copied %d %s rows", copied, table)
    for table in TRANSFER_TABLES:
        report.source[table] = await source.table_count(table)
        report.target[table] = await target.table_count(table)
    differ = [t for t in TRANSFER_TABLES if report.source[t] != report.target[t]]
    if differ:
        shown = ", ".join(f"{t}: {report.source[t]} -> {report.target[t]}" for t in differ)
        raise DatabaseError(
            f"the copy from {source.path} to {target.path} does not match ({shown}): was the "
            "source written (or forgotten from) while it ran? Stop the servers on it and run "
            "migrate again; a target that was not empty before keeps rows of its own"
        )
    return report


@dataclass(frozen=True)
class Migration:
    """A finished `migrate_memory`: the copy's row counts, and the turns of the copy whose
    secrets were replaced by placeholders."""

    report: TransferReport
    redacted: int


async def migrate_memory(
    source_db: str, target_db: str, settings: StoreConfig, batch: int = BATCH_ROWS
) -> Migration:
    """Copy the memory at `source_db` (opened read-only) into `target_db` (opened with the
    config's [store] settings) with `copy_memory`. Rows are copied as stored: turns an
    earlier release (or a memory with redaction off) stored with secrets are redacted in the
    copy, as `remember` would store them, unless `settings.redact_secrets` is off."""
    from smartsearch_mcp.store import open_configured_store, open_store
    from smartsearch_mcp.store.secrets import redact_stored_secrets

    source = await open_store(source_db, busy_timeout_ms=settings.busy_timeout_ms, read_only=True)
    try:
        target = await open_configured_store(target_db, settings)
        try:
            report = await copy_memory(source, target, batch=batch)
            redacted = await redact_stored_secrets(target) if settings.redact_secrets else 0
        finally:
            await target.close()
    finally:
        await source.close()
    return Migration(report, redacted)


async def _check_target(source: TransferStore, target: TransferStore) -> None:
    """Refuse a target holding turns that are not the source's (same id, same content)."""
    first = await target.table_rows("turns", None, 1)
    if not first:
        return
    mine = await source.table_rows("turns", [first[0][0] - 1], 1)
    # Same id, place and time of storing (not the text or its hash: a finished migrate
    # redacts the copy, and running it again must still recognise it).
    same = [0, 1, 2, 3, 9]
    if not mine or [mine[0][i] for i in same] != [first[0][i] for i in same]:
        raise DatabaseError(
            f"{target.path} already holds turns of another memory: nothing was copied — "
            "migrate into an empty database (or run the same migrate again to resume it)"
        )
