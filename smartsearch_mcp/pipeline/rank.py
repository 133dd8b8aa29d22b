"""Stage 4: rank. The configured scorers run in parallel worker threads (off the event loop),
then reciprocal-rank fusion combines their orderings.

With a cascade (`rank.expensive_candidates` = N > 0), the rankers that cost a model pass per
candidate (`EXPENSIVE_RANKERS`: the cross-encoder, ColBERT) score only the N best passages of
the ranking the other rankers make (`order_candidates` over their scores: the first pass);
those N are then ranked with every ranker, and the rest follow in the first pass's order
(`follow_with_rest`)."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread

from smartsearch_mcp.config import EXPENSIVE_RANKERS as EXPENSIVE
from smartsearch_mcp.config import RankConfig
from smartsearch_mcp.dates import DateRange
from smartsearch_mcp.pipeline.bursts import credit_bursts
from smartsearch_mcp.pipeline.dated import windows_of
from smartsearch_mcp.pipeline.fusion import (
    competition_ranks,
    reciprocal_rank_fusion,
    with_lifted_scores,
)
from smartsearch_mcp.pipeline.passages import asks_only
from smartsearch_mcp.pipeline.updates import (
    gives_a_new_value,
    shares_a_subject,
    states_a_change,
    values_of,
)
from smartsearch_mcp.types import Candidate, Scored, Successor, Turn

log = logging.getLogger(__name__)

ScoreJob = Callable[[], list[float]]

# With a cascade these score only the first pass's best candidates (see config.py); the
# others read stored vectors or scores.
EXPENSIVE_RANKERS = frozenset(EXPENSIVE)


async def run_scorers(
    jobs: Mapping[str, ScoreJob], limiter: anyio.CapacityLimiter
) -> tuple[dict[str, list[float]], dict[str, str], dict[str, float]]:
    """Run each job in a worker thread, at most `limiter` at once.

    Returns (scores by ranker, errors by ranker, milliseconds by ranker). A ranker that
    raises is reported, not fatal: recall goes on with the others.
    """
    scores: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    timings: dict[str, float] = {}

    async def run(name: str, job: ScoreJob) -> None:
        started = time.perf_counter()
        try:
            scores[name] = await anyio.to_thread.run_sync(job, limiter=limiter)
        except Exception as exc:  # a ranker failing must not fail recall; it is reported
            log.warning("ranker %s failed: %s", name, exc, exc_info=True)
            errors[name] = f"{type(exc).__name__}: {exc}"
        timings[name] = (time.perf_counter() - started) * 1000

    async with anyio.create_task_group() as group:
        for name, job in jobs.items():
            group.start_soon(run, name, job)
    return scores, errors, timings


def fuse(
    candidates: Sequence[Candidate],
    scores: Mapping[str, Sequence[float]],
    rrf_k: int,
    weights: Mapping[str, float],
    method: str = "rrf",
    unseen: int = 0,
) -> list[Scored]:
    """Candidates sorted by fused score (ties keep candidate order), each with its raw
    per-ranker scores. `method`: "rrf" (`reciprocal_rank_fusion`) or "rrf_calibrated"
    (`calibrated_fusion`; `unseen`: passages of the scope that are not candidates)."""
    names = sorted(scores)
    if not names:
        fused = [c.lexical_score for c in candidates]
    elif len(names) == 1:
        # One ranker: its own scores are more informative than a rank transform (NaN, a
        # passage the ranker could not score, sorts last).
        fused = [-math.inf if math.isnan(v) else float(v) for v in scores[names[0]]]
    elif method == "rrf":
        fused = reciprocal_rank_fusion({n: scores[n] for n in names}, k=rrf_k, weights=weights)
    else:  # "rrf_calibrated"
        fused = calibrated_fusion({n: scores[n] for n in names}, rrf_k, weights, max(0, unseen))
    scored = [
        Scored(
            candidate=c,
            score=float(fused[i]),
            ranker_scores={n: float(scores[n][i]) for n in names},
        )
        for i, c in enumerate(candidates)
    ]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].score, i))
    return [scored[i] for i in order]


def follow_with_rest(head: Sequence[Scored], first_pass: Sequence[Scored]) -> list[Scored]:
    """A cascade's final order: `head` (the first pass's best passages, ranked again with
    every ranker), then the other passages of `first_pass` in its order, with their first-pass
    scores and confidence. Their scores are shifted down by one amount so that none is above
    the head's lowest (scores stay sorted, their differences kept; a -inf stays -inf)."""
    taken = {item.candidate.passage.key for item in head}
    rest = [item for item in first_pass if item.candidate.passage.key not in taken]
    if not head or not rest or not math.isfinite(rest[0].score):
        return [*head, *rest]
    floor, top = head[-1].score, rest[0].score
    if top <= floor:
        return [*head, *rest]
    lowered = [dataclasses.replace(item, score=floor - (top - item.score)) for item in rest]
    return [*head, *lowered]


