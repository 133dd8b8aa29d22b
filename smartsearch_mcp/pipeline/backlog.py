"""Working through an indexing backlog: stored turns with no vector of one kind yet.

The background embedding computes several kinds of vectors ahead of time — the bi-encoder's
passage vectors, ColBERT's token vectors, SPLADE's sparse vectors — and each works through
its backlog the same way: oldest first, in batches, and a turn the model always fails on is
skipped (logged once, remembered in `failed`), so it never blocks the turns after it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Protocol

from smartsearch_mcp.types import Turn

log = logging.getLogger(__name__)


class EncodingFailed(Exception):
    """The model raised on a batch of texts (its error is the `__cause__`), as told apart
    from a failure of the store."""


class _Backlog(Protocol):
    async def turns_without_embeddings(
        self, model: str, limit: int, after_id: int = 0
    ) -> list[Turn]: ...

    async def put_embeddings(self, model: str, items: Sequence[tuple[int, int, bytes]]) -> None: ...


async def store_pending(
    store: _Backlog, pending: Mapping[str, MutableMapping[tuple[int, int], bytes]]
) -> int:
    """Store the vectors recalls computed and handed over (model -> (turn id, passage
    start) -> bytes; recall itself never writes); returns how many. An entry a recall
    replaced while they were written stays for the next call."""
    written = 0
    for model, waiting in list(pending.items()):
        items = [(t, s, v) for (t, s), v in list(waiting.items())]
        if not items:
            continue
        await store.put_embeddings(model, items)
        for turn_id, start, blob in items:
            if waiting.get((turn_id, start)) is blob:
                del waiting[(turn_id, start)]
        written += len(items)
    return written


async def index_backlog(
    store: _Backlog,
    model: str,
    index: Callable[[Sequence[Turn]], Awaitable[int]],
    *,
    batch: int,
    failed: set[int],
    skipped: str,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Run `index` over every stored turn without a `model` vector, `batch` turns at a
    time; returns the sum of what it returned (passages stored). `index` raises
    EncodingFailed when the model fails: the batch is then indexed turn by turn and the
    turns it fails on are added to `failed` and logged with `skipped` (a %-format taking the
    turn id and the model's error). `progress` is told how many turns each batch covered."""
    done = 0
    after = 0
    while turns := await store.turns_without_embeddings(model, batch, after):
        after = turns[-1].id
        todo = [turn for turn in turns if turn.id not in failed]
        try:
            done += await index(todo) if todo else 0
        except EncodingFailed:  # find the turns it fails on, index the others
            for turn in todo:
                try:
                    done += await index([turn])
                except EncodingFailed as exc:
                    failed.add(turn.id)
                    log.warning(skipped, turn.id, exc.__cause__)
        if progress is not None:
            progress(len(turns))
    return done
