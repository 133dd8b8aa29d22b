"""The memory browser as an ASGI app: Starlette routes rendering Jinja2 templates (every value
escaped: memory text is hostile input), a little vendored JavaScript, behind
`access.UiAccessMiddleware`.

Routes (all GET but one): `/` overview, `/session` a session's turns, `/timeline`, `/search`
(recall replay with its explanation, or grep), `/forget` (a confirmation page; POST
deletes), `/export` (JSONL), `/static/…`."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from smartsearch_mcp import __version__
from smartsearch_mcp.config import Config
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.types import InputError, NotFoundError, SmartSearchError
from smartsearch_mcp.ui.access import TOKEN_HEADER, UiAccess, UiAccessMiddleware
from smartsearch_mcp.ui.browse import Browser

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
MAX_FORGET_BODY = 4096


def template_environment() -> jinja2.Environment:
    """The templates, autoescaped (HTML and XML alike), undefined values an error."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["when"] = _when
    environment.filters["score"] = _score
    return environment


def create_ui_app(
    config: Config,
    db: str,
    namespace: str,
    access: UiAccess,
    *,
    allow_forget: bool = False,
) -> Any:
    """The browser over the database `db` in `namespace` (the command line's), opened
    read-only for its lifetime; `allow_forget` lets the page delete turns and sessions."""
    templates = template_environment()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        memory = await Memory.open(config, db, namespace, read_only=True)
        app.state.browser = Browser(memory, db, allow_forget, config.ui.page_size)
        try:
            yield
        finally:
            await memory.close()

    def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        browser: Browser = request.app.state.browser
        started = request.scope.get("ui.started", time.perf_counter())
        html = templates.get_template(name).render(
            token=access.token,
            token_header=TOKEN_HEADER,
            version=__version__,
            served=browser.namespaces,
            allow_forget=browser.allow_forget,
            path=request.url.path,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            **values,
        )
        return HTMLResponse(html, status_code=status)

    def guarded(
        handler: Callable[[Request, Browser], Any],
    ) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            request.scope["ui.started"] = time.perf_counter()
            browser: Browser = request.app.state.browser
            try:
                response: Response = await handler(request, browser)
                return response
            except NotFoundError as exc:
                return page(request, "error.html", 404, message=str(exc))
            except SmartSearchError as exc:
                return page(request, "error.html", 400, message=str(exc))

        return endpoint

    async def overview(request: Request, browser: Browser) -> Response:
        data = await browser.overview(request.query_params.get("ns"), _int(request, "page", 1))
        return page(request, "overview.html", view=data)

    async def session(request: Request, browser: Browser) -> Response:
        data = await browser.session(
            request.query_params.get("ns", ""),
            request.query_params.get("id", ""),
            _int(request, "page", 1),
        )
        return page(request, "session.html", view=data)

    async def timeline(request: Request, browser: Browser) -> Response:
        since = request.query_params.get("since", "")
        until = request.query_params.get("until", "")
        data = await browser.timeline(since, until)
        days: dict[str, list[Any]] = {}
        for turn in data.turns:
            days.setdefault((turn.timestamp or "undated")[:10], []).append(turn)
        return page(request, "timeline.html", view=data, days=days, since=since, until=until)

    async def search(request: Request, browser: Browser) -> Response:
        query = request.query_params.get("q", "").strip()
        mode = request.query_params.get("mode", "recall")
        budget = request.query_params.get("max_tokens", "")
        max_tokens = _int(request, "max_tokens", config.truncation.max_tokens)
        values: dict[str, Any] = {
            "query": query,
            "mode": mode,
            "max_tokens": max_tokens if budget else config.truncation.max_tokens,
            "regex": request.query_params.get("regex") == "1",
            "replay": None,
            "grep": None,
        }
        if query and mode == "grep":
            values["grep"] = await browser.grep(query, values["regex"])
        elif query:
            values["replay"] = await browser.replay(query, max_tokens)
        return page(request, "search.html", **values)

    async def forget_page(request: Request, browser: Browser) -> Response:
        turn_id = _optional_int(request, "turn")
        session_id = request.query_params.get("session") or None
        turn = await browser.turn(turn_id) if turn_id is not None else None
        session_view = None
        if session_id is not None:
            namespace = request.query_params.get("ns", "")
            session_view = await browser.session(namespace, session_id)
        if turn is None and session_view is None:
            raise InputError("say what to delete: ?turn=ID or ?session=ID")
        return page(request, "forget.html", turn=turn, session=session_view)

    async def forget(request: Request, browser: Browser) -> Response:
        body = await request.body()
        if len(body) > MAX_FORGET_BODY:
            raise InputError("request too large")
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise InputError("send a JSON object: {'turn': ID} or {'session': ID}") from exc
        if not isinstance(data, dict) or set(data) - {"turn", "session"}:
            raise InputError("send a JSON object: {'turn': ID} or {'session': ID}")
        turn_id = data.get("turn")
        if turn_id is not None and (isinstance(turn_id, bool) or not isinstance(turn_id, int)):
            raise InputError("turn must be a turn id (an integer)")
        session_id = data.get("session")
        if session_id is not None and not isinstance(session_id, str):
            raise InputError("session must be a session id (a string)")
        result = await browser.forget(turn_id, session_id)
        return JSONResponse(
            {
                "deleted_turn_ids": result.deleted_turn_ids,
                "deleted_sessions": result.deleted_sessions,
            }
        )

    async def forget_endpoint(request: Request) -> Response:
        browser: Browser = request.app.state.browser
        try:
            return await forget(request, browser)
        except NotFoundError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except SmartSearchError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def export(request: Request, browser: Browser) -> Response:
        session_id = request.query_params.get("session") or None
        namespace = browser.check_namespace(request.query_params.get("ns") or None)
        if session_id is not None:
            await browser.session(namespace, session_id)  # 404 before the stream starts
        lines = browser.export(session_id, namespace)
        name = _file_name(session_id or namespace)
        return StreamingResponse(
            lines,
            media_type="application/x-ndjson; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="{name}.jsonl"'},
        )

    app = Starlette(
        routes=[
            Route("/", guarded(overview)),
            Route("/session", guarded(session)),
            Route("/timeline", guarded(timeline)),
            Route("/search", guarded(search)),
            Route("/forget", guarded(forget_page), methods=["GET"]),
            Route("/forget", forget_endpoint, methods=["POST"]),
            Route("/export", guarded(export)),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        lifespan=lifespan,
    )
    return UiAccessMiddleware(app, access)


def _int(request: Request, name: str, default: int) -> int:
    value = _optional_int(request, name)
    return default if value is None else value


def _optional_int(request: Request, name: str) -> int | None:
    text = request.query_params.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{name} must be a whole number, got {text!r}") from None


def _file_name(name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)
    return safe.strip(".-") or "export"


def _when(timestamp: str | None) -> str:
    """A stored timestamp as the page shows it: date and minute."""
    if not timestamp:
        return "undated"
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return timestamp
    return moment.strftime("%Y-%m-%d %H:%M")


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"