def calibrated_fusion(
    scores: Mapping[str, Sequence[float]],
    rrf_k: int,
    weights: Mapping[str, float],
    unseen: int,
) -> list[float]:
    """Reciprocal-rank fusion with each ranker's reciprocal rank at a passage weighed by how
    far that ranker's own score stands out there: (1 + c) / 2 x weight / (k + rank), c being
    the score calibrated as for the confidence (`_above_median`: 0 at the scope's median, 1
    at the ranker's best; unknown scores count as 0). A ranker whose best passages stand far
    above the rest weighs more for them than one whose first ranks are near-ties. Rankers
    are summed in name order; a weight of 0 leaves a ranker out."""
    fused = [0.0] * len(next(iter(scores.values()), []))
    for name in sorted(scores):
        weight = float(weights.get(name, 1.0))
        if weight == 0:
            continue
        column = [float(v) for v in scores[name]]
        calibrated = _above_median(column, unseen, RANKER_FLOORS.get(name))
        ranks = competition_ranks(column)
        for i, value in enumerate(calibrated):
            sure = 0.0 if math.isnan(value) else value
            fused[i] += weight * (1.0 + sure) / 2.0 / (rrf_k + ranks[i])
    return fused


def add_session_support(
    scored: Sequence[Scored], weight: float, top_n: int, window: int = 0
) -> list[Scored]:
    """Raise each passage by `weight` x the mean score of the `top_n` best passages of its
    session (itself included) and sort again, best first (ties keep their order).

    Evidence for a question tends to sit in the session where the question's topic was
    discussed; a passage in a session with several strong passages is more likely relevant
    than an equally scored stray one. With `window` > 0 only passages at most `window` turns
    away in the same session count: a long session covers many topics, and its strong
    passages elsewhere say little about this one. weight 0 returns the input order unchanged.
    """
    if weight <= 0 or not scored:
        return list(scored)
    by_session: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for item in scored:
        turn = item.candidate.passage.turn
        key = (turn.namespace, turn.session_id)
        by_session.setdefault(key, []).append((turn.position, item.score))
    whole = {key: _mean_of_best([s for _, s in v], top_n) for key, v in by_session.items()}
    raised = []
    for item in scored:
        turn = item.candidate.passage.turn
        key = (turn.namespace, turn.session_id)
        if window > 0:
            near = [s for p, s in by_session[key] if abs(p - turn.position) <= window]
            support = _mean_of_best(near, top_n)
        else:
            support = whole[key]
        raised.append(dataclasses.replace(item, score=item.score + weight * support))
    order = sorted(range(len(raised)), key=lambda i: (-raised[i].score, i))
    return [raised[i] for i in order]


