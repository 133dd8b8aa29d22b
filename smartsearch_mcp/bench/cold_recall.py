"""How long a command-line `recall` takes with no server running: a fresh process that
imports and loads what the preset needs, on a small memory (the first of `bench small`'s
memories), as a user's first check would.

Each run is `python -m smartsearch_mcp recall …` in a new process, with an ONNX export
folder of the bench's own that starts empty: the first run shows what a first recall costs
(it may export the bi-encoder once, models/pooled.py), the later ones what every recall after
it costs. Wall time, the children's CPU time (user + system) and peak RSS, per run.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.bench.small import load_memories, session_turns
from smartsearch_mcp.config import Config

# A precise question without dates: the CLI reads dates against today, not the memory's day.
QUESTION_INDEX = 3
NAMESPACE = "default"


@dataclass(frozen=True)
class ColdRun:
    wall_s: float
    cpu_s: float
    answered: bool  # the recall printed passages


async def build_memory(config: Config, db: Path) -> tuple[str, int]:
    """The first small memory remembered into `db` (vectors stored, as a server's background
    embedding would have done); returns (its first precise question, turns stored)."""
    from smartsearch_mcp.memory import Memory

    spec = load_memories()[0]
    memory = await Memory.open(config, db, NAMESPACE)
    try:
        stored = 0
        for session in spec["sessions"]:
            turns = session_turns(session)
            stored += len((await memory.remember(turns, session_id=session["id"])).ids)
        await memory.pipeline.embed_backlog()
    finally:
        await memory.close()
    return str(spec["questions"][QUESTION_INDEX]["q"]), stored


def time_cold_recalls(
    config_arg: str | None, db: Path, question: str, runs: int, onnx_dir: Path
) -> list[ColdRun]:
    """`runs` CLI recalls, each in a fresh process; no server listens on `db`."""
    env = {**os.environ, "SMARTSEARCH_ONNX_DIR": str(onnx_dir)}
    with tempfile.TemporaryDirectory(prefix="smartsearch-cold-run-") as runtime:
        os.chmod(runtime, 0o700)
        env["SMARTSEARCH_RUNTIME_DIR"] = runtime  # no server's socket can answer
        command = [
            sys.executable,
            "-m",
            "smartsearch_mcp",
            "--db",
            str(db),
            "--namespace",
            NAMESPACE,
        ]
        if config_arg:
            command += ["--config", config_arg]
        command += ["recall", question, "--local"]
        results: list[ColdRun] = []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=600, check=False
            )
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise RuntimeError(f"recall failed ({done.returncode}): {done.stderr.strip()}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            results.append(ColdRun(round(wall, 3), round(cpu, 3), "passage" in done.stdout))
        return results


def summarize(runs: list[ColdRun], turns: int, question: str) -> dict[str, Any]:
    later = runs[1:] or runs
    return {
        "turns": turns,
        "question": question,
        "first_wall_s": runs[0].wall_s,
        "first_cpu_s": runs[0].cpu_s,
        "later_wall_p50_s": round(statistics.median(r.wall_s for r in later), 3),
        "later_cpu_p50_s": round(statistics.median(r.cpu_s for r in later), 3),
        # ru_maxrss of children: the largest of them, in KiB on Linux
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "answered": all(r.answered for r in runs),
        "runs": [asdict(r) for r in runs],
    }


def format_cold(summary: dict[str, Any], config_name: str, load: str) -> str:
    return "\n".join(
        [
            f"# Cold CLI recall — {config_name}",
            "",
            f"A fresh `smartsearch-mcp recall` process, no server running, on a "
            f"{summary['turns']}-turn memory; load average {load}.",
            "",
            "| run | wall s | CPU s |",
            "|---|---:|---:|",
            f"| first (may export the bi-encoder) | {summary['first_wall_s']:.2f} "
            f"| {summary['first_cpu_s']:.2f} |",
            f"| later, p50 of {len(summary['runs']) - 1} | {summary['later_wall_p50_s']:.2f} "
            f"| {summary['later_cpu_p50_s']:.2f} |",
            "",
            f"Peak RSS {summary['peak_rss_mb']} MB; every run answered: {summary['answered']}.",
            "",
        ]
    )
