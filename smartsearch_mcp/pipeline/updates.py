"""Updates: a turn that says something changed ("the vet visit moved to March 11",
"we upgraded to Postgres 17", "switched the bathroom tiles to terrazzo").

Similarity between two turns of different sessions does not tell an update from a
conversation coming back to a topic (measured: on LoCoMo it moved the wrong turns first, see
docs/bench/adaptive-truncation.md). A restatement that supersedes an earlier one usually says
so, with a verb or adverb of change (`states_a_change`), or it gives a new value of a kind
the earlier gave — another date, amount, time of day or number ("ok, final: the
recital is May 14" after "the recital is on May 7"; "rent goes up to $1,450" after "$1,380";
`gives_a_new_value`). English only, like the other lexical rules of the pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from smartsearch_mcp.pipeline.dated import text_date_bounds
from smartsearch_mcp.pipeline.words import (
    content_stems,
    is_stopword,
    light_stem,
    word_set,
)
from smartsearch_mcp.types import Passage

# A change reported as done: a verb of change in the past tense or participle ("moved to",
# "we switched", "got cancelled") or an adverb of replacement. Base forms and nouns are left
# out: "big changes ahead", "change is good", "no updates yet" and "tell me how it goes"
# name no new state of affairs (on LoCoMo, phrases like these moved the wrong turns first).
_CHANGE = re.compile(
    r"\b(?:"
    r"changed|switched|moved|replaced|upgraded|downgraded|updated|cancell?ed|rescheduled|"
    r"postponed|pushed back|swapped|migrated|bumped|switching (?:\w+ ){0,3}?to|"
    r"instead|no longer|anymore|from now on|(?:is|are|'s) now|"
    r"(?:goes|go|went|gone|is|are|was|were|'s) (?:back )?(?:up|down) to"
    r")\b",
    re.IGNORECASE,
)


def states_a_change(text: str) -> bool:
    """Whether the text says that something changed (a verb, adverb or phrase of change)."""
    return _CHANGE.search(text) is not None


# Values a restatement can change. An amount: a currency sign or name with its number ("$1,450",
# "1,200 euros"); a time of day ("9am", "14:30"); any other number (a port, a version, a count).
_AMOUNT = re.compile(
    r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|bn|million|thousand)\b)?"
    r"|\b\d[\d,]*(?:\.\d+)?\s?(?:k\s?)?(?:dollars|euros|pounds|usd|eur|gbp)\b",
    re.IGNORECASE,
)
_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)*")
_WEEKDAY = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.IGNORECASE)


def values_of(text: str, stamp: str = "") -> dict[str, frozenset[str]]:
    """The values `text` gives, by kind: "date" (the days it names, read against `stamp`, the
    turn's time; else the days of the week it names), "amount", "clock" and "number" (the
    numbers outside amounts and times), each normalised (lower case, no spaces or thousands
    commas). Kinds it gives none of are left out."""
    found: dict[str, frozenset[str]] = {}
    rest = text
    for kind, pattern in (("amount", _AMOUNT), ("clock", _CLOCK)):
        values = {_normal(m.group()) for m in pattern.finditer(rest)}
        if values:
            found[kind] = frozenset(values)
            rest = pattern.sub(" ", rest)
    dates = {start[:10] for start, _ in text_date_bounds(text, stamp)}
    if not dates:  # a day of the week alone ("keys on thursday") is a day too, unresolved
        dates = {m.group().lower() for m in _WEEKDAY.finditer(text)}
    if dates:
        found["date"] = frozenset(dates)
    numbers = {m.group() for m in _NUMBER.finditer(rest.replace(",", ""))}
    if numbers:
        found["number"] = frozenset(numbers)
    return found


def gives_a_value_of(passage: Passage, kinds: Collection[str]) -> bool:
    """Whether `passage` gives a value (`values_of`, read against its turn's time) of one of
    `kinds`."""
    return not frozenset(kinds).isdisjoint(values_of(passage.text, passage.turn.timestamp or ""))


def _normal(value: str) -> str:
    return re.sub(r"[\s,]", "", value.lower())


# A question that asks for a value, and of which kinds (see `values_of`): by its first words or
# by naming a kind of value. A time of day may come with its day and a date with its time
# ("moved to December 3 at 10am"), or be written in numbers (a crontab's "15 4 * * *"); a
# version, port or count is a number.
_WHEN_KINDS = frozenset({"date", "clock", "number"})
_ASKED_KINDS = (
    (re.compile(r"^\W*(?:when|what (?:time|date|day))\b", re.IGNORECASE), _WHEN_KINDS),
    (re.compile(r"^\W*how (?:many|long|big|old|often)\b", re.IGNORECASE), frozenset({"number"})),
    (re.compile(r"^\W*how much\b", re.IGNORECASE), frozenset({"amount", "number"})),
    (re.compile(r"\b(?:date|deadline|time)s?\b", re.IGNORECASE), _WHEN_KINDS),
    (
        re.compile(r"\b(?:budget|price|cost|amount|salary|rent|fee)s?\b", re.IGNORECASE),
        frozenset({"amount", "number"}),
    ),
    (
        re.compile(
            r"\b(?:port|version|timeout|number|count|size|limit|rate|address)(?:es|s)?\b",
            re.IGNORECASE,
        ),
        frozenset({"number"}),
    ),
)


def asked_value_kinds(question: str) -> frozenset[str]:
    """The kinds of value (`values_of`) a question asks for, empty when it asks for none:
    "When is the recital?" a date or time; "Which port is the preview server on?" a number;
    "how much is the rent" an amount."""
    kinds: frozenset[str] = frozenset()
    for pattern, named in _ASKED_KINDS:
        if pattern.search(question):
            kinds |= named
    return kinds


def gives_a_new_value(
    later: dict[str, frozenset[str]],
    earlier: dict[str, frozenset[str]],
    kinds: Collection[str] | None = None,
) -> bool:
    """Whether a later turn's values (`values_of`) hold one the earlier turn's do not, of a
    kind the earlier gives (and one of `kinds`, when given): "the preview server is on 5173
    now, 3000 was taken" gives a new port after "the preview server runs on 3000"; "see you
    at 7pm" after "dinner at 7pm" gives none; a window moved to another day gives no new
    version number."""
    return any(
        kind in earlier and (kinds is None or kind in kinds) and values - earlier[kind]
        for kind, values in later.items()
    )


# A replacement said outright: the value given up is named ("upgraded Python from 3.10 to
# 3.12", "Replaced `moment` with `date-fns`", "we'll use Caddy instead of Traefik"). The
# old value is a few words at most, and the sentence does not ask ("should we move from
# Flask to FastAPI?" replaces nothing).
_WORD = r"[^\s`'\",;!?()]*[^\s`'\",.;:!?()]"  # inner dots and colons: "3.10", "02:00"
_OLD = rf"[`'\"]?(?P<old>{_WORD}(?:[ ]{_WORD}){{0,2}}?)[`'\"]?"
_VERB = (
    r"(?:(?:chang|switch|mov|bump|rais|lower|upgrad|downgrad|migrat|renam|updat|increas|"
    r"decreas|reduc|push|shift|cut|drop|replac|swap)\w*|went|gone)"
)
_REPLACED = (
    re.compile(rf"\b{_VERB}\b[^.?!\n]{{0,60}}?\bfrom {_OLD} (?:to|->|→) ", re.IGNORECASE),
    re.compile(rf"\b(?:replac|swapp?)\w* (?:the )?{_OLD} (?:with|for|by) ", re.IGNORECASE),
    re.compile(rf"\binstead of {_OLD}(?=[\s,.;:!?)]|$)", re.IGNORECASE),
    re.compile(r"(?<![\w-])(?P<old>[\w.]+) (?:->|→) ", re.IGNORECASE),
)


def replaced_values(text: str) -> frozenset[str]:
    """The values a turn says were given up for new ones ("from 3.10 to 3.12": "3.10";
    "replaced `moment` with date-fns": "moment"), lower case, without quotes; none in a
    sentence that asks, and none of function words only ("a retry gets the first invoice
    instead of a second one" names no value: "a" would be in nearly every earlier turn)."""
    found: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        if sentence.rstrip().endswith("?"):
            continue
        for pattern in _REPLACED:
            for match in pattern.finditer(sentence):
                value = match.group("old").lower()
                if not all(is_stopword(word) for word in value.split()):
                    found.add(value)
    return frozenset(found)


def clauses_naming(replaced: Collection[str], earlier: str) -> list[str]:
    """The clauses of the earlier turn (split at sentence ends, commas and "and", "but",
    "while") that give one of the `replaced` values (`names_a_replaced_value`)."""
    parts = re.split(r"(?<=[.!?;])\s+|\n+|,\s+|\s+(?:and|but|while)\s+", earlier)
    return [part for part in parts if names_a_replaced_value(replaced, part)]


def names_a_replaced_value(replaced: Collection[str], earlier: str) -> bool:
    """Whether the earlier turn gives one of the values a later turn says were replaced
    (`replaced_values`): "upgraded Python from 3.10 to 3.12" after "pin python 3.10 in the
    Dockerfile"; "Replaced `moment` with `date-fns`" after "format the dates with moment". A
    number is named only as a whole ("10" is not in "2026-11-10" or "v10.2"); a name also as
    a part of a path or URL ("snap-in" in "gs://snap-in/daily/")."""
    old_text = earlier.replace("`", "").lower()
    for value in replaced:
        if any(char.isalpha() for char in value):
            named = re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w-]|\.\w)")
        else:
            named = re.compile(rf"(?<![\w./:-]){re.escape(value)}(?![\w/-]|[.:]\w)")
        if named.search(old_text):
            return True
    return False


