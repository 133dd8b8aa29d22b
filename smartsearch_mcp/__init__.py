"""smartsearch-mcp: long-term conversational memory for MCP agents (SmartSearch)."""

from smartsearch_mcp.telemetry import switch_off as _switch_off_telemetry

__version__ = "0.1.0"

# Before any library that reads them is imported (see `telemetry`).
_switch_off_telemetry()
