"""What the tools return: typed outputs (the MCP structured content) and the same results as
readable text. Shared by the server and the command line, and free of mcp imports, so the
CLI's recall, grep and timeline do not load the MCP SDK."""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, Field, StrictFloat, StrictInt, StrictStr

from smartsearch_mcp.dates import format_timestamp
from smartsearch_mcp.grep import GrepResult
from smartsearch_mcp.pipeline.render import render_recall
from smartsearch_mcp.timeline import TimelineResult
from smartsearch_mcp.types import PassageExplanation, RecallExplanation, RecallResult, Scored


class TurnIn(BaseModel):
    """One turn to remember."""

    text: str = Field(description="What was said, verbatim.")
    speaker: str | None = Field(default=None, description="Who said it (a name).")
    role: str | None = Field(default=None, description="user, assistant or other.")
    # Strict: the lax default would store `true` as the Unix epoch 1 (1970-01-01).
    timestamp: StrictStr | StrictInt | StrictFloat | None = Field(
        default=None,
        description="When it was said: ISO 8601, a common date format, or a Unix epoch. "
        "Defaults to now.",
    )
    metadata: dict[str, Any] | None = Field(default=None, description="Any JSON object.")


class RememberOutput(BaseModel):
    ids: list[int] = Field(description="Turn ids, one per input turn, in input order.")
    session_id: str
    namespace: str
    stored: int
    duplicates_skipped: int
    secrets_redacted: int = Field(
        default=0,
        description="Secrets (API keys, tokens, private keys, passwords) in the turns that "
        "were stored as [REDACTED:<kind>] placeholders instead.",
    )
    dated_now: int = Field(
        default=0,
        description="Turns given without a timestamp: dated with the time they were stored "
        "(give each turn's own timestamp for an older conversation).",
    )


class PassageOut(BaseModel):
    id: int = Field(description="Turn id (memory://turns/{id}).")
    session_id: str
    namespace: str
    speaker: str | None
    role: str
    text: str = Field(description="The passage: the whole turn, or a slice of a long turn.")
    timestamp: str | None
    score: float
    confidence: float = Field(
        description="How sure the ranking is of this passage, 0 to 1 (1: every ranker puts "
        "it at the top, far above the typical candidate)."
    )
    metadata: dict[str, Any]
    start: int = Field(description="Character offset of the passage in the turn's text.")
    end: int
    superseded_by: int | None = Field(
        default=None,
        description="A later turn that gives a new value for what this passage says (a date "
        "moved, a vendor replaced, a port changed): this one is no longer current.",
    )
    superseded_at: str | None = Field(
        default=None, description="When the superseding turn was said."
    )


class HopOut(BaseModel):
    entity: str
    found_in: list[int]
    turn_ids: list[int]


class RankerRankOut(BaseModel):
    ranker: str
    rank: int = Field(description="1 = this ranker's best candidate; ties share a rank.")
    score: float = Field(description="The ranker's own score of the passage.")


class AdjustmentOut(BaseModel):
    name: str = Field(description="The adjustment (rank.adjust), e.g. time_range.")
    stage: str = Field(description="'fusion', 'first_pass' (a cascade's) or 'final'.")
    before: float
    after: float
    delta: float
    superseded_by: int | None = Field(
        default=None, description="The later turn this adjustment found superseding it."
    )


class PassageWhyOut(BaseModel):
    id: int = Field(description="Turn id.")
    start: int
    end: int
    position: int = Field(description="1-based place in the final ranking.")
    kept: bool = Field(description="Returned (above the cut), or the best left out.")
    channels: list[str] = Field(description="The retrieval channels that found it.")
    lexical_score: float
    rankers: list[RankerRankOut]
    fused_score: float | None = Field(description="The score fusion gave it.")
    fusion: str = Field(
        description="'fusion', or 'first_pass' when a cascade's expensive rankers did not score it."
    )
    adjustments: list[AdjustmentOut] = Field(description="Every adjustment that moved it.")
    score: float = Field(description="The final score.")
    confidence: float
    hops: list[str] = Field(description="Entities whose second search added its turn.")
    in_date_window: bool | None = Field(
        description="Inside the question's date window (None: the question names no dates)."
    )
    superseded_by: int | None


class BelowCutOut(PassageWhyOut):
    session_id: str
    namespace: str
    speaker: str | None
    role: str
    timestamp: str | None
    text: str


class CutOut(BaseModel):
    stop_reason: str
    score_at_cut: float | None = Field(
        description="Confidence of the best passage left out (None when none was)."
    )
    threshold: float | None = Field(
        description="The confidence a passage needed (alpha x the best; None: no threshold)."
    )
    alpha: float
    top_k: int
    max_tokens: int
    tokens_used: int
    ranked: int = Field(description="Passages in the ranking.")
    kept: int


