"""Token counting for the recall budget.

Counts come from a real BPE tokenizer when the `bpe-openai` package is installed (Rust, with
the o200k_base and cl100k_base vocabularies inside the wheel, so nothing is downloaded).
Without it, or with `truncation.tokenizer = "estimate"`, a documented estimate is used and
its name says so.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import logging
import math
import re
import warnings
from pathlib import Path
from typing import Any, Protocol

from smartsearch_mcp.types import ConfigError

log = logging.getLogger(__name__)

ESTIMATE = "estimate"
BPE_ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")

_WORD_RE = re.compile(r"\w+")
_SYMBOL_RE = re.compile(r"[^\w\s]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class TokenCounter(Protocol):
    """Counts tokens in a text. `name` says which tokenizer (or estimate) is used."""

    name: str

    def count(self, text: str) -> int: ...


class BpeTokenCounter:
    """Exact counts with an OpenAI BPE vocabulary, through the `bpe-openai` Rust bindings."""

    def __init__(self, encoding: str) -> None:
        self.name = encoding
        self._tokenizer: Any = _bpe_bindings().tokenizer_for_encoding(encoding)

    def count(self, text: str) -> int:
        """Number of BPE tokens in `text` (lone surrogates count as U+FFFD)."""
        try:
            return int(self._tokenizer.count(text))
        except UnicodeEncodeError:
            return int(self._tokenizer.count(_SURROGATE_RE.sub("\ufffd", text)))


def _bpe_bindings() -> Any:
    """bpe-openai's Rust extension. Loaded from its file when it can be: importing the
    package runs its tiktoken-compatibility layer, which decodes every vocabulary it knows
    (0.6 s of CPU) where the extension loads the one asked for (0.07 s)."""
    spec = importlib.util.find_spec("bpe_openai")  # finds the package without running it
    folder = Path(spec.origin).parent if spec is not None and spec.origin else Path("/nonexistent")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_bindings{suffix}"
        if path.is_file():
            try:
                loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(path))
                found = importlib.util.spec_from_file_location(
                    "bpe_openai._bindings", path, loader=loader
                )
                assert found is not None
                module = importlib.util.module_from_spec(found)
                loader.exec_module(module)
                return module
            except Exception as exc:  # another layout: import the package as it expects
                log.debug("loading %s directly failed (%s); importing bpe_openai", path, exc)
            break
    with warnings.catch_warnings():
        # The package reads its vocabularies with a deprecated importlib.resources call; the
        # warning is the package's, not ours.
        warnings.simplefilter("ignore", DeprecationWarning)
        from bpe_openai import _bindings  # typed by _bindings.pyi

    return _bindings


class EstimatedTokenCounter:
    """An estimate for English text: each word costs max(1.3, characters / 4) tokens (about
    1.3 for English words; long runs such as URLs or unspaced scripts cost a token per four
    characters), each punctuation or symbol character one token; rounded up."""

    name = ESTIMATE

    def count(self, text: str) -> int:
        """Estimated number of tokens in `text`."""
        words = sum(max(1.3, len(w) / 4) for w in _WORD_RE.findall(text))
        return math.ceil(words + len(_SYMBOL_RE.findall(text)))


@functools.lru_cache(maxsize=8)
def get_token_counter(name: str = "o200k_base") -> TokenCounter:
    """The counter for `truncation.tokenizer`: "o200k_base" or "cl100k_base" (real BPE via
    bpe-openai), or "estimate". A BPE name falls back to the estimate, with a warning, when
    bpe-openai is not installed. Cached: loading a vocabulary takes about a second."""
    if name == ESTIMATE:
        return EstimatedTokenCounter()
    if name not in BPE_ENCODINGS:
        raise ConfigError(
            f"config key truncation.tokenizer must be one of {[*BPE_ENCODINGS, ESTIMATE]}, "
            f"got {name!r}"
        )
    try:
        return BpeTokenCounter(name)
    except ImportError:
        log.warning(
            "bpe-openai is not installed; token counts are estimated. "
            "Install it for exact %s counts: pip install bpe-openai",
            name,
        )
        return EstimatedTokenCounter()