def credit_replied_turns(scored: Sequence[Scored], credit: float) -> list[Scored]:
    """Raise the user turn each assistant passage replies to to at least `credit` x the
    passage's score, and sort again, best first. A turn raised to its reply's score comes just
    ahead of it, in conversation order. The turn replied to is the best-ranked of the user's
    turns in a row just before the reply in its session (a user may say several things before
    the assistant answers: "Bought new shoes, Brooks Ghost 16." / "Weekly mileage is back up
    to 30 km." / "Nice. Alternate the new shoes...").

    An assistant's reply repeats the user's words at length and so outranks them, while the
    user's turn holds what was actually said ("I've set work-free Sundays starting May 5"
    before a long piece of advice about boundaries). An assistant turn that only asks ("Do
    you want a feature flag for the PDF layout?") names the subject its answer leaves out,
    so its credit goes to the user's turn after it instead ("Yes, behind the flag
    new_invoice_pdf"). Only turns among `scored` rise, through their first passage; credit 0
    returns the input order unchanged.
    """
    if credit <= 0 or not scored:
        return list(scored)
    first_passage: dict[tuple[str, str, int], int] = {}
    for index, item in enumerate(scored):
        passage = item.candidate.passage
        if passage.start == 0 and passage.turn.role == "user":
            turn = passage.turn
            first_passage[(turn.namespace, turn.session_id, turn.position)] = index
    raised = [item.score for item in scored]
    sure = [item.confidence for item in scored]
    order_key = [float(index) for index in range(len(scored))]
    asks: dict[int, bool] = {}  # by turn id: a long turn has many passages
    for index, item in enumerate(scored):
        turn = item.candidate.passage.turn
        if turn.role != "assistant":
            continue
        if turn.id not in asks:
            asks[turn.id] = asks_only(turn.text)
        if asks[turn.id]:  # the user's answer holds what it asks about
            answered = first_passage.get((turn.namespace, turn.session_id, turn.position + 1))
        else:
            answered = first_passage.get((turn.namespace, turn.session_id, turn.position - 1))
            if answered is not None:
                answered = _best_of_user_run(first_passage, turn, answered)
        if answered is not None and credit * item.score > raised[answered]:
            raised[answered] = credit * item.score
            # just ahead of the reply when it says what the reply restates, else just after
            # it: the reply holds what the turn only asked for ("use 9090" / "Moved the API
            # to 9090: ..."), and the turn still comes with it
            ahead = restates(scored[answered], item)
            order_key[answered] = index - 0.5 if ahead else index + 0.5
            # ...and is as certain as the reply that lifted it
            if item.confidence is not None:
                sure[answered] = max(sure[answered] or 0.0, credit * item.confidence)
    return with_lifted_scores(scored, raised, sure, order_key)


def _best_of_user_run(
    first_passage: Mapping[tuple[str, str, int], int], reply: Turn, last: int
) -> int:
    """The best-ranked (lowest index) of the user turns in a row just before `reply`."""
    best = last
    position = reply.position - 2
    while (found := first_passage.get((reply.namespace, reply.session_id, position))) is not None:
        best = min(best, found)
        position -= 1
    return best


def discount_echoes(scored: Sequence[Scored], discount: float) -> list[Scored]:
    """Lower each assistant passage that replies to a user turn among `scored` (the turn
    just before it in its session) by `discount` x its score (|score|: a negative score goes
    further down), and sort again, best first (ties keep their order).

    A long reply restates the question it answers, so it matches the question's words about
    as well as the user's turn does, and a budget fills with two copies of one thing. When
    the user's turn was found, the reply adds less than another passage would; when it was
    not, the reply is all there is and keeps its score. 0 returns the input unchanged.
    """
    if discount <= 0 or not scored:
        return list(scored)
    said: dict[tuple[str, str, int], Scored] = {}
    for item in scored:
        turn = item.candidate.passage.turn
        key = (turn.namespace, turn.session_id, turn.position)
        if turn.role == "user" and (
            key not in said or item.candidate.lexical_score > said[key].candidate.lexical_score
        ):
            said[key] = item
    echoes = []
    for item in scored:
        turn = item.candidate.passage.turn
        replied = said.get((turn.namespace, turn.session_id, turn.position - 1))
        echoes.append(turn.role == "assistant" and replied is not None and restates(replied, item))
    return _lower_flagged(scored, discount, echoes)


# A reply restates the turn it answers when that turn holds at least this share of the
# reply's match of the question's words (the grep score).
RESTATED_SHARE = 0.5


def restates(said: Scored, reply: Scored) -> bool:
    """Whether `reply` restates the user turn `said` as far as the question goes: the turn
    matches the question's words about as well as the reply does. A reply that matches words
    the turn lacks ("switch to something async" answered by "replaced requests with
    httpx.AsyncClient") holds what the turn only asked for; a turn that matches nothing ("ok
    do 1 now") holds nothing the reply lacks. Neither is an echo, and the turn earns no
    credit from the reply."""
    if said.candidate.lexical_score >= RESTATED_SHARE * reply.candidate.lexical_score:
        return True
    meaning = [item.ranker_scores.get("bi_encoder") for item in (said, reply)]
    return None not in meaning and meaning[0] >= meaning[1]  # type: ignore[operator]


