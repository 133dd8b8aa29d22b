"""`bench agent`: recall on memories shaped like what agents store — coding-agent sessions as
the Claude Code hooks capture them, team channels, a person with an assistant, messaging
bursts, time-anchored questions — per memory kind.

Coding sessions are written out as Claude Code transcript lines (user prompts, the assistant's
text messages split by tool calls, the tool calls and results) and read back through the
Claude Code importer, so the stored turns are those the capture hooks store. Every recall goes
through `Memory.recall`, the `recall` tool's path, at the configured default budget with the
memory's `reference` time as "now".

Measured per kind and overall: answer first / in the top 3 / returned, the current value above
the one it replaced (`superseded` labels), median passages, contentless queries returning
nothing. `check_memories` verifies the labels (every gold turn holds the answer, every
superseded turn the old value and comes before the gold).
"""

from __future__ import annotations

import json
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from smartsearch_mcp.bench import ablation
from smartsearch_mcp.config import Config
from smartsearch_mcp.dates import format_timestamp, parse_timestamp
from smartsearch_mcp.importers.claude_code import SESSION_PREFIX, parse_transcript_lines
from smartsearch_mcp.types import InputError, TurnInput

DEFAULT_MEMORIES = Path(__file__).parent / "data" / "agent_memories.json"
KINDS = ("coding", "team", "assistant", "messaging", "time")
DEFAULT_GAP = timedelta(minutes=2)
# Claude Code's pace within a session: a tool call follows the text before it within seconds;
# the user's next prompt comes minutes after the reply.
_AFTER = {"user": timedelta(seconds=8), "assistant": timedelta(seconds=20)}
_TOOL_GAP = timedelta(seconds=6)
_NEXT_PROMPT = timedelta(minutes=3)


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A memory's session as it is stored: its id, its turns, and each tag's turn index."""

    name: str  # as the memories file names it
    session_id: str
    turns: list[TurnInput]
    tags: dict[str, int]


@dataclass
class AgentOutcome:
    """One query's result."""

    memory: str
    kind: str  # the memory's kind
    query_kind: str  # precise, vague, contentless
    question: str
    passages: int
    tokens: int
    gold_rank: int | None = None  # 1-based rank of the first gold passage
    superseded_rank: int | None = None  # 1-based rank of the first superseded passage
    has_superseded: bool = False
    returned: list[int] = field(default_factory=list)  # turn ids in rank order


