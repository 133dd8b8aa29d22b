"""`embed`: compute the stored turns' vectors for dense ranking now (a running server does it
in the background)."""

from __future__ import annotations

import argparse
import sys
import time

import anyio

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.progress import progress_bar
from smartsearch_mcp.cli.settings import open_memory
from smartsearch_mcp.config import Config


def add_options(embed: argparse.ArgumentParser) -> None:
    """The options of `embed`."""
    embed.add_argument("--no-progress", action="store_true")


def run(args: argparse.Namespace, config: Config) -> int:
    """Embed the backlog of the configured bi-encoder and ColBERT, if any."""

    async def embed() -> int:
        memory = await open_memory(args, config)
        try:
            backlog = await memory.pipeline.embedding_backlog()
            if backlog is None:
                print(
                    f"nothing to embed: config {config.source} uses neither a bi-encoder nor a "
                    "ColBERT, or they cannot be loaded (see `smartsearch-mcp models`)",
                    file=sys.stderr,
                )
                return 0
            progress = progress_bar(args.no_progress, "embedding", total=backlog)
            started = time.perf_counter()
            count = await memory.pipeline.embed_backlog(progress=progress.update)
            progress.close()
        finally:
            await memory.close()
        seconds = time.perf_counter() - started
        print(f"embedded {count} passages in {seconds:.1f} s", file=sys.stderr)
        return 0

    return anyio.run(embed)


EMBED = Command(
    "embed",
    help="embed stored turns for dense ranking now (a running server does it in the background)",
    add_options=add_options,
    run=run,
    ranks=True,
)
