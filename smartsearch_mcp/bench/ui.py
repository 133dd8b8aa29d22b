"""`smartsearch-mcp bench ui`: how long each page of the memory browser takes to render on a
large memory (100,000 turns by default): a synthetic conversation of sessions of 20 turns
and one long session, the app in process (every request through its access checks, as a
browser's would go), each view requested `repeats` times after one warm-up request.

The target is every paged view under 300 ms at 100,000 turns; the search's recall replay is
measured too, with the configuration given (its ranking costs what a `recall` costs: a
configuration with `retrieval.mode = "indexed"` measures that mode), each request asking
the next of `QUESTIONS` (nothing a question computes is reused by the next but what any
recall reuses: the scope's cached passages and their word index). The report says the
retrieval mode and the machine's load average before and after the requests."""

from __future__ import annotations

import logging
import os
import random
import secrets
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from smartsearch_mcp.config import Config
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import TurnInput

log = logging.getLogger(__name__)

NAMESPACE = "bench-ui"
SESSION_TURNS = 20
LONG_SESSION_TURNS = 2000
TARGET_MS = 300.0
NEEDLE = "connection refused on port 5433"
_TEXT = (
    "release schedule friday deploy budget hotel flight lisbon porto garden tomatoes meeting "
    "invoice vendor database index migration retry limit billing service puppy biscuit hike "
    "alps sister clara marine biologist concert tickets dentist appointment tuesday report "
    "draft review design schema cache latency error timeout backup laptop keyboard coffee"
)
WORDS = tuple(_TEXT.split())
QUESTIONS = (
    "When is the release and the deploy on friday",
    "What did my sister Clara say about the concert tickets",
    "Which vendor sent the invoice for the billing service",
    "Where did we hike in the alps with the puppy",
    "What was the retry limit of the database migration",
)
SPEAKERS = ("Ann", "Bo", "Cy", "Dee", "Eli", "Fay")


@dataclass(frozen=True)
class UiBenchOptions:
    turns: int = 100_000
    repeats: int = 20
    seed: int = 0
    db_path: Path | None = None  # kept (and reused when it holds the turns already)