class DateWindowOut(BaseModel):
    expression: str
    start: str
    end: str = Field(description="Excluded.")


class ExplainOut(BaseModel):
    passages: list[PassageWhyOut] = Field(description="One per returned passage, same order.")
    below_cut: list[BelowCutOut] = Field(description="The best passages left out.")
    cut: CutOut
    date_window: DateWindowOut | None


class RecallOutput(BaseModel):
    passages: list[PassageOut]
    tokens_used: int
    max_tokens: int
    rankers: list[str] = Field(description="The rankers that scored these passages.")
    warnings: list[str]
    hops: list[HopOut] = Field(description="Multi-hop expansions: entity -> turns it added.")
    candidates: int = Field(description="Candidates handed to the rankers.")
    stop_reason: str = Field(
        description="Why no more passages were returned: 'threshold' (the next one's "
        "confidence fell well below the best's), 'top_k', 'budget' (max_tokens reached) or "
        "'exhausted' (every candidate returned, or none: see warnings)."
    )
    score_at_cut: float | None = Field(
        description="Confidence of the best passage left out (None when none was)."
    )
    # Only when asked (explain=true): without it the output is what it always was.
    explain: ExplainOut | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Why each passage was recalled (only with explain=true).",
    )


class ForgetOutput(BaseModel):
    deleted_turn_ids: list[int]
    deleted_sessions: list[str]
    namespace: str | None


class SnippetOut(BaseModel):
    text: str = Field(description="Part of the turn around the match (at most 240 characters).")
    start: int = Field(description="Character offset of the snippet in the turn's text.")
    match_start: int
    match_end: int
    reaches_end: bool = Field(default=False, description="The snippet runs to the turn's end.")


class GrepMatchOut(BaseModel):
    id: int = Field(description="Turn id (memory://turns/{id} has the whole turn).")
    session_id: str
    namespace: str
    speaker: str | None
    role: str
    timestamp: str | None
    match_count: int = Field(description="Matches in this turn (counted up to 1000).")
    snippets: list[SnippetOut] = Field(description="Up to 3 snippets, one per match.")


class GrepOutput(BaseModel):
    pattern: str
    regex: bool
    matches: list[GrepMatchOut] = Field(description="Matching turns, most recent first.")
    turns_scanned: int = Field(
        description="Turns searched: all turns in scope when the search ran to the end; when "
        "it stopped early (`truncated`, or a warning), the turns read until then (for a "
        "literal pattern, only those SQLite could not rule out)."
    )
    truncated: bool = Field(description="More turns match than `limit`; narrow the search.")
    warnings: list[str]


class TimelineTurnOut(BaseModel):
    id: int
    session_id: str
    namespace: str
    speaker: str | None
    role: str
    timestamp: str | None
    text: str = Field(description="The turn verbatim, cut to 1000 characters.")
    text_truncated: bool = Field(description="The text was cut; read memory://turns/{id}.")


class TimelineOutput(BaseModel):
    turns: list[TimelineTurnOut] = Field(description="Turns in time order, oldest first.")
    since: str | None = Field(description="The window's start as read (ISO 8601).")
    until: str | None = Field(description="The window's end (exclusive) as read.")
    more: bool = Field(
        description="More turns fall in the window than `limit`: with `since`, continue "
        "from the last turn's timestamp; without, pass an earlier `since`."
    )
    warnings: list[str] = Field(
        default_factory=list, description="e.g. where turns are when this namespace has none."
    )


def recall_output(result: RecallResult) -> RecallOutput:
    return RecallOutput(
        passages=[
            _passage_out(s, c)
            for s, c in zip(result.passages, result.passage_confidences(), strict=True)
        ],
        tokens_used=result.tokens_used,
        max_tokens=result.max_tokens,
        rankers=result.rankers,
        warnings=result.warnings,
        hops=[HopOut(**asdict(h)) for h in result.hops],
        candidates=result.candidates,
        stop_reason=result.stop_reason,
        score_at_cut=None if result.score_at_cut is None else round(result.score_at_cut, 6),
        explain=None if result.explanation is None else explain_output(result.explanation),
    )


def explain_output(explanation: RecallExplanation) -> ExplainOut:
    """The structured form of a recall's explanation."""
    window = explanation.date_window
    return ExplainOut(
        passages=[_why(p) for p in explanation.passages],
        below_cut=[BelowCutOut(**_why(p).model_dump(), **_shown(p)) for p in explanation.below_cut],
        cut=CutOut(**asdict(explanation.cut)),
        date_window=None if window is None else DateWindowOut(**asdict(window)),
    )


