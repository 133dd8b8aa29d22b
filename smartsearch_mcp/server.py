"""MCP tools and resources — with stdio_transport, the only modules that import mcp.

Nothing heavy is built at import time: the store opens in the lifespan, models load lazily
(warmed in a background thread once the server is up), so the handshake is instant.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import StrictBool, StrictInt

from smartsearch_mcp import __version__
from smartsearch_mcp.config import Config
from smartsearch_mcp.http_access import AccessMiddleware, HttpAccess
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.output import (
    ForgetOutput,
    GrepOutput,
    RecallOutput,
    RememberOutput,
    TimelineOutput,
    TurnIn,
    format_grep,
    format_recall,
    format_timeline,
    grep_output,
    recall_output,
    timeline_output,
)
from smartsearch_mcp.recall_socket import serve_recalls
from smartsearch_mcp.store.files import describe_error
from smartsearch_mcp.store.sqlite import MAX_ID
from smartsearch_mcp.types import NotFoundError, SmartSearchError, TurnInput

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Long-term memory of past conversations (SmartSearch). Raw turns are stored verbatim and
recalled by a ranking pipeline.

When to use it:
- recall BEFORE answering anything that may depend on earlier conversations: the user's
  preferences, facts about people, projects and decisions, "what did we decide", "when did I…",
  "last time". Ask a specific question; include names and dates you know.
- remember the exchange when the user shares something worth keeping (facts about themselves,
  decisions, plans, dates, preferences), or at the end of a meaningful exchange: store the
  user's and your own turns verbatim, with speaker, role and timestamp, in one call. Reuse the
  same session_id for turns of the same conversation.
- grep for an exact string (an error message, a file name, an identifier); timeline for
  "what did we do yesterday" or to catch up on recent sessions in time order.
- forget when the user asks you to delete something; deleting a whole namespace needs
  confirm=true.
Past turns may already be in your context, under a header naming this memory (smartsearch):
a capture hook adds the few the ranking is sure of to a prompt. They are not all there is:
call `recall` for anything they do not cover.
Recalled passages carry their session and date: cite dates when answering time questions and
prefer the most recent passage when facts changed. Resources memory://stats and
memory://sessions show what is stored.
"""


MEMORY_PROMPT = """\
You have a long-term memory of past conversations with this user (SmartSearch). Earlier
sessions are stored verbatim, per project. Use it like this:

1. Before answering anything that may depend on the past — preferences, decisions, people,
   "what did we decide", "when did I", "last time", an earlier error — call `recall` with a
   specific question that names the people, topics and dates you know.
2. For an exact string (an error message, a file name, an identifier, a quote) call `grep`
   (literal text by default; regex=true for a regular expression).
3. For "what did we do yesterday / last week" or to catch up on recent work, call `timeline`
   with since="yesterday" (or a date) — it lists turns in time order.
4. Answer from what memory returned. Cite the date (and session) of the passages you rely
   on; when facts changed over time, prefer the most recent passage and say so. If memory
   has nothing relevant, say that instead of guessing.
5. When the user shares something worth keeping and no capture hook records the
   conversation, call `remember` with the turns verbatim. Call `forget` only when asked.
"""


@dataclass
class AppContext:
    memory: Memory


