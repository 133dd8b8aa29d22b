"""Fine-tune the bi-encoder (all-MiniLM-L6-v2) on mined conversational rankings:

    python -m training.train_bi_encoder --mined runs/mined/* --fold A --out runs/bi-A

Each gold passage is an (anchor = question, positive) pair with the question's hardest
negatives (recall's best-ranked passages that are not gold) as extra columns, trained with
sentence-transformers' `SentenceTransformerTrainer` and `MultipleNegativesRankingLoss` (the
other questions' passages in a batch are negatives too). The bi-encoder starts from a model that
already matches by meaning, so it needs far less data than a cross-encoder learning to read a
question and a passage together from scratch.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.pairs import Pair, build_pairs, counts, read_sets
from training.train_cross_encoder import (
    base_name,
    minilm_path,
    run_parser,
    run_trainer,
    save_recipe,
    trainer_settings,
)

log = logging.getLogger("training")


def triplet_rows(pairs: Sequence[Pair], negatives: int) -> list[dict[str, Any]]:
    """One row per positive: the question, the positive and the question's first `negatives`
    negatives (rows of questions with fewer negatives are left out: the columns are fixed)."""
    by_question: dict[str, tuple[list[Pair], list[Pair]]] = {}
    for pair in pairs:
        positives, others = by_question.setdefault(pair.question_id, ([], []))
        (positives if pair.label > 0 else others).append(pair)
    rows = []
    for positives, others in by_question.values():
        if len(others) < negatives:
            continue
        for positive in positives:
            row = {"question": positive.question, "passage": positive.passage}
            row |= {f"negative_{i + 1}": others[i].passage for i in range(negatives)}
            rows.append(row)
    return rows


def add_self_supervised_options(parser: argparse.ArgumentParser) -> None:
    """The options of the trainers that take self-supervised rows (`self_supervised_rows`)."""
    from training.self_pairs import LOADERS

    parser.add_argument(
        "--self-supervised",
        nargs="*",
        default=[],
        choices=tuple(LOADERS),
        help="sets whose conversations (of the fold) add rows of their own (training.self_pairs)",
    )
    parser.add_argument("--self-rows", type=int, default=1000, help="at most N rows per set")
    parser.add_argument("--data", default="../shared/data", help="the shared data folder")


def self_supervised_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """At most `--self-rows` rows of each `--self-supervised` set's conversations in the run's
    fold (`training.self_pairs`), each with `--negatives` hard negatives, in the columns of
    `triplet_rows` and with the name of their set."""
    from training.self_pairs import build_rows

    taken: dict[str, int] = {}
    rows = []
    data = Path(args.data)
    for row in build_rows(data, args.fold, args.self_supervised, args.seed, args.negatives):
        if taken.get(row.dataset, 0) >= args.self_rows:
            continue
        taken[row.dataset] = taken.get(row.dataset, 0) + 1
        columns = {"question": row.query, "passage": row.positive}
        columns |= {f"negative_{i + 1}": row.negatives[i] for i in range(args.negatives)}
        rows.append(columns | {"dataset": row.dataset})
    return rows


def triplet_training_rows(
    args: argparse.Namespace,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """The rows of `triplet_rows` for the run `args` asks for (its mined sets, fold, exclusions,
    hard negatives per row and seed) and the pairs per set; exits when there are none."""
    questions = read_sets(args.mined, exclude=args.exclude)
    pairs = build_pairs(questions, fold=args.fold, negatives=args.negatives, seed=args.seed)
    rows = triplet_rows(pairs, args.negatives)
    if not rows:
        sys.exit("no training rows: check --mined, --fold and --exclude")
    table: dict[str, dict[str, int]] = counts(pairs)
    for name, row in sorted(table.items()):
        log.info("%-12s %5d questions %6d positives %6d negatives", name, *row.values())
    for row in self_supervised_rows(args) if args.self_supervised else []:
        name = f"{row.pop('dataset')} (self-supervised)"
        table.setdefault(name, {"rows": 0})["rows"] += 1
        rows.append(row)
    for name, row in sorted(table.items()):
        if "rows" in row:
            log.info("%-12s %5d rows", name, row["rows"])
    return rows, table


def rows_recipe(
    args: argparse.Namespace, rows: Sequence[dict[str, Any]], table: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """The recipe entries of a run on `triplet_training_rows`: its fold, the sets left out and
    added self-supervised, the rows per set and the hard negatives per row."""
    return {
        "fold": args.fold,
        "excluded_sets": list(args.exclude),
        "self_supervised_sets": list(args.self_supervised),
        "self_supervised_rows_per_set": args.self_rows if args.self_supervised else 0,
        "rows": len(rows),
        "per_set": table,
        "negatives_per_row": args.negatives,
    }


def train(args: argparse.Namespace) -> Path:
    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.set_num_threads(args.threads)
    rows, table = triplet_training_rows(args)
    dataset = Dataset.from_list(rows)
    base = args.base or minilm_path()
    model = SentenceTransformer(base, device="cpu")
    # Trained on texts cut shorter than the model reads at recall (the cost of a step grows
    # with the longest text in the batch); the saved model keeps the base's length.
    served_length = model.max_seq_length
    if args.max_seq_length:
        model.max_seq_length = args.max_seq_length
    loss = MultipleNegativesRankingLoss(model)
    out = Path(args.out)
    training_args = SentenceTransformerTrainingArguments(
        **trainer_settings(args, out, args.batch_size)
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=training_args, train_dataset=dataset, loss=loss
    )
    elapsed = run_trainer(trainer, args)
    final = out / "model"
    model.max_seq_length = served_length
    model.save_pretrained(str(final))
    recipe = {
        "base": base_name(args.base, base),
        **rows_recipe(args, rows, table),
        "train_max_seq_length": args.max_seq_length or served_length,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "seed": args.seed,
        "train_seconds": round(elapsed),
    }
    return save_recipe(final, recipe, args)


def main(argv: Sequence[str] | None = None) -> None:
    parser = run_parser(
        __doc__.split("\n\n")[0], "the model to start from (default all-MiniLM-L6-v2)"
    )
    parser.add_argument("--negatives", type=int, default=3)
    parser.add_argument(
        "--max-seq-length",
        type=int,
        default=128,
        help="cut texts to this many tokens while training (0: the model's own length)",
    )
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-5)
    add_self_supervised_options(parser)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    train(parser.parse_args(argv))


if __name__ == "__main__":
    main()