def discount_later_slices(scored: Sequence[Scored], discount: float) -> list[Scored]:
    """Lower every passage of a turn but that turn's best-ranked one by `discount` x its
    score, and sort again, best first (ties keep their order).

    A long turn is cut into passages (`passages.max_words`); its slices share its subject, so
    the second and third best slices of one long answer tend to crowd out other turns' best
    passages under a budget. 0 returns the input unchanged."""
    if discount <= 0 or not scored:
        return list(scored)
    seen: set[int] = set()
    later = []
    for item in scored:
        turn_id = item.candidate.passage.turn.id
        later.append(turn_id in seen)
        seen.add(turn_id)
    return _lower_flagged(scored, discount, later)


def _lower_flagged(
    scored: Sequence[Scored], discount: float, flagged: Sequence[bool]
) -> list[Scored]:
    """`scored` with each flagged (finite) score lowered by `discount` x |score|, sorted
    again best first (ties keep their order)."""
    lowered = [
        dataclasses.replace(item, score=item.score - discount * abs(item.score))
        if flag and math.isfinite(item.score)
        else item
        for item, flag in zip(scored, flagged, strict=True)
    ]
    order = sorted(range(len(lowered)), key=lambda i: (-lowered[i].score, i))
    return [lowered[i] for i in order]


# Rankers that are priors rather than evidence of relevance: they do not make a passage
# more certain (the speaker flag is 1 for every turn of the named person).
PRIOR_RANKERS = frozenset({"speaker"})
# What a passage a ranker never saw scores: a lexical ranker gives 0 to every passage it did
# not retrieve (nothing matched). For other rankers (similarities) it is taken to be the
# weakest candidate's score: the candidates hold each channel's best passages.
RANKER_FLOORS: Mapping[str, float] = {"lexical": 0.0, "bm25": 0.0}


def ranking_confidence(scored: Sequence[Scored], unseen: int = 0) -> list[float]:
    """How sure the ranking is of each passage, in [0, 1], in `scored`'s order.

    Fused RRF scores are ranks, not confidence: every query has a first passage. Instead each
    ranker's own scores (cosine, BM25, the grep score...) are calibrated — 0 at the median
    passage of the scope, 1 at that ranker's best — and a passage is as sure as the middle
    ranker says (the median over the rankers that could score it: agreement; one ranker's
    outlier neither makes a passage sure nor unsure; a passage not embedded yet is judged by
    the others). `unseen` is how many passages of the scope are not among the
    candidates: they count in each ranker's median at that ranker's floor (`RANKER_FLOORS`),
    so that with three matching turns out of twenty the third is not "typical" merely for
    being the median of three. A precise question has one or a few passages far above the
    rest; a vague one has many alike. Without per-ranker scores the fused score is calibrated
    the same way. Passages that carry a confidence already (see `with_confidence`) keep it.
    """
    if not scored:
        return []
    if all(item.confidence is not None for item in scored):
        return [float(item.confidence) for item in scored]  # type: ignore[arg-type]
    names = sorted({n for item in scored for n in item.ranker_scores} - PRIOR_RANKERS)
    columns = {n: [item.ranker_scores.get(n, math.nan) for item in scored] for n in names}
    if not columns:
        columns = {"": [item.score for item in scored]}
    calibrated = [
        _above_median(column, max(0, unseen), RANKER_FLOORS.get(name))
        for name, column in columns.items()
    ]
    return [_median_of_known(values) for values in zip(*calibrated, strict=True)]


def with_confidence(scored: Sequence[Scored], unseen: int = 0) -> list[Scored]:
    """`scored` with each passage's `ranking_confidence` attached (computed once, right after
    fusion, so that later adjustments can carry it: see `credit_replied_turns`)."""
    plain = [dataclasses.replace(item, confidence=None) for item in scored]
    values = ranking_confidence(plain, unseen)
    return [
        dataclasses.replace(item, confidence=value)
        for item, value in zip(scored, values, strict=True)
    ]


