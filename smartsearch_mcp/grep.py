"""Exact and regular-expression search over stored turns, for the `grep` tool.

Matching is case-insensitive. A literal pattern (the default) is escaped, so any text is safe.
A regex runs on the `regex` engine with a timeout on every call: Python's `re` cannot be
interrupted, so a catastrophically backtracking pattern such as `(a+)+$` would hold the
worker (and the GIL) forever. With a timeout the worst case is bounded, whatever the pattern
or the text, and a pattern that times out on a single turn is reported as an error rather
than silently skipped. Output is bounded too: at most `limit` turns, `MAX_SNIPPETS` snippets
per turn, each at most `SNIPPET_CHARS` characters.

Compiling is bounded as well: the `regex` engine expands counted repeats when it compiles, so
the 12 characters `a{100000000}` would build a program of gigabytes before any timeout
applies. `repeat_cost` reads the pattern's counted repeats (nested ones multiply) and a
pattern whose expansion passes `MAX_REPEAT_COST` is refused before it is compiled.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from smartsearch_mcp.types import InputError, Turn

MAX_PATTERN_CHARS = 1000
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_SNIPPETS = 3
SNIPPET_CHARS = 240
PER_TURN_SECONDS = 1.0  # one turn taking this long means the pattern backtracks badly
TOTAL_SECONDS = 10.0  # the whole scan; past it the results so far are returned with a warning
_COUNT_CAP = 1000
# Expanded size (atoms times their counted repeats) a regex may compile to: 100,000 costs
# the `regex` engine at most ~80 MB and 0.1 s; `a{100000000}` would cost 22 GB.
MAX_REPEAT_COST = 100_000
COMPILE_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Snippet:
    """A piece of a turn around one match; offsets are characters in the turn's text."""

    text: str
    start: int  # where the snippet starts in the turn
    match_start: int
    match_end: int
    reaches_end: bool = False  # the snippet runs to the end of the turn's text


@dataclass(frozen=True, slots=True)
class GrepHit:
    turn: Turn
    snippets: list[Snippet]
    match_count: int  # matches in the turn (counted up to 1000)


@dataclass(slots=True)
class GrepResult:
    pattern: str
    regex: bool
    hits: list[GrepHit] = field(default_factory=list)
    turns_scanned: int = 0
    truncated: bool = False  # more turns may match than `limit`
    warnings: list[str] = field(default_factory=list)


def compile_pattern(pattern: str, use_regex: bool) -> Any:
    """The compiled, case-insensitive pattern; InputError for an empty, overlong, invalid or
    too costly one (see `check_pattern`). Synchronous: `compile_pattern_off_loop` runs it in a
    worker thread."""
    import regex  # here, not at the top: recall (a cold hook's) imports this module, not it

    check_pattern(pattern, use_regex)
    source = pattern if use_regex else regex.escape(pattern)
    try:
        return regex.compile(source, regex.IGNORECASE | regex.V0)
    except MemoryError as exc:
        raise InputError(
            f"regular expression {pattern[:80]!r} needs more memory to compile than is "
            "available; use smaller repeat counts, or pass regex=false to search literally"
        ) from exc
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise InputError(
            f"invalid regular expression {pattern[:80]!r}: {exc}. "
            "Fix it, or pass regex=false to search for the text literally."
        ) from exc


async def compile_pattern_off_loop(pattern: str, use_regex: bool) -> Any:
    """`compile_pattern` in a worker thread (one compile at a time per process), so that even
    an allowed but slow compile never blocks the event loop."""
    check_pattern(pattern, use_regex)  # refuse the costly ones before taking a thread
    try:
        with anyio.fail_after(COMPILE_SECONDS):
            return await anyio.to_thread.run_sync(
                compile_pattern, pattern, use_regex, limiter=_compile_limiter()
            )
    except TimeoutError as exc:
        raise InputError(
            f"regular expression {pattern[:80]!r} took more than {COMPILE_SECONDS:.0f}s to "
            "compile; simplify it, or pass regex=false to search literally"
        ) from exc