def load_memories(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The memories of an agent-memories file (default: the ones shipped with the package)."""
    source = Path(path) if path is not None else DEFAULT_MEMORIES
    try:
        memories = json.loads(source.read_text(encoding="utf-8"))["memories"]
        if not isinstance(memories, list):
            raise TypeError("'memories' is not a list")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{source}: not an agent-memories file ({exc}); see {DEFAULT_MEMORIES} for the shape"
        ) from exc
    return memories


def stored_sessions(spec: dict[str, Any]) -> list[StoredSession]:
    """A memory's sessions as the store receives them."""
    if spec.get("format") == "claude-code":
        return [_claude_code_session(spec, s) for s in spec["sessions"]]
    return [_dated_session(s) for s in spec["sessions"]]


def _dated_session(session: dict[str, Any]) -> StoredSession:
    start = parse_timestamp(session["start"])
    gap = timedelta(seconds=session["gap_seconds"]) if "gap_seconds" in session else DEFAULT_GAP
    turns, tags = [], {}
    for i, entry in enumerate(session["turns"]):
        role, speaker, text = entry[:3]
        if len(entry) > 3:
            tags[entry[3]] = i
        turns.append(
            TurnInput(
                text=text, speaker=speaker, role=role, timestamp=(start + i * gap).isoformat()
            )
        )
    return StoredSession(session["id"], session["id"], turns, tags)


def _claude_code_session(spec: dict[str, Any], session: dict[str, Any]) -> StoredSession:
    """The session written as Claude Code transcript lines and read back by the importer."""
    session_key = f"{spec['name']}-{session['id']}"
    at = parse_timestamp(session["start"])
    lines: list[str] = []
    tags: dict[str, int] = {}
    kept = 0
    previous = None
    for i, entry in enumerate(session["turns"]):
        role = entry[0]
        if role == "user" and previous is not None:
            at += _NEXT_PROMPT
        base: dict[str, Any] = {
            "sessionId": session_key,
            "cwd": spec.get("cwd"),
            "uuid": f"{session_key}-{i}",
            "isSidechain": False,
        }
        if role == "tool":
            _, name, call, result = entry
            tool_id = f"toolu_{session_key}_{i}"
            use = {"type": "tool_use", "id": tool_id, "name": name, "input": {"command": call}}
            lines.append(_line(base, "assistant", [use], at))
            at += _TOOL_GAP
            done = {"type": "tool_result", "tool_use_id": tool_id, "content": result}
            lines.append(_line({**base, "uuid": base["uuid"] + "-r"}, "user", [done], at))
            at += _TOOL_GAP
        else:
            text = entry[1]
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            lines.append(_line(base, role, content, at))
            if len(entry) > 2:
                tags[entry[2]] = kept
            kept += 1
            at += _AFTER[role]
        previous = role
    turns = [t.turn for t in parse_transcript_lines(lines)]
    if len(turns) != kept:
        raise InputError(f"{session_key}: the importer kept {len(turns)} of {kept} turns")
    return StoredSession(session["id"], SESSION_PREFIX + session_key, turns, tags)


def _line(base: dict[str, Any], role: str, content: Any, at: datetime) -> str:
    record = {
        **base,
        "type": role,
        "timestamp": format_timestamp(at),
        "message": {"role": role, "content": content},
    }
    return json.dumps(record)


def _resolve(ref: str, sessions: Sequence[StoredSession]) -> tuple[int, int]:
    """(session position, turn index) of a tag or a '<session>#<index>' reference."""
    if "#" in ref:
        name, index = ref.split("#", 1)
        for position, session in enumerate(sessions):
            if session.name == name and index.isdigit() and int(index) < len(session.turns):
                return position, int(index)
        raise InputError(f"no turn {ref}")
    found = [(p, s.tags[ref]) for p, s in enumerate(sessions) if ref in s.tags]
    if len(found) != 1:
        raise InputError(f"tag {ref!r} names {len(found)} turns, not one")
    return found[0]


def check_memories(memories: Sequence[dict[str, Any]]) -> list[str]:
    """Problems with the labels: gold turns without the answer, superseded turns without the
    old value or not before the gold, unknown tags, kinds not known. Empty when all hold."""
    problems: list[str] = []
    for spec in memories:
        name = spec.get("name", "?")
        if spec.get("kind") not in KINDS:
            problems.append(f"{name}: kind {spec.get('kind')!r} is not one of {', '.join(KINDS)}")
        try:
            sessions = stored_sessions(spec)
        except (InputError, KeyError, ValueError, TypeError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        for q in spec.get("questions", []):
            where = f"{name}: {q.get('q')!r}"
            try:
                gold = [_resolve(r, sessions) for r in q["gold"]]
                superseded = [_resolve(r, sessions) for r in q.get("superseded", [])]
            except (InputError, KeyError, ValueError) as exc:
                problems.append(f"{where}: {exc}")
                continue
            for ref, (p, i) in zip(q["gold"], gold, strict=True):
                if not _holds(sessions[p].turns[i].text, q.get("answer", "")):
                    problems.append(f"{where}: gold {ref} does not hold {q.get('answer')!r}")
            for ref, (p, i) in zip(q.get("superseded", []), superseded, strict=True):
                if not _holds(sessions[p].turns[i].text, q.get("old", "")):
                    problems.append(f"{where}: superseded {ref} does not hold {q.get('old')!r}")
                if any((p, i) >= g for g in gold):
                    problems.append(f"{where}: superseded {ref} is not before every gold turn")
    return problems


def _holds(text: str, wanted: str) -> bool:
    return bool(wanted) and any(w.lower() in text.lower() for w in wanted.split("|"))


async def run_agent(
    config: Config,
    memories: Sequence[dict[str, Any]],
    progress: Callable[[str], None] | None = None,
) -> list[AgentOutcome]:
    """Store each memory into a fresh database and ask all its queries."""
    from smartsearch_mcp.memory import Memory

    outcomes: list[AgentOutcome] = []
    for spec in memories:
        sessions = stored_sessions(spec)
        with tempfile.TemporaryDirectory(prefix="smartsearch-agent-") as tmp:
            memory = await Memory.open(config, Path(tmp) / "memory.db", "agent")
            try:
                ids: list[list[int]] = []
                for session in sessions:
                    result = await memory.remember(session.turns, session_id=session.session_id)
                    ids.append(list(result.ids))
                await memory.pipeline.embed_backlog()

                reference = datetime.fromisoformat(spec["reference"])
                queries: list[tuple[str, str, set[int], set[int]]] = [
                    (
                        "precise",
                        q["q"],
                        _turn_ids(q["gold"], sessions, ids),
                        _turn_ids(q.get("superseded", []), sessions, ids),
                    )
                    for q in spec["questions"]
                ]
                queries += [("vague", q, set(), set()) for q in spec.get("vague", [])]
                queries += [("contentless", q, set(), set()) for q in spec.get("contentless", [])]
                for query_kind, question, gold, superseded in queries:
                    recalled = await memory.recall(question, reference=reference)
                    returned = [s.candidate.passage.turn.id for s in recalled.passages]
                    outcomes.append(
                        AgentOutcome(
                            memory=spec["name"],
                            kind=spec["kind"],
                            query_kind=query_kind,
                            question=question,
                            passages=len(recalled.passages),
                            tokens=recalled.tokens_used,
                            gold_rank=_first(returned, gold),
                            superseded_rank=_first(returned, superseded),
                            has_superseded=bool(superseded),
                            returned=returned,
                        )
                    )
            finally:
                await memory.close()
        if progress is not None:
            progress(spec["name"])
    return outcomes


def _turn_ids(
    refs: Sequence[str], sessions: Sequence[StoredSession], ids: list[list[int]]
) -> set[int]:
    return {ids[p][i] for p, i in (_resolve(r, sessions) for r in refs)}


def _first(returned: Sequence[int], wanted: set[int]) -> int | None:
    return next((i + 1 for i, t in enumerate(returned) if t in wanted), None)


def current_first(o: AgentOutcome) -> bool:
    """The current value is returned and ranks above every value it replaced."""
    return o.gold_rank is not None and (
        o.superseded_rank is None or o.gold_rank < o.superseded_rank
    )


def summarize_agent(outcomes: Sequence[AgentOutcome]) -> dict[str, dict[str, Any]]:
    """Headline numbers per memory kind and for all ('all')."""
    groups: dict[str, list[AgentOutcome]] = {"all": list(outcomes)}
    for o in outcomes:
        groups.setdefault(o.kind, []).append(o)
    return {kind: _summary(items) for kind, items in groups.items()}


def _summary(items: Sequence[AgentOutcome]) -> dict[str, Any]:
    precise = [o for o in items if o.query_kind == "precise"]
    changed = [o for o in precise if o.has_superseded]
    empty = [o for o in items if o.query_kind == "contentless"]

    def share(group: Sequence[AgentOutcome], ok: Callable[[AgentOutcome], bool]) -> float:
        return round(sum(1 for o in group if ok(o)) / len(group), 3) if group else 0.0

    return {
        "questions": len(precise),
        "answer_first": share(precise, lambda o: o.gold_rank == 1),
        "answer_top3": share(precise, lambda o: o.gold_rank is not None and o.gold_rank <= 3),
        "answer_returned": share(precise, lambda o: o.gold_rank is not None),
        "changed_questions": len(changed),
        "current_first": share(changed, current_first),
        "median_passages": float(statistics.median(o.passages for o in precise))
        if precise
        else 0.0,
        "contentless_queries": len(empty),
        "contentless_empty": share(empty, lambda o: o.passages == 0),
    }


def format_agent(
    summary: dict[str, dict[str, Any]], outcomes: Sequence[AgentOutcome], config_name: str
) -> str:
    """A markdown report: per kind, then every precise question that missed first place."""
    lines = [
        f"# Agent memories, `{config_name}` preset",
        "",
        "| memory kind | questions | answer first | top 3 | returned | current above "
        "superseded | median passages | contentless → nothing |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in [*KINDS, "all"]:
        if kind not in summary:
            continue
        s = summary[kind]
        lines.append(
            f"| {kind} | {s['questions']} | {s['answer_first']:.0%} | {s['answer_top3']:.0%} | "
            f"{s['answer_returned']:.0%} | {s['current_first']:.0%} of {s['changed_questions']} | "
            f"{s['median_passages']:g} | {s['contentless_empty']:.0%} of "
            f"{s['contentless_queries']} |"
        )
    lines += ["", "| memory | question | gold rank | superseded rank | passages |"]
    lines.append("|---|---|---:|---:|---:|")
    for o in outcomes:
        if o.query_kind != "precise" or (o.gold_rank == 1 and current_first(o)):
            continue
        gold = str(o.gold_rank) if o.gold_rank else "missing"
        old = "" if not o.has_superseded else str(o.superseded_rank or "-")
        lines.append(f"| {o.memory} | {o.question} | {gold} | {old} | {o.passages} |")
    return "\n".join(lines) + "\n"


def ablations(config: Config) -> dict[str, Config]:
    """One configuration per adjustment the preset runs (`rank.adjust`), without it."""
    return {f"without {name}": run for name, run in ablation.ablations(config).items()}


def format_ablation(summaries: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Answer first per memory kind, each adjustment off against the preset as configured."""
    kinds = [k for k in [*KINDS, "all"] if k in next(iter(summaries.values()))]
    lines = [
        "## Each adjustment off (answer first; current above superseded, all kinds)",
        "",
        "| run | " + " | ".join(kinds) + " | current first |",
        "|---|" + "---:|" * (len(kinds) + 1),
    ]
    for label, summary in summaries.items():
        cells = [f"{summary[k]['answer_first']:.0%}" for k in kinds]
        lines.append(
            f"| {label} | " + " | ".join(cells) + f" | {summary['all']['current_first']:.0%} |"
        )
    return "\n".join(lines) + "\n"
