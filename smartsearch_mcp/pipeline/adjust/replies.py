"""Reply credit and the echo discount: in a conversation with an assistant, the reply repeats
the user's words at length, and the user's turn is either what was said (it goes first) or
only a request ("use port 9443") or a question whose answer the reply holds (the reply goes
first)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.fusion import lower_flagged, with_lifted_scores
from smartsearch_mcp.pipeline.passages import asks_only, asks_question
from smartsearch_mcp.pipeline.updates import values_of
from smartsearch_mcp.types import Scored, Turn


def credit_replied_turns(scored: Sequence[Scored], credit: float) -> list[Scored]:
    """Raise the user turn each assistant passage replies to to at least `credit` x the
    passage's score, and sort again, best first. A turn raised to its reply's score comes just
    ahead of it, in conversation order. The turn replied to is the best-ranked of the user's
    turns in a row just before the reply in its session (a user may say several things before
    the assistant answers: "Repotted the fig into a 30 cm pot." / "It gets four hours of sun
    by the window." / "Good. Water it weekly...").

    An assistant's reply repeats the user's words at length and so outranks them, while the
    user's turn holds what was actually said ("I've made evenings phone-free from 9pm
    starting June 2" before a long piece of advice about sleep). An assistant turn that only
    asks ("Should the CSV export go behind a feature flag?") names the subject its answer
    leaves out, so its credit goes to the user's turn after it instead ("Yes, call the flag
    csv_export_v2"). A user's short question ranked above the reply that answers it lifts
    the reply's best passage instead, to just ahead of it: the question holds no answer. Only
    passages among `scored` rise (a user turn through its first passage); credit 0 returns
    the input order unchanged.
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
    settled: set[int] = set()  # questions whose answer's best passage was lifted
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
        if answered is None or answered in settled:
            continue
        if not asks[turn.id] and answered < index and answers(scored[answered], item):
            # a short question or request ranked above its answer: the answer's best passage
            # rises to the question's score, just ahead of it ("how do I run the linter with
            # autofix again" / "`ruff check --fix .`"; "the api needs another port" /
            # "Moved it to 9443 in `config/server.toml`"): the question holds no answer
            settled.add(answered)
            raised[index] = max(raised[index], credit * raised[answered])
            order_key[index] = answered - 0.5
            asked_sure = sure[answered]
            if asked_sure is not None:
                sure[index] = max(sure[index] or 0.0, credit * asked_sure)
        elif credit * item.score > raised[answered]:
            raised[answered] = credit * item.score
            # just ahead of the reply when it says what the reply restates, else just after
            # it: the reply holds what the turn only asked for ("use port 9443" / "Moved the
            # server to 9443: ..."), and the turn still comes with it
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
    """Lower each long assistant passage (`long_passage`) that replies to a user turn among
    `scored` (the turn just before it in its session) by `discount` x its score (|score|: a
    negative score goes further down), and sort again, best first (ties keep their order).

    A long reply restates and elaborates the turn it answers, and a budget fills with it:
    when the user's turn was found, the reply adds less than another passage would; when it
    was not, the reply is all there is and keeps its score. Whether the reply matches words
    its turn lacks does not spare it: sparing those cost BEAM 0.638 -> 0.606 at 1,500 tokens
    (its 150-word advice passages then took a fifth of the budget each, next to the user
    turns its labels point at) and changed no ranking of `bench agent`. A short reply passage
    (under `ECHO_MIN_WORDS`) costs the budget little and is left as it is: it is often where
    the decision was carried out ("Set the port to 9443 in `config/server.toml`"), and
    lowered it fell out of the passages that current facts compare. Lowering those that add
    nothing specific to the turn (`adds_specifics`) as well cost Mem-Gallery 0.677 -> 0.579
    at 1,500 tokens, whose short replies describe the pictures the questions ask about. 0
    returns the input unchanged.
    """
    if discount <= 0 or not scored:
        return list(scored)
    said = {
        (turn.namespace, turn.session_id, turn.position)
        for item in scored
        if (turn := item.candidate.passage.turn).role == "user"
    }
    echoes = [
        turn.role == "assistant"
        and (turn.namespace, turn.session_id, turn.position - 1) in said
        and long_passage(item)
        for item in scored
        for turn in (item.candidate.passage.turn,)
    ]
    return lower_flagged(scored, discount, echoes)


# A reply passage is an echo worth discounting only from this many words: the discount
# keeps a long restatement from filling the budget (BEAM's assistant replies run to hundreds
# of words). Measured (bench agent; BEAM at 1,500 / 6,000 tokens): every length 0.615 / 0.741,
# coding answer in the top 3 72 %, current above superseded 70 % of 20; from 80 words
# 0.609 / 0.746, 88 %, 85 %; from 120 words 0.601 / 0.748, 88 %, 85 %.
ECHO_MIN_WORDS = 80


def long_passage(item: Scored) -> bool:
    """Whether `item`'s passage has at least `ECHO_MIN_WORDS` words."""
    passage = item.candidate.passage
    return len(passage.turn.text[passage.start : passage.end].split()) >= ECHO_MIN_WORDS


# What a short reply can add that its turn lacks: code, a path or identifier ("web/views.py",
# "aiohttp.ClientSession", "UPLOAD_LIMIT"), a name said mid-sentence, and the values of
# `updates.values_of` (dates, amounts, times, numbers).
_CODE = re.compile(r"`[^`]+`|\b\w+(?:[/.]\w+)+\b|\b[a-z]+_\w+\b|\b[A-Z]{2,}_\w+\b")
_NAME = re.compile(r"(?<=[\w,;] )(?!I\b|I')[A-Z][\w'-]*")  # "I", "I'll": no name


def adds_specifics(reply: Scored, said: Scored) -> bool:
    """Whether the reply passage gives something specific the user's turn does not: code, a
    path or identifier, a name, or a value (date, amount, time, number) — "Set the port to
    9443 in `config/server.toml`" after "use another port" does; "Noted: the dentist is on
    the 4th at 3pm, Dr. Ruiz" after "dentist with Dr. Ruiz on the 4th at 3pm" does not."""
    text = reply.candidate.passage.text
    turn = said.candidate.passage.turn
    before = turn.text.lower().replace("`", "")
    if any(code.strip("`").lower() not in before for code in _CODE.findall(text)):
        return True
    if any(name.lower() not in before for name in _NAME.findall(text)):
        return True
    stamp = reply.candidate.passage.turn.timestamp or ""
    given = values_of(turn.text, turn.timestamp or "")
    return any(
        value not in given.get(kind, frozenset())
        for kind, values in values_of(text, stamp).items()
        for value in values
    )


# A reply restates the turn it answers when that turn holds at least this share of the
# reply's match of the question's words (the grep score).
RESTATED_SHARE = 0.5
# A question of at most this many words names only what it asks about ("how do I run the
# linter with autofix again"); a longer one also tells the asker's circumstances ("What
# should I practise for the audition with the Vesper Quartet on April 9, given that..."),
# which its reply restates. Measured: with no limit, BEAM at 1,500 tokens 0.615 -> 0.580
# (its users ask at length, and their replies then fill the budget); 12 words: 0.612,
# 20 words: 0.608.
SHORT_QUESTION_WORDS = 12


def short_question(text: str) -> bool:
    """Whether `text` only asks, in at most `SHORT_QUESTION_WORDS` words."""
    return len(text.split()) <= SHORT_QUESTION_WORDS and asks_question(text)


# A user turn of at most this many words is a request, a problem or a decision ("the
# uploads dir fills the disk, fix it"), which a reply adding something specific carries out
# or answers; a longer one also tells the user's circumstances, which the reply restates.
# Measured (bench agent, coding answer first; BEAM at 1,500 tokens): 12 words 69 %, 0.606;
# 20 words 75 %, 0.606; 30 words 81 %, 0.606; no limit: BEAM 0.567.
SHORT_TURN_WORDS = 30


def answers(said: Scored, reply: Scored) -> bool:
    """Whether the assistant's `reply` passage answers the user's turn `said` rather than
    restating it: the passage is short (under `ECHO_MIN_WORDS` words), and the turn is a
    short question (`short_question`) or a short turn (at most `SHORT_TURN_WORDS` words: a
    request, a problem, a decision) to which the reply adds something specific
    (`adds_specifics`) and that matches some of the question's words — what was done or
    found. A reply that matches none of them ("Noted; I'll tell QA." after "The release
    moves to Friday.", asked when the release moves) holds nothing the question asks for,
    whatever it adds. A long passage elaborates ("Here is a plan: ..." after "can you help
    me plan the 6 weeks before my exam on May 15?"): put ahead of its turn it took a fifth of
    a 1,500-token budget each time, BEAM 0.614 -> 0.638 without it; `bench agent` unchanged
    (an answer that is a command, a fix or a value is said in few words)."""
    if long_passage(reply):
        return False
    text = said.candidate.passage.turn.text
    if short_question(text):
        return True
    return (
        len(text.split()) <= SHORT_TURN_WORDS
        and reply.candidate.lexical_score > 0
        and adds_specifics(reply, said)
    )


def restates(said: Scored, reply: Scored) -> bool:
    """Whether `reply` restates the user turn `said` as far as the question goes: the turn
    matches the question's words about as well as the reply does. A reply that matches words
    the turn lacks ("make the uploads non-blocking" answered by "moved the uploads to
    aiohttp.ClientSession") holds what the turn only asked for; a turn that matches nothing
    ("sure, go ahead") holds nothing the reply lacks; a short question or request that the
    reply answers (`answers`) is not restated, however many of its words the answer repeats.
    None is an echo, and the turn goes after the reply."""
    if answers(said, reply):
        return False
    if said.candidate.lexical_score >= RESTATED_SHARE * reply.candidate.lexical_score:
        return True
    meaning = [item.ranker_scores.get("bi_encoder") for item in (said, reply)]
    return None not in meaning and meaning[0] >= meaning[1]  # type: ignore[operator]


def reply_credit(scored: list[Scored], context: Context) -> list[Scored]:
    return credit_replied_turns(scored, context.rank.reply_credit)


def echo_discount(scored: list[Scored], context: Context) -> list[Scored]:
    return discount_echoes(scored, context.rank.echo_discount)
