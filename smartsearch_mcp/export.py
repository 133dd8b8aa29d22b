"""Exporting stored turns as JSONL (the `export` command): one consistent snapshot of the
database, one line per turn, written where only its owner can read it. Importing an export
stores nothing new (see smartsearch_mcp.importers.jsonl)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from smartsearch_mcp.store import SQLiteStore, Store, open_store
from smartsearch_mcp.types import Turn


@dataclass(frozen=True)
class ExportResult:
    """Turns written; when none were and one namespace was asked for, the turns each
    namespace holds (for saying where the turns are)."""

    count: int
    namespaces: dict[str, int] | None = None


def export_record(turn: Turn) -> dict[str, Any]:
    """A stored turn as one export line; importing it stores nothing new."""
    record = asdict(turn)
    if turn.timestamp is not None and turn.timestamp_raw is None:
        record["timestamp_generated"] = True  # stored "now": the turn was given without one
    return record


@contextlib.contextmanager
def private_file(path: str | Path) -> Iterator[IO[str]]:
    """A text file only its owner can read (0600, like the database): written to a new
    temporary file beside `path`, then moved over it when complete (removed on error)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:  # mkstemp creates it 0600
            yield out
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.asynccontextmanager
async def read_snapshot(db: str, busy_timeout_ms: int) -> AsyncIterator[Store]:
    """The database at `db`, read-only, as one consistent snapshot: an SQLite file is first
    backed up (consistent even while a server writes to it); PostgreSQL's `iter_turns` reads
    one snapshot by itself."""
    source = await open_store(db, busy_timeout_ms=busy_timeout_ms, read_only=True)
    with tempfile.TemporaryDirectory() as tmp:
        snapshot: Store = source
        if isinstance(source, SQLiteStore):
            snapshot_path = Path(tmp) / "snapshot.db"
            try:
                await source.backup(snapshot_path)
            finally:
                await source.close()
            snapshot = await SQLiteStore.open(snapshot_path)
        try:
            yield snapshot
        finally:
            await snapshot.close()


async def export_turns(store: Store, namespace: str | None, out: IO[str]) -> ExportResult:
    """Write the turns of `namespace` (None: of every namespace) in `store` to `out`, one
    JSON line each."""
    count = 0
    async for turn in store.iter_turns(namespace):
        out.write(json.dumps(export_record(turn), ensure_ascii=False) + "\n")
        count += 1
    if count or namespace is None:
        return ExportResult(count)
    return ExportResult(count, await store.namespaces())
