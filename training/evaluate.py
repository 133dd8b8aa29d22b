"""A quick check of a trained ranker on mined rankings, before a full bench run:

    python -m training.evaluate --model runs/ce-A/model --mined runs/mined/* --fold B

Each question's passages as recall ranked them (the best N kept by `--keep-ranking`, gold
ranked further down included) are ranked again by the model alone, and by the model fused with
recall's order (reciprocal ranks); reported per set: the share of questions whose first passage
is gold (first), mean reciprocal rank of the first gold passage (MRR), the share with a gold
passage in the first 5. Recall's own order is the baseline. Only passages recall ranked take
part, so this measures re-ranking, not retrieval; `smartsearch-mcp bench` measures the whole.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smartsearch_mcp.models.precision import native_bf16
from training.pairs import MinedQuestion, in_fold, read_sets

log = logging.getLogger("training")

Scorer = Callable[[str, list[str]], list[float]]


def load_scorer(path: str) -> Scorer:
    """The ranker at `path`: an ONNX ranker folder (a cross-encoder or a ColBERT), a ColBERT
    (MaxSim, loaded by the server's own `ColbertScorer`), a saved CrossEncoder (torch), or a
    sentence-embedding model (a bi-encoder: cosine similarity of question and passage); bf16
    only on a CPU that computes it natively."""
    from smartsearch_mcp.models.onnx_ranker import manifest_kind
    from smartsearch_mcp.models.registry import ONNX_RANKERS

    kind = manifest_kind(path)
    if kind in ONNX_RANKERS:
        return ONNX_RANKERS[kind].load(path).score
    if is_colbert(Path(path)):
        from smartsearch_mcp.models import ColbertScorer, ModelLocation

        colbert = ColbertScorer.load(ModelLocation(path, path, "directory"), precision="auto")
        return colbert.score
    import torch

    if _is_bi_encoder(Path(path)):
        from sentence_transformers import SentenceTransformer

        encoder = SentenceTransformer(path, device="cpu")

        def similarity(query: str, texts: list[str]) -> list[float]:
            vectors = encoder.encode(
                [query, *texts], normalize_embeddings=True, show_progress_bar=False
            )
            return [float(x) for x in vectors[1:] @ vectors[0]]

        return similarity
    from sentence_transformers.cross_encoder import CrossEncoder

    model = CrossEncoder(path, device="cpu")

    def score(query: str, texts: list[str]) -> list[float]:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=native_bf16()):
            logits = model.predict(
                [(query, t) for t in texts],
                batch_size=32,
                activation_fn=torch.nn.Identity(),
                show_progress_bar=False,
            )
        return [float(x) for x in logits]

    return score


def _is_bi_encoder(folder: Path) -> bool:
    """A sentence-transformers embedding model: its modules include a pooling layer."""
    modules = folder / "modules.json"
    return modules.is_file() and "Pooling" in modules.read_text(encoding="utf-8")


def is_colbert(folder: Path) -> bool:
    """A multi-vector model: a sentence-transformers >= 6 `MultiVectorEncoder` save, or a
    PyLate one (its query and document prefixes in the same file)."""
    config = folder / "config_sentence_transformers.json"
    if not config.is_file():
        return False
    saved = json.loads(config.read_text(encoding="utf-8"))
    return saved.get("model_type") == "MultiVectorEncoder" or "query_prefix" in saved


def ranked_passages(question: MinedQuestion) -> list[dict[str, Any]]:
    """The passages recall ranked, in its order, one per turn (a turn's best passage)."""
    seen: set[int] = set()
    out = []
    ranked = [p for p in question.record["passages"] if p["rank"] is not None]
    for passage in sorted(ranked, key=lambda p: p["rank"]):
        if passage["turn"] not in seen:
            seen.add(passage["turn"])
            out.append(passage)
    return out


def first_gold(order: Sequence[bool]) -> int | None:
    """The 0-based position of the first gold passage, or None."""
    return next((i for i, gold in enumerate(order) if gold), None)


def fuse(*orders: Sequence[int], k: float = 15.0) -> list[int]:
    """Reciprocal rank fusion of several orders of the same items (indices)."""
    scores: dict[int, float] = {}
    for order in orders:
        for rank, item in enumerate(order):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda item: (-scores[item], item))


def evaluate(
    questions: Sequence[MinedQuestion], scorer: Scorer, fold: str
) -> dict[str, dict[str, dict[str, float]]]:
    """{set: {system: {first, mrr, top5, n}}} over the questions of `fold` with gold ranked."""
    tallies: dict[str, dict[str, list[int | None]]] = {}
    for question in questions:
        if not in_fold(question, fold) or not question.record.get("gold"):
            continue
        passages = ranked_passages(question)
        gold = [p["gold"] for p in passages]
        if not any(gold):
            continue
        scores = scorer(question.record["question"], [p["text"] for p in passages])
        recall_order = list(range(len(passages)))
        model_order = sorted(recall_order, key=lambda i: (-scores[i], i))
        systems = {
            "recall": recall_order,
            "model": model_order,
            "model+recall": fuse(model_order, recall_order),
        }
        table = tallies.setdefault(question.dataset, {name: [] for name in systems})
        for name, order in systems.items():
            table[name].append(first_gold([gold[i] for i in order]))
    return {
        dataset: {name: _summary(positions) for name, positions in systems.items()}
        for dataset, systems in tallies.items()
    }


def _summary(positions: Sequence[int | None]) -> dict[str, float]:
    n = len(positions)
    return {
        "first": sum(p == 0 for p in positions) / n,
        "mrr": sum(1.0 / (p + 1) for p in positions if p is not None) / n,
        "top5": sum(p is not None and p < 5 for p in positions) / n,
        "n": n,
    }


def format_table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = ["| set | n | system | first | MRR | top 5 |", "|---|---:|---|---:|---:|---:|"]
    for dataset, systems in sorted(results.items()):
        for name, row in systems.items():
            lines.append(
                f"| {dataset} | {row['n']:.0f} | {name} | {row['first']:.3f} | "
                f"{row['mrr']:.3f} | {row['top5']:.3f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--mined", nargs="+", required=True)
    parser.add_argument("--fold", choices=("A", "B", "all"), required=True)
    parser.add_argument("--exclude", nargs="*", default=[])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: its default)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    questions = read_sets(args.mined, exclude=args.exclude)
    scorer = load_scorer(args.model)
    started = time.perf_counter()
    results = evaluate(questions, scorer, args.fold)
    elapsed = time.perf_counter() - started
    scored = sum(int(next(iter(systems.values()))["n"]) for systems in results.values())
    print(f"{Path(args.model)} on fold {args.fold}:\n")
    print(format_table(results))
    each = 1000 * elapsed / max(scored, 1)
    print(f"\n{scored} questions scored in {elapsed:.0f} s ({each:.0f} ms each)")


if __name__ == "__main__":
    main()
