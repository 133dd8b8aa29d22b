"""The memory service: one store, one configuration, lazily loaded models, the recall pipeline.

The MCP tools, the CLI and the benchmark all go through `Memory`, so a benchmark measures
exactly the code path an agent uses.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from smartsearch_mcp import grep as grep_rules
from smartsearch_mcp import timeline as timeline_rules
from smartsearch_mcp.config import Config
from smartsearch_mcp.dates import parse_timestamp
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline.analyze import MAX_TERM_CHARS
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import Store, check_name, open_configured_store
from smartsearch_mcp.types import (
    CutExplanation,
    ForgetResult,
    InputError,
    RecallExplanation,
    RecallResult,
    RememberResult,
    Scope,
    Turn,
    TurnInput,
)

if TYPE_CHECKING:
    from smartsearch_mcp.capture import HookEvent

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 10_000
MAX_TOKENS_LIMIT = 200_000
MIN_TOKENS = 16


class Memory:
    """Remember, recall and forget over one database."""

    def __init__(self, store: Store, config: Config, models: ModelRegistry, namespace: str) -> None:
        self.store = store
        self.config = config
        self.models = models
        self.namespace = check_name("namespace", namespace)
        self.pipeline = RecallPipeline(store, config, models)
        self._new_turns = anyio.Event()
        # Turns stored by other processes (hooks, imports) reach the background embedding
        # when a recall meets them unembedded.
        self.pipeline.on_backlog = self._new_turns_stored

    @classmethod
    async def open(
        cls,
        config: Config,
        db_path: str | Path,
        namespace: str | None = None,
        read_only: bool = False,
    ) -> Memory:
        """The memory over the database at `db_path`, an SQLite file or a `postgresql://`
        URL (`read_only`: an existing database, opened read-only)."""
        store = await open_configured_store(db_path, config.store, read_only=read_only)
        try:
            models = ModelRegistry.from_config(config)
            return cls(store, config, models, namespace or config.scope.default_namespace)
        except BaseException:
            with anyio.CancelScope(shield=True):  # also when the open was cancelled
                await store.close()
            raise

    async def close(self) -> None:
        await self.store.close()

    def resolve_namespace(self, namespace: str | None) -> str:
        return self.namespace if namespace is None else check_name("namespace", namespace)

    def recall_namespaces(self, namespace: str | None) -> tuple[str, ...]:
        """The namespaces a recall searches: the given (or default) one, plus the global one
        when configured."""
        primary = self.resolve_namespace(namespace)
        scope = self.config.scope
        if scope.include_global and primary != scope.global_namespace:
            return (primary, scope.global_namespace)
        return (primary,)

    async def remember(
        self,
        turns: Sequence[TurnInput],
        session_id: str | None = None,
        namespace: str | None = None,
    ) -> RememberResult:
        result = await self.store.remember(self.resolve_namespace(namespace), session_id, turns)
        self._stored(result)
        return result

    async def capture(self, event: HookEvent, namespace: str) -> int:
        """Store what a client hook's `event` adds to its session (smartsearch_mcp.capture),
        as `remember` stores turns; the turns stored (0: nothing new). The transcript is
        read in a worker thread: it can be megabytes, and a server's loop must not wait."""
        from smartsearch_mcp.capture import event_turns, store_new_turns

        moment = datetime.now(UTC)
        transcript, payload = await anyio.to_thread.run_sync(event_turns, event, moment)
        result = await store_new_turns(
            self.store, event, self.resolve_namespace(namespace), transcript, payload
        )
        self._stored(result)
        return result.stored if result is not None else 0

    def _stored(self, result: RememberResult | None) -> None:
        """What the store now holds is news: the pipeline's caches are stale, and new turns
        wait for the background embedding."""
        self.pipeline.changed()
        if result is not None and result.stored:
            self._new_turns_stored()

    def _new_turns_stored(self) -> None:
        self._new_turns.set()

    async def index_in_background(self) -> None:
        """Embed new turns for dense retrieval whenever `remember` stored some; run as a
        background task. `remember` never waits for it: an embedding backlog only means the
        next recall embeds the missing passages itself."""
        self._new_turns.set()  # catch up with what earlier runs stored
        while True:
            await self._new_turns.wait()
            self._new_turns = anyio.Event()
            try:
                count = await self.pipeline.embed_backlog()
            except Exception as exc:  # a background failure must not take the server down
                log.warning("background embedding failed (recall embeds on demand): %s", exc)
                count = 0
            if count:
                log.info("embedded %d passages in the background", count)

    async def recall(
        self,
        query: str,
        max_tokens: int | None = None,
        namespace: str | None = None,
        session_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        reference: datetime | None = None,
        explain: bool = False,
    ) -> RecallResult:
        """Recall passages for `query` within `max_tokens`. `reference` is the moment
        relative dates in the query ("last week") are read against (default: now).
        `explain`: the result says why each passage was recalled (`explanation`)."""
        if not isinstance(explain, bool):
            raise InputError(f"explain must be true or false (a boolean), got {explain!r}")
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string (a question or keywords)")
        if len(query) > MAX_QUERY_CHARS:
            raise InputError(f"query is longer than {MAX_QUERY_CHARS} characters; shorten it")
        budget = self.config.truncation.max_tokens if max_tokens is None else max_tokens
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise InputError("max_tokens must be an integer")
        if not MIN_TOKENS <= budget <= MAX_TOKENS_LIMIT:
            raise InputError(
                f"max_tokens must be between {MIN_TOKENS} and {MAX_TOKENS_LIMIT}, got {budget}"
            )
        scope = Scope(
            namespaces=self.recall_namespaces(namespace),
            session_id=check_name("session_id", session_id) if session_id else None,
            since=_parse_bound("since", since),
            until=_parse_bound("until", until),
        )
        if scope.since and scope.until and scope.since >= scope.until:
            raise InputError("since must be earlier than until")
        if await self.store.count_turns(scope) == 0:
            # Nothing to rank: answer without loading a model (a CLI recall on an empty
            # memory would otherwise spend its time importing torch).
            result = RecallResult(
                passages=[], tokens_used=0, max_tokens=budget, rankers=[], warnings=[]
            )
        else:
            # Relative dates in the question ("yesterday") are days of the local time zone.
            moment = reference or datetime.now().astimezone()
            result = await self.pipeline.recall(query, scope, budget, moment, explain)
        if explain and result.explanation is None:
            result = dataclasses.replace(result, explanation=nothing_to_explain(result))
        if not result.passages and (hint := await self._elsewhere_hint(scope.namespaces)):
            result = dataclasses.replace(result, warnings=[*result.warnings, hint])
        elif not result.passages and not result.warnings:  # never silent
            found = result.candidates
            note = too_small_warning(found, budget) if found else empty_scope_warning(scope)
            result = dataclasses.replace(result, warnings=[note])
        if any(len(word) > MAX_TERM_CHARS for word in query.split()):
            note = (
                f"query words longer than {MAX_TERM_CHARS} characters are not searched as "
                "text (only by full-text and dense retrieval); use shorter words"
            )
            result = dataclasses.replace(result, warnings=[*result.warnings, note])
        return result

    async def _elsewhere_hint(self, namespaces: Sequence[str]) -> str | None:
        """When the searched namespaces are empty but others are not, say where turns are:
        an import into one namespace and a recall from another find nothing silently."""
        return elsewhere_hint(await self.store.namespaces(), namespaces)

    async def grep(
        self,
        pattern: str,
        namespace: str | None = None,
        limit: int | None = None,
        regex: bool = False,
        session_id: str | None = None,
    ) -> grep_rules.GrepResult:
        """Turns containing `pattern` (case-insensitive; a regex when `regex`), most recent
        first, in the recall namespaces (see `recall_namespaces`)."""
        compiled = await grep_rules.compile_pattern_off_loop(pattern, regex)
        count = grep_rules.check_limit(limit)
        scope = Scope(
            namespaces=self.recall_namespaces(namespace),
            session_id=check_name("session_id", session_id) if session_id else None,
        )
        result = grep_rules.GrepResult(pattern=pattern, regex=regex)
        scan = grep_rules.GrepScan(compiled, result, count)
        # A literal ASCII pattern lets SQLite skip the turns that cannot match.
        contains = grep_rules.literal_prefilter(pattern, regex)
        batch: list[Turn] = []
        async for turn in self.store.iter_scope_turns(scope, contains=contains):
            batch.append(turn)
            if len(batch) >= 500:
                await anyio.to_thread.run_sync(scan.scan, batch)
                batch = []
                if scan.done:
                    break
        if batch and not scan.done:
            await anyio.to_thread.run_sync(scan.scan, batch)
        if contains is not None and not scan.done:  # every turn in scope was searched
            result.turns_scanned = await self.store.count_turns(scope)
        if not result.hits and (hint := await self._elsewhere_hint(scope.namespaces)):
            result.warnings.append(hint)
        return result

    async def timeline(
        self,
        since: str | None = None,
        until: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        limit: int | None = None,
        reference: datetime | None = None,
    ) -> timeline_rules.TimelineResult:
        """Turns in time order within [since, until) (see smartsearch_mcp.timeline)."""
        count = timeline_rules.check_limit(limit)
        moment = reference or datetime.now().astimezone()
        start, stop = timeline_rules.parse_window(since, until, moment)
        scope = Scope(
            namespaces=self.recall_namespaces(namespace),
            session_id=check_name("session_id", session_id) if session_id else None,
            since=start,
            until=stop,
        )
        turns = await self.store.timeline_turns(scope, count + 1, latest=start is None)
        more = len(turns) > count
        turns = (turns[1:] if start is None else turns[:count]) if more else turns
        result = timeline_rules.TimelineResult(timeline_rules.entries(turns), start, stop, more)
        if not turns and (hint := await self._elsewhere_hint(scope.namespaces)):
            result.warnings.append(hint)
        return result

    async def forget(
        self,
        ids: Sequence[int] | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        confirm: bool = False,
    ) -> ForgetResult:
        ns = self.resolve_namespace(namespace)
        if not isinstance(confirm, bool):
            raise InputError(f"confirm must be true or false (a boolean), got {confirm!r}")
        if ids is not None and not isinstance(ids, list | tuple):
            raise InputError(f"ids must be a list of turn ids (integers), got {ids!r}")
        if ids is not None and not ids:
            raise InputError("ids is an empty list: nothing to delete; give the turn ids")
        whole = not ids and not session_id
        if whole and not confirm:
            count = (await self.store.namespaces()).get(ns, 0)
            raise InputError(
                f"no ids or session_id given: this would delete the whole namespace {ns!r} "
                f"({count} turns). Call again with confirm=true to do that."
            )
        result = await self.store.forget(ns, ids=ids, session_id=session_id, whole_namespace=whole)
        self.pipeline.changed()
        return result


