"""How recalled passages read in the text an agent receives, and what that text costs.

`render_recall` is the `recall` tool's text content (and the CLI's output): a summary line,
passages grouped by session in time order under a heading with the session's dates, each
passage on a line with its speaker and turn id (`Ann #12:`), then multi-hop notes and
warnings. What is said once per recall is said in few words: the rankers are in the
structured result, not the text (a ranker that failed or did not load is in `warnings`). A line
starts with its time of day when that differs from the line above it under the same
heading (as chat logs show it): turns stamped with their session's time (imports, LoCoMo)
show it once per heading, not on every line — about a tenth of a LoCoMo recall's tokens.
`RenderedCost` prices that text while truncation chooses passages, so that `max_tokens`
bounds what goes into the model's context, not only the passages' own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from smartsearch_mcp.tokens import TokenCounter
from smartsearch_mcp.types import Hop, Scored


def _count_noun(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary_line(
    passages: int,
    sessions: int,
    tokens: int,
    stop_reason: str = "exhausted",
    score_at_cut: float | None = None,
) -> str:
    """The first line of a recall with passages, saying why no more were returned."""
    stop = stop_phrase(stop_reason, score_at_cut)
    return (
        f"{_count_noun(passages, 'passage')} from {_count_noun(sessions, 'session')} "
        f"({tokens} tokens; {stop})."
    )


def stop_phrase(stop_reason: str, score_at_cut: float | None = None) -> str:
    """Why truncation stopped, in words."""
    if stop_reason == "threshold":
        # + 0.0: a value that rounds to zero from below reads "0.00", not "-0.00" (which
        # would be longer than the longest line truncation prices; see _LONGEST_STOP)
        # The number is the confidence of the best passage left out (the best's is 1.00).
        if score_at_cut is None:
            return "stopped where confidence fell well below the best's"
        return f"stopped at confidence {round(score_at_cut, 2) + 0.0:.2f}, well below the best's"
    if stop_reason == "top_k":
        return "stopped at truncation.top_k passages"
    if stop_reason == "budget":
        return "stopped at max_tokens"
    return "every match returned"


# The longest stop phrase, for pricing the summary line before truncation has stopped.
_LONGEST_STOP = ("threshold", 0.0)


def no_match_line(query: str) -> str:
    """The first line of a recall without passages (the query is not repeated: the agent
    has it, and a long one would not fit a small budget)."""
    return "No stored memory matched the query."


def session_heading(session_id: str, namespace: str | None, day: str) -> str:
    """The heading of one day of a session (preceded by a blank line); `namespace` only when
    several are shown. A session over several days has a heading per day."""
    where = f" [{namespace}]" if namespace else ""
    return f"\n## Session {session_id}{where} — {day or 'undated'}"


def passage_line(scored: Scored, clock: str = "") -> str:
    """One passage as the agent reads it: `clock`, the time of day, when given (the heading
    has the date), speaker, `#` turn id (what `forget` takes), text, and the later turn that
    superseded it when one did ("(superseded by #41, 2026-11-25)")."""
    passage = scored.candidate.passage
    turn = passage.turn
    who = turn.speaker or turn.role
    when = f"[{clock}] " if clock else ""
    line = f"{when}{who} #{turn.id}: {passage.text}"
    later = scored.superseded_by
    if later is not None:
        day = f", {later.timestamp[:10]}" if later.timestamp else ""
        line += f" (superseded by #{later.turn_id}{day})"
    return line


def hop_line(hop: Hop) -> str:
    return f"(multi-hop: searched {hop.entity!r}, found in turns {hop.found_in[:5]})"


def warning_line(warning: str) -> str:
    return f"warning: {warning}"


def render_recall(
    query: str,
    passages: Sequence[Scored],
    tokens_used: int,
    hops: Sequence[Hop] = (),
    warnings: Sequence[str] = (),
    stop_reason: str = "exhausted",
    score_at_cut: float | None = None,
) -> str:
    """The text of a recall: passages grouped by session and day, in time order, under a
    heading with the date; each line gives the time of day."""
    if not passages:
        lines = [no_match_line(query)]
    else:
        groups: dict[tuple[str, str, str], list[Scored]] = {}
        for scored in passages:
            turn = scored.candidate.passage.turn
            key = (turn.namespace, turn.session_id, _day(turn.timestamp))
            groups.setdefault(key, []).append(scored)
        ordered = sorted(
            groups.items(),
            key=lambda item: min(s.candidate.passage.turn.timestamp or "" for s in item[1]),
        )
        sessions = len({(namespace, session) for namespace, session, _ in groups})
        lines = [summary_line(len(passages), sessions, tokens_used, stop_reason, score_at_cut)]
        many_namespaces = len({namespace for namespace, _, _ in groups}) > 1
        for (namespace, session_id, day), items in ordered:
            lines.append(session_heading(session_id, namespace if many_namespaces else None, day))
            shown: str | None = None  # the time of day on the line above, under this heading
            for scored in sorted(
                items, key=lambda s: (s.candidate.passage.turn.position, s.candidate.passage.start)
            ):
                clock = _clock(scored.candidate.passage.turn.timestamp)
                lines.append(passage_line(scored, clock if clock != shown else ""))
                shown = clock
    if passages:  # the turns multi-hop notes point to are among them
        lines.extend(hop_line(hop) for hop in hops)
    lines.extend(warning_line(warning) for warning in warnings)
    return "\n".join(lines)


@dataclass
class RenderedCost:
    """Prices passages by the text they add to a recall (see `render_recall`), as truncation
    adds them one by one: the passage's line (with its time of day unless a kept passage under
    the same heading has that time), and its heading when it opens a day of a session.
    `fixed` is what the text holds whatever is kept: the first line (at its longest),
    multi-hop notes and warnings.

    Line by line counts can differ from counting the whole text by a token here and there;
    truncation checks the whole rendered text at the end (see `truncate_to_budget`).
    """

    counter: TokenCounter
    query: str
    hops: Sequence[Hop] = ()
    warnings: Sequence[str] = ()
    # each kept heading (namespace, session, day) -> the times of day of its kept passages
    _groups: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)

    def fixed(self, max_tokens: int) -> int:
        """Tokens the text holds whatever passages are kept."""
        first = max(
            self.counter.count(no_match_line(self.query)),
            # the longest summary: counts of at most max_tokens digits, the same for sessions
            self.counter.count(summary_line(max_tokens, max_tokens, max_tokens, *_LONGEST_STOP)),
        )
        notes = [hop_line(hop) for hop in self.hops] + [warning_line(w) for w in self.warnings]
        return first + sum(self.counter.count("\n" + line) for line in notes)

    def reset(self) -> None:
        self._groups.clear()

    def cost(self, scored: Scored) -> int:
        """What adding `scored` to the kept passages adds to the text (not yet recorded)."""
        turn = scored.candidate.passage.turn
        day = _day(turn.timestamp)
        clocks = self._groups.get((turn.namespace, turn.session_id, day))
        clock = _clock(turn.timestamp)
        shown = clock if clocks is None or clock not in clocks else ""
        tokens = self.counter.count("\n" + passage_line(scored, shown))
        if clocks is None:
            tokens += self.counter.count(session_heading(turn.session_id, turn.namespace, day))
        return tokens

    def add(self, scored: Scored) -> None:
        """Record that `scored` was kept."""
        turn = scored.candidate.passage.turn
        key = (turn.namespace, turn.session_id, _day(turn.timestamp))
        self._groups.setdefault(key, set()).add(_clock(turn.timestamp))

    def total(self, kept: Sequence[Scored], max_tokens: int) -> int:
        """Tokens of the whole text for `kept`, counted as rendered (the summary line with
        `max_tokens` as the token count, which has at least as many digits as the real one)."""
        text = render_recall(self.query, kept, max_tokens, self.hops, self.warnings, *_LONGEST_STOP)
        return self.counter.count(text)


def _day(timestamp: str | None) -> str:
    return (timestamp or "")[:10]


def _clock(timestamp: str | None) -> str:
    """The time of day of a stored timestamp, HH:MM ("" without one)."""
    return (timestamp or "")[11:16]
