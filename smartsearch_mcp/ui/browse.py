"""What the memory browser shows, read through the same `Memory` every command uses: the
overview, a session's turns, the timeline, a recall replayed with its explanation, grep —
and the two changes it may make (forget a turn or a session) and its exports.

Every read is paged and stays inside the namespaces the command line's rules give the run
(`Memory.recall_namespaces`): a turn or session of another namespace is "not found". The
memory is opened read-only; a deletion opens the database for writing just for itself."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smartsearch_mcp.config import PRESETS_DIR
from smartsearch_mcp.export import export_record
from smartsearch_mcp.grep import GrepResult
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.models.manage import configured_kinds
from smartsearch_mcp.output import (
    GrepOutput,
    RecallOutput,
    TimelineOutput,
    format_recall,
    grep_output,
    recall_output,
    timeline_output,
)
from smartsearch_mcp.store import check_name, open_store
from smartsearch_mcp.types import (
    ForgetResult,
    InputError,
    NotFoundError,
    RecallResult,
    Scope,
    SessionInfo,
    StoreStats,
    Turn,
)

log = logging.getLogger(__name__)

# What the page asks a recall for unless told otherwise, and the largest it allows.
MAX_PAGE = 100_000


@dataclass(frozen=True)
class SessionRow:
    """A session as the overview lists it."""

    info: SessionInfo
    speakers: list[str]


@dataclass(frozen=True)
class Overview:
    namespaces: tuple[str, ...]  # those this run serves
    counts: dict[str, int]  # turns per namespace, every namespace of the database
    namespace: str  # whose sessions are listed
    stats: StoreStats
    sessions: list[SessionRow]
    page: int
    more: bool
    embedding: str  # what is still being embedded, in words
    preset: str
    models: list[tuple[str, str]]  # (kind, model)


@dataclass(frozen=True)
class SessionPage:
    namespace: str
    session_id: str
    turns: list[Turn]
    total: int
    page: int
    pages: int


@dataclass(frozen=True)
class Replay:
    """A recall as the `recall` tool returns it (`text`, `output`), with its explanation."""

    query: str
    max_tokens: int
    result: RecallResult
    text: str
    output: RecallOutput


@dataclass
class Browser:
    """The browser's reads and changes over one memory (opened read-only)."""

    memory: Memory
    db: str
    allow_forget: bool = False
    page_size: int = 50
    _speakers_cache: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces of this run: the command line's, plus the global one when
        configured (as recall searches them)."""
        return self.memory.recall_namespaces(None)

    def check_namespace(self, namespace: str | None) -> str:
        """`namespace` when this run serves it (default: the run's own), else NotFoundError."""
        if not namespace:
            return self.memory.namespace
        if namespace not in self.namespaces:
            raise NotFoundError(f"namespace {namespace!r} is not served by this run")
        return namespace

    async def overview(self, namespace: str | None = None, page: int = 1) -> Overview:
        """Namespaces, totals, a page of sessions (newest first) with their speakers, what
        is still being embedded, the preset and the models."""
        shown = self.check_namespace(namespace)
        page = _page(page)
        store = self.memory.store
        stats = await store.stats(shown)
        counts = await store.namespaces()
        offset = (page - 1) * self.page_size
        infos = await store.list_sessions(shown, limit=self.page_size + 1, offset=offset)
        more = len(infos) > self.page_size
        infos = infos[: self.page_size]
        speakers = await store.session_speakers(shown, [s.id for s in infos])
        config = self.memory.config
        models = [(kind, _model_name(kind, config)) for kind in configured_kinds(config)]
        return Overview(
            namespaces=self.namespaces,
            counts=counts,
            namespace=shown,
            stats=stats,
            sessions=[SessionRow(s, speakers.get(s.id, [])) for s in infos],
            page=page,
            more=more,
            embedding=await self._embedding_state(),
            preset=_preset_label(config.source),
            models=models,
        )

    async def _embedding_state(self) -> str:
        """What is still being embedded, without loading a model to find out."""
        pipeline = self.memory.pipeline
        if not pipeline.indexes_in_background():
            return "nothing: this configuration ranks without stored vectors"
        kinds = [k for k in pipeline.model_kinds() if k != "spacy"]
        if not all(self.memory.models.loaded(kind) for kind in kinds):
            return "not known until the models are loaded (the first search loads them)"
        backlog = await pipeline.embedding_backlog()
        if not backlog:
            return "nothing: every turn has its vectors"
        return (
            f"{backlog} passage vectors missing (a running server embeds them in the "
            "background; `smartsearch-mcp embed` does it at once)"
        )

    async def session(self, namespace: str, session_id: str, page: int = 1) -> SessionPage:
        """One page of a session's turns, verbatim, in order."""
        shown = self.check_namespace(namespace)
        session_id = check_name("session_id", session_id)
        page = _page(page)
        total = await self.memory.store.count_turns(Scope((shown,), session_id=session_id))
        if not total:
            raise NotFoundError(f"no session {session_id!r} in namespace {shown!r}")
        turns = await self.memory.store.session_page(
            shown, session_id, self.page_size, (page - 1) * self.page_size
        )
        pages = max(1, -(-total // self.page_size))
        return SessionPage(shown, session_id, turns, total, min(page, pages), pages)

    async def timeline(self, since: str | None, until: str | None) -> TimelineOutput:
        """A page of turns in time order within [since, until) (the `timeline` tool's)."""
        result = await self.memory.timeline(
            since=since or None, until=until or None, limit=self.page_size
        )
        return timeline_output(result)

    async def replay(self, query: str, max_tokens: int | None) -> Replay:
        """The recall the `recall` tool would return for `query`, explained."""
        result = await self.memory.recall(query, max_tokens, explain=True)
        return Replay(
            query=query,
            max_tokens=result.max_tokens,
            result=result,
            text=format_recall(query, result),  # the explanation is not part of the text
            output=recall_output(result),
        )

    async def grep(self, pattern: str, regex: bool = False) -> GrepOutput:
        """The `grep` tool's answer."""
        result: GrepResult = await self.memory.grep(pattern, regex=regex, limit=self.page_size)
        return grep_output(result)

    async def turn(self, turn_id: int) -> Turn:
        """A turn of the served namespaces, else NotFoundError."""
        found = await self.memory.store.get_turns([turn_id], self.namespaces)
        if not found:
            raise NotFoundError(f"no turn #{turn_id} in the namespaces this run serves")
        return found[0]

    async def forget(self, turn_id: int | None, session_id: str | None) -> ForgetResult:
        """Delete one turn or one session of the served namespaces (never a whole
        namespace), when this run allows it; the database is opened for writing for this
        deletion only."""
        if not self.allow_forget:
            raise InputError(
                "this page is read-only: start it with `smartsearch-mcp ui --allow-forget` "
                "(or set ui.allow_forget) to delete from it"
            )
        if (turn_id is None) == (session_id is None):
            raise InputError("give one turn id or one session id to delete")
        if turn_id is not None:
            namespace = (await self.turn(turn_id)).namespace
        else:
            assert session_id is not None
            namespace = await self._session_namespace(session_id)
        config = self.memory.config
        store = await open_store(self.db, busy_timeout_ms=config.store.busy_timeout_ms)
        try:
            if turn_id is not None:
                result = await store.forget(namespace, ids=[turn_id])
            else:
                result = await store.forget(namespace, session_id=session_id)
        finally:
            await store.close()
        self.memory.pipeline.changed()
        log.info(
            "forgot %d turn(s) of namespace %s from the page",
            len(result.deleted_turn_ids),
            namespace,
        )
        return result

    async def _session_namespace(self, session_id: str) -> str:
        session_id = check_name("session_id", session_id)
        for namespace in self.namespaces:
            if await self.memory.store.count_turns(Scope((namespace,), session_id=session_id)):
                return namespace
        raise NotFoundError(f"no session {session_id!r} in the namespaces this run serves")

    async def export(self, session_id: str | None, namespace: str | None) -> AsyncIterator[str]:
        """JSONL lines (as `smartsearch-mcp export` writes them) of one session, or of a
        whole served namespace."""
        if session_id is not None:
            shown = await self._session_namespace(session_id)
            offset = 0
            while page := await self.memory.store.session_page(shown, session_id, 1000, offset):
                for turn in page:
                    yield json.dumps(export_record(turn), ensure_ascii=False) + "\n"
                offset += len(page)
            return
        async for turn in self.memory.store.iter_turns(self.check_namespace(namespace)):
            yield json.dumps(export_record(turn), ensure_ascii=False) + "\n"


def _preset_label(source: str) -> str:
    """The configuration's source as the page says it: a preset by its name."""
    path = Path(source)
    if path.suffix == ".toml" and path.parent.resolve() == PRESETS_DIR.resolve():
        return f"{path.stem} (preset)"
    return source


def _model_name(kind: str, config: Any) -> str:
    if kind == "spacy":
        return ", ".join(config.nlp.spacy_models)
    return str(getattr(config.models, kind, "") or "-")


def _page(page: int) -> int:
    if not 1 <= page <= MAX_PAGE:
        raise InputError(f"page must be between 1 and {MAX_PAGE}")
    return page
