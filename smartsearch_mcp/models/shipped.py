"""The rankers this project trains and ships inside the package (training/ says how they were
made; each folder's README.md is its model card). A configured model name equal to one of
these resolves to its folder, and its files are checked against the SHA-256 pinned here
before the model is opened (`OnnxRanker.load`, `OnnxColbert.load`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"


@dataclass(frozen=True, slots=True)
class ShippedModel:
    """A model folder of the package and the SHA-256 of each of its files."""

    name: str
    folder: str
    sha256: dict[str, str]

    @property
    def path(self) -> Path:
        return WEIGHTS_DIR / self.folder


SHIPPED: dict[str, ShippedModel] = {
    model.name: model
    for model in (
        # A ColBERT trained here from all-MiniLM-L6-v2 (its README.md is the model card).
        ShippedModel(
            "smartsearch-colbert-v1",
            "smartsearch-colbert-v1",
            {
                "model.int8.onnx": (
                    "19f3b70591fa36ba30ddf4b4b2c499b69de450cb77a84008371cc9b6f00d9707"
                ),
                "tokenizer.json": (
                    "f17212c38517cfedc9306b57eeffbaf58c4976fcb42e5a87b405f36a7b9a9eb2"
                ),
            },
        ),
    )
}


def shipped_model(name: str) -> ShippedModel | None:
    """The shipped model of that name (case-insensitive), or None."""
    return SHIPPED.get(name.strip().lower())


def shipped_hashes(name: str) -> dict[str, str] | None:
    """The pinned hashes of the shipped model of that name (None: not a shipped model)."""
    model = shipped_model(name)
    return dict(model.sha256) if model is not None else None
