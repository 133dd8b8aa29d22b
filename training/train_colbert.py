"""Train a ColBERT (late interaction) ranker on mined conversational rankings:

    python -m training.train_colbert --mined runs/mined/* --fold A --out runs/colbert-A

Starts from all-MiniLM-L6-v2 with a new token-level projection to 128 dimensions (its
pooling dropped), trained with sentence-transformers' own multi-vector training
(`MultiVectorEncoderTrainer`, `MultiVectorMultipleNegativesRankingLoss`): each gold passage is
an (anchor = question, positive) row with the question's hardest negatives (recall's
best-ranked passages that are not gold) as extra columns, and every other passage of the batch
a negative too; a text's score is MaxSim. The saved folder is the sentence-transformers >= 6
multi-vector layout that the server's `ColbertScorer` loads natively (no pylate).

`--max-steps 0` saves the starting point untrained (MiniLM and its fresh projection, seeded
as a trained run's is), so that what training adds can be measured.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.train_bi_encoder import (
    add_self_supervised_options,
    rows_recipe,
    triplet_training_rows,
)
from training.train_cross_encoder import (
    base_name,
    minilm_path,
    run_parser,
    run_trainer,
    save_recipe,
    trainer_settings,
)

log = logging.getLogger("training")

QUERY_LENGTH = 32  # question tokens; the questions of these sets are short
SERVED_DOCUMENT_LENGTH = 256  # passage tokens at recall: all-MiniLM-L6-v2's own length


def colbert_from(base: str, *, query_length: int, document_length: int) -> Any:
    """A `MultiVectorEncoder` built from a sentence-embedding or bare BERT folder: its token
    vectors through a fresh 128-dimension projection, normalized; MaxSim scoring."""
    from sentence_transformers import MultiVectorEncoder

    model = MultiVectorEncoder(base, device="cpu", local_files_only=True)
    transformer = model[0]
    transformer.query_length = query_length
    transformer.document_length = document_length
    return model


def train(args: argparse.Namespace) -> Path:
    import torch
    from datasets import Dataset
    from sentence_transformers import (
        MultiVectorEncoderTrainer,
        MultiVectorEncoderTrainingArguments,
    )
    from sentence_transformers.multi_vector_encoder.losses import (
        MultiVectorMultipleNegativesRankingLoss,
    )

    torch.set_num_threads(args.threads)
    rows, table = triplet_training_rows(args)
    base = args.base or minilm_path()
    torch.manual_seed(args.seed)  # the fresh projection: the same for an untrained save
    # Trained on passages cut shorter than it reads at recall (a step's cost grows with the
    # longest text of the batch); the saved model reads `SERVED_DOCUMENT_LENGTH` tokens.
    model = colbert_from(base, query_length=args.query_length, document_length=args.max_seq_length)
    out = Path(args.out)
    elapsed = 0.0
    if args.max_steps != 0:
        loss = MultiVectorMultipleNegativesRankingLoss(model, scale=args.scale)
        settings = trainer_settings(args, out, args.batch_size)
        if args.max_steps > 0:
            settings["max_steps"] = args.max_steps
        trainer = MultiVectorEncoderTrainer(
            model=model,
            args=MultiVectorEncoderTrainingArguments(**settings),
            train_dataset=Dataset.from_list(rows),
            loss=loss,
        )
        elapsed = run_trainer(trainer, args)
    final = out / "model"
    model[0].document_length = args.served_length
    model.save_pretrained(str(final))
    recipe = {
        "base": base_name(args.base, base),
        "library": "sentence-transformers MultiVectorEncoder",
        "projection_dim": model.get_embedding_dimension(),
        "loss": "MultiVectorMultipleNegativesRankingLoss (hard and in-batch negatives)",
        **rows_recipe(args, rows, table),
        "query_length": args.query_length,
        "train_document_length": args.max_seq_length,
        "served_document_length": args.served_length,
        "epochs": args.epochs,
        "max_steps": args.max_steps,
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "scale": args.scale,
        "bf16": args.bf16,
        "seed": args.seed,
        "threads": args.threads,
        "train_seconds": round(elapsed),
    }
    return save_recipe(final, recipe, args)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = run_parser(
        __doc__.split("\n\n")[0], "the model to start from (default all-MiniLM-L6-v2)"
    )
    parser.add_argument("--negatives", type=int, default=3, help="hard negatives per row")
    add_self_supervised_options(parser)
    parser.add_argument(
        "--max-seq-length",
        type=int,
        default=128,
        help="cut passages to this many tokens while training",
    )
    parser.add_argument("--served-length", type=int, default=SERVED_DOCUMENT_LENGTH)
    parser.add_argument("--query-length", type=int, default=QUERY_LENGTH)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument(
        "--max-steps",
        type=int,
        default=-1,
        help="stop after N steps (0: save the untrained starting point; -1: all epochs)",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="1 / temperature of the loss (MaxSim is a sum)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    train(parse_args(argv))


if __name__ == "__main__":
    main()
