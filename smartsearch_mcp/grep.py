"""Exact and regular-expression search over stored turns, for the `grep` tool.

Matching is case-insensitive. A literal pattern (the default) is escaped, so any text is safe.
A regex runs on the `regex` engine with a timeout on every call: Python's `re` cannot be
interrupted, so a catastrophically backtracking pattern such as `(a+)+$` would hold the
worker (and the GIL) forever. With a timeout the worst case is bounded, whatever the pattern
or the text, and a pattern that times out on a single turn is reported as an error rather
than silently skipped. Output is bounded too: at most `limit` turns, `MAX_SNIPPETS` snippets
per turn, each at most `SNIPPET_CHARS` characters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import regex

from smartsearch_mcp.types import InputError, Turn

MAX_PATTERN_CHARS = 1000
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_SNIPPETS = 3
SNIPPET_CHARS = 240
PER_TURN_SECONDS = 1.0  # one turn taking this long means the pattern backtracks badly
TOTAL_SECONDS = 10.0  # the whole scan; past it the results so far are returned with a warning
_COUNT_CAP = 1000


@dataclass(frozen=True, slots=True)
class Snippet:
    """A piece of a turn around one match; offsets are characters in the turn's text."""

    text: str
    start: int  # where the snippet starts in the turn
    match_start: int
    match_end: int


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
    """The compiled, case-insensitive pattern; InputError for an empty, overlong or invalid
    one."""
    if not isinstance(pattern, str) or not pattern:
        raise InputError("pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InputError(f"pattern is longer than {MAX_PATTERN_CHARS} characters; shorten it")
    source = pattern if use_regex else regex.escape(pattern)
    try:
        return regex.compile(source, regex.IGNORECASE | regex.V0)
    except (regex.error, ValueError, OverflowError) as exc:
        raise InputError(
            f"invalid regular expression {pattern[:80]!r}: {exc}. "
            "Fix it, or pass regex=false to search for the text literally."
        ) from exc


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
                if len(snippets) < MAX_SNIPPETS:
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
    return Snippet(text[begin:finish], begin, start, min(end, finish))
