"""What a text must hold for a regex to match anywhere in it, read from the regex's own parse.

`redact` runs some thirty provider patterns over every text that may hold a secret; each scan
tries the pattern at every position (a leading look-behind stops the engine from jumping to a
literal start), and the scans were most of the time `remember` takes. Most texts lack what a
pattern needs: its provider's prefix ("ghp_", "sk-ant-"), a long enough run of token
characters, a name that says secret. `gate(pattern).admits(TextFacts.of(text))` tests that
with `in` on strings before any scan, and is exact: a text it refuses cannot match.

What a pattern needs comes from walking its parse (CPython's `re._parser`, the parser the
`re` module compiles with):
- strings: each run of literals it must match, outside optional and negated parts, and for an
  alternation one string from each branch; a run matched ignoring case is found in the text
  lowercased when the text is ASCII (where the engine's case-folding is ASCII's), else by a
  regex with the same flag;
- a token run: the fewest characters of `TOKEN_CHARS` in a row that a match spans, found in
  the text's UTF-8 bytes (every other character encodes to bytes outside the set). `\\d`,
  `\\w` and a letter matched ignoring case match non-ASCII characters too, so they count only
  in an ASCII text.
A parse that cannot be read gives a gate that admits every text.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from typing import Any

TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-+/=.")
_TOKEN_BYTES = frozenset(map(ord, TOKEN_CHARS))
_AS_RUNS = bytes(0x61 if b in _TOKEN_BYTES else 0x20 for b in range(256))  # "a" or " "
_RUNS = tuple(b"a" * n for n in range(257))  # a longer run is tested as 256 (still needed)


@dataclass(frozen=True, slots=True)
class TextFacts:
    """What the gates read of one text, computed once for all of them."""

    text: str
    runs: bytes  # its UTF-8 bytes with each token character as "a" and any other as " "
    lowered: str | None  # lowercased when ASCII, else None
    ascii: bool

    @classmethod
    def of(cls, text: str) -> TextFacts:
        ascii = text.isascii()
        raw = text.encode("ascii") if ascii else text.encode("utf-8", "surrogatepass")
        return cls(text, raw.translate(_AS_RUNS), text.lower() if ascii else None, ascii)

    def has_run(self, length: int) -> bool:
        """Whether the text holds `length` token characters in a row."""
        return length <= 0 or _RUNS[min(length, 256)] in self.runs


@dataclass(frozen=True, slots=True)
class _Strings:
    """One of these strings is in the text (`folded`: ignoring case, by this regex)."""

    strings: tuple[str, ...]
    folded: re.Pattern[str] | None

    def found(self, facts: TextFacts) -> bool:
        if self.folded is None:
            return any(s in facts.text for s in self.strings)
        if facts.lowered is not None and all(s.isascii() for s in self.strings):
            return any(s.lower() in facts.lowered for s in self.strings)
        return self.folded.search(facts.text) is not None


@dataclass(frozen=True, slots=True)
class Gate:
    strings: tuple[_Strings, ...] = ()
    run_ascii: int = 0  # token characters in a row a match spans, in an ASCII text
    run_any: int = 0  # the same in any text

    def admits(self, facts: TextFacts) -> bool:
        if not facts.has_run(self.run_ascii if facts.ascii else self.run_any):
            return False
        return all(s.found(facts) for s in self.strings)


@cache
def gate(pattern: re.Pattern[str]) -> Gate:
    try:
        from re import _parser  # type: ignore[attr-defined]

        tree = _parser.parse(pattern.pattern, pattern.flags)
        ignore = bool(pattern.flags & re.IGNORECASE)
        sets = _needed_strings(tree, ignore)
        run_ascii, run_any = _token_run(tree, ignore, True), _token_run(tree, ignore, False)
    except Exception:  # another Python's parser: no gate, every scan runs
        return Gate()
    needed = []
    # case-sensitive sets first, the longest shortest string first: the cheapest refusals
    for strings, folded in sorted(set(sets), key=lambda s: (s[1], -min(map(len, s[0])))):
        ordered = tuple(sorted(strings, key=lambda s: (-len(s), s)))
        regex = re.compile("|".join(map(re.escape, ordered)), re.IGNORECASE) if folded else None
        needed.append(_Strings(ordered, regex))
    return Gate(tuple(needed), run_ascii, run_any)


_Sets = list[tuple[frozenset[str], bool]]


def _needed_strings(items: Any, ignore: bool) -> _Sets:
    """Sets of strings a match of the parsed sequence `items` needs one of each of, and
    whether each is matched ignoring case: its runs of literals, what its groups, the
    look-arounds that must hold and the repeats of at least one need, and for an
    alternation one set joining each branch's most selective."""
    from re import _constants as c  # type: ignore[attr-defined]

    sets: _Sets = []
    run: list[str] = []
    for op, value in items:
        if op is c.LITERAL:
            run.append(chr(value))
            continue
        if run:
            sets.append((frozenset({"".join(run)}), ignore))
            run = []
        if op is c.SUBPATTERN:
            _, add, remove, inner = value
            sets += _needed_strings(inner, _ignoring(ignore, add, remove))
        elif op is c.ATOMIC_GROUP:
            sets += _needed_strings(value, ignore)
        elif op is c.ASSERT:  # a look-around that must hold reads the text too
            sets += _needed_strings(value[1], ignore)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and value[0] >= 1:
            sets += _needed_strings(value[2], ignore)
        elif op is c.BRANCH:
            branches = [_needed_strings(branch, ignore) for branch in value[1]]
            if all(branches):
                best = [max(b, key=lambda s: (min(map(len, s[0])), not s[1])) for b in branches]
                sets.append((frozenset().union(*(s[0] for s in best)), any(s[1] for s in best)))
        # a class, any character, an anchor, a negated look-around, a back-reference or an
        # optional part needs no string
    if run:
        sets.append((frozenset({"".join(run)}), ignore))
    return sets


