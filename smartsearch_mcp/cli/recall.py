"""`recall`: in this process, through a running server's socket (warm), or through a running
`serve --http`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import (
    on_project_memory,
    resolve_db,
    resolve_namespace,
    say_namespace,
)
from smartsearch_mcp.config import Config

# The recall options a socket or HTTP recall passes on when they are given.
_PASSED_ON = ("max_tokens", "session_id", "since", "until")


def add_options(recall: argparse.ArgumentParser) -> None:
    """The options of `recall`."""
    recall.add_argument("query")
    recall.add_argument("--max-tokens", type=int, default=None)
    recall.add_argument("--session-id", default=None)
    recall.add_argument("--since", default=None)
    recall.add_argument("--until", default=None)
    recall.add_argument("--json", action="store_true", help="print the structured result")
    recall.add_argument(
        "--explain",
        action="store_true",
        help="also say why each passage was recalled: channels, rankers, adjustments, the cut",
    )
    recall.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="ask a running `serve --http` (e.g. http://127.0.0.1:8765/mcp; default "
        "$SMARTSEARCH_URL) — its models are loaded, so the answer comes at once; "
        "$SMARTSEARCH_TOKEN is its bearer token",
    )
    recall.add_argument(
        "--local",
        action="store_true",
        help="recall in this process even when a server running on the same database with "
        "the same settings could answer (warm) through its socket",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    """Print the recall of --server, else of a running server's socket, else of this
    process."""
    from smartsearch_mcp.output import format_recall, print_explain, recall_output

    url = args.server or os.environ.get("SMARTSEARCH_URL")
    if url:
        return _recall_via_server(url, args, config)
    if not args.local and _recall_via_socket(args, config):
        return 0

    result = on_project_memory(
        args,
        config,
        lambda memory: memory.recall(
            args.query,
            args.max_tokens,
            session_id=args.session_id,
            since=args.since,
            until=args.until,
            explain=args.explain,
        ),
        read_only=True,
    )
    if args.json:
        print(recall_output(result).model_dump_json(indent=2))
    else:
        print(format_recall(args.query, result))
        if args.explain:
            print_explain(recall_output(result).model_dump(mode="json"))
        say_namespace(args, config)
    return 0


def _passed_on(args: argparse.Namespace) -> dict[str, Any]:
    options = {key: getattr(args, key) for key in _PASSED_ON if getattr(args, key) is not None}
    if args.explain:
        options["explain"] = True
    return options


def _recall_via_socket(args: argparse.Namespace, config: Config) -> bool:
    """Print the answer of a server already running on this database with these settings
    (models loaded: no seconds of loading here); False when there is none."""
    from smartsearch_mcp.recall_socket import ask_running_server, describe

    options: dict[str, Any] = {"namespace": resolve_namespace(args, config), **_passed_on(args)}
    answer = ask_running_server(resolve_db(args, config), config, args.query, options)
    if answer is None:
        return False
    print(json.dumps(answer.json, indent=2, ensure_ascii=False) if args.json else answer.text)
    if not args.json:
        from smartsearch_mcp.output import print_explain

        print_explain(answer.json)
        say_namespace(args, config)
    print(describe(answer), file=sys.stderr)
    return True


def _recall_via_server(url: str, args: argparse.Namespace, config: Config) -> int:
    """The recall tool of a running HTTP server, in this directory's namespace (the server's
    own default comes from where it was started)."""
    from smartsearch_mcp.http_access import TOKEN_ENV
    from smartsearch_mcp.http_recall import recall_over_http

    arguments: dict[str, Any] = {
        "query": args.query,
        "namespace": resolve_namespace(args, config),
        **_passed_on(args),
    }
    answer = recall_over_http(url, arguments, os.environ.get(TOKEN_ENV))
    print(json.dumps(answer.structured, indent=2) if args.json else answer.text)
    if not args.json:
        from smartsearch_mcp.output import print_explain

        print_explain(answer.structured)
        say_namespace(args, config)
    return 0


RECALL = Command("recall", help="recall from memory", add_options=add_options, run=run, ranks=True)
