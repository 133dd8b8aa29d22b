"""`embed` through the command line (smartsearch_mcp/cli/embed.py)."""

from __future__ import annotations

import json
from pathlib import Path

from smartsearch_mcp.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_embed_embeds_the_backlog_that_recall_leaves_to_the_background(
    env, capsys, monkeypatch, tiny_models
):
    config = env / "dense.toml"
    config.write_text(
        f"""
[nlp]
spacy_models = []
[models]
bi_encoder = "{tiny_models.sentence_transformer}"
[rank]
scorers = ["bi_encoder", "context", "lexical"]
embed_on_recall = 2
"""
    )
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    source = FIXTURES / "exports" / "turns.jsonl"
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert "smartsearch-mcp embed" in capsys.readouterr().err
    assert main(["recall", "release Friday", "--namespace", "work", "--json"]) == 0
    assert any("not embedded yet" in w for w in json.loads(capsys.readouterr().out)["warnings"])

    assert main(["embed", "--no-progress"]) == 0
    assert "embedded" in capsys.readouterr().err
    assert main(["recall", "release Friday", "--namespace", "work", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not any("not embedded yet" in w for w in data["warnings"])
    assert data["rankers"] == ["bi_encoder", "context", "lexical"]
    assert main(["embed", "--no-progress"]) == 0
    assert "embedded 0 passages" in capsys.readouterr().err


def test_embed_without_a_bi_encoder_says_there_is_nothing_to_do(env, capsys):
    assert main(["embed", "--no-progress"]) == 0
    assert "nothing to embed" in capsys.readouterr().err
