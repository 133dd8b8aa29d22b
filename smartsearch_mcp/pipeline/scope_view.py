"""What a streamed scope (see `scan`) keeps of itself so that it gets every signal a cached
scope gets: the words a question's word may be misspelled as, the passages that may name a
relation ("my sister Tove"), and which passages form a burst (see `bursts`).

All three depend on the scope only, not on the question: they are collected while the
scope's index is built (its first read) and kept with it. Costs, per passage of the scope:
4 bytes for its burst group, and once per distinct word of the scope that word; the
passages that may name a relation are kept as positions (8 bytes each, a few in a hundred
chat passages) and read again by turn id when a question is asked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio
import numpy as np

from smartsearch_mcp.pipeline import off_loop
from smartsearch_mcp.pipeline.bursts import continues_burst
from smartsearch_mcp.pipeline.lexical import TermMatcher
from smartsearch_mcp.pipeline.relations import may_name_a_relation
from smartsearch_mcp.pipeline.retrieve import Corpus, lowered_texts, speaker_names
from smartsearch_mcp.pipeline.spelling import memory_words
from smartsearch_mcp.types import Passage, Turn

Pages = Callable[[], AsyncIterator[list[Turn]]]
Split = Callable[[Turn], list[Passage]]

GET_TURNS_CHUNK = 500  # turn ids per read of the turns that may name a relation


@dataclass
class _SessionTail:
    """The last whole-turn passage of a session seen so far, and its burst."""

    last: Passage
    group: int
    words: int


@dataclass
class ScopeWordsBuilder:
    """Collects a scope's `ScopeWords` page by page, in scope order (see `ScopeIndex.build`).
    `burst_seconds` <= 0: no bursts."""

    burst_seconds: int
    max_words: int
    _words: set[str] = field(default_factory=set)
    _relations: list[int] = field(default_factory=list)
    _groups: list[int] = field(default_factory=list)
    _tails: dict[tuple[str, str], _SessionTail] = field(default_factory=dict)
    _in_order: bool = True

    def add(self, passages: Sequence[Passage], lowered: Sequence[str]) -> None:
        """The next page's passages and their lowered ranking texts."""
        start = len(self._groups)
        self._words.update(memory_words(lowered))
        for offset, (passage, low) in enumerate(zip(passages, lowered, strict=True)):
            position = start + offset
            if may_name_a_relation(low):
                self._relations.append(position)
            self._groups.append(self._group(position, passage))

    def _group(self, position: int, passage: Passage) -> int:
        """The burst group of the passage at `position`, as `bursts.burst_groups` numbers it
        (the first member's position): within a session, turns arrive by position."""
        turn = passage.turn
        if self.burst_seconds <= 0 or not (
            passage.start == 0 and passage.end >= len(turn.text.rstrip())
        ):
            return position
        key = (turn.namespace, turn.session_id)
        tail = self._tails.get(key)
        size = len(passage.text.split())
        if tail is not None and turn.position <= tail.last.turn.position:
            self._in_order = False
        if (
            tail is not None
            and continues_burst(tail.last, passage, self.burst_seconds)
            and tail.words + size <= self.max_words
        ):
            tail.last, tail.words = passage, tail.words + size
            return tail.group
        self._tails[key] = _SessionTail(passage, position, size)
        return position

    def build(self) -> ScopeWords:
        groups = np.asarray(self._groups, dtype=np.int32)
        if not self._in_order:
            # Turns of a session out of position order: bursts cannot be read in one pass.
            groups = np.arange(len(self._groups), dtype=np.int32)
        return ScopeWords(
            words=frozenset(self._words),
            relation_positions=np.asarray(self._relations, dtype=np.int64),
            groups=groups if self.burst_seconds > 0 else None,
            bursts_read=self._in_order,
        )


@dataclass(frozen=True)
class ScopeWords:
    """See the module doc. `groups`: each passage's burst group (None without bursts);
    `bursts_read`: False when the scope's turns were not in position order within their
    sessions, so that no burst was formed."""

    words: frozenset[str]
    relation_positions: np.ndarray
    groups: np.ndarray | None
    bursts_read: bool = True

    def group_sizes(self) -> dict[int, int]:
        """The number of passages of each burst of several passages, by group."""
        if self.groups is None or not len(self.groups):
            return {}
        numbers, counts = np.unique(self.groups, return_counts=True)
        return {int(g): int(c) for g, c in zip(numbers, counts, strict=True) if c > 1}


@dataclass
class BurstScores:
    """Burst matching over a streamed scope, as `retrieve.score_lexically` does it over a
    cached one (`bursts.add_burst_matches`): each passage of a burst also scores what its
    whole burst matches, above what it matches alone. A page's passages wait until the
    rest of their burst has been read; `delta` keeps what each passage gained, for a
    second scoring pass."""

    groups: np.ndarray
    sizes: dict[int, int]
    matcher: TermMatcher
    delta: np.ndarray
    _waiting: dict[int, list[tuple[int, Passage, str, float, float]]] = field(default_factory=dict)

    @classmethod
    def of(cls, words: ScopeWords, matcher: TermMatcher, total: int) -> BurstScores | None:
        sizes = words.group_sizes()
        if words.groups is None or not sizes:
            return None
        return cls(words.groups, sizes, matcher, np.zeros(total))

    def settle(
        self,
        positions: Sequence[int],
        passages: Sequence[Passage],
        lowered: Sequence[str],
        own: Sequence[float],
        scores: Sequence[float],
    ) -> tuple[list[int], list[Passage], list[str], list[float]]:
        """The passages whose score is final, with it: those of no burst at once, a burst's
        once all of it has been read."""
        out: tuple[list[int], list[Passage], list[str], list[float]] = ([], [], [], [])
        for item in zip(positions, passages, lowered, own, scores, strict=True):
            group = int(self.groups[item[0]])
            if group not in self.sizes:
                _append(out, item[0], item[1], item[2], item[4])
                continue
            waiting = self._waiting.setdefault(group, [])
            waiting.append(item)
            if len(waiting) == self.sizes[group]:
                self._release(self._waiting.pop(group), out)
        return out

    def flush(self) -> tuple[list[int], list[Passage], list[str], list[float]]:
        """The bursts some passage of which was not read (deleted meanwhile): scored with
        what was read."""
        out: tuple[list[int], list[Passage], list[str], list[float]] = ([], [], [], [])
        for group in sorted(self._waiting):
            self._release(self._waiting.pop(group), out)
        return out

    def _release(
        self,
        members: list[tuple[int, Passage, str, float, float]],
        out: tuple[list[int], list[Passage], list[str], list[float]],
    ) -> None:
        members.sort(key=lambda item: item[0])
        whole = self.matcher.score("\n".join(low for _, _, low, _, _ in members))
        for position, passage, low, own, score in members:
            gain = whole - own if whole > own else 0.0
            self.delta[position] = gain
            _append(out, position, passage, low, score + gain)


