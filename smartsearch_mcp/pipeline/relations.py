"""Names for the people and pets a question calls by relation: "What does my sister do for
work?" is about Tove when the memory says "a ferry ride with my sister Tove". People name a
relative, a colleague or a pet once and say "my sister" or "Tove" afterwards, either way
round; the name a memory gives a relation is searched next to the relation's word (part of
stage 2)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from smartsearch_mcp.pipeline.analyze import (
    NOUN_WEIGHT,
    PROPER_WEIGHT,
    QueryAnalysis,
    WeightedTerm,
    variant_term,
    with_terms,
)
from smartsearch_mcp.pipeline.term_counts import WORD, WordIndex
from smartsearch_mcp.pipeline.words import (
    CALENDAR_WORDS,
    chat_spellings,
    is_stopword,
    light_stem,
    word_set,
)
from smartsearch_mcp.types import Passage

# Words for a person or pet someone has, as in "my sister", "our vet", "my manager".
RELATIONS = word_set(
    """
    sister brother sibling mom mum mother dad father stepmom stepdad stepmother stepfather
    wife husband partner spouse fiance fiancee boyfriend girlfriend son daughter stepson
    stepdaughter cousin aunt uncle niece nephew grandma grandmother grandpa grandfather
    grandson granddaughter roommate flatmate housemate neighbor neighbour landlord landlady
    boss manager supervisor colleague coworker mentor teacher tutor coach trainer therapist
    doctor dentist physio physiotherapist vet dog cat puppy kitten
    """
)
# Words that may stand between "my" and the relation ("my older sister Tove").
_MODIFIERS = r"(?:(?:older|younger|little|big|baby|twin|eldest|youngest|new|old|best)\s+)*"
# A name: one or two capitalised words. Linear-time over stored text: a name starts at a word
# boundary (so a run of capitals is tried once, not from each of its letters) and its words
# are possessive (`*+`: what follows a word is never a word character, so giving some back
# could not match); without both, "Tove, my sister" tried over a 20,000-letter run took
# seconds per passage.
_WORD = r"[A-Z][\w'’-]*+"
_NAME = rf"(?P<name>\b{_WORD}(?:\s++{_WORD})?)"
# A name set off by commas: followed by a comma or the end of a clause, not by a list's
# "and" ("my gf, Wren, and I").
_NAME_IN_COMMAS = (
    rf"(?P<listed>\b{_WORD}(?:\s++{_WORD})?)"
    r"(?=\s*(?:,(?!\s*(?i:and|or)\b)|[.;:!?)]|$))"
)
# The most names of one question whose relations are looked up.
MAX_NAMES_LOOKED_UP = 32
# The most names one relation may be given; with more it is ambiguous ("my colleague" may be
# many people in a large memory) and no name is added.
MAX_NAMES = 2
# Every relation word and its chat spellings, and the relation each spelling stands for.
_SPELLING_OF = {
    spelling: relation
    for relation in sorted(RELATIONS)
    for spelling in chat_spellings(relation)
    if spelling not in RELATIONS  # "mom" is a relation word of its own
} | {relation: relation for relation in RELATIONS}
_ALL_SPELLINGS = tuple(sorted(_SPELLING_OF, key=lambda word: (-len(word), word)))


@dataclass(frozen=True, slots=True)
class RelationName:
    """A name the memory gives a relation the question uses, and the passages that say so."""

    relation: str
    name: str
    said_in: tuple[int, ...]  # corpus indices of the passages that name it


def resolve_relations(
    analysis: QueryAnalysis,
    passages: Sequence[Passage],
    lowered: Sequence[str],
    speakers: Collection[str],
    cache: dict[str, list[RelationName]],
    words: WordIndex | None = None,
) -> tuple[QueryAnalysis, list[RelationName], list[RelationName]]:
    """Both ways round: the names the passages give the question's relation words
    (`relation_names`: "my sister" -> Tove) and the relations they give the names it asks
    about (`relations_of`: Tove -> "my sister"; not the speakers' names, which are not said
    as "my sister Ann" by Ann). Returns the question with them searched, and what was found
    each way. `cache` keeps what was looked up for these passages ("rel:" and "name:" keys):
    pass the same dict only with the same passages. `words`: the `WordIndex` of `lowered`,
    when there is one (only the passages holding a relation word are read)."""
    forward = _looked_up(
        cache,
        "rel:",
        relations_in(analysis),
        lambda todo: relation_names(todo, passages, lowered, words),
        lambda item: item.relation,
    )
    spoken = {speaker.lower() for speaker in speakers}
    names = [
        t.term
        for t in analysis.terms
        if t.kind in ("entity", "proper") and t.term not in spoken and " " not in t.term
    ]
    backward = _looked_up(
        cache,
        "name:",
        names,
        lambda todo: relations_of(todo, passages, lowered, words),
        lambda item: item.name,
    )
    searched = with_relation_words(with_relation_names(analysis, forward), backward)
    return searched, forward, backward


def _looked_up(
    cache: dict[str, list[RelationName]],
    prefix: str,
    keys: Sequence[str],
    look_up: Callable[[list[str]], list[RelationName]],
    key_of: Callable[[RelationName], str],
) -> list[RelationName]:
    """What `look_up` finds for `keys`, each key looked up once per `cache`."""
    todo = [key for key in keys if prefix + key not in cache]
    if todo:
        found = look_up(todo)
        for key in todo:
            cache[prefix + key] = [item for item in found if key_of(item) == key]
    return [item for key in keys for item in cache[prefix + key]]


def relations_in(analysis: QueryAnalysis) -> list[str]:
    """The relation words of the question's terms ("sisters" -> "sister"), in term order."""
    found: list[str] = []
    for term in analysis.terms:
        if term.kind not in ("noun", "word"):
            continue
        word = term.term if term.term in RELATIONS else light_stem(term.term)
        if word in RELATIONS and word not in found:
            found.append(word)
    return found


