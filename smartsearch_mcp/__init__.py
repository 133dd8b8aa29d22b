"""smartsearch-mcp: long-term conversational memory for MCP agents (SmartSearch)."""

__version__ = "0.1.0"
