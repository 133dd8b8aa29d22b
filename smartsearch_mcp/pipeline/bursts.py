"""Bursts: messages one speaker sends in a row, within a short time, read as one thought.

In a messaging app a thought often arrives as several messages ("ahh" / "passed my driving
test" / "first try!!"): the words a question matches are spread over them and no single message
holds the answer. A burst is a run of consecutive turns of one session by the same speaker,
each said at most `passages.burst_seconds` after the one before it (turns without a time
count as said together), of short turns only (a turn split into several passages is a
thought of its own), at most `passages.max_words` words in all.

Two signals use them: retrieval scores each message also by the words of its whole burst
(`add_burst_matches`), and ranking raises the messages of a burst to just below its best one
(`credit_bursts`), so that a burst is recalled together.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from datetime import datetime

from smartsearch_mcp.pipeline.fusion import with_lifted_scores
from smartsearch_mcp.types import Passage, Scored


def burst_groups(passages: Sequence[Passage], seconds: int, max_words: int) -> list[int]:
    """A group number per passage: passages of one burst share it, every other passage has
    a number of its own. Deterministic; `seconds` <= 0 puts every passage alone."""
    groups = list(range(len(passages)))
    if seconds <= 0 or len(passages) < 2:
        return groups
    whole = _whole_turns(passages)
    order = sorted(
        (i for i in range(len(passages)) if whole[i]),
        key=lambda i: (
            passages[i].turn.namespace,
            passages[i].turn.session_id,
            passages[i].turn.position,
        ),
    )
    words = len(passages[order[0]].text.split()) if order else 0  # in the current group
    for previous, current in itertools.pairwise(order):
        size = len(passages[current].text.split())
        if continues_burst(passages[previous], passages[current], seconds) and (
            words + size <= max_words
        ):
            groups[current] = groups[previous]
            words += size
        else:
            words = size
    return groups


def burst_texts(texts: Sequence[str], groups: Sequence[int]) -> dict[int, str]:
    """The joined text of each burst of more than one passage, by group number."""
    members: dict[int, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    return {
        group: "\n".join(texts[i] for i in rows) for group, rows in members.items() if len(rows) > 1
    }


def burst_groups_grown(
    passages: Sequence[Passage],
    lowered: Sequence[str],
    before: int,
    grouped: tuple[list[int], dict[int, str]],
    seconds: int,
    max_words: int,
) -> tuple[list[int], dict[int, str]]:
    """`burst_groups` and `burst_texts` of `passages`, whose first `before` had `grouped`:
    bursts never cross sessions, so only the sessions of the passages after them are grouped
    again (wherever in them those fall), the rest kept as they were."""
    groups, texts = grouped

    def session(index: int) -> tuple[str, str]:
        return passages[index].turn.namespace, passages[index].turn.session_id

    touched = {session(i) for i in range(before, len(passages))}
    named = {session_id for _, session_id in touched}  # a cheap test first: 0.1 s at 100,000
    rows = [
        i
        for i, passage in enumerate(passages)
        if passage.turn.session_id in named and session(i) in touched
    ]
    out = [*groups[:before], *range(before, len(passages))]
    local = burst_groups([passages[i] for i in rows], seconds, max_words)
    for row, group in zip(rows, local, strict=True):
        out[row] = rows[group]
    kept = {
        group: text
        for group, text in texts.items()
        if passages[group].turn.session_id not in named or session(group) not in touched
    }
    return out, kept | burst_texts([lowered[i] for i in rows], [out[i] for i in rows])


def add_burst_matches(
    scores: Sequence[float],
    own: Sequence[float],
    burst: dict[int, float],
    groups: Sequence[int],
) -> list[float]:
    """Each passage's score plus what matching its whole burst adds to matching it alone
    (`own`: its grep score alone; `burst`: the grep score of each burst's joined text)."""
    out = list(scores)
    for index, group in enumerate(groups):
        whole = burst.get(group)
        if whole is not None and whole > own[index]:
            out[index] += whole - own[index]
    return out


def credit_bursts(
    scored: Sequence[Scored],
    credit: float,
    seconds: int,
    gives_what_was_asked: Callable[[Passage], bool] | None = None,
) -> list[Scored]:
    """Raise every passage of a burst to at least `credit` x the score (and confidence) of its
    best-ranked message, just below it (in their own order: "omg" / "we got the flat!!" /
    "3rd floor on Linden St", asked where the flat is, puts the street before the "omg"), and
    sort again, best first.
    With `gives_what_was_asked` (whether a message gives the kind of value the question asks
    for), a burst whose best message gives none but another does is led by the first that
    does, with the best's score: asked when the keys come, "we got the flat!!" / "keys on
    thursday" puts thursday first, the words of the question being in the one before it.
    Bursts are found among `scored` (see `burst_groups`); credit 0 returns the input
    unchanged."""
    if credit <= 0 or seconds <= 0 or len(scored) < 2:
        return list(scored)
    raised = [item.score for item in scored]
    sure = [item.confidence for item in scored]
    order_key = [float(i) for i in range(len(scored))]
    for unit in burst_units(scored, seconds):
        top = leader = unit[0]  # `scored` is best first
        if gives_what_was_asked is not None:
            lead = _first_giving(scored, unit, gives_what_was_asked)
            if lead is not None:
                leader, order_key[lead] = lead, float(top)
                raised[lead] = max(raised[lead], scored[top].score)
                if scored[top].confidence is not None:
                    sure[lead] = max(sure[lead] or 0.0, scored[top].confidence or 0.0)
        for index in unit:
            if index == leader:
                continue
            lifted = credit * raised[leader]
            if lifted > raised[index] or (leader != top and raised[index] >= raised[leader]):
                raised[index] = max(raised[index], lifted)
                order_key[index] = order_key[leader] + 0.5 + index * 1e-6  # in their own order
                # ...and as certain as the message that lifted it, so that truncation does
                # not stop at the burst's other messages ("ok" after "the concert moved to
                # June 13")
                if (certain := sure[leader]) is not None:
                    sure[index] = max(sure[index] or 0.0, credit * certain)
    return with_lifted_scores(scored, raised, sure, order_key)


def _first_giving(
    scored: Sequence[Scored], rows: Sequence[int], gives: Callable[[Passage], bool]
) -> int | None:
    """The first of a burst's messages (`rows`, best first) that gives what was asked, when
    the best does not (None: it does, or none does, or it is alone)."""
    if len(rows) < 2 or gives(scored[rows[0]].candidate.passage):
        return None
    return next((i for i in rows[1:] if gives(scored[i].candidate.passage)), None)


def burst_units(scored: Sequence[Scored], seconds: int) -> list[list[int]]:
    """Every burst of `scored` (see `burst_groups`; a passage alone is a burst of one), in
    the order its best-ranked message comes, as the indexes of its messages, best first."""
    groups = burst_groups([item.candidate.passage for item in scored], seconds, 10**9)
    units: dict[int, list[int]] = {}
    for index, group in enumerate(groups):
        units.setdefault(group, []).append(index)
    return list(units.values())


def units_in_order(
    scored: Sequence[Scored], units: Sequence[Sequence[int]], order: Sequence[int]
) -> list[Scored]:
    """`scored` with some of its bursts (`units`, see `burst_units`) put in `order` (indexes
    of `units`): those that change places take the places their messages held, each burst's
    messages together and in their order, each message with the score of its place; every
    other passage keeps its place."""
    traded = [k for at, k in enumerate(order) if k != at]
    places = iter(sorted(i for k in traded for i in units[k]))
    moving = set(traded)
    out = list(scored)
    for k in order:
        if k not in moving:
            continue
        for i in units[k]:
            at = next(places)
            item, score = scored[i], scored[at].score
            out[at] = item if item.score == score else dataclasses.replace(item, score=score)
    return out


def _whole_turns(passages: Sequence[Passage]) -> list[bool]:
    """Whether each passage is its turn's whole text (turns split into passages are long)."""
    return [p.start == 0 and p.end >= len(p.turn.text.rstrip()) for p in passages]


def continues_burst(before: Passage, after: Passage, seconds: int) -> bool:
    """Whether `after` continues the burst `before` is in: the next turn of the session, by
    the same named speaker, at most `seconds` later, neither of them an assistant's (an AI
    assistant's messages in a row are split by its tool calls, each a statement of its own,
    not one thought typed in pieces)."""
    first, second = before.turn, after.turn
    if (first.namespace, first.session_id) != (second.namespace, second.session_id):
        return False
    if first.role == "assistant" or second.role == "assistant":
        return False
    if second.position != first.position + 1 or not first.speaker:
        return False
    if first.speaker != second.speaker:
        return False
    return _within(first.timestamp, second.timestamp, seconds)


def _within(earlier: str | None, later: str | None, seconds: int) -> bool:
    if not earlier or not later:
        return earlier == later  # both without a time: said together
    try:
        start = datetime.fromisoformat(earlier[:19])
        end = datetime.fromisoformat(later[:19])
    except ValueError:
        return earlier == later
    return 0 <= (end - start).total_seconds() <= seconds
