"""The results folder: results.json (everything a report or an error analysis needs), next to
summary.md and the PNG plots written by `report`."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from smartsearch_mcp import __version__
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError

RANKING_FILE = "ranking.jsonl"
RESULTS_FILE = "results.json"
SUMMARY_FILE = "summary.md"
RECALL_PLOT = "recall_vs_budget.png"
LATENCY_PLOT = "latency.png"
SCALE_PLOT = "scale.png"
_PACKAGES = ("torch", "sentence-transformers", "spacy", "numpy", "bpe-openai", "pylate")


def machine_info() -> dict[str, Any]:
    """Where the numbers were measured: OS, CPU, memory, Python and library versions."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model() or platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "python": sys.version.split()[0],
        "smartsearch_mcp": __version__,
    }
    for package in _PACKAGES:
        try:
            info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info[package] = None
    return info


def config_snapshot(config: Config) -> dict[str, Any]:
    """The configuration as plain JSON data."""
    return dataclasses.asdict(config)


def default_out_dir(
    bench: str, config_name: str | None, root: str | Path = "bench-results"
) -> Path:
    """bench-results/<bench>-<config>-<UTC timestamp>/"""
    name = Path(config_name).stem if config_name else "default"
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path(root) / f"{bench}-{name}-{stamp}"


def write_results(out_dir: Path, data: dict[str, Any]) -> Path:
    """Write results.json into `out_dir` (created if needed); return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RESULTS_FILE
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    return path


def write_rankings(out_dir: Path, rankings: list[dict[str, Any]]) -> Path:
    """Write the kept rankings (`RunOptions.ranking_depth`) as ranking.jsonl, one question a
    line; return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RANKING_FILE
    with path.open("w", encoding="utf-8") as out:
        for record in rankings:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def load_results(folder: str | Path) -> dict[str, Any]:
    """Read a results folder's results.json (or the file itself)."""
    path = Path(folder)
    if path.is_dir():
        path = path / RESULTS_FILE
    if not path.is_file():
        raise InputError(
            f"{path}: no results.json here; give a folder written by `smartsearch-mcp bench`"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); re-run the benchmark") from exc
    if not isinstance(data, dict) or "bench" not in data:
        raise InputError(f"{path}: not a smartsearch-mcp benchmark results file")
    return data


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _memory_gb() -> float | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return round(pages * page_size / 1e9, 1)
