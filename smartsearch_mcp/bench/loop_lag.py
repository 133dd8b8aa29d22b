"""`bench loop-lag`: does one client's recall stall the other clients of a shared server?

A synthetic memory (as `bench scale` builds it) is served over streamable HTTP by a
`smartsearch-mcp serve --http` subprocess. One client recalls in a loop while another sends a
cheap request (`list_tools`) every few milliseconds; the cheap request's latency is measured
with no recall running (the baseline) and while recalls run. Recall's CPU work runs in worker
threads, so the event loop that answers `list_tools` should hardly notice it.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from smartsearch_mcp.bench.metrics import percentile
from smartsearch_mcp.bench.progress import progress_bar
from smartsearch_mcp.bench.scale import NAMESPACE, SourceCorpus, TurnSynthesizer
from smartsearch_mcp.config import Config

log = logging.getLogger(__name__)

CHEAP_EVERY_S = 0.02  # a cheap request every 20 ms
TARGET_P99_MS = 200.0


@dataclass(frozen=True)
class LoopLagOptions:
    turns: int = 100_000
    recalls: int = 20
    seed: int = 0
    max_tokens: int = 1500
    batch_size: int = 10_000
    progress: bool = True
    config_name: str | None = None  # what the server subprocess loads (--config)
    db_path: Path | None = None


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "max": max(values) if values else None,
        "n": len(values),
    }


async def run_loop_lag(
    config: Config, options: LoopLagOptions, corpus: SourceCorpus
) -> dict[str, Any]:
    """Build the memory, serve it over HTTP and measure (see module doc)."""
    with tempfile.TemporaryDirectory(prefix="smartsearch-looplag-") as tmp:
        db_path = options.db_path or Path(tmp) / "looplag.db"
        synthesizer = TurnSynthesizer(corpus, options.seed)
        if not db_path.exists():  # a kept database (--keep-db) is measured again as it is
            await _build(config, options, synthesizer, db_path)
        queries = synthesizer.queries(options.recalls)
        port = _free_port()
        command = [
            sys.executable,
            "-m",
            "smartsearch_mcp",
            "serve",
            "--http",
            "--port",
            str(port),
            "--db",
            str(db_path),
            "--namespace",
            NAMESPACE,
            "--insecure",  # a throw-away server on loopback, for this benchmark only
        ]
        if options.config_name:
            command += ["--config", options.config_name]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=dict(os.environ))
        try:
            return await _measure(f"http://127.0.0.1:{port}/mcp", queries, options)
        finally:
            process.terminate()
            process.wait(timeout=60)


async def _build(
    config: Config, options: LoopLagOptions, synthesizer: TurnSynthesizer, db_path: Path
) -> None:
    from smartsearch_mcp.memory import Memory

    memory = await Memory.open(config, db_path, NAMESPACE)
    progress = progress_bar(options.progress, options.turns, "remembering", " turns")
    try:
        stream = synthesizer.turns(options.turns)
        stored, number = 0, 0
        while stored < options.turns:
            size = min(options.batch_size, config.store.max_turns_per_call, options.turns - stored)
            batch = [turn for _, turn in zip(range(size), stream, strict=False)]
            if not batch:
                break
            await memory.remember(batch, session_id=f"looplag-{number:06d}")
            stored += len(batch)
            number += 1
            progress.update(len(batch))
    finally:
        progress.close()
        await memory.close()


async def _measure(url: str, queries: list[str], options: LoopLagOptions) -> dict[str, Any]:
    from mcp import Client

    with anyio.fail_after(120):  # the server starts
        while True:
            try:
                async with Client(url) as probe:
                    await probe.list_tools()
                break
            except Exception:  # not listening yet
                await anyio.sleep(0.2)
    async with Client(url) as recaller, Client(url) as cheap:
        # The first recall reads the scope into memory (or plans to stream it): timed apart.
        # The server loads its models in the background meanwhile, and recall says so: the
        # measures start once they are loaded.
        args = {"query": queries[0], "max_tokens": options.max_tokens}
        started = time.perf_counter()
        result = await recaller.call_tool("recall", args)
        first_ms = (time.perf_counter() - started) * 1000
        with anyio.fail_after(600):
            while any("still loading" in w for w in _warnings(result)):
                await anyio.sleep(1.0)
                result = await recaller.call_tool("recall", args)
        idle = await _cheap_requests(cheap, seconds=5.0)
        recall_ms: list[float] = []
        during: list[float] = []
        done = anyio.Event()

        async def recall_loop() -> None:
            for query in queries:
                began = time.perf_counter()
                await recaller.call_tool(
                    "recall", {"query": query, "max_tokens": options.max_tokens}
                )
                recall_ms.append((time.perf_counter() - began) * 1000)
            done.set()

        async def cheap_loop() -> None:
            while not done.is_set():
                began = time.perf_counter()
                await cheap.list_tools()
                during.append((time.perf_counter() - began) * 1000)
                await anyio.sleep(CHEAP_EVERY_S)

        async with anyio.create_task_group() as group:
            group.start_soon(recall_loop)
            group.start_soon(cheap_loop)
    lagged = summary(during)
    return {
        "turns": options.turns,
        "recall_first_ms": first_ms,
        "recall_ms": summary(recall_ms),
        "list_tools_idle_ms": summary(idle),
        "list_tools_during_recall_ms": lagged,
        "target_p99_ms": TARGET_P99_MS,
        "met": lagged["p99"] is not None and lagged["p99"] <= TARGET_P99_MS,
    }


async def _cheap_requests(client: Any, seconds: float) -> list[float]:
    latencies: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        began = time.perf_counter()
        await client.list_tools()
        latencies.append((time.perf_counter() - began) * 1000)
        await anyio.sleep(CHEAP_EVERY_S)
    return latencies


def _warnings(result: Any) -> list[str]:
    return list((result.structured_content or {}).get("warnings", []))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def format_report(data: dict[str, Any]) -> str:
    """A short markdown report of one run."""

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f} ms"

    idle, during = data["list_tools_idle_ms"], data["list_tools_during_recall_ms"]
    recall = data["recall_ms"]
    verdict = "met" if data["met"] else "missed"
    return "\n".join(
        [
            f"# Loop lag over streamable HTTP, {data['turns']:,} turns",
            "",
            "| measure | p50 | p99 | max | n |",
            "|---|---|---|---|---|",
            f"| list_tools, idle server | {ms(idle['p50'])} | {ms(idle['p99'])} | "
            f"{ms(idle['max'])} | {idle['n']} |",
            f"| list_tools while another client recalls | {ms(during['p50'])} | "
            f"{ms(during['p99'])} | {ms(during['max'])} | {during['n']} |",
            f"| recall | {ms(recall['p50'])} | {ms(recall['p99'])} | {ms(recall['max'])} | "
            f"{recall['n']} |",
            "",
            f"First recall (reads the scope): {ms(data['recall_first_ms'])}. Target: another "
            f"client's cheap request p99 ≤ {data['target_p99_ms']:.0f} ms — {verdict}.",
        ]
    )