def relation_names(
    relations: Sequence[str],
    passages: Sequence[Passage],
    lowered: Sequence[str],
    words: WordIndex | None = None,
) -> list[RelationName]:
    """For each relation, the names the passages give it, from "my sister Tove", "Tove, my
    sister", "my coach is called Bertil" or "my dog's name is Fennel" ("our" as "my", a
    chat spelling as the word: "my sis Sunniva"); a relation named more than `MAX_NAMES` ways
    gets none. `lowered`: each passage's text lowercased (a quick filter; `words`, its
    `WordIndex`, a quicker one). In order of `relations`, then of how often a name is given."""
    out: list[RelationName] = []
    for relation in relations:
        spellings = (relation, *chat_spellings(relation))
        mentioned, patterns = _patterns(spellings)
        names = _Tally()
        for index in _may_say(spellings, lowered, words):
            low = lowered[index]
            # every form has "my REL" in it: two quick checks before the patterns
            if not any(w in low for w in spellings) or mentioned.search(low) is None:
                continue
            for _, name in _matches(passages[index].text, patterns):
                names.add(name, index)
        if 0 < len(names.seen) <= MAX_NAMES:
            out.extend(RelationName(relation, name, said) for name, said in names.most_common())
    return out


def _may_say(
    spellings: Sequence[str], lowered: Sequence[str], words: WordIndex | None
) -> Iterable[int]:
    """The passages that may say "my <spelling>": with `words` (their `WordIndex`), those
    holding one of the spellings as a whole word, as every form's "my REL" has it; else all."""
    if words is None or not all(WORD.fullmatch(spelling) for spelling in spellings):
        return range(len(lowered))
    return words.holding_any(spellings).tolist()


def may_name_a_relation(lowered: str) -> bool:
    """Whether a lowered text says "my/our <relation word>" in any spelling: the texts
    `relation_names` and `relations_of` read for any question (a quick filter)."""
    return _patterns(_ALL_SPELLINGS)[0].search(lowered) is not None


def with_relation_names(analysis: QueryAnalysis, names: Sequence[RelationName]) -> QueryAnalysis:
    """`analysis` with each name searched as a name, at the weight of its relation's word (a
    full name also by its first word: "my boss Arvid Lindqvist" is "Arvid" later)."""
    if not names:
        return analysis
    weights = {light_stem(t.term): t.weight for t in analysis.terms}
    weights.update({t.term: t.weight for t in analysis.terms})
    have = {t.term for t in analysis.terms}
    extra = []
    for found in names:
        full = found.name.lower()
        weight = min(PROPER_WEIGHT, weights.get(found.relation, PROPER_WEIGHT))
        for term in dict.fromkeys((full, full.split()[0])):
            if term not in have:
                have.add(term)
                extra.append(WeightedTerm(term, weight, "proper", group=full))
    return with_terms(analysis, extra)


def relations_of(
    names: Sequence[str],
    passages: Sequence[Passage],
    lowered: Sequence[str],
    words: WordIndex | None = None,
) -> list[RelationName]:
    """For each of `names` (lowercase, as the question's terms), the relations the passages
    give it, in the forms `relation_names` reads ("Tove, my sister" -> sister): the other
    way round, "Where does Tove live?" is also about "my sister" when a turn says "my sister
    moved to Bergen". In order of `names`, then of how often a relation is given."""
    names = list(dict.fromkeys(names))[:MAX_NAMES_LOOKED_UP]
    mentioned, patterns = _patterns(_ALL_SPELLINGS)
    relations = {name: _Tally() for name in names}
    # Each passage is read once for all the names (a question pasted with a log in it has
    # hundreds of capitalised words; a passage may be a megabyte).
    for index in _may_say(_ALL_SPELLINGS, lowered, words):
        low = lowered[index]
        if not any(name in low for name in names) or mentioned.search(low) is None:
            continue
        for relation, found in _matches(passages[index].text, patterns):
            tally = relations.get(found.lower())
            if tally is not None:
                tally.add(relation, index)
    return [
        RelationName(relation, name, said)
        for name in names
        for relation, said in relations[name].most_common()
    ]


