"""The synthetic corpus of the scale bench: deterministic, renamed, redated."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import pytest

from smartsearch_mcp.bench.cli import scale_targets
from smartsearch_mcp.bench.scale import (
    SourceCorpus,
    TurnSynthesizer,
    checkpoints_for,
    load_source_corpus,
    peak_rss_mb,
)
from smartsearch_mcp.types import InputError

FIXTURES = Path(__file__).parents[1] / "fixtures"


def corpus() -> SourceCorpus:
    return load_source_corpus([FIXTURES / "locomo", FIXTURES / "beam"])


def test_the_corpus_reads_locomo_and_beam_with_speaker_names() -> None:
    source = load_source_corpus([FIXTURES])  # a parent folder is searched one level down

    assert {"Caroline", "Melanie"} <= set(source.names)
    assert len(source.texts) > 8
    assert any(s.startswith("BEAM") for s in source.sources)
    assert any(s.startswith("LoCoMo") for s in source.sources)


def test_the_same_seed_gives_the_same_turns() -> None:
    first = list(TurnSynthesizer(corpus(), seed=7).turns(50))
    again = list(TurnSynthesizer(corpus(), seed=7).turns(50))
    other = list(TurnSynthesizer(corpus(), seed=8).turns(50))

    assert first == again
    assert first != other
    assert len(first) == 50


def test_synthetic_turns_carry_other_names_and_dates() -> None:
    turns = list(islice(TurnSynthesizer(corpus(), seed=0).turns(400), 400))

    text = " ".join(t.text for t in turns)
    assert "Caroline" not in text and "Melanie" not in text
    assert len({t.timestamp for t in turns}) > 10
    assert all(t.speaker for t in turns)


def test_queries_are_fixed_for_a_corpus() -> None:
    synthesizer = TurnSynthesizer(corpus(), seed=0)

    assert synthesizer.queries(5) == TurnSynthesizer(corpus(), seed=1).queries(5)
    assert len(synthesizer.queries(5)) == 5


def test_checkpoints_step_by_powers_of_ten_up_to_the_total() -> None:
    assert checkpoints_for(2_000) == [2_000]
    assert checkpoints_for(1_000_000) == [10_000, 100_000, 1_000_000]
    assert checkpoints_for(250_000) == [10_000, 100_000, 250_000]
    assert checkpoints_for(2_000, [500, 5_000]) == [500, 2_000]


def test_a_folder_without_benchmark_data_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no LoCoMo"):
        load_source_corpus([tmp_path])


def test_peak_rss_is_reported_in_megabytes() -> None:
    assert 1 < peak_rss_mb() < 100_000


def test_targets_are_marked_met_missed_or_not_measured() -> None:
    data = {
        "remember_turns_per_s": 6000.0,
        "checkpoints": [
            {"turns": 1_000_000, "peak_rss_mb": 2000.0, "recall": {"indexed": {"p50": 400.0}}}
        ],
    }

    targets = scale_targets(data)

    assert "6,000 turns/s — **met**" in targets[0]
    assert "400 ms — **met**" in targets[1]
    assert "2,000 MB — **missed**" in targets[2]
    data["checkpoints"][0]["turns"] = 10_000
    assert "not measured" in scale_targets(data)[1]
