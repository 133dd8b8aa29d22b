"""Word statistics of a scope: in how many texts each word appears, counted over every text or
estimated from an evenly spaced sample, and extended in place when texts are appended (idf for
pseudo-relevance feedback)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from smartsearch_mcp.pipeline.words import distinct_words


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """Document frequencies of words over the searched turns, for PRF's idf. When they are
    estimated from a sample, `counted` holds the sample's own counts and `sampled` its size
    (see `extended_stats`)."""

    doc_freq: Mapping[str, int]
    total_docs: int
    counted: Mapping[str, int] | None = None
    sampled: int = 0

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        vocabulary: Collection[str] | None = None,
        max_texts: int | None = None,
    ) -> CorpusStats:
        """Count, for each word (or each word of `vocabulary`), the texts containing it.

        With `max_texts`, larger corpora are estimated from at most that many evenly spaced
        texts (`sample_positions`; counts scaled to the whole): idf needs proportions, not
        exact counts, and tokenizing every text of a large scope on each query would dominate
        recall.
        """
        total = len(texts)
        sample = [texts[i] for i in sample_positions(total, max_texts)]
        return cls.from_sample(sample, total, vocabulary)

    @classmethod
    def from_sample(
        cls, texts: Sequence[str], total: int, vocabulary: Collection[str] | None = None
    ) -> CorpusStats:
        """Counts over `texts`, scaled to a corpus of `total` texts they were sampled from
        (the texts at `sample_positions`)."""
        counts: Counter[str] = Counter()
        wanted = set(vocabulary) if vocabulary is not None else None
        for text in texts:
            words = distinct_words(text)
            counts.update(words if wanted is None else words & wanted)
        return cls._scaled(counts, len(texts), total)

    @classmethod
    def _scaled(cls, counts: Mapping[str, int], sampled: int, total: int) -> CorpusStats:
        step = total / sampled if 0 < sampled < total else 1.0
        if step > 1.0:
            scaled = {w: min(total, max(1, round(c * step))) for w, c in counts.items()}
            return cls(scaled, total, dict(counts), sampled)
        return cls(doc_freq=dict(counts), total_docs=total)


def extended_stats(
    stats: CorpusStats, texts: Sequence[str], max_texts: int | None
) -> CorpusStats | None:
    """What `CorpusStats.from_texts(earlier + texts, max_texts=max_texts)` gives, from
    `stats` (that of the `earlier` texts) and counting only the added texts in the sample:
    the sample of a corpus is its first text and every stride-th after it, so texts appended
    add their own positions and keep the others. None when the stride changes (the corpus
    doubled past the sample): count again. Every scope query right after a write used to
    count the whole sample again."""
    before = stats.total_docs
    total = before + len(texts)
    stride = sample_stride(total, max_texts)
    if stride != sample_stride(before, max_texts):
        return None
    first = -(-before // stride) * stride  # the first sampled position among the added
    counts = Counter(stats.counted if stats.counted is not None else stats.doc_freq)
    for position in range(first, total, stride):
        counts.update(distinct_words(texts[position - before]))
    sampled = stats.sampled if stats.counted is not None else before
    return CorpusStats._scaled(counts, sampled + len(range(first, total, stride)), total)


def sample_stride(total: int, max_texts: int | None) -> int:
    """The smallest power of two that takes at most `max_texts` of `total` texts."""
    stride = 1
    while max_texts is not None and max_texts > 0 and -(-total // stride) > max_texts:
        stride *= 2
    return stride


def sample_positions(total: int, max_texts: int | None) -> range:
    """Which of `total` texts `CorpusStats.from_texts` counts: all, or every stride-th from
    the first (`sample_stride`: at most `max_texts`, more than half as many), ascending; a
    text appended later never changes which earlier texts are counted, until the stride
    doubles."""
    return range(0, total, sample_stride(total, max_texts))
