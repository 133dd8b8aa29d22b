"""The first recall after the handshake waits for a model still loading at most
`models.load_wait_s`: a model that loads in that time ranks it (a recall right after start-up
is a full recall); one that takes longer is left out, the recall says so, and it never claims
that nothing is stored only because a model was still loading."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import smartsearch_mcp.memory as memory_module
from smartsearch_mcp.config import Config
from smartsearch_mcp.models.registry import ModelRegistry, ModelStatus
from smartsearch_mcp.server import create_server
from smartsearch_mcp.types import TurnInput

pytestmark = pytest.mark.anyio

CONFIG = Config().with_overrides(
    rank={"scorers": ["cross_encoder"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)
QUERY = {"query": "What is the puppy called?"}


class PuppyScorer:
    """A cross-encoder stand-in: scores by how often "puppy" occurs."""

    name = "cross_encoder"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(text.lower().count("puppy")) for text in texts]


class BlockingRegistry(ModelRegistry):
    """Loads the cross-encoder only once `release` is set, as a slow disk would."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__(CONFIG.models, CONFIG.nlp)
        self.release = release

    def _load(self, kind: str) -> tuple[Any | None, ModelStatus]:
        if kind != "cross_encoder":
            return None, ModelStatus(kind, "none", None, ok=False)
        self.release.wait(timeout=120)
        return PuppyScorer(), ModelStatus(kind, "fake", None, ok=True)


def _use_registry(monkeypatch: pytest.MonkeyPatch, registry: ModelRegistry) -> None:
    """Memory.open builds its models from `registry`."""

    class Registry:
        @staticmethod
        def from_config(config: Config, **options: Any) -> ModelRegistry:
            return registry

    monkeypatch.setattr(memory_module, "ModelRegistry", Registry)


async def test_the_first_recall_answers_lexically_while_a_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    registry = BlockingRegistry(release)
    _use_registry(monkeypatch, registry)
    config = CONFIG.with_overrides(models={"load_wait_s": 0.0})
    server = create_server(config, tmp_path / "m.db", preload_models=True)
    try:
        async with Client(server) as client:
            await client.call_tool(
                "remember",
                {"turns": [{"text": "My puppy is called Biscuit."}, {"text": "I like tea."}]},
            )
            with anyio.fail_after(60):  # without the bound it waits for the model: forever
                first = (await client.call_tool("recall", QUERY)).structured_content
            assert first is not None
            assert first["rankers"] == ["lexical"]
            assert any("models are still loading" in w for w in first["warnings"])
            assert "Biscuit" in first["passages"][0]["text"]

            release.set()
            with anyio.fail_after(60):
                while not registry.loaded("cross_encoder"):
                    await anyio.sleep(0.01)
            second = (await client.call_tool("recall", QUERY)).structured_content
            assert second is not None
            assert second["rankers"] == ["cross_encoder"]
            assert not any("loading" in w for w in second["warnings"])
    finally:
        release.set()


async def test_a_recall_right_after_start_up_waits_for_a_model_that_loads_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    registry = BlockingRegistry(release)
    _use_registry(monkeypatch, registry)
    config = CONFIG.with_overrides(models={"load_wait_s": 60.0})
    server = create_server(config, tmp_path / "m.db", preload_models=True)
    timer = threading.Timer(0.5, release.set)  # the model loads half a second into the recall
    try:
        async with Client(server) as client:
            await client.call_tool(
                "remember",
                {"turns": [{"text": "My puppy is called Biscuit."}, {"text": "I like tea."}]},
            )
            timer.start()
            with anyio.fail_after(60):
                first = (await client.call_tool("recall", QUERY)).structured_content
    finally:
        timer.cancel()
        release.set()
    assert first is not None
    assert first["rankers"] == ["cross_encoder"]
    assert not any("loading" in w for w in first["warnings"])


class SlowBiEncoderRegistry(ModelRegistry):
    """The bi-encoder loads only once `release` is set; no other model loads."""

    def __init__(self, config: Config, release: threading.Event) -> None:
        super().__init__(config.models, config.nlp)
        self.release = release

    def _load(self, kind: str) -> tuple[Any | None, ModelStatus]:
        if kind == "bi_encoder":
            self.release.wait(timeout=120)
        return None, ModelStatus(kind, "none", None, ok=False)


async def test_a_recall_that_finds_nothing_while_models_load_does_not_say_nothing_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The dense channel finds turns that share no word with the question: with its
    # bi-encoder still loading, an empty answer is not "nothing matches".
    release = threading.Event()
    config = CONFIG.with_overrides(
        models={"load_wait_s": 0.2}, rank={"scorers": ["bi_encoder"]}, retrieval={"dense": True}
    )
    registry = SlowBiEncoderRegistry(config, release)
    _use_registry(monkeypatch, registry)
    server = create_server(config, tmp_path / "m.db", preload_models=True)
    try:
        async with Client(server) as client:
            await client.call_tool("remember", {"turns": [{"text": "My puppy is called Biscuit."}]})
            with anyio.fail_after(60):
                result = await client.call_tool("recall", {"query": "Which pet do I have?"})
    finally:
        release.set()
    found = result.structured_content
    assert found is not None and not found["passages"]
    assert any("still loading" in w and "ask again" in w for w in found["warnings"])
    assert not any("nothing in this memory matches" in w for w in found["warnings"])


class OverlapRegistry(ModelRegistry):
    """Records whether the cross-encoder began loading while spaCy was still loading."""

    def __init__(self, config: Config) -> None:
        super().__init__(config.models, config.nlp)
        self.ranker_started = threading.Event()
        self.overlapped = False

    def _load(self, kind: str) -> tuple[Any | None, ModelStatus]:
        if kind == "spacy":
            self.overlapped = self.ranker_started.wait(timeout=20)
            return None, ModelStatus(kind, "none", None, ok=False)
        self.ranker_started.set()
        return PuppyScorer(), ModelStatus(kind, "fake", None, ok=True)


async def test_a_cold_recall_loads_the_rankers_while_spacy_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CLI recall waits for its models: they load side by side, not one after the other.
    config = CONFIG.with_overrides(nlp={"spacy_models": ["some_spacy_model"]})
    registry = OverlapRegistry(config)
    _use_registry(monkeypatch, registry)
    memory = await memory_module.Memory.open(config, tmp_path / "m.db", "default")
    try:
        await memory.remember([TurnInput(text="My puppy is called Biscuit.")])
        with anyio.fail_after(60):
            result = await memory.recall(QUERY["query"])
    finally:
        await memory.close()

    assert registry.overlapped
    assert result.rankers == ["cross_encoder"]
    assert "Biscuit" in result.passages[0].candidate.passage.text
