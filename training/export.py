"""Export a trained cross-encoder or ColBERT as the ONNX ranker folder the server loads:

    python -m training.export --model runs/ce-all/model --card MODEL_CARD.md \
        --out smartsearch_mcp/weights/<name>

Writes the int8 model (per-channel weights, as `models/onnx.py` quantizes), tokenizer.json, the
model card as README.md, the recipe (training.json) and ranker.json with every file's SHA-256,
then prints the hashes to pin in `smartsearch_mcp/models/shipped.py`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from smartsearch_mcp.models.onnx_colbert import OnnxColbert, export_onnx_colbert
from smartsearch_mcp.models.onnx_ranker import OnnxRanker, export_onnx_ranker, read_manifest
from training.evaluate import is_colbert


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", required=True, help="a saved CrossEncoder or MultiVectorEncoder folder"
    )
    parser.add_argument("--out", required=True, help="the ranker folder to write")
    parser.add_argument("--card", help="the model card (markdown), shipped as README.md")
    parser.add_argument("--precision", choices=("int8", "fp32"), default="int8")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    extra = {}
    if args.card:
        extra["README.md"] = Path(args.card).read_text(encoding="utf-8")
    recipe = Path(args.model) / "training.json"
    if recipe.is_file():
        extra["training.json"] = recipe.read_text(encoding="utf-8")
    colbert = is_colbert(Path(args.model))
    export = export_onnx_colbert if colbert else export_onnx_ranker
    folder = export(args.model, args.out, precision=args.precision, extra_files=extra)
    ranker = OnnxColbert if colbert else OnnxRanker
    manifest = read_manifest(folder, ranker.kind, ranker.manifest_keys)
    print(json.dumps(manifest["sha256"], indent=1))


if __name__ == "__main__":
    main()