def synthetic_sessions(turns: int, seed: int = 0) -> list[tuple[str, list[TurnInput]]]:
    """`turns` turns as sessions of `SESSION_TURNS` (an hour apart, two speakers each) plus
    one long session of `LONG_SESSION_TURNS`; one turn holds `NEEDLE`."""
    rng = random.Random(seed)
    sessions: list[tuple[str, list[TurnInput]]] = []
    long_turns = min(LONG_SESSION_TURNS, turns // 2)
    start = 1_700_000_000
    count = 0
    index = 0
    while count < turns - long_turns:
        size = min(SESSION_TURNS, turns - long_turns - count)
        pair = rng.sample(SPEAKERS, 2)
        moment = start + index * 3600
        items = [
            TurnInput(
                " ".join(rng.choices(WORDS, k=rng.randint(6, 30))).capitalize() + ".",
                pair[i % 2],
                timestamp=_iso(moment + 60 * i),
            )
            for i in range(size)
        ]
        sessions.append((f"s{index:06d}", items))
        count += size
        index += 1
    moment = start + index * 3600
    long = [
        TurnInput(
            " ".join(rng.choices(WORDS, k=12)) + ("; " + NEEDLE if i == long_turns // 2 else ""),
            SPEAKERS[i % 3],
            timestamp=_iso(moment + 30 * i),
        )
        for i in range(long_turns)
    ]
    sessions.append(("long", long))
    return sessions


async def build_memory(path: Path, turns: int, seed: int = 0) -> int:
    """The synthetic memory at `path` (reused when it holds `turns` turns already); returns
    the number of turns stored."""
    store = await SQLiteStore.open(path)
    try:
        stored = (await store.namespaces()).get(NAMESPACE, 0)
        if stored >= turns:
            return stored
        if stored:
            raise ValueError(f"{path} holds {stored} bench turns, not {turns}: remove it first")
        for session_id, items in synthetic_sessions(turns, seed):
            for offset in range(0, len(items), 5000):
                await store.remember(NAMESPACE, session_id, items[offset : offset + 5000])
        return (await store.namespaces()).get(NAMESPACE, 0)
    finally:
        await store.close()


def views(turns: int, page_size: int) -> list[tuple[str, str | tuple[str, ...]]]:
    """The requests timed on a memory of `turns` synthetic turns: (name, path, or paths
    requested in turn)."""
    long_turns = min(LONG_SESSION_TURNS, turns // 2)
    sessions = -(-(turns - long_turns) // SESSION_TURNS)
    middle = f"s{sessions // 2:06d}"
    return [
        ("overview", "/"),
        ("overview, a deep page", f"/?page={max(1, sessions // page_size - 1)}"),
        ("session", f"/session?ns={NAMESPACE}&id={middle}"),
        (
            "session, long, last page",
            f"/session?ns={NAMESPACE}&id=long&page={max(1, -(-long_turns // page_size))}",
        ),
        ("timeline", "/timeline"),
        ("timeline, date filter", "/timeline?since=2023-11-20&until=2023-11-22"),
        ("grep", "/search?mode=grep&q=" + NEEDLE.replace(" ", "+")),
        ("forget, confirmation", f"/forget?turn={turns // 2}"),
        (
            "search (recall replay)",
            tuple("/search?q=" + question.replace(" ", "+") for question in QUESTIONS),
        ),
    ]


def run_ui_bench(config: Config, options: UiBenchOptions, workdir: Path) -> dict[str, Any]:
    """Build (or reuse) the memory, then time each view; returns the measurements."""
    from starlette.testclient import TestClient

    from smartsearch_mcp.ui.access import TOKEN_HEADER, ui_access
    from smartsearch_mcp.ui.app import create_ui_app

    db = options.db_path or workdir / "bench-ui.db"
    started = time.perf_counter()
    stored = anyio.run(build_memory, db, options.turns, options.seed)
    build_s = time.perf_counter() - started
    log.info("memory of %d turns ready in %.1f s", stored, build_s)
    load_before = _load_average()
    token = secrets.token_urlsafe(32)
    access = ui_access(token, 8770)
    app = create_ui_app(config, str(db), NAMESPACE, access)
    rows = []
    with TestClient(app, base_url="http://127.0.0.1:8770", headers={TOKEN_HEADER: token}) as web:
        for name, paths in views(stored, config.ui.page_size):
            each = (paths,) if isinstance(paths, str) else paths
            path = each[0]
            first = web.get(path)
            if first.status_code != 200:
                raise RuntimeError(f"{path} answered {first.status_code}: {first.text[:300]}")
            times = []
            for repeat in range(options.repeats):
                clock = time.perf_counter()
                response = web.get(each[(repeat + 1) % len(each)])
                times.append((time.perf_counter() - clock) * 1000)
                response.raise_for_status()
            rows.append(
                {
                    "view": name,
                    "path": path,
                    "median_ms": statistics.median(times),
                    "p95_ms": sorted(times)[max(0, round(0.95 * len(times)) - 1)],
                    "max_ms": max(times),
                    "bytes": len(first.content),
                }
            )
    return {
        "turns": stored,
        "build_s": build_s,
        "repeats": options.repeats,
        "mode": config.retrieval.mode,
        "load_average": [load_before, _load_average()],  # 1-minute, before and after
        "views": rows,
    }


def format_report(data: dict[str, Any]) -> str:
    """The measurements as a markdown table."""
    load = [f"{value:.1f}" for value in data.get("load_average", []) if value is not None]
    lines = [
        f"Memory browser render times, {data['turns']:,} turns, retrieval.mode = "
        f"{data.get('mode', 'grep')} ({data['repeats']} requests per view after one warm-up; "
        f"target < {TARGET_MS:.0f} ms"
        + (f"; load average {' -> '.join(load)}" if load else "")
        + "):",
        "",
        "| view | median ms | p95 ms | max ms | KB |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in data["views"]:
        lines.append(
            f"| {row['view']} | {row['median_ms']:.1f} | {row['p95_ms']:.1f} | "
            f"{row['max_ms']:.1f} | {row['bytes'] / 1024:.1f} |"
        )
    return "\n".join(lines)


def _load_average() -> float | None:
    """The machine's 1-minute load average (None where the system does not say)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
