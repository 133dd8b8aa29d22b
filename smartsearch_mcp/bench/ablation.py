"""Each adjustment off: the configurations a bench compares with the preset as configured, to
show what every adjustment after fusion (`rank.adjust`) earns on that set."""

from __future__ import annotations

from dataclasses import replace

from smartsearch_mcp.config import Config

# A system in results.json: the preset without one adjustment, at the main budget.
ABLATION_PREFIX = "smartsearch-without="


def ablations(config: Config) -> dict[str, Config]:
    """One configuration per adjustment the preset runs (`rank.adjust`), without it, by the
    adjustment's name."""
    listed = config.rank.adjust
    return {
        name: replace(
            config, rank=replace(config.rank, adjust=tuple(n for n in listed if n != name))
        )
        for name in listed
    }
