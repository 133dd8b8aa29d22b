"""Domain types shared by every layer: plain frozen dataclasses, no I/O.

Imports flow one way: types <- config <- store / models <- pipeline <- server <- cli.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "other"]
ROLES: tuple[str, ...] = ("user", "assistant", "other")

DEFAULT_NAMESPACE = "default"


class SmartSearchError(Exception):
    """Base class for expected, user-facing errors (bad input, unknown ids, bad config).

    The message must say what went wrong and what to do next.
    """


class InputError(SmartSearchError):
    """The caller's arguments are invalid; nothing was changed."""


class NotFoundError(SmartSearchError):
    """A referenced turn, session or namespace does not exist."""


class ConfigError(SmartSearchError):
    """A configuration file or value is invalid (raised at start-up, naming the key)."""


@dataclass(frozen=True, slots=True)
class TurnInput:
    """One turn as given by a caller or an importer, before it is stored."""

    text: str
    speaker: str | None = None
    role: str | None = None
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None
    # Where an importer read it ("export.jsonl, line 12"), for error messages: not stored,
    # not part of the turn's equality.
    source: str | None = field(default=None, compare=False)
    # `timestamp` was generated when the turn was first stored (it was given without one; an
    # export says so): kept as the turn's time, but the turn's identity — what duplicates are
    # recognised by — stays that of a turn given without a timestamp.
    timestamp_generated: bool = False


@dataclass(frozen=True, slots=True)
class SessionInput:
    """A session of turns from an importer: stored with one `remember` call."""

    session_id: str | None
    turns: list[TurnInput]


@dataclass(frozen=True, slots=True)
class Turn:
    """A stored turn. `text` is what was remembered, verbatim but for secrets replaced by
    `[REDACTED:kind]` (at write time, or by `redact --apply`)."""

    id: int
    namespace: str
    session_id: str
    position: int
    speaker: str | None
    role: str
    text: str
    timestamp: str | None  # normalized ISO 8601 (when it was said), or None
    timestamp_raw: str | None  # the string the caller gave
    created_at: str  # ISO 8601 UTC, when it was stored
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    namespace: str
    first_timestamp: str | None
    last_timestamp: str | None
    turn_count: int


@dataclass(frozen=True, slots=True)
class RememberResult:
    ids: list[int]  # one per input turn, in input order (a skipped duplicate maps to the stored id)
    session_id: str
    namespace: str
    stored: int
    duplicates_skipped: int
    secrets_redacted: int = 0  # secrets replaced by placeholders (redact.py), never shown
    dated_now: int = 0  # turns given without a timestamp, dated with the time of storing


@dataclass(frozen=True, slots=True)
class ForgetResult:
    deleted_turn_ids: list[int]
    deleted_sessions: list[str]
    namespace: str | None


@dataclass(frozen=True, slots=True)
class StoreStats:
    turns: int
    sessions: int
    namespaces: dict[str, int]  # namespace -> turn count
    first_timestamp: str | None
    last_timestamp: str | None
    database: str
    schema_version: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Scope:
    """Which turns a query may see."""

    namespaces: tuple[str, ...] = (DEFAULT_NAMESPACE,)
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class Passage:
    """A rankable piece of a turn: the whole turn, or a slice of a long one.

    `start`/`end` are character offsets into the turn's text.
    """

    turn: Turn
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.turn.text[self.start : self.end]

    @property
    def key(self) -> tuple[int, int]:
        return (self.turn.id, self.start)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A passage handed to the rankers, with how recall found it."""

    passage: Passage
    lexical_score: float
    sources: tuple[str, ...] = ()  # e.g. ("grep", "prf", "hop:Halvard", "date", "dense")


@dataclass(frozen=True, slots=True)
class Successor:
    """The later turn that gives a new value for what a passage says: the passage is no
    longer current (see rank.prefer_later_restatements)."""

    turn_id: int
    timestamp: str | None


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate after ranking: its fused score, each ranker's raw score, how sure the
    ranking is of it (0 to 1; None until computed, see rank.ranking_confidence), and the
    later turn that superseded it, when one did."""

    candidate: Candidate
    score: float
    ranker_scores: dict[str, float] = field(default_factory=dict)
    confidence: float | None = None
    superseded_by: Successor | None = None


