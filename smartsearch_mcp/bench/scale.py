"""`bench scale`: a deterministic synthetic memory of up to millions of turns, built by
recombining real turns of the benchmark data with other names and dates. Measures bulk
`remember` throughput, database size, recall latency in each retrieval mode at growing
sizes, embedding throughput (separately), and peak RSS.
"""

from __future__ import annotations

import logging
import os
import random
import re
import resource
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smartsearch_mcp.bench.metrics import latency_summary
from smartsearch_mcp.bench.progress import progress_bar
from smartsearch_mcp.config import Config
from smartsearch_mcp.importers.beam import load_beam
from smartsearch_mcp.importers.locomo import load_locomo
from smartsearch_mcp.types import InputError, TurnInput

if TYPE_CHECKING:
    from smartsearch_mcp.memory import Memory

log = logging.getLogger(__name__)

NAMESPACE = "scale"
DEFAULT_CHECKPOINTS: tuple[int, ...] = (10_000, 100_000, 1_000_000, 10_000_000)
MODES: tuple[str, ...] = ("indexed", "grep")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST_NAMES = _words(
    "Aaliyah Abel Ada Aiko Alan Alba Amara Amir Ana Anders Anika Arjun Asha Aurora Bea Bruno "
    "Caleb Camila Carmen Chen Chiara Dara Diego Dmitri Elena Elif Emeka Emil Esme Farah "
    "Felix Freya Gabriel Greta Hana Hugo Ines Ivan Jada Jonas Kai Kamala Kenji Lara Leon "
    "Lina Luca Maya Mateo Mei Mila Nadia Nico Noor Omar Oskar Paloma Priya Quinn Rafael Rania "
    "Rosa Sami Sara Selin Soren Tariq Tessa Tomas Uma Valeria Vikram Wanjiru Yara Yusuf Zara"
)
LAST_NAMES = _words(
    "Abara Berg Castillo Dubois Eriksen Fischer Garcia Haddad Ito Jansen Kowalski Larsen "
    "Moreau Nakamura Okafor Petrov Quist Rossi Silva Tanaka Ueda Varga Weber Xu Yilmaz Zhou"
)
MONTHS = _words(
    "January February March April May June July August September October November December"
)
_YEAR = re.compile(r"\b(?:19[89]\d|20[0-3]\d)\b")
_MONTH = re.compile(r"\b(?:" + "|".join(MONTHS) + r")\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
START_DATE = datetime(2015, 1, 1, 9, 0)
SPAN_YEARS = 10


@dataclass(frozen=True)
class SourceCorpus:
    """Real turns to recombine, the names they mention, and real questions for queries."""

    texts: list[str]
    names: list[str]
    questions: list[str]
    sources: list[str]


@dataclass(frozen=True)
class ScaleOptions:
    """What to build and measure."""

    turns: int
    modes: tuple[str, ...] = MODES
    checkpoints: tuple[int, ...] | None = None
    batch_size: int = 10_000
    queries: int = 20
    seed: int = 0
    max_tokens: int = 1500
    embed_sample: int = 1000
    progress: bool = True
    db_path: str | Path | None = None  # a file, or a postgresql:// URL


@dataclass
class ScaleOutput:
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    remember_s: float = 0.0
    words: int = 0  # whitespace words in the generated turns
    generate_s: float = 0.0
    stored: int = 0
    duplicates: int = 0
    embedding: dict[str, Any] | None = None
    skipped: list[str] = field(default_factory=list)


def load_source_corpus(paths: Sequence[str | Path]) -> SourceCorpus:
    """Real turns from LoCoMo files/folders and BEAM splits. A folder holding neither is
    searched one level down, and its subfolders that are not benchmark data are skipped."""
    texts: list[str] = []
    names: set[str] = set()
    questions: list[str] = []
    sources: list[str] = []
    for path, explicit in _expand_sources(paths):
        try:
            if _is_beam(path):
                for conversation in load_beam(path):
                    texts.extend(t.text for s in conversation.sessions for t in s.turns)
                    questions.extend(q.question for q in conversation.questions[:5])
                sources.append(f"BEAM ({path.name})")
            else:
                for locomo in load_locomo(path):
                    texts.extend(t.text for s in locomo.sessions for t in s.turns)
                    names.update(locomo.speakers)
                    questions.extend(q.question for q in locomo.questions if q.category in (1, 4))
                sources.append(f"LoCoMo ({path.name})")
        except InputError as exc:
            if explicit:
                raise
            log.info("skipping %s: not LoCoMo or BEAM data (%s)", path, exc)
    if not texts:
        raise InputError(
            f"no LoCoMo or BEAM turns found in {', '.join(map(str, paths))}; give --data a "
            "LoCoMo folder, a BEAM split, or a folder holding them"
        )
    return SourceCorpus(texts, sorted(names), questions, sources)


def _expand_sources(paths: Sequence[str | Path]) -> list[tuple[Path, bool]]:
    """(path, given explicitly) for each path, or for the subfolders of a parent folder."""
    found: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise InputError(f"{path}: no such file or folder (--data)")
        if path.is_file() or _is_beam(path) or any(path.glob("*.json")):
            found.append((path, True))
            continue
        found.extend(
            (child, False)
            for child in sorted(path.iterdir())
            if child.is_dir() and (_is_beam(child) or any(child.glob("*.json")))
        )
    return found


def _is_beam(path: Path) -> bool:
    if not path.is_dir():
        return False
    return (path / "chat.json").is_file() or any(path.glob("*/chat.json"))


class TurnSynthesizer:
    """Deterministic synthetic turns: a real turn with its names and dates replaced, now and
    then joined with a sentence of another turn; sessions of 10-30 turns between two people,
    dated across ten years."""

    def __init__(self, corpus: SourceCorpus, seed: int) -> None:
        self.corpus = corpus
        self.random = random.Random(seed)
        self.people = [f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES]
        self._name_pattern = (
            re.compile(r"\b(?:" + "|".join(map(re.escape, corpus.names)) + r")\b")
            if corpus.names
            else None
        )

    def turns(self, count: int) -> Iterator[TurnInput]:
        """`count` synthetic turns, the same for the same corpus and seed."""
        produced = 0
        while produced < count:
            rnd = self.random
            speakers = rnd.sample(self.people, 2)
            moment = START_DATE + timedelta(
                days=rnd.randrange(SPAN_YEARS * 365), minutes=rnd.randrange(24 * 60)
            )
            stamp = moment.isoformat(timespec="minutes")
            for position in range(min(rnd.randint(10, 30), count - produced)):
                speaker = speakers[position % 2]
                yield TurnInput(
                    text=self._text(speakers),
                    speaker=speaker.split()[0],
                    role="user" if position % 2 == 0 else "assistant",
                    timestamp=stamp,
                )
                produced += 1

    def queries(self, count: int) -> list[str]:
        """`count` questions from the real data, with synthetic names."""
        rnd = random.Random(len(self.corpus.questions))
        pool = self.corpus.questions or [_first_sentence(t) for t in self.corpus.texts[:200]]
        chosen = [pool[i % len(pool)] for i in range(count)]
        rnd.shuffle(chosen)
        return [self._rename(q, rnd.sample(self.people, 2), rnd) for q in chosen]

    def _text(self, speakers: list[str]) -> str:
        rnd = self.random
        text = rnd.choice(self.corpus.texts)
        if len(text) > 4000:
            text = text[:4000]
        if rnd.random() < 0.3:
            other = _first_sentence(rnd.choice(self.corpus.texts))
            text = f"{text} {other}"
        return self._rename(text, speakers, rnd)

    def _rename(self, text: str, speakers: list[str], rnd: random.Random) -> str:
        firsts = [s.split()[0] for s in speakers]
        if self._name_pattern is not None:
            mapping: dict[str, str] = {}

            def swap(match: re.Match[str]) -> str:
                if match[0] not in mapping:
                    index = len(mapping)
                    mapping[match[0]] = (
                        firsts[index] if index < 2 else rnd.choice(self.people).split()[0]
                    )
                return mapping[match[0]]

            if any(name in text for name in self.corpus.names):  # a cheap test first
                text = self._name_pattern.sub(swap, text)
        if "19" in text or "20" in text:
            text = _YEAR.sub(lambda _: str(rnd.randint(2015, 2025)), text)
        if any(month in text for month in MONTHS):
            text = _MONTH.sub(lambda _: rnd.choice(MONTHS), text)
        return text


def _first_sentence(text: str) -> str:
    return _SENTENCE.split(text.strip(), maxsplit=1)[0][:400]


def checkpoints_for(turns: int, wanted: Sequence[int] | None = None) -> list[int]:
    """Sizes to measure recall at: 10K, 100K, 1M... up to `turns`, and `turns` itself."""
    points = sorted({p for p in (wanted or DEFAULT_CHECKPOINTS) if 0 < p <= turns} | {turns})
    return points


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


async def _db_bytes(memory: Memory) -> int:
    from smartsearch_mcp.store import SQLiteStore

    if not isinstance(memory.store, SQLiteStore):
        return (await memory.store.stats()).size_bytes
    path = memory.store.path
    return sum(
        os.path.getsize(f"{path}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{path}{suffix}")
    )


async def run_scale(config: Config, options: ScaleOptions, corpus: SourceCorpus) -> ScaleOutput:
    """Build the synthetic memory through `Memory.remember` and measure at each checkpoint."""
    for mode in options.modes:
        if mode not in MODES:
            raise InputError(f"unknown retrieval mode {mode!r} in --modes; use {', '.join(MODES)}")
    if options.turns < 1:
        raise InputError("--turns must be at least 1")
    with tempfile.TemporaryDirectory(prefix="smartsearch-scale-") as tmp:
        db_path = options.db_path or Path(tmp) / "scale.db"
        return await _run_scale(config, options, corpus, db_path)


async def _run_scale(
    config: Config, options: ScaleOptions, corpus: SourceCorpus, db_path: str | Path
) -> ScaleOutput:
    from smartsearch_mcp.memory import Memory

    output = ScaleOutput()
    synthesizer = TurnSynthesizer(corpus, options.seed)
    queries = synthesizer.queries(options.queries)
    checkpoints = checkpoints_for(options.turns, options.checkpoints)
    batch_size = max(1, min(options.batch_size, config.store.max_turns_per_call))
    memory = await Memory.open(config, db_path, NAMESPACE)
    from smartsearch_mcp.store import is_postgres_url

    if is_postgres_url(str(db_path)) and (await memory.store.namespaces()).get(NAMESPACE):
        await memory.close()
        raise InputError(
            f"{memory.store.path} already holds turns in namespace {NAMESPACE!r}: build the "
            "scale memory in an empty database (or forget that namespace first)"
        )
    readers = {
        mode: Memory(
            memory.store,
            config.with_overrides(retrieval={"mode": mode}),
            memory.models,
            NAMESPACE,
        )
        for mode in options.modes
    }
    progress = progress_bar(options.progress, options.turns, "remembering", " turns")
    try:
        stream = synthesizer.turns(options.turns)
        stored = 0
        batch_number = 0
        for checkpoint in checkpoints:
            checkpoint_started = output.remember_s
            checkpoint_stored = stored
            while stored < checkpoint:
                started = time.perf_counter()
                batch = [
                    t
                    for _, t in zip(
                        range(min(batch_size, checkpoint - stored)), stream, strict=False
                    )
                ]
                if not batch:
                    break
                output.words += sum(len(turn.text.split()) for turn in batch)
                output.generate_s += time.perf_counter() - started
                started = time.perf_counter()
                result = await memory.remember(batch, session_id=f"scale-{batch_number:06d}")
                output.remember_s += time.perf_counter() - started
                batch_number += 1
                stored += len(batch)
                output.stored += result.stored
                output.duplicates += result.duplicates_skipped
                progress.update(len(batch))
            segment_s = output.remember_s - checkpoint_started
            point: dict[str, Any] = {
                "turns": stored,
                "remember_turns_per_s": (stored - checkpoint_stored) / segment_s
                if segment_s
                else None,
                "db_bytes": await _db_bytes(memory),
                "recall": {},
            }
            for mode, reader in readers.items():
                reader.pipeline.invalidate()
                progress.set_description(f"recall ({mode}) at {stored:,} turns")
                point["recall"][mode] = await _measure_recall(reader, queries, options.max_tokens)
                point["recall"][mode]["after_write"] = await _measure_recall_after_writes(
                    memory, reader, queries, options.max_tokens
                )
            point["peak_rss_mb"] = peak_rss_mb()
            output.checkpoints.append(point)
            progress.set_description("remembering")
        if options.embed_sample and _uses_embeddings(config):
            output.embedding = _measure_embedding(memory, synthesizer, options.embed_sample)
    finally:
        progress.close()
        await memory.close()
    return output


async def _measure_recall(
    memory: Memory, queries: Sequence[str], max_tokens: int
) -> dict[str, Any]:
    # The first recall loads models and builds caches (in grep mode with dense retrieval it
    # also embeds the turns not embedded yet): reported apart, not in the percentiles.
    started = time.perf_counter()
    await memory.recall(queries[0], max_tokens)
    first_ms = (time.perf_counter() - started) * 1000
    wall: list[float] = []
    stages: dict[str, list[float]] = {}
    for query in queries:
        started = time.perf_counter()
        result = await memory.recall(query, max_tokens)
        wall.append((time.perf_counter() - started) * 1000)
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(float(ms))
    return {
        **latency_summary(wall),
        "first_ms": first_ms,
        "stages_p50": {s: latency_summary(v)["p50"] for s, v in stages.items()},
    }


async def _measure_recall_after_writes(
    writer: Memory, reader: Memory, queries: Sequence[str], max_tokens: int
) -> dict[str, Any]:
    """Recall right after a write, as an agent's memory sees it (each prompt captured, then
    recalled): before each query one short turn is remembered in a session of its own, and
    the reader is told, as a server is by its own writes."""
    wall: list[float] = []
    for query in queries:
        note = f"Note {time.time_ns()}: taken while the memory is searched."  # never a repeat
        await writer.remember([TurnInput(note, "user")], session_id="scale-writes")
        reader.pipeline.changed()
        started = time.perf_counter()
        await reader.recall(query, max_tokens)
        wall.append((time.perf_counter() - started) * 1000)
    return latency_summary(wall)


def _uses_embeddings(config: Config) -> bool:
    return "bi_encoder" in config.rank.scorers or config.retrieval.dense


def _measure_embedding(
    memory: Memory, synthesizer: TurnSynthesizer, sample: int
) -> dict[str, Any] | None:
    encoder = memory.models.get_bi_encoder()
    if encoder is None:
        log.warning("no bi-encoder could be loaded; embedding throughput not measured")
        return None
    texts = [turn.text for turn in synthesizer.turns(sample)]
    encoder.embed(texts[:8])  # untimed warm-up
    started = time.perf_counter()
    encoder.embed(texts)
    elapsed = time.perf_counter() - started
    return {
        "model": memory.config.models.bi_encoder,
        "turns": len(texts),
        "seconds": elapsed,
        "turns_per_s": len(texts) / elapsed if elapsed else None,
    }
