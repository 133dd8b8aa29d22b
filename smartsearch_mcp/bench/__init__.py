"""Reproducible benchmarks: `smartsearch-mcp bench locomo|beam|longmemeval|scale|report`.

Every conversation is remembered and recalled through `Memory`, the code path the MCP tools
use; results land in a folder with results.json (every per-question outcome), summary.md and
PNG plots. The command line is `smartsearch_mcp.bench.cli.run_bench`.
"""