@dataclass(frozen=True, slots=True)
class Hop:
    """An entity found in the first hits and searched again (multi-hop expansion)."""

    entity: str
    found_in: list[int]  # turn ids where the entity was discovered
    turn_ids: list[int]  # turn ids the second search added


@dataclass(frozen=True, slots=True)
class RankerRank:
    """One ranker's say on a passage: its rank among the candidates it scored (1 = best;
    ties share the best rank of the tie) and its raw score."""

    ranker: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class AdjustmentStep:
    """One adjustment that moved a passage (`stage`: "fusion", a cascade's "first_pass", or
    "final"): its score before and after, and the later turn that superseded it when the
    adjustment found one."""

    name: str
    stage: str
    before: float
    after: float
    superseded_by: int | None = None


@dataclass(frozen=True, slots=True)
class PassageExplanation:
    """Why a passage stands where it does (`position`: 1-based, in the final ranking):
    the channels that found it, each ranker's rank and score, the fused score (of `fusion`:
    the final fusion, or a cascade's first pass for passages that did not reach the
    expensive rankers), the adjustments that moved it, its final score and confidence."""

    passage: Passage
    position: int
    kept: bool
    channels: list[str]
    lexical_score: float
    rankers: list[RankerRank]
    fused_score: float | None
    fusion: str
    adjustments: list[AdjustmentStep]
    score: float
    confidence: float
    hops: list[str]  # entities whose multi-hop search added its turn
    in_date_window: bool | None  # None: the question names no dates
    superseded_by: int | None


@dataclass(frozen=True, slots=True)
class CutExplanation:
    """Where truncation cut: why it stopped, the threshold value (confidence) of the best
    passage left out, the threshold itself (None: none applied), and the limits."""

    stop_reason: str
    score_at_cut: float | None
    threshold: float | None
    alpha: float
    top_k: int
    max_tokens: int
    tokens_used: int
    ranked: int  # passages in the ranking
    kept: int


@dataclass(frozen=True, slots=True)
class DateWindow:
    """The dates a question names ("last week"), as recall read them (`end` excluded)."""

    expression: str
    start: str
    end: str


@dataclass(frozen=True, slots=True)
class RecallExplanation:
    """A recall's trace: its passages explained in the order returned, the best passages
    just below the cut, the cut, and the question's date window."""

    passages: list[PassageExplanation]
    below_cut: list[PassageExplanation]
    cut: CutExplanation
    date_window: DateWindow | None = None


@dataclass(frozen=True, slots=True)
class RecallResult:
    passages: list[Scored]
    tokens_used: int
    max_tokens: int
    rankers: list[str]
    warnings: list[str]
    hops: list[Hop] = field(default_factory=list)
    candidates: int = 0
    score_at_cut: float | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    # Why truncation stopped: "threshold" (the next passage's confidence fell below
    # truncation.alpha x the best), "top_k", "budget" or "exhausted" (every candidate kept).
    stop_reason: str = "exhausted"
    # How sure the ranking is of each returned passage, in [0, 1] (see rank.ranking_confidence).
    confidence: list[float] = field(default_factory=list)
    # Why each passage was recalled, when the recall was explained (see pipeline/explain.py).
    explanation: RecallExplanation | None = None

    def passage_confidences(self) -> list[float]:
        """The confidence of each passage, in order (1.0 each for a result built without)."""
        if len(self.confidence) == len(self.passages):
            return self.confidence
        return [1.0] * len(self.passages)


class Scorer(Protocol):
    """Scores (query, passage text) pairs; higher is more relevant. Synchronous, thread-safe."""

    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...