def _token_run(items: Any, ignore: bool, ascii: bool) -> int:
    """The most token characters in a row that a match of `items` spans, at least."""
    from re import _constants as c  # type: ignore[attr-defined]

    best = run = 0
    for op, value in items:
        width = _token_width(op, value, ignore, ascii)
        if width is not None:
            run += width
            best = max(best, run)
            continue
        run = 0
        if op is c.SUBPATTERN:
            _, add, remove, inner = value
            best = max(best, _token_run(inner, _ignoring(ignore, add, remove), ascii))
        elif op is c.ATOMIC_GROUP:
            best = max(best, _token_run(value, ignore, ascii))
        elif op is c.ASSERT:
            best = max(best, _token_run(value[1], ignore, ascii))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and value[0] >= 1:
            best = max(best, _token_run(value[2], ignore, ascii))
        elif op is c.BRANCH:
            best = max(best, min(_token_run(branch, ignore, ascii) for branch in value[1]))
    return best


def _token_width(op: Any, value: Any, ignore: bool, ascii: bool) -> int | None:
    """How many token characters an item matches at least, when it matches only token
    characters (a class, a literal, a repeat or group of them); else None."""
    from re import _constants as c  # type: ignore[attr-defined]

    if op is c.LITERAL:
        return 1 if _token_char(value, ignore, ascii) else None
    if op is c.IN:
        return 1 if _token_class(value, ignore, ascii) else None
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        inner = _token_sequence(value[2], ignore, ascii)
        return None if inner is None else value[0] * inner
    if op is c.SUBPATTERN:
        _, add, remove, inner = value
        return _token_sequence(inner, _ignoring(ignore, add, remove), ascii)
    return None


def _token_sequence(items: Any, ignore: bool, ascii: bool) -> int | None:
    total = 0
    for op, value in items:
        width = _token_width(op, value, ignore, ascii)
        if width is None:
            return None
        total += width
    return total


def _token_char(code: int, ignore: bool, ascii: bool) -> bool:
    char = chr(code)
    # ignoring case, "k" also matches the Kelvin sign, "s" the long s: only in ASCII texts
    return char in TOKEN_CHARS and (ascii or not ignore or not char.isalpha())


def _token_class(items: Any, ignore: bool, ascii: bool) -> bool:
    from re import _constants as c  # type: ignore[attr-defined]

    for op, value in items:
        if op is c.LITERAL:
            if not _token_char(value, ignore, ascii):
                return False
        elif op is c.RANGE:
            low, high = value
            if not all(_token_char(code, ignore, ascii) for code in range(low, high + 1)):
                return False
        elif op is c.CATEGORY:
            # \d and \w match non-ASCII digits and letters: token characters only in ASCII
            if not (ascii and value in (c.CATEGORY_DIGIT, c.CATEGORY_WORD)):
                return False
        else:  # a negated class, anything else
            return False
    return True


def _ignoring(ignore: bool, add: int, remove: int) -> bool:
    return (ignore or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
