"""Words as the pipeline reads them: tokenizing, normalizing (contractions, possessives,
surrogates), a light stemmer, chat spellings, and the word lists that are never search terms
or names (stopwords, question words, request verbs, calendar words)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


def word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


QUESTION_WORDS = word_set(
    "what when where who whom whose which why how whatever whenever wherever whoever"
)
# Function words, auxiliaries, pronouns, conversational fillers and vague adverbs: they match
# nearly every turn, so they are never search terms nor the start of a name.
STOPWORDS = QUESTION_WORDS | word_set(
    """
    a about above after again against all almost along already also although always am among
    an and another any anybody anyone anything anyway anywhere are around as at away be became
    because become been before being below besides between both but by can cannot could did do
    does doing done down during each either else enough etc even ever every everybody everyone
    everything everywhere few for from further get gets getting got gotten had has have having
    he her here hers herself him himself his however i if in indeed into is it its itself just
    least less let lets like likely many may maybe me might mine more most mostly much must my
    myself neither never nevertheless no nobody none nor not nothing now nowhere of off often
    on once one only onto or other others otherwise our ours ourselves out over own per perhaps
    please quite rather really same several shall she should since so some somebody someone
    something sometime sometimes somewhat somewhere still such than that the their theirs them
    themselves then there therefore these they this those though through throughout thus till to
    together too toward towards under until up upon us usually very via was we well were
    whether while will with within without would yet you your yours yourself yourselves
    ago currently recently lately today tonight yesterday tomorrow soon later earlier ones
    yes yeah yep nope oh ok okay ack hey hi hello bye thanks thank sorry sure wow hmm um uh ah
    huh hm mm mhm erm eh meh ugh oops yay whoa
    lol haha omg cool nice awesome great good wonderful amazing congrats congratulations
    actually basically definitely totally absolutely honestly seriously literally
    kind sort type thing things stuff lot lots bit
    tell told say said ask asked know knew remember recall mention mentioned
    don doesn didn isn wasn aren weren haven hasn hadn wouldn couldn shouldn
    """
)
# Request verbs that open a question ("List the books...", "Describe...") are not names.
REQUEST_VERBS = word_set(
    """
    describe list name give show explain summarize summarise find remind compare provide
    identify mention recount share suggest recommend
    """
)
# Prompts that tell an agent to carry on ("go", "continue", "lgtm") ask for nothing: alone they
# are no search (a word of a longer question still is).
GO_ON_WORDS = word_set("go ahead continue proceed resume retry lgtm")
# Words that ask what is new ("any updates?", "what's new", "status?") name no topic: alone
# they are no search either (what they ask for is the latest turns: the timeline).
NEWS_WORDS = word_set("new news update updates latest status progress happening happened")
# Calendar words are dates, not names (the date stage reads them).
CALENDAR_WORDS = word_set(
    """
    monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december
    """
)

WORD_RE = re.compile(r"\w+(?:['’\-.]\w+)*")
CONTRACTION_RE = re.compile(r"(?:['’](?:s|re|ve|ll|d|m)|n['’]t|['’])$", re.IGNORECASE)
_IRREGULAR_CONTRACTIONS = {"can't": "can", "can’t": "can", "won't": "will", "won’t": "will"}
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_ES_PLURALS = ("sses", "shes", "ches", "xes", "zes")


def sanitize_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (spaCy and UTF-8 encoders reject
    them); lengths and offsets are unchanged."""
    return _SURROGATE_RE.sub("\ufffd", text)


def tokenize_words(text: str) -> list[str]:
    """Lowercase words of `text`, contractions and possessives stripped ("Halvard's" ->
    "halvard", "don't" -> "do")."""
    words = []
    for raw in WORD_RE.findall(text.lower()):
        word = normalize_word(raw)
        if word:
            words.append(word)
    return words


def distinct_words(text: str) -> set[str]:
    """The set of `tokenize_words(text)`, faster: each distinct raw word is normalized once."""
    words = {normalize_word(raw) for raw in set(WORD_RE.findall(text.lower()))}
    words.discard("")
    return words


@functools.lru_cache(maxsize=65536)
def normalize_word(word: str) -> str:
    """Lowercase `word` without a trailing contraction or possessive (cached: corpora
    repeat a small vocabulary)."""
    word = word.lower()
    if word in _IRREGULAR_CONTRACTIONS:
        return _IRREGULAR_CONTRACTIONS[word]
    return CONTRACTION_RE.sub("", word)


# Chat spellings of common words (messaging apps: "bday plans", "at my sis's apt"): a query word
# on one side is also searched as the others ("birthday" finds "bday", "bday" finds
# "birthday"), as a variant. Shortenings only, each unambiguous in a chat; no synonyms.
_CHAT_SPELLINGS: tuple[tuple[str, ...], ...] = (
    ("birthday", "bday"),
    ("tonight", "tonite"),
    ("congratulations", "congrats"),
    ("favorite", "favourite", "fav", "fave"),
    ("apartment", "apt"),
    ("appointment", "appt"),
    ("weekend", "wknd"),
    ("message", "msg"),
    ("information", "info"),
    ("picture", "pic"),
    ("photo", "pic"),
    ("boyfriend", "bf"),
    ("girlfriend", "gf"),
    ("brother", "bro"),
    ("sister", "sis"),
    ("mother", "mom", "mum"),
    ("father", "dad"),
    ("grandmother", "grandma"),
    ("grandfather", "grandpa"),
    ("roommate", "roomie"),
    ("vacation", "vacay"),
    ("conversation", "convo"),
    ("university", "uni"),
    ("professor", "prof"),
    ("refrigerator", "fridge"),
    ("christmas", "xmas"),
    ("people", "ppl"),
    ("minutes", "mins"),
    ("hours", "hrs"),
    ("medication", "meds"),
    ("veterinarian", "vet"),
    ("instagram", "insta"),
)


def _spelling_map(groups: Iterable[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    others: dict[str, list[str]] = {}
    for group in groups:
        for word in group:
            known = others.setdefault(word, [])
            known.extend(w for w in group if w != word and w not in known)
    return {word: tuple(found) for word, found in others.items()}


CHAT_SPELLINGS = _spelling_map(_CHAT_SPELLINGS)


def chat_spellings(word: str) -> tuple[str, ...]:
    """The other spellings of `word` (or of its singular) in a chat: "birthdays" ->
    ("bday",), "pics" -> ("picture", "photo"); () for most words."""
    found = CHAT_SPELLINGS.get(word)
    if found is None:
        found = CHAT_SPELLINGS.get(light_stem(word), ())
    return found


def is_stopword(word: str) -> bool:
    """True for function words, fillers and single letters (never search terms)."""
    return (len(word) < 2 and not word.isdigit()) or word in STOPWORDS


def light_stem(word: str) -> str:
    """Strip one English inflection: "studies" -> "study", "painted" -> "paint",
    "running" -> "run", "boxes" -> "box", "sunsets" -> "sunset".

    Deliberately light (no derivational suffixes); the lexical matcher adds inflections back.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    stem = word
    if word.endswith("ing") and len(word) > 5:
        stem = word[:-3]
    elif (word.endswith("ed") and len(word) > 4) or word.endswith(_ES_PLURALS):
        stem = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")):
        stem = word[:-1]
    if stem != word and len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "aeioulsz":
        stem = stem[:-1]  # running -> run, stopped -> stop
    return stem


def content_stems(text: str) -> set[str]:
    """The stems (`light_stem`) of the content words of `text`: no stopwords, at least
    3 characters."""
    return {light_stem(w) for w in distinct_words(text) if len(w) >= 3 and not is_stopword(w)}