def with_relation_words(analysis: QueryAnalysis, found: Sequence[RelationName]) -> QueryAnalysis:
    """`analysis` with each relation word searched as a noun (at most at a noun's weight, and
    at most at the weight of the name it stands for)."""
    if not found:
        return analysis
    weights = {t.term: t.weight for t in analysis.terms}
    have = set(weights)
    extra = []
    for item in found:
        if item.relation not in have:
            have.add(item.relation)
            weight = min(NOUN_WEIGHT, weights.get(item.name, NOUN_WEIGHT))
            extra.append(WeightedTerm(item.relation, weight, "noun", inflect=True))
            for spelling in chat_spellings(item.relation):  # "sister" is "sis" in a chat
                variant = variant_term(spelling, item.relation, weight)
                if spelling not in have and variant is not None:
                    have.add(spelling)
                    extra.append(variant)
    return with_terms(analysis, extra)


# Per relation: a quick check on the lowered text ("my sister" in it), and the patterns,
# each with whether its name may open a sentence.
_Patterns = tuple[re.Pattern[str], tuple[tuple[re.Pattern[str], bool], ...]]
_CACHE: dict[tuple[str, ...], _Patterns] = {}


def _patterns(spellings: tuple[str, ...]) -> _Patterns:
    cached = _CACHE.get(spellings)
    if cached is not None:
        return cached
    words = "|".join(re.escape(word) for word in spellings)
    mentioned = re.compile(rf"\b(?:my|our)\s+{_MODIFIERS}(?:{words})\b")
    mine = rf"\b(?i:my|our)\s+(?i:{_MODIFIERS})(?P<rel>(?i:{words}))"
    compiled = (
        # my sister Tove / my sister, Tove, ... ("my girlfriend, Wren and I" is a list)
        (re.compile(rf"{mine}(?:\s+{_NAME}|,\s+{_NAME_IN_COMMAS})"), True),
        # I met Tove, my sister (at a sentence start, "Luckily, my daughter's fine" is no name)
        (re.compile(rf"{_NAME},\s+{mine}\b"), False),
        # my coach is Bertil / my coach is called Bertil / my dog's name is Fennel
        (
            re.compile(
                rf"{mine}(?:['’]s\s+(?i:name))?\s+(?i:is|was)\s+(?:(?i:called|named)\s+)?{_NAME}"
            ),
            True,
        ),
        # my sister, called Tove / my coach named Bertil
        (re.compile(rf"{mine},?\s+(?i:called|named)\s+{_NAME}"), True),
    )
    _CACHE[spellings] = (mentioned, compiled)
    return mentioned, compiled


class _Tally:
    """How often each key was found, and in which passages (first-found order)."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self._where: dict[str, list[int]] = {}

    def add(self, key: str, index: int) -> None:
        self.seen[key] += 1
        where = self._where.setdefault(key, [])
        if index not in where:
            where.append(index)

    def most_common(self) -> list[tuple[str, tuple[int, ...]]]:
        return [(key, tuple(self._where[key])) for key, _ in self.seen.most_common()]


def _matches(
    text: str, patterns: tuple[tuple[re.Pattern[str], bool], ...]
) -> Iterator[tuple[str, str]]:
    """(relation, name) for each naming of a relation in `text`."""
    for pattern, may_open in patterns:
        for match in pattern.finditer(text):
            group = "name" if match.group("name") is not None else "listed"
            if not may_open and _opens_sentence(text, match.start(group)):
                continue
            name = _clean_name(match.group(group))
            if name is not None:
                relation = _SPELLING_OF.get(match.group("rel").lower(), match.group("rel").lower())
                yield relation, name


def _opens_sentence(text: str, index: int) -> bool:
    before = text[:index].rstrip(" \t\"'“‘(")
    return not before or before[-1] in ".!?\n"


def _clean_name(surface: str) -> str | None:
    """The name in `surface` without a trailing possessive or a word after it that is no
    name ("Tove I think"), or None when it is not a name ("my sister And", "Last Tuesday, my
    flatmate": a stopword first, a month or day, a relation)."""
    words: list[str] = []
    for word in (re.sub(r"['’]s?$", "", word) for word in surface.split()):
        low = word.lower()
        if low in CALENDAR_WORDS:
            return None
        if not word or is_stopword(low) or low in RELATIONS:
            break
        words.append(word)
    return " ".join(words) or None