def elsewhere_hint(counts: dict[str, int], namespaces: Sequence[str]) -> str | None:
    """ "namespace 'x' holds no turns; this memory holds 'y' (3 turns) …" when none of
    `namespaces` holds a turn but others do (`counts`: turns per namespace); else None."""
    if not counts or any(counts.get(ns) for ns in namespaces):
        return None
    biggest = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:5]
    listed = ", ".join(f"{ns!r} ({_turns(count)})" for ns, count in biggest)
    return (
        f"namespace {', '.join(map(repr, namespaces))} holds no turns; this memory holds "
        f"{listed} — pass the namespace to search (CLI: --namespace NAME)"
    )


def nothing_to_explain(result: RecallResult) -> RecallExplanation:
    """The explanation of a recall that ranked nothing (an empty scope)."""
    cut = CutExplanation(
        stop_reason=result.stop_reason,
        score_at_cut=None,
        threshold=None,
        alpha=0.0,
        top_k=0,
        max_tokens=result.max_tokens,
        tokens_used=result.tokens_used,
        ranked=0,
        kept=0,
    )
    return RecallExplanation(passages=[], below_cut=[], cut=cut)


def too_small_warning(found: int, budget: int) -> str:
    """What a recall says when passages matched but not even the best fits its budget."""
    return (
        f"{_passages(found)} matched, but the best does not fit in max_tokens={budget} with its "
        "heading and date; ask again with a larger max_tokens"
    )


def _passages(count: int) -> str:
    return f"{count:,} passage" + ("" if count == 1 else "s")


def empty_scope_warning(scope: Scope) -> str:
    """What a recall over a scope holding no turn says."""
    where = f"namespace {', '.join(map(repr, scope.namespaces))}"
    if scope.session_id is not None:
        where += f", session {scope.session_id!r}"
    if scope.since is not None:
        where += f", since {scope.since.isoformat()}"
    if scope.until is not None:
        where += f", until {scope.until.isoformat()}"
    return f"no turns are stored in {where}, so nothing was recalled; remember turns first"


def _turns(count: int) -> str:
    return f"{count} turn" if count == 1 else f"{count} turns"


def _parse_bound(name: str, value: str | None) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        moment = parse_timestamp(value)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from exc
    return moment.replace(tzinfo=None) if moment.tzinfo is None else moment
