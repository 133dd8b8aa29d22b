"""Stage 2: retrieve candidates — NER-weighted grep over raw passages (index-free), or the
same scoring over what the FTS5 index returns (indexed), plus pseudo-relevance feedback,
the passages inside the question's time range (see `dated.py`) and, when embeddings are
cached, dense nearest neighbours."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from smartsearch_mcp.config import PassageConfig, RetrievalConfig
from smartsearch_mcp.pipeline.analyze import QueryAnalysis, WeightedTerm
from smartsearch_mcp.pipeline.bursts import add_burst_matches, burst_groups, burst_texts
from smartsearch_mcp.pipeline.dated import Dated, add_date_bonus, best_dated, date_channel
from smartsearch_mcp.pipeline.fusion import reciprocal_rank_fusion
from smartsearch_mcp.pipeline.lexical import (
    compile_term,
    compile_terms,
    counts_of,
    select_prf_terms,
)
from smartsearch_mcp.pipeline.relations import RelationName
from smartsearch_mcp.pipeline.spelling import memory_words
from smartsearch_mcp.pipeline.term_counts import TermCounts, WordIndex
from smartsearch_mcp.pipeline.word_stats import CorpusStats
from smartsearch_mcp.stages import CHANNELS, QUOTA_ONLY_CHANNELS
from smartsearch_mcp.types import Candidate, Passage

# Minimum share of an idf-scaled term weight: a term in every turn (a speaker's name in a
# two-person chat) still counts a little.
MIN_IDF_SHARE = 0.15
# Word document frequencies (for PRF) are estimated from at most this many passages: a
# scope's corpus is cached (counted once), a per-query corpus (indexed mode) is not.
STATS_SAMPLE = 20_000
QUERY_STATS_SAMPLE = 500


@dataclass
class Corpus:
    """The passages one scope can see, with what repeated queries reuse."""

    passages: list[Passage]
    texts: Sequence[str]  # what rankers read: "speaker: text" (see `RankingTexts`)
    lowered: list[str]
    stats: CorpusStats | None = None
    vectors: np.ndarray | None = None  # unit vectors, row i for passages[i]
    vector_model: str | None = None
    context: list[str] | None = None  # see `context_text`, filled by the pipeline
    context_vectors: np.ndarray | None = None
    sparse: object | None = None  # SPLADE vectors (`sparse.SparseMatrix`), when used
    burst_index: tuple[tuple[int, int], list[int], dict[int, str]] | None = None
    speaker_names: frozenset[str] | None = None
    bm25: dict[int, float] | None = None  # turn id -> FTS5 BM25, when the index chose them
    # what `relations.resolve_relations` looked up in these passages
    relations: dict[str, list[RelationName]] = dataclasses.field(default_factory=dict)
    words: frozenset[str] | None = None  # see `vocabulary`
    stats_sample: int = STATS_SAMPLE
    # Only some passages of the scope (the scope was streamed, see `scan.scan_scope`):
    # nothing may be computed over "every passage" of it.
    partial: bool = False
    # Read again from its scope's cache (see `term_counts`); set by `corpus.ScopeCorpora`.
    reused: bool = False
    word_index: WordIndex | None = None

    @classmethod
    def build(cls, passages: list[Passage]) -> Corpus:
        return cls(passages=passages, texts=RankingTexts(passages), lowered=lowered_texts(passages))

    def speakers(self) -> frozenset[str]:
        """The names of everyone who speaks in these passages (full names and first names)."""
        if self.speaker_names is None:
            self.speaker_names = speaker_names({p.turn.speaker for p in self.passages})
        return self.speaker_names

    def vocabulary(self) -> frozenset[str]:
        """The words of these passages a question's word may be misspelled as
        (`spelling.memory_words`), collected once."""
        if self.words is None:
            self.words = memory_words(self.lowered)
        return self.words

    def bursts(self, seconds: int, max_words: int) -> tuple[list[int], dict[int, str]]:
        """Each passage's burst group and the lowered joined text of each burst of several
        passages (see `bursts.burst_groups`), computed once per setting."""
        key = (seconds, max_words)
        if self.burst_index is None or self.burst_index[0] != key:
            groups = burst_groups(self.passages, seconds, max_words)
            self.burst_index = (key, groups, burst_texts(self.lowered, groups))
        return self.burst_index[1], self.burst_index[2]

    def indexed_words(self) -> WordIndex | None:
        """The `WordIndex` of `lowered`, for a corpus read again from its scope's cache
        (`reused`): built at the first call (a few scans' cost) and kept, so its later
        queries find words without scanning every text; None for a corpus built for one
        query, as each query after a write builds one: it never pays for it. (Two queries
        at once may both build it; either index is the same.)"""
        if self.reused and self.word_index is None and not self.partial:
            self.word_index = WordIndex(self.lowered)
        return self.word_index

    def term_counts(self) -> TermCounts:
        """Grep's term counts over these passages (from `indexed_words` when it has one)."""
        return counts_of(self.lowered, lowered=True, words=self.indexed_words())

    def corpus_stats(self) -> CorpusStats:
        if self.stats is None:
            self.stats = CorpusStats.from_texts(self.lowered, max_texts=self.stats_sample)
        return self.stats


def speaker_names(speakers: Iterable[str | None]) -> frozenset[str]:
    """The names of these speakers, full and first names."""
    names: set[str] = set()
    for speaker in speakers:
        if speaker and speaker.strip():
            names.add(speaker.strip())
            names.add(speaker.split()[0])
    return frozenset(names)


class RankingTexts(Sequence[str]):
    """The ranking text of each passage, made when it is read: a scope of a million turns
    keeps only its lowered texts (for matching), not a second copy for the rankers, which
    read a few hundred candidates."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self._passages = passages

    def __len__(self) -> int:
        return len(self._passages)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [ranking_text(p) for p in self._passages[index]]
        return ranking_text(self._passages[index])


def ranking_text(passage: Passage) -> str:
    """The text the rankers score: the passage with its speaker, as a transcript line."""
    speaker = passage.turn.speaker
    return f"{speaker}: {passage.text}" if speaker else passage.text


def lowered_texts(passages: Iterable[Passage]) -> list[str]:
    """What grep matches: each passage's ranking text, lowercased."""
    return [ranking_text(p).lower() for p in passages]


def context_text(previous: str | None, text: str) -> str:
    """A passage preceded by the end of the turn said just before it in its session: replies
    like "Yes, last weekend!" are embedded together with what they answer."""
    return f"{previous}\n{text}" if previous else text


# Speaker labels that are roles, not people: "what did the assistant suggest" keeps them.
ROLE_NAMES = frozenset({"user", "assistant", "system", "human", "ai", "bot", "me", "i", "you"})


def dense_query(query: str, speakers: Sequence[str] | frozenset[str]) -> str:
    """The query the bi-encoder embeds: the question without the names of the people who
    speak in the conversation (and their possessive 's).

    People do not name themselves: "What does Ann do to relax?" is answered by Ann's turn
    "I go running", while the name pulls a sentence embedding towards turns that address
    Ann ("Hey Ann!"). Who said a turn is matched by the lexical channel (speaker bonus)
    instead. A query that would be left empty is kept whole.
    """
    pattern = _names_pattern(frozenset(speakers))
    if pattern is None:
        return query
    stripped = " ".join(pattern.sub(" ", query).split())
    return stripped if re.search(r"\w", stripped) else query


@functools.lru_cache(maxsize=16)
def _names_pattern(speakers: frozenset[str]) -> re.Pattern[str] | None:
    names = sorted(
        (n for n in speakers if n and n.lower() not in ROLE_NAMES), key=len, reverse=True
    )
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(r"\b(?:" + alternatives + r")(?:['’]s)?\b", re.IGNORECASE)


def idf_weighted(
    terms: Sequence[WeightedTerm], lowered: Sequence[str] | TermCounts
) -> list[WeightedTerm]:
    """Scale each term's weight by how rare it is among `lowered` texts (in how many of them
    it matches), so a word in every turn cannot outweigh the one that finds the answer."""
    return idf_from_counts(terms, term_document_counts(terms, lowered), len(lowered))


def term_document_counts(
    terms: Sequence[WeightedTerm], lowered: Sequence[str] | TermCounts
) -> list[int]:
    """For each term, how many of the `lowered` texts it matches the way grep matches it
    (whole words and their inflections, see `lexical.term_pattern`: "art" is not counted in
    "party"). Counts of several batches of texts add up. With `TermCounts`, its counts."""
    counts = lowered if isinstance(lowered, TermCounts) else counts_of(lowered)
    return counts.documents([compile_term(term) for term in terms])


def idf_from_counts(
    terms: Sequence[WeightedTerm], counts: Sequence[int], total: int
) -> list[WeightedTerm]:
    """`idf_weighted` from each term's document count among `total` texts."""
    if total < 2:
        return list(terms)
    ceiling = math.log(1 + total)
    out = []
    for term, df in zip(terms, counts, strict=True):
        share = math.log(1 + total / (df + 0.5)) / ceiling if df else 1.0
        factor = max(MIN_IDF_SHARE, min(1.0, share))
        out.append(dataclasses.replace(term, weight=round(term.weight * factor, 4)))
    return out


def lexical_scores(
    terms: Sequence[WeightedTerm], lowered: Sequence[str] | TermCounts
) -> list[float]:
    """The weighted grep score of every text (0.0 where nothing matches)."""
    return compile_terms(terms).score_all(lowered)


def add_prf(
    analysis: QueryAnalysis,
    scores: list[float],
    corpus: Corpus,
    prf_docs: int,
    prf_terms: int,
) -> tuple[list[float], list[WeightedTerm]]:
    """Scores after pseudo-relevance feedback: terms typical of the best hits are searched
    too, at lower weight. Returns the new scores and the expansion terms."""
    if prf_docs <= 0 or prf_terms <= 0:
        return scores, []
    top = top_indices(scores, prf_docs)
    if not top:
        return scores, []
    expansion = select_prf_terms(
        analysis, feedback_texts(corpus.passages[i] for i in top), corpus.corpus_stats(), prf_terms
    )
    if not expansion:
        return scores, []
    extra = lexical_scores(expansion, corpus.term_counts())
    return with_feedback(scores, extra), expansion


def feedback_texts(passages: Iterable[Passage]) -> list[str]:
    """What feedback draws its terms from: what was said, lowercased, without the speaker
    label — the best hits' speaker is who talked, not what the question is about."""
    return [p.text.lower() for p in passages]


def with_feedback(scores: Sequence[float], extra: Sequence[float]) -> list[float]:
    """Query scores combined with the scores of the feedback terms: feedback refines ranking
    among texts that matched the query; it only adds new texts through its strongest terms."""
    return [s + e if s > 0 else e * 0.5 for s, e in zip(scores, extra, strict=True)]


def said_by_named(passages: Sequence[Passage], analysis: QueryAnalysis) -> list[float]:
    """1.0 for each passage *said by* someone the question names, else 0.0 ("What does Ann do
    to relax?" is answered by Ann's own turns more often than by turns that mention her)."""
    named = {e.text.lower() for e in analysis.entities}
    named |= {t.term for t in analysis.terms if t.kind in ("entity", "proper")}
    if not named:
        return [0.0] * len(passages)
    by_speaker: dict[str | None, float] = {}  # a conversation has few speakers
    out = []
    for passage in passages:
        said = by_speaker.get(passage.turn.speaker)
        if said is None:
            speaker = (passage.turn.speaker or "").lower()
            named_it = bool(speaker) and (speaker in named or speaker.split()[0] in named)
            said = by_speaker[passage.turn.speaker] = 1.0 if named_it else 0.0
        out.append(said)
    return out


def add_speaker_bonus(scores: list[float], said: Sequence[float], bonus: float) -> list[float]:
    """Raise the lexical score of matching passages said by someone the question names
    (`said`: one flag per passage, from `said_by_named`)."""
    if bonus <= 0:
        return scores
    return [s + bonus if s > 0 and by else s for s, by in zip(scores, said, strict=True)]


def top_indices(scores: Sequence[float] | np.ndarray, n: int, minimum: float = 0.0) -> list[int]:
    """Indices of the `n` highest scores above `minimum`, best first (ties: lower index)."""
    if n <= 0:
        return []
    values = np.asarray(scores, dtype=np.float64)
    above = np.flatnonzero(values > minimum)
    best = values[above]
    if len(above) > n:  # only the scores that can be among the best n are sorted
        nth = np.partition(best, len(best) - n)[len(best) - n]
        keep = best >= nth
        above, best = above[keep], best[keep]
    return above[np.lexsort((above, -best))][:n].tolist()


def select_candidates(
    channels: Mapping[str, Sequence[float] | np.ndarray],
    quotas: Mapping[str, int],
    total: int,
    rrf_k: int,
) -> list[int]:
    """Up to `total` passage indices for the rankers, from several retrieval channels.

    `channels` maps a channel name (lexical, bm25, dense …) to one score per passage, higher
    is better. First each channel contributes its best `quotas[name]` passages with a
    positive score (channels in name order, so one channel's strong hits are never crowded
    out by another's; `QUOTA_ONLY_CHANNELS` channels' places are kept first and taken last); the
    rest of `total` goes to the passages the channels agree on: reciprocal-rank fusion of
    all channels over the whole scope, among passages that score above zero in at least
    one channel (`QUOTA_ONLY_CHANNELS` channels fill their quota only).
    Deterministic: ties go to the lower index.
    """
    if total <= 0 or not channels:
        return []
    arrays = {name: np.asarray(values, dtype=np.float64) for name, values in channels.items()}
    size = len(next(iter(arrays.values())))
    # The quota-only channels' places are reserved first, and taken after the others' (their
    # passages that another channel found keep that channel's place in the order).
    reserved: dict[int, None] = {}
    for name in sorted(QUOTA_ONLY_CHANNELS & set(arrays)):
        for index in top_indices(arrays[name], min(quotas.get(name, 0), total - len(reserved))):
            reserved.setdefault(index)
    arrays = {name: values for name, values in arrays.items() if name not in QUOTA_ONLY_CHANNELS}
    chosen: list[int] = []
    seen: set[int] = set()
    for name in sorted(arrays):
        pending = sum(1 for index in reserved if index not in seen)
        room = min(quotas.get(name, 0), total - len(chosen) - pending)
        for index in top_indices(arrays[name], room):
            if index not in seen:
                chosen.append(index)
                seen.add(index)
    for index in reserved:
        if index not in seen:
            chosen.append(index)
            seen.add(index)
    if len(chosen) >= total or not arrays:
        return chosen[:total]
    fused = np.asarray(reciprocal_rank_fusion(arrays, rrf_k))
    matched = np.zeros(size, dtype=bool)
    for values in arrays.values():
        matched |= np.nan_to_num(values, nan=-np.inf) > 0
    order = np.lexsort((np.arange(size), -fused))
    for index in order[matched[order]]:
        if len(chosen) >= total:
            break
        if int(index) not in seen:
            chosen.append(int(index))
            seen.add(int(index))
    return chosen


@dataclass
class Candidates:
    """Stage 2's result, read by expansion and ranking: the passages retrieval looked at
    (`corpus`), each one's score in every retrieval channel, and the chosen candidates."""

    corpus: Corpus
    scores: list[float]  # final lexical score of each corpus passage
    bm25: list[float]  # BM25 of each passage's turn ([] when BM25 is not used)
    said: list[float]  # 1.0 if said by someone the question names (`said_by_named`)
    channels: dict[str, Sequence[float] | np.ndarray]  # channel -> score of each passage
    chosen: list[int]  # the candidates (corpus indices), in selection order
    spare: list[int]  # the rest of the selection, for the places expansion leaves unused
    query_vector: np.ndarray | None = None
    embedded_query: str = ""  # what the bi-encoder embedded (see `dense_query`)

    def take(self) -> list[Candidate]:
        """The chosen passages as candidates, with their lexical score and the channels in
        which they scored above zero."""
        names = sorted(self.channels)
        return [
            Candidate(
                passage=self.corpus.passages[i],
                lexical_score=float(self.scores[i]),
                sources=tuple(name for name in names if self.channels[name][i] > 0),
            )
            for i in self.chosen
        ]


def score_lexically(
    analysis: QueryAnalysis,
    corpus: Corpus,
    said: Sequence[float],
    retrieval: RetrievalConfig,
    passages: PassageConfig | None = None,
) -> list[float]:
    """Every passage's lexical score: idf-weighted grep, pseudo-relevance feedback, the date
    and speaker bonuses, and what matching the passage's whole burst adds (with
    `passages.burst_seconds`; CPU-bound over the whole corpus: run in a worker thread)."""
    # each term is looked for once, for its idf and its score
    counts = corpus.term_counts()
    terms = idf_weighted(analysis.terms, counts)
    own = lexical_scores(terms, counts)
    scores, _ = add_prf(analysis, own, corpus, retrieval.prf_docs, retrieval.prf_terms)
    scores = add_date_bonus(scores, corpus.passages, analysis.time_range)
    scores = add_speaker_bonus(scores, said, retrieval.speaker_bonus)
    if passages is not None and passages.burst_seconds > 0:
        groups, joined = corpus.bursts(passages.burst_seconds, passages.max_words)
        if joined:
            matcher = compile_terms(terms)
            burst = {group: matcher.score(text) for group, text in joined.items()}
            scores = add_burst_matches(scores, own, burst, groups)
    return scores


def channel_quotas(channels: Iterable[str], retrieval: RetrievalConfig) -> dict[str, int]:
    """Each channel's quota: the retrieval setting its `stages.CHANNELS` entry names."""
    return {name: getattr(retrieval, CHANNELS[name].quota) for name in channels}


def retrieve_candidates(
    corpus: Corpus,
    scores: list[float],
    bm25: list[float],
    said: list[float],
    retrieval: RetrievalConfig,
    *,
    total: int,
    rrf_k: int,
    query_vector: np.ndarray | None = None,
    embedded_query: str = "",
    selected: Sequence[int] | None = None,
    sparse_scores: np.ndarray | None = None,
    dated: Dated | None = None,
) -> Candidates:
    """The candidate channels over `corpus` and the selection of `retrieval.max_candidates`
    of them (`select_candidates`; `selected`: already chosen while the scope was streamed),
    of which the first `total` are the candidates and the others `spare`. Dense channels
    come from the corpus's vectors when there are a `query_vector` and vectors; the SPLADE
    channel from `sparse_scores` (one per passage) when its quota is above zero; the date
    channel from `dated`, the passages inside the question's time range (`dated.py`)."""
    channels: dict[str, Sequence[float] | np.ndarray] = {"lexical": scores}
    if bm25:
        channels["bm25"] = bm25
    best: np.ndarray | None = None
    if query_vector is not None and corpus.vectors is not None:
        dense = corpus.vectors @ query_vector
        channels["dense"] = dense
        best = dense
        if corpus.context_vectors is not None:
            context = corpus.context_vectors @ query_vector
            channels["context"] = context
            best = np.maximum(dense, context)
        if retrieval.speaker_candidates > 0 and any(said):
            channels["speaker_dense"] = np.where(np.asarray(said) > 0, best, 0.0)
    if sparse_scores is not None and retrieval.splade_candidates > 0:
        channels["splade"] = sparse_scores
    if dated is not None and retrieval.date_candidates > 0:
        ordered_dated = dated.best
        if ordered_dated is None:
            quota = retrieval.date_candidates
            ordered_dated = best_dated(dated, corpus.passages, scores, best, quota)
        channels["date"] = date_channel(len(corpus.passages), dated.inside, ordered_dated)
    quotas = channel_quotas(channels, retrieval)
    # One selection of the full size: its first `total` are what a selection of `total`
    # would choose (quotas, then fusion, fill in the same order); the rest take the places
    # expansion leaves unused.
    if selected is None:
        ordered = select_candidates(channels, quotas, retrieval.max_candidates, rrf_k)
    else:
        ordered = list(selected)
    return Candidates(
        corpus=corpus,
        scores=scores,
        bm25=bm25,
        said=said,
        channels=channels,
        chosen=ordered[:total],
        spare=ordered[total:],
        query_vector=query_vector,
        embedded_query=embedded_query,
    )
