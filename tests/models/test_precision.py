"""Ranker precision: which one `auto` picks, and that bf16 and int8 keep fp32's ranking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_models import RANKING_QUERY as QUERY
from tiny_models import RANKING_TEXTS as TEXTS
from tiny_models import TinyModels, spearman

from smartsearch_mcp.config import ConfigError, ModelsConfig
from smartsearch_mcp.models import ColbertScorer, CrossEncoderScorer, ModelLocation
from smartsearch_mcp.models.precision import cpu_flags, native_bf16, resolve_precision

AVX512_BF16 = frozenset({"fpu", "avx512f", "avx512_bf16"})
AVX2_ONLY = frozenset({"fpu", "avx2"})


def directory(path: Path) -> ModelLocation:
    return ModelLocation(str(path), str(path), "directory")


def test_auto_takes_bf16_only_on_a_cpu_with_native_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("platform.machine", lambda: "x86_64")

    assert resolve_precision("auto", "cpu", AVX512_BF16) == "bf16"
    assert resolve_precision("auto", "cpu", AVX2_ONLY) == "fp32"
    assert resolve_precision("auto", "cuda", AVX512_BF16) == "fp32"
    assert resolve_precision("int8", "cpu", AVX2_ONLY) == "int8"
    assert resolve_precision("fp32", "cpu", AVX512_BF16) == "fp32"


def test_bf16_flags_on_another_architecture_do_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("platform.machine", lambda: "arm64")

    assert not native_bf16(AVX512_BF16)


def test_cpu_flags_are_read_from_the_flags_line(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx512_bf16\nbogomips\t: 1\n")

    assert cpu_flags(cpuinfo) == frozenset({"fpu", "sse", "avx512_bf16"})
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_an_unknown_precision_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"models\.precision.*fp8"):
        ModelsConfig(precision="fp8")
    with pytest.raises(ValueError, match="unknown precision"):
        resolve_precision("fp8")


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_the_cross_encoder_ranks_as_in_fp32_at_lower_precision(
    tiny_models: TinyModels, precision: str
) -> None:
    reference = CrossEncoderScorer.load(directory(tiny_models.bert), precision="fp32")
    reduced = CrossEncoderScorer.load(directory(tiny_models.bert), precision=precision)

    exact = reference.score(QUERY, TEXTS)
    approximate = reduced.score(QUERY, TEXTS)

    assert reduced.precision == precision
    assert spearman(exact, approximate) >= 0.9
    spread = max(exact) - min(exact)
    assert np.max(np.abs(np.subtract(exact, approximate))) <= 0.1 * spread
    assert int(np.argmax(approximate)) == int(np.argmax(exact))


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_colbert_ranks_as_in_fp32_at_lower_precision(
    tiny_models: TinyModels, precision: str
) -> None:
    reference = ColbertScorer.load(directory(tiny_models.colbert), precision="fp32")
    reduced = ColbertScorer.load(directory(tiny_models.colbert), precision=precision)

    exact = reference.score(QUERY, TEXTS)
    approximate = reduced.score(QUERY, TEXTS)

    assert spearman(exact, approximate) >= 0.9
    spread = max(exact) - min(exact)
    assert np.max(np.abs(np.subtract(exact, approximate))) <= 0.1 * spread


def test_documents_encoded_ahead_of_time_score_as_when_encoded_with_the_query(
    tiny_models: TinyModels,
) -> None:
    scorer = ColbertScorer.load(directory(tiny_models.colbert), precision="fp32")

    stored = scorer.encode_documents(TEXTS)
    ahead = scorer.score_encoded(QUERY, stored)
    now = scorer.score(QUERY, TEXTS)

    assert all(tokens.dtype == np.float16 and tokens.ndim == 2 for tokens in stored)
    # float16 storage rounds each vector component to ~3 significant digits.
    assert ahead == pytest.approx(now, rel=1e-2, abs=1e-2)
    assert np.argsort(ahead).tolist() == np.argsort(now).tolist()
