"""Command line: serve | recall | remember | forget | redact | grep | timeline | hook |
import | embed | export | migrate | stats | doctor | models | install | uninstall | ui | bench.

A thin layer over the library: one module per command or small group of them, each
command's options beside its handler (see `command.Command`); `main` builds the parser from
them and dispatches. Environment variables are read here only: SMARTSEARCH_DB,
SMARTSEARCH_CONFIG, SMARTSEARCH_NAMESPACE, SMARTSEARCH_TOKEN, SMARTSEARCH_URL. Logs go to
stderr (stdout is the MCP wire in `serve`).
"""

from smartsearch_mcp.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