def _append(
    out: tuple[list[int], list[Passage], list[str], list[float]],
    position: int,
    passage: Passage,
    low: str,
    score: float,
) -> None:
    out[0].append(position)
    out[1].append(passage)
    out[2].append(low)
    out[3].append(score)


async def question_view(
    index: ScopeIndex, get_turns: Callable[[Sequence[int]], Awaitable[list[Turn]]]
) -> Corpus:
    """What `recall._as_the_memory_says` reads of a streamed scope, as a small corpus: the
    scope's words and speakers, and its passages that may name a relation, in scope order
    (read again by turn id). The same question results as over a cached corpus of the whole
    scope: only such passages can name a relation, and hops name turn ids."""
    words = index.words
    if words is None:
        raise ValueError("the scope index was built without its words")
    positions = words.relation_positions
    passages: list[Passage] = []
    if len(positions):
        at = np.searchsorted(index.starts, positions, side="right") - 1
        ids = np.unique(index.turn_ids[at]).tolist()
        turns: list[Turn] = []
        for start in range(0, len(ids), GET_TURNS_CHUNK):
            turns += await get_turns(ids[start : start + GET_TURNS_CHUNK])
        wanted = set(positions.tolist())
        placed = sorted(
            ((g, p) for g, p in index.place(sorted(turns, key=lambda t: t.id)) if g in wanted),
            key=lambda item: item[0],
        )
        passages = [p for _, p in placed]
    view = Corpus.build(passages)
    view.words = words.words
    view.speaker_names = speaker_names(index.speakers)
    view.partial = True
    return view


@dataclass
class ScopeIndex:
    """Where each passage of a scope sits, from the first read of it: later reads place
    each passage by its turn id without splitting turns again, skipping turns deleted or
    changed meanwhile. Reusable by every query until the store changes (about 30 bytes per
    passage)."""

    turn_ids: np.ndarray  # ascending
    starts: np.ndarray  # first passage of each turn; one more entry: the total
    spans: np.ndarray  # (start, end) of each passage in its turn's text
    speakers: frozenset[str | None]
    words: ScopeWords | None = None  # misspellings, relations, bursts (see scope_view)

    @property
    def passages(self) -> int:
        return int(self.starts[-1])

    @classmethod
    async def build(
        cls,
        pages: Pages,
        split: Split,
        each: Callable[[list[Passage]], None] | None = None,
        limiter: anyio.CapacityLimiter | None = None,
        words: ScopeWordsBuilder | None = None,
    ) -> ScopeIndex:
        """Read the scope once, splitting its turns (in worker threads); `each` sees every
        page's passages; `words` collects what the scope says of itself (`ScopeWords`)."""
        turn_ids: list[int] = []
        starts = [0]
        spans: list[int] = []
        speakers: set[str | None] = set()

        def index(turns: list[Turn]) -> None:
            page: list[Passage] = []
            for turn in turns:
                passages = split(turn)
                turn_ids.append(turn.id)
                starts.append(starts[-1] + len(passages))
                speakers.add(turn.speaker)
                for passage in passages:
                    spans.extend((passage.start, passage.end))
                page += passages
            if each is not None:
                each(page)
            if words is not None:
                words.add(page, lowered_texts(page))

        async for turns in pages():
            await off_loop(limiter, index, turns)
        return cls(
            turn_ids=np.asarray(turn_ids, dtype=np.int64),
            starts=np.asarray(starts, dtype=np.int64),
            spans=np.asarray(spans, dtype=np.int32).reshape(-1, 2),
            speakers=frozenset(speakers),
            words=words.build() if words is not None else None,
        )

    def place(self, turns: Sequence[Turn]) -> list[tuple[int, Passage]]:
        """(position in the scope, passage) of each passage of `turns` this index knows."""
        if not len(self.turn_ids):
            return []
        ids = np.fromiter((t.id for t in turns), dtype=np.int64, count=len(turns))
        found = np.searchsorted(self.turn_ids, ids).tolist()
        known = self.turn_ids[np.minimum(found, len(self.turn_ids) - 1)] == ids
        out: list[tuple[int, Passage]] = []
        for turn, at, ok in zip(turns, found, known.tolist(), strict=True):
            if not ok:
                continue
            first, end = int(self.starts[at]), int(self.starts[at + 1])
            spans = self.spans[first:end].tolist()
            if not spans or spans[-1][1] != len(turn.text):  # not the text it had
                continue
            out += [(first + i, Passage(turn, a, b)) for i, (a, b) in enumerate(spans)]
        return out