def _why(item: PassageExplanation) -> PassageWhyOut:
    return PassageWhyOut(
        id=item.passage.turn.id,
        start=item.passage.start,
        end=item.passage.end,
        position=item.position,
        kept=item.kept,
        channels=item.channels,
        lexical_score=round(item.lexical_score, 6),
        rankers=[
            RankerRankOut(ranker=r.ranker, rank=r.rank, score=round(r.score, 6))
            for r in item.rankers
        ],
        fused_score=None if item.fused_score is None else round(item.fused_score, 6),
        fusion=item.fusion,
        adjustments=[
            AdjustmentOut(
                name=s.name,
                stage=s.stage,
                before=round(s.before, 6),
                after=round(s.after, 6),
                delta=round(s.after - s.before, 6),
                superseded_by=s.superseded_by,
            )
            for s in item.adjustments
        ],
        score=round(item.score, 6),
        confidence=round(item.confidence, 4),
        hops=item.hops,
        in_date_window=item.in_date_window,
        superseded_by=item.superseded_by,
    )


def _shown(item: PassageExplanation) -> dict[str, Any]:
    turn = item.passage.turn
    return {
        "session_id": turn.session_id,
        "namespace": turn.namespace,
        "speaker": turn.speaker,
        "role": turn.role,
        "timestamp": turn.timestamp,
        "text": item.passage.text,
    }


def _passage_out(scored: Scored, confidence: float) -> PassageOut:
    passage = scored.candidate.passage
    turn = passage.turn
    return PassageOut(
        id=turn.id,
        session_id=turn.session_id,
        namespace=turn.namespace,
        speaker=turn.speaker,
        role=turn.role,
        text=passage.text,
        timestamp=turn.timestamp,
        score=round(scored.score, 6),
        confidence=round(confidence, 4),
        metadata=turn.metadata,
        start=passage.start,
        end=passage.end,
        superseded_by=None if scored.superseded_by is None else scored.superseded_by.turn_id,
        superseded_at=None if scored.superseded_by is None else scored.superseded_by.timestamp,
    )


def format_recall(query: str, result: RecallResult) -> str:
    """Readable text: passages grouped by session, sessions in time order, with dates, then
    why truncation stopped. Its length is what `max_tokens` bounds (see pipeline/render.py)."""
    return render_recall(
        query,
        result.passages,
        result.tokens_used,
        result.hops,
        result.warnings,
        result.stop_reason,
        result.score_at_cut,
    )


def grep_output(result: GrepResult) -> GrepOutput:
    return GrepOutput(
        pattern=result.pattern,
        regex=result.regex,
        matches=[
            GrepMatchOut(
                id=hit.turn.id,
                session_id=hit.turn.session_id,
                namespace=hit.turn.namespace,
                speaker=hit.turn.speaker,
                role=hit.turn.role,
                timestamp=hit.turn.timestamp,
                match_count=hit.match_count,
                snippets=[SnippetOut(**asdict(snippet)) for snippet in hit.snippets],
            )
            for hit in result.hits
        ],
        turns_scanned=result.turns_scanned,
        truncated=result.truncated,
        warnings=result.warnings,
    )


def timeline_output(result: TimelineResult) -> TimelineOutput:
    return TimelineOutput(
        turns=[
            TimelineTurnOut(
                id=entry.turn.id,
                session_id=entry.turn.session_id,
                namespace=entry.turn.namespace,
                speaker=entry.turn.speaker,
                role=entry.turn.role,
                timestamp=entry.turn.timestamp,
                text=entry.text,
                text_truncated=entry.text_truncated,
            )
            for entry in result.entries
        ],
        since=format_timestamp(result.since) if result.since else None,
        until=format_timestamp(result.until) if result.until else None,
        more=result.more,
        warnings=result.warnings,
    )


def format_grep(output: GrepOutput) -> str:
    """Readable text: one line per matching turn with its date, then its snippets."""
    if not output.matches:
        lines = [f"No stored turn contains {output.pattern!r} ({output.turns_scanned} scanned)."]
    else:
        more = " (more match: raise limit or narrow the search)" if output.truncated else ""
        count = len(output.matches)
        found = f"{count} turn contains" if count == 1 else f"{count} turns contain"
        lines = [f"{found} {output.pattern!r}{more}."]
        namespaces = {m.namespace for m in output.matches}
        for match in output.matches:
            where = f" [{match.namespace}]" if len(namespaces) > 1 else ""
            when = (match.timestamp or "undated")[:16].replace("T", " ")
            who = match.speaker or match.role
            lines.append(
                f"\n[{when}] {who} (turn {match.id}, session {match.session_id}{where}, "
                f"{match.match_count} {'match' if match.match_count == 1 else 'matches'})"
            )
            lines.extend(
                # "…" only where the turn goes on: a short turn is shown whole, unmarked
                f"  {'…' if snippet.start else ''}{snippet.text}"
                f"{'' if snippet.reaches_end else '…'}"
                for snippet in match.snippets
            )
    lines.extend(f"warning: {w}" for w in output.warnings)
    return "\n".join(lines)


