"""Updates: a turn that says something changed ("the appointment moved to February 26",
"we upgraded to Django 5.1", "switched the countertops to butcher block").

Similarity between two turns of different sessions does not tell an update from a
conversation coming back to a topic (measured: on LoCoMo it moved the wrong turns first, see
docs/bench/adaptive-truncation.md). A restatement that supersedes an earlier one usually says
so, with a verb or adverb of change; `states_a_change` looks for one. English only, like the
other lexical rules of the pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from smartsearch_mcp.pipeline.analyze import distinct_words, is_stopword, light_stem

# A change reported as done: a verb of change in the past tense or participle ("moved to",
# "we switched", "got cancelled") or an adverb of replacement. Base forms and nouns are left
# out: "positive changes", "tech for change", "any updates?" and "let me know how it turns
# out" name no new state of affairs (on LoCoMo they moved the wrong turns first).
_CHANGE = re.compile(
    r"\b(?:"
    r"changed|switched|moved|replaced|upgraded|downgraded|updated|cancell?ed|rescheduled|"
    r"postponed|pushed back|swapped|migrated|"
    r"instead|no longer|anymore|from now on"
    r")\b",
    re.IGNORECASE,
)


def states_a_change(text: str) -> bool:
    """Whether the text says that something changed (a verb, adverb or phrase of change)."""
    return _CHANGE.search(text) is not None


def content_stems(text: str) -> set[str]:
    """The stems (`analyze.light_stem`) of the content words of `text`: no stopwords, at least
    3 characters."""
    return {light_stem(w) for w in distinct_words(text) if len(w) >= 3 and not is_stopword(w)}


def shares_a_subject(later: str, earlier: str, asked: Collection[str]) -> bool:
    """Whether a later turn is about what an earlier one says, for a question whose terms
    have the stems `asked`: it names every word of the question the earlier names, or shares
    another content word with it. Both were found for the question, so its words alone make
    them look alike: "Helio moved the technical round" shares only "Helio" with "The recruiter
    at Helio is Tom", asked about Helio's recruiter, and says nothing of a recruiter; "we
    switched the trip to Porto" names the trip that "Booked the trip to Lisbon" names, asked
    where the trip goes; "switched me from ibuprofen to naproxen" shares "ibuprofen" with "I've
    been taking ibuprofen", asked what I am taking."""
    new, old = content_stems(later), content_stems(earlier)
    named = old & set(asked)
    return (bool(named) and named <= new) or bool((new & old) - set(asked))
