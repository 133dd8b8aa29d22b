"""Tiny randomly initialised BERT models built on disk, so model code is tested without a hub.

The weights are random (seeded), so scores mean nothing, but every loader path is real: the
directories have the files and layouts of hub checkpoints (a cross-encoder, a
sentence-transformers model, a PyLate ColBERT). torch and transformers are imported inside the
builders only.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]
# fmt: off
WORDS = [
    "a", "an", "and", "at", "did", "do", "does", "for", "from", "had", "has", "have", "he",
    "her", "his", "i", "in", "is", "it", "last", "live", "lives", "loves", "march", "may",
    "tobias", "moved", "my", "of", "on", "painting", "paris", "she", "the", "to", "was",
    "went", "when", "where", "who", "with", "you", "margaret", "dog", "cat", "hiking", "book",
    "music", "june", "july", "yesterday", "sweden", "berlin", "friend", "reading", "club",
    "rental", "office", "sailing", "coast", "weaving", "guitar", "concert", "?", ".", ",",
]
# fmt: on
VOCAB = SPECIAL_TOKENS + WORDS

RANKING_QUERY = "where did margaret move"
# Twelve texts of different lengths and overlaps with the query, so that the random tiny
# models spread their scores and a ranking means something.
RANKING_TEXTS = [
    "margaret moved to paris in june",
    "tobias loves painting and weaving",
    "the dog went hiking yesterday",
    "she went to a reading club with her friend",
    "my friend has a guitar",
    "margaret moved to sweden",
    "when did tobias go sailing at the coast",
    "margaret",
    "the concert in berlin was in july",
    "he loves music and a book",
    "where is the rental office",
    "did you move to paris or to berlin in march",
]


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation of two score lists."""
    import numpy as np

    ranks_a = np.argsort(np.argsort(a))
    ranks_b = np.argsort(np.argsort(b))
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])


HIDDEN = 32
MAX_LENGTH = 128
COLBERT_DIM = 16


@dataclass(frozen=True)
class TinyModels:
    """Directories holding tiny models in hub layouts."""

    bert: Path  # bare BertForSequenceClassification (num_labels=1): a cross-encoder
    sentence_transformer: Path  # BertModel + mean pooling + normalize (modules.json)
    colbert: Path  # BertModel + token-level Dense projection, PyLate format


def build_tiny_models(root: Path, *, seed: int = 0) -> TinyModels:
    """Build all tiny models under `root`."""
    bert = build_tiny_bert(root / "bert", seed=seed)
    return TinyModels(
        bert=bert,
        sentence_transformer=build_tiny_sentence_transformer(bert, root / "sentence_transformer"),
        colbert=build_tiny_colbert(bert, root / "colbert", seed=seed + 1),
    )


def build_tiny_bert(directory: Path, *, seed: int = 0) -> Path:
    """A 2-layer BERT (hidden 32) with a one-logit classification head and a WordPiece
    tokenizer over `VOCAB`. Loads with CrossEncoder(directory); the encoder alone is also
    saved to `directory / "encoder"` for the other layouts."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    # Not BertTokenizerFast(vocab_file=...): in transformers 5 it silently builds a 5-token
    # vocabulary. from_pretrained reads vocab.txt properly.
    tokenizer = BertTokenizerFast.from_pretrained(str(directory), model_max_length=MAX_LENGTH)
    assert len(tokenizer) == len(VOCAB), f"tokenizer has {len(tokenizer)} tokens, not {len(VOCAB)}"
    assert tokenizer.convert_tokens_to_ids("paris") == VOCAB.index("paris")

    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_LENGTH,
        num_labels=1,
        initializer_range=0.2,  # wider than BERT's 0.02, so random scores differ visibly
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    encoder = directory / "encoder"
    model.bert.save_pretrained(str(encoder))
    tokenizer.save_pretrained(str(encoder))
    return directory


def build_tiny_sentence_transformer(bert: Path, directory: Path) -> Path:
    """The tiny encoder as a sentence-transformers model: mean pooling, then normalize
    (the layout of sentence-transformers/all-MiniLM-L6-v2)."""
    _copy_encoder(bert, directory)
    _write_json(
        directory / "modules.json",
        [
            _module(0, "", "sentence_transformers.models.Transformer"),
            _module(1, "1_Pooling", "sentence_transformers.models.Pooling"),
            _module(2, "2_Normalize", "sentence_transformers.models.Normalize"),
        ],
    )
    _write_json(
        directory / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": HIDDEN,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )
    (directory / "2_Normalize").mkdir(exist_ok=True)
    return directory


def build_tiny_colbert(bert: Path, directory: Path, *, seed: int = 1) -> Path:
    """The tiny encoder as a PyLate ColBERT checkpoint: a bias-free token-level projection to
    16 dimensions, [unused0]/[unused1] as query/document markers (in the vocabulary, so no
    embedding is added at load time)."""
    import torch
    from safetensors.torch import save_file

    _copy_encoder(bert, directory)
    _write_json(
        directory / "modules.json",
        [
            _module(0, "", "sentence_transformers.models.Transformer"),
            _module(1, "1_Dense", "pylate.models.Dense.Dense"),
        ],
    )
    generator = torch.Generator().manual_seed(seed)
    weight = torch.randn(COLBERT_DIM, HIDDEN, generator=generator) * 0.2
    (directory / "1_Dense").mkdir(exist_ok=True)
    weights_file = directory / "1_Dense" / "model.safetensors"
    save_file({"linear.weight": weight.contiguous()}, str(weights_file))
    _write_json(
        directory / "1_Dense" / "config.json",
        {
            "in_features": HIDDEN,
            "out_features": COLBERT_DIM,
            "bias": False,
            "activation_function": "torch.nn.modules.linear.Identity",
            "use_residual": False,
        },
    )
    _write_json(
        directory / "config_sentence_transformers.json",
        {
            "model_type": "ColBERT",
            "query_prefix": "[unused0]",
            "document_prefix": "[unused1]",
            "query_length": 16,
            "document_length": 64,
            "attend_to_expansion_tokens": False,
            "skiplist_words": [],
            "do_query_expansion": True,
            "similarity_fn_name": "MaxSim",
        },
    )
    return directory


def _copy_encoder(bert: Path, directory: Path) -> None:
    shutil.copytree(bert / "encoder", directory, dirs_exist_ok=True)
    settings = {"max_seq_length": MAX_LENGTH, "do_lower_case": False}
    _write_json(directory / "sentence_bert_config.json", settings)


def _module(index: int, path: str, type_: str) -> dict[str, object]:
    return {"idx": index, "name": str(index), "path": path, "type": type_}


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
