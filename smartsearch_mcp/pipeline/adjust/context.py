"""What an adjustment reads besides the ranking it changes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from smartsearch_mcp.config import RankConfig
from smartsearch_mcp.pipeline.analyze import QueryAnalysis
from smartsearch_mcp.types import Scored

if TYPE_CHECKING:
    from smartsearch_mcp.pipeline.explain import Tracer


@dataclass
class Context:
    """One recall's settings and question, for its adjustments: `burst_seconds` is
    passages.burst_seconds; `analysis` the question read (None at the fusion stage, which
    reads only `query`, the question as asked; taken from `analysis` when not given);
    `similarity(passages)` the matrix of the passages' bi-encoder similarities (None: the
    bi-encoder did not rank, and no adjustment may lean on it); an adjustment's notes for the
    user go to `warnings`; `trace` records what each adjustment did when the recall is
    explained (None: it is not)."""

    rank: RankConfig
    burst_seconds: int = 0
    analysis: QueryAnalysis | None = None
    similarity: Callable[[Sequence[Scored]], np.ndarray] | None = None
    warnings: list[str] = field(default_factory=list)
    trace: Tracer | None = None
    query: str = ""

    def __post_init__(self) -> None:
        if not self.query and self.analysis is not None:
            self.query = self.analysis.query