def _above_median(values: Sequence[float], unseen: int, floor: float | None) -> list[float]:
    """Each value's place between the median (0) and the best (1) of `values` plus `unseen`
    values at `floor` (default: the lowest of `values`), clipped; unknown (NaN) values stay
    unknown: the ranker has no say on them."""
    known = sorted(v for v in values if math.isfinite(v))
    if not known:
        return [math.nan] * len(values)
    low = known[0] if floor is None else min(floor, known[0])
    total = unseen + len(known)

    def at(k: int) -> float:  # the k-th smallest of `unseen` x low followed by `known`
        return low if k < unseen else known[k - unseen]

    median = at(total // 2) if total % 2 else (at(total // 2 - 1) + at(total // 2)) / 2
    span = known[-1] - median
    if span <= 0:
        return [(1.0 if v >= known[-1] else 0.0) if math.isfinite(v) else math.nan for v in values]
    return [
        min(1.0, max(0.0, (v - median) / span)) if math.isfinite(v) else math.nan for v in values
    ]


def _median_of_sorted(values: Sequence[float]) -> float:
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def _median_of_known(values: Sequence[float]) -> float:
    """The median of the known (not NaN) values; 0 when no ranker could score the passage."""
    known = sorted(v for v in values if not math.isnan(v))
    return _median_of_sorted(known) if known else 0.0


SUPERSEDE_WINDOW = 10
# The config's default (one source): a later turn needs this share of the earlier's confidence.
SUPERSEDE_CONFIDENCE: float = RankConfig.supersede_confidence


def prefer_later_restatements(
    scored: Sequence[Scored],
    similarity: Any,
    threshold: float,
    needs_change: bool = False,
    same_speaker: bool = False,
    min_confidence: float = SUPERSEDE_CONFIDENCE,
    within_session: bool = False,
    asked: Collection[str] | None = None,
    value_asked: bool = True,
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
    date, amount, time or number: `updates.gives_a_new_value`; only when `value_asked`, the
    question asks for a value: `updates.asks_for_a_value`) supersedes, and with
    `same_speaker` only one said by the same person (speaker and role) as the earlier turn:
    people update their own statements, while a later turn of someone else on the topic is
    conversation. With `within_session` a later turn of the same session may supersede too
    ("omg you're right, changed it to lemon"): meant with `needs_change`, since turns of one
    session follow each other on one topic.
    With `asked` (the stems of the question's terms) the later turn must also be about what
    the earlier says — name every word of the question the earlier names, or share another
    content word with it (`updates.shares_a_subject`): the question's own words make any two
    of its passages look alike.
    Each passage of the window that a later one supersedes says so (`Scored.superseded_by`:
    the latest such turn), whichever of the two ranks first.
    threshold <= 0 returns the input unchanged.
    """
    if threshold <= 0 or len(scored) < 2:
        return list(scored)
    window = min(SUPERSEDE_WINDOW, len(scored))
    values: dict[int, dict[str, frozenset[str]]] = {}
    decided: dict[tuple[int, int], bool] = {}

    def values_at(k: int) -> dict[str, frozenset[str]]:
        if k not in values:
            passage = scored[k].candidate.passage
            values[k] = values_of(passage.text, passage.turn.timestamp or "")
        return values[k]

    def supersedes(j: int, i: int) -> bool:
        if (j, i) not in decided:
            decided[j, i] = _supersedes_in(scored, j, i, similarity[i][j])
        return decided[j, i]

    def _supersedes_in(items: Sequence[Scored], j: int, i: int, similar: float) -> bool:
        later, earlier = items[j], items[i]
        if not _supersedes(later, earlier, similar, threshold, min_confidence, within_session):
            return False
        if same_speaker and not _same_speaker(later, earlier):
            return False
        if needs_change and not (
            states_a_change(later.candidate.passage.turn.text)
            or (value_asked and gives_a_new_value(values_at(j), values_at(i)))
        ):
            return False
        return asked is None or shares_a_subject(
            later.candidate.passage.text, earlier.candidate.passage.text, asked
        )

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
    successors: dict[int, Successor] = {}
    for i in range(window):
        for j in range(window):
            if j == i or not supersedes(j, i):
                continue
            turn = scored[j].candidate.passage.turn
            known = successors.get(i)
            if known is None or (turn.timestamp or "", turn.id) > (
                known.timestamp or "",
                known.turn_id,
            ):
                successors[i] = Successor(turn.id, turn.timestamp)
    return [
        scored[k]
        if scores[k] == scored[k].score and k not in successors
        else dataclasses.replace(scored[k], score=scores[k], superseded_by=successors.get(k))
        for k in order
    ]


def _same_speaker(a: Scored, b: Scored) -> bool:
    first, second = a.candidate.passage.turn, b.candidate.passage.turn
    return (first.speaker, first.role) == (second.speaker, second.role)


def _supersedes(
    later: Scored,
    earlier: Scored,
    similarity: float,
    threshold: float,
    min_confidence: float,
    within_session: bool,
) -> bool:
    new, old = later.candidate.passage.turn, earlier.candidate.passage.turn
    # Turns of one session follow each other on one topic: that is conversation, not an
    # update. A restatement comes back to the subject in a later session.
    same_session = (new.namespace, new.session_id) == (old.namespace, old.session_id)
    if (same_session and not within_session) or not float(similarity) >= threshold:
        return False
    if (new.timestamp or "", new.id) <= (old.timestamp or "", old.id):
        return False
    sure, than = later.confidence, earlier.confidence
    return sure is None or than is None or sure >= min_confidence * than


def prefer_time_range(
    scored: Sequence[Scored], time_range: DateRange | None
) -> tuple[list[Scored], str | None]:
    """Passages inside the question's time range first, then the others, each group in its
    ranked order; and a warning when none is inside (the ranking is then unchanged).

    A passage is inside when its turn was said in the range or its text names a date in it
    (`dated.DateWindow.holds`); for a day or month named without a year, when nothing is
    inside its last occurrence, the next one is tried (`dated.windows_of`). Inside passages
    are raised by the best score so that scores stay sorted: "What did we decide last
    week?" is about last week, however well an older decision matches the words.
    """
    if time_range is None or not scored:
        return list(scored), None
    inside: list[bool] = []
    for window in windows_of(time_range):
        # "Where are we staying in February?" asked in November: last February holds
        # nothing, the coming one may (a plan, a booking)
        inside = [window.holds(item.candidate.passage) for item in scored]
        if any(inside):
            break
    if not any(inside):
        when = time_range.expression or "the question's dates"
        return list(scored), (
            f"nothing recalled falls in {when!r} ({time_range.start:%Y-%m-%d} to "
            f"{time_range.end:%Y-%m-%d}, end excluded); these are the best matches from any time"
        )
    if all(inside):
        return list(scored), None
    lift = max(0.0, max(item.score for item in scored)) - min(
        item.score for item, ok in zip(scored, inside, strict=True) if ok
    )
    raised = [
        dataclasses.replace(item, score=item.score + lift) if ok else item
        for item, ok in zip(scored, inside, strict=True)
    ]
    order = sorted(range(len(raised)), key=lambda i: (not inside[i], i))
    return [raised[i] for i in order], None


def _mean_of_best(values: Sequence[float], top_n: int) -> float:
    best = sorted(values, reverse=True)[:top_n]
    return sum(best) / len(best)


def first_pass(
    candidates: Sequence[Candidate],
    scores: Mapping[str, Sequence[float]],
    rank: RankConfig,
    unseen: int = 0,
    burst_seconds: int = 0,
) -> list[Scored]:
    """A cascade's first pass: the candidates ranked (`order_candidates`) by the first pass's
    rankers among `scores` (`rank.first_pass_rankers()`: never the expensive ones), joined by
    the lexical scores when it lists them or when nothing else could order the candidates
    (the speaker prior alone cannot)."""
    names = rank.first_pass_rankers()
    cheap = {name: values for name, values in scores.items() if name in names}
    if "lexical" in names or not set(cheap) - PRIOR_RANKERS:
        cheap["lexical"] = [c.lexical_score for c in candidates]
    return order_candidates(candidates, cheap, rank, unseen, burst_seconds)


def order_candidates(
    candidates: Sequence[Candidate],
    scores: Mapping[str, Sequence[float]],
    rank: RankConfig,
    unseen: int = 0,
    burst_seconds: int = 0,
) -> list[Scored]:
    """The candidates best first: the rankers' `scores` fused (`fuse`, weighted by
    `rank.weights`) with their confidence (`with_confidence`; `unseen`: passages of the
    scope that are not candidates), then session support, burst and reply credit (which
    carry the confidence), and the discounts of echoing replies and of a turn's later
    slices."""
    weights = {name: rank.weights.get(name, 1.0) for name in scores}
    fused = with_confidence(
        fuse(candidates, scores, rank.rrf_k, weights, rank.fusion, unseen), unseen
    )
    fused = add_session_support(fused, rank.session_weight, rank.session_top, rank.session_window)
    fused = credit_bursts(fused, rank.burst_credit, burst_seconds)
    fused = credit_replied_turns(fused, rank.reply_credit)
    fused = discount_echoes(fused, rank.echo_discount)
    return discount_later_slices(fused, rank.slice_discount)