def shares_a_subject(later: str, earlier: str, asked: Collection[str]) -> bool:
    """Whether a later turn is about what an earlier one says, for a question whose terms
    have the stems `asked`: it names every word of the question the earlier names, or shares
    another content word with it (`subject_stems`). Both were found for the question, so its
    words alone make them look alike: "Kestrel moved the second interview" shares only
    "Kestrel" with "The hiring manager at Kestrel is Sigrun", asked about Kestrel's hiring
    manager, and says nothing of a hiring manager; "we moved the party to the boathouse" names
    the party that "The party is at the library hall" names, asked where the party is; "the
    doctor changed my cetirizine to loratadine" shares "cetirizine" with "I've been taking
    cetirizine", asked what I am taking."""
    new, old = subject_stems(later), subject_stems(earlier)
    named = old & set(asked)
    return (bool(named) and named <= new) or bool((new & old) - set(asked))


def word_part_stems(text: str) -> set[str]:
    """The stems of every word of `text`, identifiers split at their punctuation too:
    "`gs://snap-in/daily_dumps`" names "gs", "snap", "in", "daily" and "dump"."""
    return {light_stem(word) for word in re.findall(r"[^\W_]+", text.lower())}


def keeps_to_what_was_asked(later: str, earlier: str, asked: Collection[str]) -> bool:
    """Whether `later` names one of the question's words (stems `asked`, found in
    identifiers too: `word_part_stems`) that `earlier` names, or `earlier` names none: a
    turn that says several things is updated, for a question, only in what the question
    asks about. "The backup cron is now `30 2 * * *`" updates "`backup.sh` copies the
    uploads to `gs://snap-eu/app`, cron `0 1 * * *`" when asked when the backup runs, not
    when asked which GS bucket holds the snapshots."""
    named = word_part_stems(earlier) & set(asked)
    return not named or bool(named & word_part_stems(later))


# Words that say a change happened are not what changed: "The dentist moved Leo's appointment
# to 3pm" and "moving in spring" (asked "when do we move") are not about one thing for both
# naming a move.
_CHANGE_STEMS = frozenset(
    light_stem(word)
    for word in word_set(
        """
        change changed changes changing switch switched switches switching move moved moves
        moving replace replaced replaces replacing upgrade upgraded upgrades upgrading downgrade
        downgraded downgrading update updated updates updating cancel cancelled canceled
        cancelling reschedule rescheduled rescheduling postpone postponed postponing push pushed
        pushing swap swapped swapping migrate migrated migrating bump bumped shift shifted
        shifting instead anymore longer
        """
    )
)


def subject_stems(text: str) -> set[str]:
    """The content stems (`content_stems`) of `text` that can name what a change is about:
    not the verbs and adverbs of change."""
    return content_stems(text) - _CHANGE_STEMS
