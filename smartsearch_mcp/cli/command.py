"""What a subcommand is: its name and help, its options (defined beside its handler), its
handler, and the few things the dispatcher needs to know about it, said as data."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from smartsearch_mcp.config import Config

Handler = Callable[[argparse.Namespace, Config], int]


@dataclass(frozen=True)
class Command:
    """One subcommand of `smartsearch-mcp`.

    `run` gets the parsed arguments and the loaded config; its domain errors become one
    `error: …` line and an exit code. `run_unguarded` instead gets only the arguments and
    loads its config and handles every error itself (a client's hook must never fail).
    `ranks`: the configuration's models matter, so without --config the preset that can run
    here is chosen (see `settings.load_config`). `input_error_exit`: the exit code of an
    InputError, 2 for a misused command line, 1 when the bad value is in a file it reads.
    """

    name: str
    help: str
    add_options: Callable[[argparse.ArgumentParser], None]
    run: Handler | None = None
    run_unguarded: Callable[[argparse.Namespace], int] | None = None
    description: str | None = None
    ranks: bool = False
    input_error_exit: int = 2

    def __post_init__(self) -> None:
        if (self.run is None) == (self.run_unguarded is None):
            raise TypeError(f"command {self.name!r}: give exactly one of run, run_unguarded")

    def add_to(
        self,
        commands: argparse._SubParsersAction[argparse.ArgumentParser],
        common: argparse.ArgumentParser,
    ) -> argparse.ArgumentParser:
        """Add this command's parser, with the `common` options, to `commands`."""
        parser = commands.add_parser(
            self.name, parents=[common], help=self.help, description=self.description
        )
        self.add_options(parser)
        parser.set_defaults(command=self)
        return parser
