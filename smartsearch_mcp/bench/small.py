"""`bench small`: small realistic memories (about 20 turns each) asked precise, vague and
contentless questions — what a new user meets first, where a benchmark of long
conversations says little: is the answer first, how many passages come back, does a query
with no content return nothing.

The memories (`data/small_memories.json`, or a file of the same shape) hold dated sessions
over weeks; each precise question names its gold turns as "<session>#<index>". Every recall
goes through `Memory.recall`, the `recall` tool's path, at the configured default budget
with the memory's `reference` time as "now".
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from smartsearch_mcp.config import Config
from smartsearch_mcp.dates import parse_timestamp
from smartsearch_mcp.pipeline.render import render_recall
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import InputError, TurnInput

DEFAULT_MEMORIES = Path(__file__).parent / "data" / "small_memories.json"
TURN_GAP = timedelta(minutes=2)  # between the turns of a session


@dataclass
class SmallOutcome:
    """One query's result: what came back and where the gold was."""

    memory: str
    kind: str  # precise, vague, contentless
    question: str
    passages: int
    tokens: int
    text_tokens: int  # of the rendered text content
    stop_reason: str
    gold_rank: int | None = None  # 1-based rank of the first gold passage, None if absent
    warnings: list[str] = field(default_factory=list)


def load_memories(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The memories of a small-memories file (default: the ones shipped with the package)."""
    source = Path(path) if path is not None else DEFAULT_MEMORIES
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        memories = data["memories"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{source}: not a small-memories file ({exc}); see {DEFAULT_MEMORIES} for the shape"
        ) from exc
    return list(memories)


def session_turns(session: dict[str, Any]) -> list[TurnInput]:
    """A fixture session's turns, dated from its `start` one `TURN_GAP` apart."""
    start = parse_timestamp(session["start"])
    return [
        TurnInput(
            text=text, speaker=speaker, role=role, timestamp=(start + i * TURN_GAP).isoformat()
        )
        for i, (role, speaker, text) in enumerate(session["turns"])
    ]


async def run_small(config: Config, memories: list[dict[str, Any]]) -> list[SmallOutcome]:
    """Remember each memory into a fresh database and ask all its queries."""
    from smartsearch_mcp.memory import Memory

    counter = get_token_counter(config.truncation.tokenizer)
    outcomes: list[SmallOutcome] = []
    for spec in memories:
        with tempfile.TemporaryDirectory(prefix="smartsearch-small-") as tmp:
            memory = await Memory.open(config, Path(tmp) / "memory.db", "small")
            try:
                ids: dict[str, int] = {}
                for session in spec["sessions"]:
                    result = await memory.remember(session_turns(session), session_id=session["id"])
                    for index, turn_id in enumerate(result.ids):
                        ids[f"{session['id']}#{index}"] = turn_id
                await memory.pipeline.embed_backlog()
                reference = datetime.fromisoformat(spec["reference"])
                queries = [
                    ("precise", q["q"], [ids[g] for g in q["gold"]]) for q in spec["questions"]
                ]
                queries += [("vague", q, []) for q in spec.get("vague", [])]
                queries += [("contentless", q, []) for q in spec.get("contentless", [])]
                for kind, question, gold in queries:
                    recalled = await memory.recall(question, reference=reference)
                    returned = [s.candidate.passage.turn.id for s in recalled.passages]
                    rank = next((i + 1 for i, t in enumerate(returned) if t in gold), None)
                    text = render_recall(
                        question,
                        recalled.passages,
                        recalled.tokens_used,
                        recalled.hops,
                        recalled.warnings,
                        recalled.stop_reason,
                        recalled.score_at_cut,
                    )
                    outcomes.append(
                        SmallOutcome(
                            memory=spec["name"],
                            kind=kind,
                            question=question,
                            passages=len(recalled.passages),
                            tokens=recalled.tokens_used,
                            text_tokens=counter.count(text),
                            stop_reason=recalled.stop_reason,
                            gold_rank=rank if gold else None,
                            warnings=list(recalled.warnings),
                        )
                    )
            finally:
                await memory.close()
    return outcomes


def summarize_small(outcomes: list[SmallOutcome]) -> dict[str, Any]:
    """The headline numbers: answer first / in the top 3 (share of precise questions),
    median passages returned, contentless queries returning nothing."""
    precise = [o for o in outcomes if o.kind == "precise"]
    vague = [o for o in outcomes if o.kind == "vague"]
    empty = [o for o in outcomes if o.kind == "contentless"]

    def share(items: list[SmallOutcome], ok: Any) -> float:
        return round(sum(1 for o in items if ok(o)) / len(items), 3) if items else 0.0

    def median(items: list[SmallOutcome], attr: str) -> float:
        return float(statistics.median(getattr(o, attr) for o in items)) if items else 0.0

    return {
        "precise_questions": len(precise),
        "answer_first": share(precise, lambda o: o.gold_rank == 1),
        "answer_top3": share(precise, lambda o: o.gold_rank is not None and o.gold_rank <= 3),
        "answer_returned": share(precise, lambda o: o.gold_rank is not None),
        "median_passages_precise": median(precise, "passages"),
        "median_tokens_precise": median(precise, "text_tokens"),
        "median_passages_vague": median(vague, "passages"),
        "median_tokens_vague": median(vague, "text_tokens"),
        "contentless_queries": len(empty),
        "contentless_empty": share(empty, lambda o: o.passages == 0),
        "max_text_tokens": max((o.text_tokens for o in outcomes), default=0),
    }


def format_small(summary: dict[str, Any], outcomes: list[SmallOutcome], config_name: str) -> str:
    """A markdown report: the headline table, then every query."""
    lines = [
        f"# Small memories, `{config_name}` preset",
        "",
        "| measure | value | target |",
        "|---|---:|---:|",
        f"| precise questions | {summary['precise_questions']} | |",
        f"| answer first | {summary['answer_first']:.0%} | ≥ 85 % |",
        f"| answer in top 3 | {summary['answer_top3']:.0%} | |",
        f"| answer returned | {summary['answer_returned']:.0%} | |",
        f"| median passages returned (precise) | {summary['median_passages_precise']:g} | ≤ 6 |",
        f"| median tokens returned (precise) | {summary['median_tokens_precise']:g} | |",
        f"| median passages returned (vague) | {summary['median_passages_vague']:g} | |",
        f"| contentless queries returning nothing | {summary['contentless_empty']:.0%} "
        f"of {summary['contentless_queries']} | 100 % |",
        "",
        "| memory | kind | question | gold rank | passages | tokens | stop |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for o in outcomes:
        rank = "" if o.kind != "precise" else (str(o.gold_rank) if o.gold_rank else "missing")
        lines.append(
            f"| {o.memory} | {o.kind} | {o.question} | {rank} | {o.passages} | "
            f"{o.text_tokens} | {o.stop_reason} |"
        )
    return "\n".join(lines) + "\n"
