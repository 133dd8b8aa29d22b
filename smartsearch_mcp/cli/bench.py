"""`bench`: the benchmarks (their options are parsed by smartsearch_mcp.bench.cli)."""

from __future__ import annotations

import argparse

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import config_option
from smartsearch_mcp.config import Config


def add_options(bench: argparse.ArgumentParser) -> None:
    """The options of `bench`: everything after it goes to the benchmark named."""
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)


def run(args: argparse.Namespace, config: Config) -> int:
    """Run the benchmark named in the arguments."""
    from smartsearch_mcp.bench.cli import run_bench

    return run_bench(args.bench_args, config, config_option(args))


BENCH = Command(
    "bench",
    help="run a benchmark (see README)",
    description="Benchmarks: locomo PATH | beam PATH | longmemeval FILE | small | scale | "
    "report DIR... — run `smartsearch-mcp bench locomo --help` (etc.) for each one's options.",
    add_options=add_options,
    run=run,
    ranks=True,
    input_error_exit=1,
)
