"""Self-supervised ranking rows from the conversations themselves (see training/README.md):
the bi-encoder and the ColBERT trainers add them to the mined rows (`--self-supervised`).

Gold-labelled questions are few and slow to mine, and some sets' are not mined at all; the
conversations give many more rows, each (query, positive, hard negatives...):

- **asked**: a turn that asks something ("...?") and the next turn by someone else, which
  answers it: the question sentence is the query, the reply the positive;
- **cloze**: a sentence taken out of a turn of several sentences is the query, the rest of
  that turn the positive (the inverse cloze task).

The hard negatives are other turns of the same conversation, those sharing the most content
stems with the query first (the conversation's topic is shared, so telling them apart needs
more than the topic), and one at random. Texts are what the rankers read: "speaker: text".

Only the conversations of one fold are read (the bench's halves; QMSum's train folder is
fold A), so a model pre-trained here is still scored only on conversations it never saw.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from smartsearch_mcp.bench import datasets
from smartsearch_mcp.bench.datasets import Benchmark
from smartsearch_mcp.pipeline.words import content_stems
from training.pairs import FOLDS

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MAX_WORDS = 120  # of a positive or negative: the rankers' passages are at most 160 words
# Each set's bench loader and where the shared data folder keeps the set.
LOADERS: dict[str, tuple[Callable[[Path], Benchmark], str]] = {
    "locomo": (datasets.load_locomo_bench, "locomo"),
    "beam": (datasets.load_beam_bench, "beam-100k"),
    "memgallery": (datasets.load_memgallery_bench, "memgallery"),
    "realmem": (datasets.load_realmem_bench, "realmem"),
    "qmsum": (datasets.load_qmsum_bench, "qmsum"),
    "friendsqa": (datasets.load_friendsqa_bench, "friendsqa/friendsqa_dev.json"),
}


@dataclass(frozen=True, slots=True)
class Line:
    """One turn of a conversation as the rankers read it."""

    speaker: str | None
    text: str

    @property
    def shown(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True, slots=True)
class Row:
    """One training row: the query, its positive, its hard negatives, and its kind."""

    query: str
    positive: str
    negatives: tuple[str, ...]
    kind: str
    dataset: str


def clip(text: str, words: int = MAX_WORDS) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words])


def conversation_rows(
    lines: Sequence[Line], rng: random.Random, dataset: str, negatives: int = 3
) -> list[Row]:
    """The asked and cloze rows of one conversation (its turns in order)."""
    words = [content_stems(line.text) for line in lines]
    rows = []
    for index in range(len(lines)):
        for kind, query, positive, source in _queries(lines, index, rng):
            wanted = content_stems(query)
            if len(wanted) < 2:
                continue
            shut = {index, source}
            hard = sorted(
                (i for i in range(len(lines)) if i not in shut and words[i]),
                key=lambda i: (-len(wanted & words[i]), rng.random()),
            )
            picked = [i for i in hard[: negatives - 1] if wanted & words[i]]
            rest = [i for i in range(len(lines)) if i not in shut and i not in picked]
            picked += rng.sample(rest, min(negatives - len(picked), len(rest)))
            if len(picked) < negatives:
                continue
            rows.append(
                Row(
                    query,
                    clip(positive),
                    tuple(clip(lines[i].shown) for i in picked),
                    kind,
                    dataset,
                )
            )
    return rows


def _queries(
    lines: Sequence[Line], index: int, rng: random.Random
) -> Iterator[tuple[str, str, str, int]]:
    """(kind, query, positive text, index of the positive's turn) made from turn `index`."""
    line = lines[index]
    sentences = [s.strip() for s in _SENTENCE.split(line.text.strip()) if s.strip()]
    asked = [s for s in sentences if s.endswith("?") and len(s.split()) >= 4]
    if asked and index + 1 < len(lines):
        reply = lines[index + 1]
        if reply.speaker != line.speaker and len(reply.text.split()) >= 4:
            yield "asked", asked[-1], reply.shown, index + 1
    told = [i for i, s in enumerate(sentences) if len(s.split()) >= 6 and not s.endswith("?")]
    if len(sentences) >= 2 and len(line.text.split()) >= 16 and told:
        taken = rng.choice(told)
        rest = " ".join(s for i, s in enumerate(sentences) if i != taken)
        yield "cloze", sentences[taken], Line(line.speaker, rest).shown, index


def fold_conversations(
    data: Path, fold: str, sets: Iterable[str]
) -> Iterator[tuple[str, list[Line]]]:
    """(set name, turns) of every conversation of `fold` in the shared data folder."""
    for name in sets:
        load, folder = LOADERS[name]
        for haystack in load(data / folder).haystacks:
            if fold != "all" and haystack.half not in FOLDS[fold]:
                continue
            lines = [
                Line(turn.speaker, turn.text)
                for session in haystack.sessions
                for turn in session.turns
                if turn.text.strip()
            ]
            yield name, lines


def build_rows(
    data: Path, fold: str, sets: Sequence[str], seed: int = 13, negatives: int = 3
) -> list[Row]:
    rng = random.Random(seed)
    rows = [
        row
        for name, lines in fold_conversations(data, fold, sets)
        for row in conversation_rows(lines, rng, name, negatives)
    ]
    rng.shuffle(rows)
    return rows
