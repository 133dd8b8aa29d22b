"""The switches that keep the libraries smartsearch-mcp loads from collecting telemetry.

They are environment variables the libraries read when they start (onnxruntime when its
first environment is created, the Hugging Face hub when it is imported), so they are set
when this package is first imported, before any of them is, in every process that imports
it: the server, the CLI, the hooks and the benchmarks (`smartsearch_mcp/__init__.py`).
Processes those start inherit them.

- ONNX Runtime (1.2x-1.32 on Linux and macOS) writes a device id and an upload queue under
  `~/.cache/Microsoft/DeveloperTools/.onnxruntime` unless `ORT_DISABLE_TELEMETRY` is set
  before its environment is created; newer releases read `ORT_TELEMETRY_DISABLED`, so both
  are set. On Windows its events go to the system's tracing, switched off after import by
  `disable_telemetry_events` (`switch_off_onnxruntime_events`).
- The Hugging Face hub (and transformers, sentence-transformers through it) sends usage
  pings unless `HF_HUB_DISABLE_TELEMETRY` (or `DO_NOT_TRACK`) is set.
- torch, spaCy, tokenizers and numpy collect none.

The values are forced, not defaulted: a value of 0 left in the environment would turn one
back on, and this project promises none.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any

SWITCHES = {
    "ORT_DISABLE_TELEMETRY": "1",
    "ORT_TELEMETRY_DISABLED": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
}


def switch_off(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set every library's telemetry switch in `environ` (the process's environment)."""
    environ.update(SWITCHES)


def switch_off_onnxruntime_events(ort: Any) -> None:
    """Switch off the events an imported onnxruntime module still sends (Windows tracing);
    a module without the call (an older or a stand-in one) is left as it is."""
    disable = getattr(ort, "disable_telemetry_events", None)
    if callable(disable):
        disable()