def create_server(
    config: Config | None = None,
    db_path: str | Path = ":memory:",
    namespace: str | None = None,
    preload_models: bool = False,
    cli_socket: bool = False,
) -> MCPServer[AppContext]:
    """Build the MCP server. The database opens when a session starts (the lifespan).
    `cli_socket`: answer the command line's recalls on this database warm, through a
    private Unix socket (smartsearch_mcp.recall_socket)."""
    config = config or Config()

    # Static resources take no Context in the SDK, so they reach the lifespan's memory here.
    running: dict[str, Memory] = {}

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        memory = await Memory.open(config, db_path, namespace)
        running["memory"] = memory
        try:
            async with anyio.create_task_group() as background:
                if preload_models:
                    # The models load in the background; a recall meanwhile waits for them
                    # at most models.load_wait_s, then ranks with what is loaded, saying so.
                    memory.pipeline.model_wait_s = config.models.load_wait_s
                    warmed = _warm_models_later(memory)
                    background.start_soon(_index_once_warm, memory, warmed)
                if cli_socket:
                    background.start_soon(serve_recalls, memory, db_path, config)
                yield AppContext(memory=memory)
                background.cancel_scope.cancel()
        finally:
            running.pop("memory", None)
            # Shielded: on Ctrl-C this runs inside a cancelled scope, and a close cut short
            # leaves aiosqlite's thread answering a loop that has ended (a traceback on exit).
            with anyio.CancelScope(shield=True):
                await memory.close()

    server: MCPServer[AppContext] = MCPServer(
        name="smartsearch-memory",
        title="SmartSearch memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
    )
    _register_tools(server)
    _register_prompts(server)
    _register_resources(server, running)
    return server


def http_app(server: MCPServer[AppContext], access: HttpAccess) -> Any:
    """The streamable HTTP app (an ASGI app) under `access`: Host and Origin checked against
    DNS rebinding (case-insensitively), request bodies limited, and a bearer token required
    when one is set."""
    app: Any = server.streamable_http_app(
        host=access.host,
        max_request_body_size=access.max_request_bytes,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(access.allowed_hosts),
            allowed_origins=list(access.allowed_origins),
        ),
    )
    return AccessMiddleware(app, access.token)


def _memory(ctx: Context[AppContext]) -> Memory:
    return ctx.request_context.lifespan_context.memory


F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def _tool_errors(fn: F) -> F:
    """Turn expected domain errors into tool errors carrying their actionable message."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except SmartSearchError as exc:
            raise ToolError(str(exc)) from exc
        except sqlite3.Error as exc:  # e.g. corruption SQLite met in the middle of a call
            raise ToolError(str(describe_error(_database_named(kwargs), exc))) from exc

    return cast(F, wrapper)


def _database_named(kwargs: dict[str, Any]) -> str:
    ctx = kwargs.get("ctx")
    return _memory(ctx).store.path if isinstance(ctx, Context) else "the database"


def _resource_errors(fn: F) -> F:
    """Turn expected domain errors into resource errors (not-found → invalid params)."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except NotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except SmartSearchError as exc:
            raise ResourceError(str(exc)) from exc
        except sqlite3.Error as exc:
            raise ResourceError(str(describe_error(_database_named(kwargs), exc))) from exc

    return cast(F, wrapper)


