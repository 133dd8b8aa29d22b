"""Many servers, one database: what one memory writes or forgets, another one's recall sees
at once, though it cached the scope's corpus before (its cache is keyed on the store's
data_version and scope fingerprint, which change whoever writes)."""

from __future__ import annotations

import anyio
import pytest

from smartsearch_mcp.config import Config
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.types import TurnInput

pytestmark = pytest.mark.anyio

LEXICAL = Config().with_overrides(
    rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_a_second_memory_recalls_what_the_first_wrote_and_not_what_it_forgot(database, mode):
    config = LEXICAL.with_overrides(retrieval={"mode": mode})
    writer = await Memory.open(config, database, namespace="team")
    reader = await Memory.open(config, database, namespace="team")
    try:
        with anyio.fail_after(60):
            await writer.remember([TurnInput("lunch is at noon on Fridays", "Ann")], "s1")
            before = await reader.recall("when is the team lunch")  # caches the scope
            assert [p.candidate.passage.text for p in before.passages] == [
                "lunch is at noon on Fridays"
            ]

            added = await writer.remember(
                [TurnInput("the release train leaves every Tuesday", "Bo")], "s2"
            )
            after = await reader.recall("when does the release train leave")
            assert added.ids[0] in [p.candidate.passage.turn.id for p in after.passages]

            await writer.forget(ids=added.ids)
            gone = await reader.recall("when does the release train leave")
            assert added.ids[0] not in [p.candidate.passage.turn.id for p in gone.passages]
    finally:
        await writer.close()
        await reader.close()
