"""Which turns of a `remember` call are re-sends of stored turns: pure functions, no SQL.

Memory is verbatim: a person who says "yes" twice said it twice, and both turns are kept.
What must not be stored twice is a call sent again — a client retrying after a lost answer,
an import run again, a transcript sent again with new turns at its end. A turn's key is what
was given for it (speaker, text, and the timestamp when one was given); a call's turns are
re-sends when they repeat stored turns of the session *in the same order*:

1. the whole call again: its keys equal the session's first or latest stored turns, or (two
   turns or more) a run of stored turns anywhere in the session;
2. the session again, longer: the call starts with the session's stored turns from its
   start, or from some turn to its end (the latest call again, with new turns after it).

Everything else is new, including a key that only repeats a stored turn elsewhere (Ann's
"yes" to a second question). Each stored turn stands for at most one turn of a call. (An
exact retry within a day is also recognised by the call's digest: see SQLiteStore.remember.)
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

# Keys are compared as small integers packed in machine words, so that finding a call inside a
# long session is one substring search in C (`bytes.find`), not a loop over positions.
_WORD = "q"


def match_resent(stored: Sequence[str], call: Sequence[str]) -> list[int | None]:
    """For each key of `call`, the index in `stored` (the session's turn keys, in session
    order) of the stored turn it re-sends, or None for a new turn (rules in the module
    docstring)."""
    if not stored or not call:
        return [None] * len(call)
    codes: dict[str, int] = {}
    old = [codes.setdefault(key, len(codes)) for key in stored]
    new = [codes.get(key, -1) for key in call]
    whole = _whole_call(old, new)
    if whole is not None:
        return list(range(whole, whole + len(new)))
    start, length = _resent_prefix(old, new)
    return [start + i if i < length else None for i in range(len(new))]


def _whole_call(old: list[int], new: list[int]) -> int | None:
    """Where the whole call lies in the session: at its end, at its start, else (two turns or
    more) its latest place; None when it does not."""
    if -1 in new or len(new) > len(old):
        return None
    end = len(old) - len(new)
    if old[end:] == new:
        return end
    if old[: len(new)] == new:
        return 0
    if len(new) < 2:
        return None
    haystack, needle = array(_WORD, old).tobytes(), array(_WORD, new).tobytes()
    width = array(_WORD).itemsize
    at = haystack.rfind(needle)
    while at >= 0 and at % width:  # a match across word boundaries is not one
        at = haystack.rfind(needle, 0, at + len(needle) - 1)
    return at // width if at >= 0 else None


def _resent_prefix(old: list[int], new: list[int]) -> tuple[int, int]:
    """(stored position, length) of the longest run the call starts with that is the
    session's start, or runs from some stored turn to the session's end (rule 2); length 0
    when the call starts with neither."""
    length = 0
    while length < min(len(old), len(new)) and old[length] == new[length]:
        length += 1
    best = (0, length)
    for p in range(max(1, len(old) - len(new)), len(old)):
        if len(old) - p <= best[1]:
            break  # the runs left are shorter
        if old[p] == new[0] and new[: len(old) - p] == old[p:]:
            return p, len(old) - p
    return best