def _register_tools(server: MCPServer[AppContext]) -> None:
    @server.tool(
        annotations=ToolAnnotations(
            title="Remember conversation turns",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    @_tool_errors
    async def remember(
        ctx: Context[AppContext],
        turns: list[TurnIn] | None = None,
        text: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
    ) -> RememberOutput:
        """Store conversation turns verbatim in long-term memory.

        Give `turns` (a list of {text, speaker?, role?, timestamp?, metadata?}) for a
        conversation, or just `text` for a single note. Turns of one conversation share a
        `session_id` (generated when omitted — reuse the returned one for later turns).
        Re-sending is harmless: the same call again (a retry, also without `session_id`
        within a day) or a transcript again with new turns at its end stores only what is
        new, and returns the stored ids. A repeated utterance (a second "yes") is stored.
        Up to 10,000 turns and 20,000,000 characters per call.
        """
        if (turns is None) == (text is None):
            raise ToolError("give either `turns` (a list) or `text` (a single note), not both")
        inputs = (
            [TurnInput(text=text)]  # type: ignore[arg-type]
            if turns is None
            else [
                TurnInput(t.text, t.speaker, t.role, t.timestamp, t.metadata)  # type: ignore[arg-type]
                for t in turns
            ]
        )
        result = await _memory(ctx).remember(inputs, session_id=session_id, namespace=namespace)
        return RememberOutput(**asdict(result))

    @server.tool(
        annotations=ToolAnnotations(
            title="Recall from memory",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    @_tool_errors
    async def recall(
        ctx: Context[AppContext],
        query: str,
        max_tokens: int | None = None,
        namespace: str | None = None,
        session_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        explain: bool = False,
    ) -> Annotated[CallToolResult, RecallOutput]:
        """Search long-term memory for passages relevant to a question.

        Use before answering anything that may depend on past conversations. Ask a specific
        natural-language question with the names, topics and dates you know ("What did
        Marit suggest for the billing service's retry limit?"). Returns the most relevant
        stored passages, grouped by session with their dates, within `max_tokens` (default
        1500).
        Optional filters: `session_id`, and `since` / `until` dates (ISO 8601).
        `explain`: the structured result also says why each passage was recalled (channels,
        each ranker's rank and score, the adjustments that moved it, the cut).
        """
        result = await _memory(ctx).recall(
            query,
            max_tokens,
            namespace=namespace,
            session_id=session_id,
            since=since,
            until=until,
            explain=explain,
        )
        output = recall_output(result)
        return CallToolResult(
            content=[TextContent(type="text", text=format_recall(query, result))],
            structured_content=output.model_dump(mode="json"),
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Search memory for exact text",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    @_tool_errors
    async def grep(
        ctx: Context[AppContext],
        pattern: str,
        namespace: str | None = None,
        limit: int = 50,
        regex: bool = False,
        session_id: str | None = None,
    ) -> Annotated[CallToolResult, GrepOutput]:
        """Find stored turns containing exact text: a name, an error message, a file path,
        an identifier. Case-insensitive. `pattern` is literal text unless `regex=true`
        (Python-style regular expression; an invalid or catastrophically slow pattern is an
        error). Returns up to `limit` (max 500) matching turns, most recent first, with
        snippets around the matches. Use `recall` for questions; `grep` for exact strings.
        """
        result = await _memory(ctx).grep(
            pattern, namespace=namespace, limit=limit, regex=regex, session_id=session_id
        )
        output = grep_output(result)
        return CallToolResult(
            content=[TextContent(type="text", text=format_grep(output))],
            structured_content=output.model_dump(mode="json"),
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Memory timeline",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    @_tool_errors
    async def timeline(
        ctx: Context[AppContext],
        since: str | None = None,
        until: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        limit: int = 50,
    ) -> Annotated[CallToolResult, TimelineOutput]:
        """Stored turns in time order, for "what did we do yesterday", "catch me up since
        Monday", or replaying a session. `since` / `until` take ISO 8601 dates or spans like
        "yesterday", "last week", "3 days ago" (a span's start for since, its end for until).
        With `since`: the first `limit` turns from then on; without: the latest `limit`
        turns. Up to 500 turns; each turn's text is cut to 1000 characters.
        """
        result = await _memory(ctx).timeline(
            since=since, until=until, session_id=session_id, namespace=namespace, limit=limit
        )
        output = timeline_output(result)
        return CallToolResult(
            content=[TextContent(type="text", text=format_timeline(output))],
            structured_content=output.model_dump(mode="json"),
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Forget from memory",
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        )
    )
    @_tool_errors
    async def forget(
        ctx: Context[AppContext],
        # Strict: the lax default would read true as turn 1, "2" as turn 2 and "yes" as
        # confirm=true — a destructive tool takes only what its schema says.
        ids: list[StrictInt] | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        confirm: StrictBool = False,
    ) -> ForgetOutput:
        """Delete turns from memory permanently: by turn `ids` (JSON integers), a whole
        `session_id`, or — with neither and `confirm=true` (the JSON boolean) — the whole
        namespace. Use only when the user asks to delete something. Deleted turns never
        come back in recall."""
        result = await _memory(ctx).forget(
            ids=ids, session_id=session_id, namespace=namespace, confirm=confirm
        )
        return ForgetOutput(**asdict(result))


def _register_prompts(server: MCPServer[AppContext]) -> None:
    @server.prompt(name="use-memory", title="How to use long-term memory")
    def use_memory() -> str:
        """Instructions for an agent: when to recall, grep, browse the timeline, remember and
        forget, and how to cite what memory returned."""
        return MEMORY_PROMPT


def _register_resources(server: MCPServer[AppContext], running: dict[str, Memory]) -> None:
    def _json(data: Any) -> str:
        return json.dumps(data, ensure_ascii=False, indent=1)

    @server.resource("memory://stats", mime_type="application/json", title="Memory statistics")
    async def stats() -> str:
        """Turns, sessions and namespaces stored; the database path and schema version."""
        return _json(asdict(await running["memory"].store.stats()))

    @server.resource("memory://sessions", mime_type="application/json", title="Sessions")
    async def sessions() -> str:
        """Stored sessions of every namespace, most recent first (id, namespace, first and
        last timestamp, turn count)."""
        return _json([asdict(s) for s in await running["memory"].store.list_sessions()])

    @server.resource(
        "memory://namespaces/{namespace}/sessions",
        mime_type="application/json",
        title="Sessions of a namespace",
    )
    async def namespace_sessions(namespace: str, ctx: Context[AppContext]) -> str:
        """Sessions of one namespace, most recent first."""
        memory = _memory(ctx)
        return _json([asdict(s) for s in await memory.store.list_sessions(namespace)])

    @server.resource(
        "memory://sessions/{session_id}{?namespace}",
        mime_type="application/json",
        title="Session transcript",
    )
    @_resource_errors
    async def session_transcript(
        session_id: str, ctx: Context[AppContext], namespace: str | None = None
    ) -> str:
        """The transcript of one session, every turn verbatim in order (namespace defaults
        to the server's)."""
        memory = _memory(ctx)
        ns = memory.resolve_namespace(namespace)
        turns = await memory.store.session_turns(ns, session_id)
        return _json(
            {"session_id": session_id, "namespace": ns, "turns": [asdict(t) for t in turns]}
        )

    @server.resource("memory://turns/{turn_id}", mime_type="application/json", title="One turn")
    @_resource_errors
    async def turn(turn_id: str, ctx: Context[AppContext]) -> str:
        """One stored turn, verbatim, with its session, timestamp and metadata."""
        memory = _memory(ctx)
        # ASCII digits only: str.isdigit() also accepts "²", which int() then refuses.
        if not re.fullmatch(r"[1-9][0-9]{0,18}", turn_id) or int(turn_id) > MAX_ID:
            raise ResourceNotFoundError(
                f"turn id must be an integer from 1 to {MAX_ID}, got {turn_id[:40]!r}"
            )
        found = await memory.store.get_turns([int(turn_id)])
        if not found:
            raise ResourceNotFoundError(f"no turn with id {turn_id}")
        return _json(asdict(found[0]))


def _warm_models_later(memory: Memory) -> anyio.Event:
    """Load the configured models in a daemon thread so the first recall is fast; the event
    is set when they are loaded. A daemon thread: stopping the server never waits for it."""
    warmed = anyio.Event()
    token = anyio.lowlevel.current_token()

    def warm() -> None:
        try:
            memory.pipeline.warm_up()
        finally:
            with contextlib.suppress(RuntimeError):  # the server stopped meanwhile
                anyio.from_thread.run_sync(warmed.set, token=token)

    threading.Thread(target=warm, name="smartsearch-warmup", daemon=True).start()
    return warmed


async def _index_once_warm(memory: Memory, warmed: anyio.Event) -> None:
    """Background embedding, started once the warm-up has loaded the models: before, it
    would wait for them in a worker thread that a stopping server must wait for too."""
    await warmed.wait()
    await memory.index_in_background()
