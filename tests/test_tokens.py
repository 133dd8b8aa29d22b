"""Token counting: real BPE when bpe-openai is installed, else a documented estimate."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartsearch_mcp.tokens import (
    BpeTokenCounter,
    EstimatedTokenCounter,
    get_token_counter,
)
from smartsearch_mcp.types import ConfigError

needs_bpe = pytest.mark.skipif(
    importlib.util.find_spec("bpe_openai") is None, reason="bpe-openai is not installed"
)


@needs_bpe
def test_o200k_counts_match_the_reference_tokenizer() -> None:
    counter = get_token_counter("o200k_base")
    assert isinstance(counter, BpeTokenCounter)
    assert counter.name == "o200k_base"
    assert counter.count("Hello world") == 2
    assert counter.count("") == 0


@needs_bpe
def test_cl100k_is_available_too() -> None:
    counter = get_token_counter("cl100k_base")
    assert counter.name == "cl100k_base"
    assert counter.count("Hello world") == 2


@needs_bpe
def test_bpe_counter_accepts_lone_surrogates_and_nul() -> None:
    counter = get_token_counter("o200k_base")
    assert counter.count("a\ud800b") >= 2
    assert counter.count("a\x00b") >= 1


def test_counters_are_cached_by_name() -> None:
    assert get_token_counter("estimate") is get_token_counter("estimate")


def test_an_unknown_tokenizer_names_the_config_key() -> None:
    with pytest.raises(ConfigError, match=r"truncation\.tokenizer"):
        get_token_counter("gpt2")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("hello", 2),  # 1.3 rounded up
        ("hello world", 3),  # 2.6
        ("Hello, world!", 5),  # 2.6 + 2 symbols
        ("a" * 40, 10),  # one long run: 40 / 4
        ("   \n\t", 0),
    ],
)
def test_the_estimate_counts_words_and_symbols(text: str, tokens: int) -> None:
    counter = EstimatedTokenCounter()
    assert counter.name == "estimate"
    assert counter.count(text) == tokens


def test_a_missing_bpe_package_falls_back_to_the_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_bpe(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("bpe_openai"):
            raise ImportError("no bpe_openai")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    real_find_spec = importlib.util.find_spec

    def no_bpe_spec(name: str, *args: object, **kwargs: object) -> object:
        return None if name.startswith("bpe_openai") else real_find_spec(name, *args, **kwargs)  # type: ignore[arg-type]

    get_token_counter.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_bpe)
    monkeypatch.setattr(importlib.util, "find_spec", no_bpe_spec)
    try:
        assert get_token_counter("o200k_base").name == "estimate"
    finally:
        monkeypatch.undo()
        get_token_counter.cache_clear()


@settings(deadline=None)  # the first call may load a vocabulary
@given(st.text())
def test_any_text_counts_zero_only_when_empty_and_at_most_a_token_per_byte(text: str) -> None:
    estimate = get_token_counter("estimate").count(text)
    assert (estimate == 0) == (text.strip() == "")  # every word or symbol costs a token
    assert estimate <= 2 * len(text)  # a one-letter word costs 1.3, rounded up once
    bpe = get_token_counter("o200k_base")
    if bpe.name == "o200k_base":
        count = bpe.count(text)
        assert (count == 0) == (text == "")  # whitespace is text to a BPE vocabulary
        assert count <= len(text.encode("utf-8", "replace"))  # a token is at least a byte


@needs_bpe
def test_the_counter_loads_only_its_vocabulary_and_counts_as_the_package_does() -> None:
    import subprocess
    import sys
    from pathlib import Path

    probe = (
        "import sys\n"
        "from smartsearch_mcp.tokens import get_token_counter\n"
        "counter = get_token_counter('cl100k_base')\n"
        "print('bpe_openai.compat' in sys.modules, counter.count(sys.argv[1]))\n"
    )
    text = "Caroline's 3rd trip to Malmö — booked 12 June, ☕ and 🐕 included."
    ours = subprocess.run(
        [sys.executable, "-c", probe, text],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=60,
    ).stdout.split()
    import warnings

    with warnings.catch_warnings():  # the package's own deprecated resource reads
        warnings.simplefilter("ignore", DeprecationWarning)
        from bpe_openai import _bindings  # the package's own way in

    assert ours == ["False", str(_bindings.tokenizer_for_encoding("cl100k_base").count(text))]