def format_timeline(output: TimelineOutput) -> str:
    """Readable text: turns in time order, a heading whenever the session changes."""
    if not output.turns:
        return "\n".join(
            ["No stored turns in that window.", *(f"warning: {w}" for w in output.warnings)]
        )
    lines: list[str] = []
    current: tuple[str, str] | None = None
    for turn in output.turns:
        if (turn.namespace, turn.session_id) != current:
            current = (turn.namespace, turn.session_id)
            lines.append(f"\n## Session {turn.session_id} [{turn.namespace}]")
        when = (turn.timestamp or "undated")[:16].replace("T", " ")
        cut = " […]" if turn.text_truncated else ""
        lines.append(f"[{when}] {turn.speaker or turn.role} #{turn.id}: {turn.text}{cut}")
    if output.more:
        lines.append("\n(more turns in this window: raise limit or move since/until)")
    lines.extend(f"warning: {w}" for w in output.warnings)
    return "\n".join(lines).lstrip("\n")


def _day(timestamp: str | None) -> str:
    return (timestamp or "")[:10]


def format_explain(explain: ExplainOut) -> str:
    """Readable text of a recall's explanation: each returned passage, the cut line, then the
    best passages below it."""
    lines = ["Why these passages:"]
    lines.extend(line for item in explain.passages for line in _why_lines(item))
    cut = explain.cut
    at_cut = "-" if cut.score_at_cut is None else f"{cut.score_at_cut:.4g}"
    threshold = "none" if cut.threshold is None else f"{cut.threshold:.4g}"
    lines.append(
        f"--- cut: {cut.stop_reason} (confidence at the cut {at_cut}, threshold {threshold}; "
        f"{cut.kept} of {cut.ranked} ranked kept; {cut.tokens_used}/{cut.max_tokens} tokens)"
    )
    if explain.date_window is not None:
        window = explain.date_window
        lines.append(
            f"date window: {window.expression!r} {window.start[:10]} to {window.end[:10]} "
            "(end excluded)"
        )
    for below in explain.below_cut:
        lines.extend(_why_lines(below))
        lines.append(f"     {_one_line(below.text, 100)}")
    return "\n".join(lines)


def _why_lines(item: PassageWhyOut) -> list[str]:
    where = "" if item.start == 0 else f" [{item.start}:{item.end}]"
    mark = "kept" if item.kept else "below the cut"
    lines = [
        f"#{item.position} turn {item.id}{where} ({mark}): score {item.score:.4g}, "
        f"confidence {item.confidence:.2f}"
    ]
    lines.append(f"     found by: {', '.join(item.channels) or '-'}")
    ranks = ", ".join(f"{r.ranker} #{r.rank} ({r.score:.4g})" for r in item.rankers)
    fused = "-" if item.fused_score is None else f"{item.fused_score:.4g}"
    stage = "" if item.fusion == "fusion" else f" ({item.fusion})"
    lines.append(f"     rankers: {ranks or '-'}; fused {fused}{stage}")
    lines.extend(
        f"     {step.name} ({step.stage}): {step.before:.4g} -> {step.after:.4g} "
        f"({step.delta:+.4g})" + ("" if step.superseded_by is None else " superseded")
        for step in item.adjustments
    )
    notes = []
    if item.hops:
        notes.append(f"hop from {', '.join(item.hops)}")
    if item.in_date_window is not None:
        notes.append("in the date window" if item.in_date_window else "outside the date window")
    if item.superseded_by is not None:
        notes.append(f"superseded by #{item.superseded_by}")
    if notes:
        lines.append(f"     {'; '.join(notes)}")
    return lines


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def print_explain(structured: dict[str, Any] | None) -> None:
    """Print the explanation of a recall's structured result (from this process, a server's
    socket or its HTTP tool), after a blank line; nothing when it carries none."""
    explain = (structured or {}).get("explain")
    if explain is not None:
        sys.stdout.write("\n" + format_explain(ExplainOut.model_validate(explain)) + "\n")
