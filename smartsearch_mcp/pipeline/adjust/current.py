"""Current facts first: a later turn that updates an earlier one (a date moved, a vendor
replaced, a port changed) trades places with it, and the earlier says it was superseded."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.bursts import burst_units, units_in_order
from smartsearch_mcp.pipeline.updates import (
    asked_value_kinds,
    clauses_naming,
    gives_a_new_value,
    keeps_to_what_was_asked,
    names_a_replaced_value,
    replaced_values,
    shares_a_subject,
    states_a_change,
    values_of,
)
from smartsearch_mcp.pipeline.words import light_stem
from smartsearch_mcp.types import Scored, Successor

SUPERSEDE_WINDOW = 10


def prefer_later_restatements(
    scored: Sequence[Scored],
    similarity: Any,
    threshold: float,
    needs_change: bool = False,
    same_speaker: bool = False,
    min_confidence: float = 0.5,
    asked: Collection[str] | None = None,
    value_kinds: Collection[str] | None = None,
    texts: Sequence[str] | None = None,
) -> list[Scored]:
    """Current facts first: among the first `SUPERSEDE_WINDOW` passages, a turn said in a
    later session than a higher-ranked one about the same thing — similarity[i][j] (in the
    order of `scored`) at least `threshold`, confidence at least `min_confidence` x
    its — trades places and scores with it. A plan moved, a version upgraded, a person
    replaced: the later statement is the current one; the earlier stays, where the later
    was (moving it just below instead pushed every passage between them down, and under a
    tight budget a long one into it: BEAM chats 7–9 −1.9 points at 1,500 tokens).
    With `needs_change` only a later turn that says something changed
    (`updates.states_a_change`) or gives a new value of a kind the earlier gives (another
    date, amount, time or number: `updates.gives_a_new_value`; with `value_kinds`, only of
    a kind the question asks for, `updates.asked_value_kinds`, none when it asks for none:
    a window moved to another day says nothing new of the version upgraded to), and with
    `same_speaker` only one said by the same person (speaker and role) as the earlier turn:
    people update their own statements, while a later turn of someone else on the topic is
    conversation.
    With `asked` (the stems of the question's terms) the later turn must also be about what
    the earlier says — name every word of the question the earlier names, or share another
    content word with it (`updates.shares_a_subject`): the question's own words make any two
    of its passages look alike.
    A later turn updates only the earlier passage of the window it is most like (of
    another session, by `similarity`), that passage's session, and what that passage
    replaced in turn: a date moved twice replaces both earlier dates, and another date moved
    in the same month is not the same thing. (A replacement said outright names what it
    replaced, and replaces it wherever it was said.)
    Each passage of the window that a later one supersedes says so (`Scored.superseded_by`:
    the latest such turn), whichever of the two ranks first.
    `texts` replaces what each passage says (default: its text; for a change said, its
    turn's): a burst speaks as one (see `current_facts`).
    threshold <= 0 returns the input unchanged.
    """
    if threshold <= 0 or len(scored) < 2:
        return list(scored)
    window = min(SUPERSEDE_WINDOW, len(scored))
    values: dict[int, dict[str, frozenset[str]]] = {}
    replaced: dict[int, frozenset[str]] = {}
    decided: dict[tuple[int, int], bool] = {}

    def text(k: int) -> str:
        return texts[k] if texts is not None else scored[k].candidate.passage.text

    def values_at(k: int) -> dict[str, frozenset[str]]:
        if k not in values:
            passage = scored[k].candidate.passage
            values[k] = values_of(text(k), passage.turn.timestamp or "")
        return values[k]

    def replaced_at(k: int) -> frozenset[str]:
        if k not in replaced:
            replaced[k] = replaced_values(text(k))
        return replaced[k]

    def supersedes(j: int, i: int) -> bool:
        if (j, i) not in decided:
            decided[j, i] = _supersedes_in(scored, j, i, similarity[i][j])
        return decided[j, i]

    def _supersedes_in(items: Sequence[Scored], j: int, i: int, similar: float) -> bool:
        later, earlier = items[j], items[i]
        if _replies_to(later, earlier):
            return False
        gone = replaced_at(j)
        if gone:
            # said outright ("upgraded Python from 3.10 to 3.12"), by anyone, in any session,
            # and only of a turn that gives what was replaced
            old_text = text(i)
            if not names_a_replaced_value(gone, old_text):
                return False
            # ...for a question about what the earlier gave there: the clause with the
            # replaced value names a word of the question the earlier names (a job that
            # "reads gs://snap-in/ with pandas and writes gs://snap-out/" writes where it did
            # when the bucket it reads is replaced)
            if asked is not None and not keeps_to_what_was_asked(
                " ".join(clauses_naming(gone, old_text)), old_text, asked
            ):
                return False
            if not _later_and_sure(later, earlier, min_confidence):
                return False
        else:
            if not _supersedes(later, earlier, similar, threshold, min_confidence):
                return False
            # An update is of the turn it is most like, and of what that one replaced:
            # "Leo's appointment moved to December 3" updates the dentist's date, not the
            # moving day on December 20 it shares a month with.
            alike = _most_alike(items, j, similarity)
            if alike is not None and not (
                _same_session(items[alike], earlier) or supersedes(alike, i)
            ):
                return False
            if same_speaker and not _same_speaker(later, earlier):
                return False
            new_value = (value_kinds is None or bool(value_kinds)) and gives_a_new_value(
                values_at(j), values_at(i), value_kinds
            )
            if needs_change and not (
                new_value
                or states_a_change(
                    texts[j] if texts is not None else later.candidate.passage.turn.text
                )
            ):
                return False
            # A turn that says several things is updated, for a question, only in what the
            # question asks about: a new value of the kind it asks for, or one of the
            # question's words the earlier names ("the backup cron is now 02:30" is no update
            # of the backup job's description, asked which bucket the job writes to)
            asked_for = bool(value_kinds) and new_value
            if not (asked is None or asked_for) and not keeps_to_what_was_asked(
                text(j), text(i), asked
            ):
                return False
        return asked is None or shares_a_subject(text(j), text(i), asked)

    order = list(range(len(scored)))
    scores = [item.score for item in scored]
    for j in range(1, window):
        for position in range(order.index(j)):
            i = order[position]
            if i >= window or not supersedes(j, i):
                continue
            # the two trade places (and scores): the passages between them keep theirs, so
            # what fits the budget is the same set of passages, only the order changes
            at = order.index(j)
            order[position], order[at] = j, i
            scores[i], scores[j] = scores[j], scores[i]
            break
    latest: dict[int, int] = {}  # each superseded passage's latest successor
    for i in range(window):
        for j in range(window):
            if j == i or not supersedes(j, i):
                continue
            if i not in latest or _said_at(scored[j]) > _said_at(scored[latest[i]]):
                latest[i] = j
    successors = {
        i: Successor(turn.id, turn.timestamp)
        for i, j in latest.items()
        for turn in (scored[j].candidate.passage.turn,)
    }
    return [
        scored[k]
        if scores[k] == scored[k].score and k not in successors
        else dataclasses.replace(scored[k], score=scores[k], superseded_by=successors.get(k))
        for k in order
    ]


def _most_alike(items: Sequence[Scored], j: int, similarity: Any) -> int | None:
    """The passage of the window (`similarity`'s rows) said before `items[j]`, in another
    session, that it is most like; None when there is none."""
    earlier = [
        k
        for k in range(min(len(items), len(similarity)))
        if not _same_session(items[k], items[j]) and _said_at(items[k]) < _said_at(items[j])
    ]
    return max(earlier, key=lambda k: float(similarity[k][j]), default=None)


def _said_at(item: Scored) -> tuple[str, int]:
    turn = item.candidate.passage.turn
    return (turn.timestamp or "", turn.id)


def _same_session(a: Scored, b: Scored) -> bool:
    first, second = a.candidate.passage.turn, b.candidate.passage.turn
    return (first.namespace, first.session_id) == (second.namespace, second.session_id)


def _replies_to(later: Scored, earlier: Scored) -> bool:
    """Whether `later` is the turn right after `earlier` in its session, by the other side (an
    assistant's reply to a user's turn, or the user's to the assistant's): a reply carrying out
    a request ("Changed the port from 8080 to 9090" after "Jenkins grabbed 8080, use 9090")
    agrees with it, it does not supersede it."""
    new, old = later.candidate.passage.turn, earlier.candidate.passage.turn
    return (
        _same_session(later, earlier)
        and new.position == old.position + 1
        and {new.role, old.role} == {"user", "assistant"}
    )


def _same_speaker(a: Scored, b: Scored) -> bool:
    first, second = a.candidate.passage.turn, b.candidate.passage.turn
    if {first.role, second.role} == {"user", "assistant"}:
        return True
    return (first.speaker, first.role) == (second.speaker, second.role)


def _supersedes(
    later: Scored,
    earlier: Scored,
    similarity: float,
    threshold: float,
    min_confidence: float,
) -> bool:
    # Turns of one session follow each other on one topic: that is conversation, not an
    # update. A restatement comes back to the subject in a later session.
    if _same_session(later, earlier) or not float(similarity) >= threshold:
        return False
    return _later_and_sure(later, earlier, min_confidence)


def _later_and_sure(later: Scored, earlier: Scored, min_confidence: float) -> bool:
    """Whether `later` was said after `earlier`, with at least `min_confidence` x its
    confidence."""
    if _said_at(later) <= _said_at(earlier):
        return False
    sure, than = later.confidence, earlier.confidence
    return sure is None or than is None or sure >= min_confidence * than


def current_facts(scored: list[Scored], context: Context) -> list[Scored]:
    """`prefer_later_restatements` with the rank.supersede* settings: similarity is the
    bi-encoder's, so nothing moves without its vectors, and the later turn must be about what
    the earlier says (`updates.shares_a_subject`).
    A burst (`pipeline.bursts`: "luigi's cancelled us" / "thai place on 5th then?") says
    one thing in several messages, so it updates and is updated as one: its joined text is
    what it says, its similarity to another burst that of their messages' summed vectors, and
    its messages move together, led by its best-ranked one: bursts that trade places take
    the places their messages held (each message the score of its place)."""
    if context.similarity is None or context.analysis is None or not scored:
        return scored
    rank, analysis = context.rank, context.analysis
    similarity = context.similarity

    def prefer(items: Sequence[Scored], matrix: Any, texts: Sequence[str] | None) -> list[Scored]:
        return prefer_later_restatements(
            items,
            matrix,
            rank.supersede,
            rank.supersede_needs_change,
            rank.supersede_same_speaker,
            rank.supersede_confidence,
            asked={light_stem(term.term) for term in analysis.terms},
            value_kinds=asked_value_kinds(analysis.query),
            texts=texts,
        )

    # the bursts with a message among the first passages: the reach of a message alone
    units = [u for u in burst_units(scored, context.burst_seconds) if u[0] < SUPERSEDE_WINDOW]
    if all(len(unit) == 1 for unit in units):
        return prefer(scored, similarity(scored[:SUPERSEDE_WINDOW]), None)
    members = [i for unit in units for i in unit]
    alike = similarity([scored[i] for i in members])
    starts = list(itertools.accumulate((len(unit) for unit in units), initial=0))
    # the cosine of the bursts' summed message vectors, from the messages' similarities
    blocks = [
        [float(alike[a:b, c:d].sum()) for c, d in itertools.pairwise(starts)]
        for a, b in itertools.pairwise(starts)
    ]
    norms = np.sqrt(np.maximum([blocks[k][k] for k in range(len(units))], 1e-12))
    matrix = np.array(blocks) / np.outer(norms, norms)
    texts = [
        "\n".join(
            scored[i].candidate.passage.text
            for i in sorted(unit, key=lambda i: scored[i].candidate.passage.turn.position)
        )
        for unit in units
    ]
    moved = prefer([scored[unit[0]] for unit in units], matrix, texts)
    at = {scored[unit[0]].candidate.passage.key: k for k, unit in enumerate(units)}
    out = units_in_order(scored, units, [at[led.candidate.passage.key] for led in moved])
    successor = {
        scored[i].candidate.passage.key: led.superseded_by
        for led in moved
        if led.superseded_by is not None
        for i in units[at[led.candidate.passage.key]]
    }
    return [
        dataclasses.replace(item, superseded_by=successor[key])
        if (key := item.candidate.passage.key) in successor and item.superseded_by != successor[key]
        else item
        for item in out
    ]