def check_pattern(pattern: str, use_regex: bool) -> None:
    """InputError unless `pattern` is a non-empty string within `MAX_PATTERN_CHARS` and, as a
    regex, expands to at most `MAX_REPEAT_COST` when compiled (see `repeat_cost`)."""
    if not isinstance(pattern, str) or not pattern:
        raise InputError("pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InputError(f"pattern is longer than {MAX_PATTERN_CHARS} characters; shorten it")
    if not use_regex:
        return
    if _VERBOSE_FLAG.search(pattern):
        raise InputError(
            "verbose mode ((?x)) is not supported by grep: its comments and spaces hide "
            "what the pattern repeats. Write the pattern without (?x)."
        )
    cost = repeat_cost(pattern)
    if cost > MAX_REPEAT_COST:
        shown = f"{cost:,}" if cost < 10**15 else f"about 10^{int(math.log10(cost))}"
        raise InputError(
            f"regular expression {pattern[:80]!r} repeats too much: its counted repeats "
            f"({{m}}, {{m,n}}, {{m,}}; nested ones multiply) expand to {shown} elements, "
            f"the limit is {MAX_REPEAT_COST:,}. Use smaller counts (e.g. + or * instead of "
            "a large {n}), or pass regex=false to search literally."
        )


# `{m}`, `{m,n}`, `{m,}`, `{,n}`, spaces allowed (a superset of what the engine reads as a
# repeat, so a repeat is never missed).
_COUNTED_REPEAT = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")
# An inline flag group: (?flags) or (?flags:...). Verbose and version 1 need their own reading.
_INLINE_FLAGS = r"\(\?[\^a-zA-Z0-9-]*"
_VERBOSE_FLAG = re.compile(_INLINE_FLAGS + r"x[\^a-zA-Z0-9-]*[:)]")
_VERSION1_FLAG = re.compile(_INLINE_FLAGS + r"V1")
_FLAG_GROUP = re.compile(r"\(\?[\^a-zA-Z0-9&-]*\)")  # (?i), (?R), (?1), (?&name)


def repeat_cost(pattern: str) -> int:
    """An upper bound of the elements the regex engine expands `pattern` to when compiling:
    each atom (a character, an escape, a class) counts 1, a group the sum of what it holds
    (alternatives added, not maxed), and a counted repeat multiplies what it applies to by
    its largest count — so nested repeats multiply.

    Version-1 syntax (nested character classes) is not parsed: there the bound is the
    number of characters times the product of every counted repeat in the pattern, which
    holds however the pattern nests.
    """
    if _VERSION1_FLAG.search(pattern):
        return _structure_free_bound(pattern)
    # Each open group: [total so far, size of its last atom (what a repeat applies to)].
    frames: list[list[int]] = [[0, 0]]
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        frame = frames[-1]
        size = 1  # what this token adds as an atom; 0 for tokens that are not atoms
        if char == "\\":
            i += 2
            if i - 1 < n and pattern[i - 1] in "pPNxu" and i < n and pattern[i] == "{":
                close = pattern.find("}", i)
                i = n if close < 0 else close + 1
        elif char == "[":
            i = _class_end(pattern, i)
        elif char == "(":
            if pattern.startswith("(?#", i):  # a comment, up to the first ")"
                close = pattern.find(")", i)
                i = n if close < 0 else close + 1
                size = 0
            elif match := _FLAG_GROUP.match(pattern, i):
                i = match.end()
            else:
                frames.append([0, 0])
                i += 1
                if pattern.startswith("?(", i):  # a conditional: skip its condition
                    close = pattern.find(")", i)
                    i = n if close < 0 else close + 1
                continue
        elif char == ")":
            i += 1
            if len(frames) == 1:
                size = 0  # unbalanced: the engine refuses it
            else:
                size = max(1, frames.pop()[0])
                frame = frames[-1]
        elif char == "{" and (match := _COUNTED_REPEAT.match(pattern, i)):
            i = match.end()
            count = max(int(group or 0) for group in match.groups())
            if match.group(1) or match.group(2):
                grown = frame[1] * max(count, 1)
                frame[0] += grown - frame[1]
                frame[1] = grown
            continue
        elif char in "*+?":
            i += 1
            continue  # no expansion: the engine loops
        elif char == "|":
            i += 1
            frame[1] = 0
            continue
        else:
            i += 1
        frame[0] += size
        frame[1] = size
    while len(frames) > 1:  # unclosed groups (the engine refuses them)
        inner = frames.pop()[0]
        frames[-1][0] += inner
    return frames[0][0]


def _class_end(pattern: str, start: int) -> int:
    """The index just after the character class opening at `start` (version-0 syntax: the
    first `]` not escaped and not the class's first character closes it)."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return len(pattern)


def _structure_free_bound(pattern: str) -> int:
    """Characters times the product of every counted repeat's largest count: an upper bound
    of the expansion whatever the nesting (every atom is repeated by at most all of them)."""
    product = 1
    for match in _COUNTED_REPEAT.finditer(pattern):
        product *= max(1, *(int(group or 0) for group in match.groups()))
    return len(pattern) * product


_COMPILE_LIMITER: anyio.CapacityLimiter | None = None


def _compile_limiter() -> anyio.CapacityLimiter:
    """One regex compile at a time in this process: concurrent clients cannot add up their
    compiles' memory."""
    global _COMPILE_LIMITER
    if _COMPILE_LIMITER is None:
        _COMPILE_LIMITER = anyio.CapacityLimiter(1)
    return _COMPILE_LIMITER


def literal_prefilter(pattern: str, use_regex: bool) -> str | None:
    """The lowercase text every turn matching a literal ASCII pattern contains, for the store
    to skip the other turns in SQL (None for a regex or a non-ASCII pattern, where SQLite's
    ASCII-only case folding could skip a match)."""
    if use_regex or not pattern.isascii():
        return None
    return pattern.lower()


def check_limit(limit: int | None) -> int:
    value = DEFAULT_LIMIT if limit is None else limit
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise InputError(f"limit must be an integer between 1 and {MAX_LIMIT}, got {limit!r}")
    return value


class GrepScan:
    """Feeds batches of turns (most recent first) through one pattern, keeping the first
    `limit` matching turns. Synchronous: run `scan` in a worker thread."""

    def __init__(
        self,
        compiled: Any,
        result: GrepResult,
        limit: int,
        total_seconds: float = TOTAL_SECONDS,
        per_turn_seconds: float = PER_TURN_SECONDS,
    ) -> None:
        self.compiled = compiled
        self.result = result
        self.limit = limit
        self.per_turn_seconds = per_turn_seconds
        self.deadline = time.monotonic() + total_seconds

    @property
    def done(self) -> bool:
        return self.result.truncated or bool(self.result.warnings)

    def scan(self, turns: list[Turn]) -> None:
        """Match `turns`; stops early once `limit` turns matched or the time budget ran out."""
        for turn in turns:
            if self.done:
                return
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self.result.warnings.append(
                    f"stopped after scanning {self.result.turns_scanned} turns (time budget "
                    f"{TOTAL_SECONDS:.0f}s); narrow the search with session_id or namespace"
                )
                return
            hit = self._match(turn, min(remaining, self.per_turn_seconds))
            self.result.turns_scanned += 1
            if hit is None:
                continue
            if len(self.result.hits) >= self.limit:
                self.result.truncated = True
                return
            self.result.hits.append(hit)

    def _match(self, turn: Turn, timeout: float) -> GrepHit | None:
        text = turn.text
        snippets: list[Snippet] = []
        count = 0
        try:
            for match in self.compiled.finditer(text, timeout=timeout, concurrent=True):
                if match.end() == match.start():
                    continue  # empty matches (e.g. "a*") say nothing about the text
                count += 1
                shown = snippets and match.end() <= snippets[-1].start + len(snippets[-1].text)
                if len(snippets) < MAX_SNIPPETS and not shown:  # not a snippet already shown
                    snippets.append(_snippet(text, match.start(), match.end()))
                if count >= _COUNT_CAP:
                    break
        except TimeoutError as exc:
            raise InputError(
                f"pattern {self.result.pattern[:80]!r} took more than {timeout:.1f}s on one "
                "turn: it backtracks catastrophically (nested quantifiers like (a+)+ or "
                "overlapping alternatives like (a|a)*). Simplify it, or pass regex=false."
            ) from exc
        return GrepHit(turn, snippets, count) if count else None


def _snippet(text: str, start: int, end: int) -> Snippet:
    """At most SNIPPET_CHARS characters around text[start:end], the match roughly centred."""
    length = min(end - start, SNIPPET_CHARS)
    context = (SNIPPET_CHARS - length) // 2
    begin = max(0, start - context)
    finish = min(len(text), max(start + length + context, begin + SNIPPET_CHARS))
    finish = min(finish, begin + SNIPPET_CHARS)
    return Snippet(text[begin:finish], begin, start, min(end, finish), finish == len(text))
