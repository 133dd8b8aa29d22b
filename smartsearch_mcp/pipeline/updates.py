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
