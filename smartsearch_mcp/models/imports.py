"""Keeping the model libraries' imports to what a process needs.

A cold `smartsearch-mcp recall` is mostly imports. Two of them were paid for nothing:
transformers, imported only to switch off its progress bars before a model that never
touches it (the bi-encoder on ONNX Runtime), and torch, which thinc (spaCy's machine-learning
library) imports whenever it is installed although spaCy's CPU pipelines never use it —
only spacy-transformers models do.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)


def quiet_loading_bars(importer: Callable[[str], Any]) -> None:
    """transformers draws a "Loading weights" progress bar on stderr for every model: noise
    in a server log and in the output of `smartsearch-mcp recall`. Call it where transformers
    is imported anyway."""
    try:
        importer("transformers.utils.logging").disable_progress_bar()
    except Exception as exc:  # cosmetic: loading goes on (and reports its own errors)
        log.debug("could not turn off transformers' progress bars: %s", exc)


@contextlib.contextmanager
def spacy_without_torch() -> Iterator[None]:
    """While importing spaCy in this thread, `import torch` fails for this thread only, so
    thinc records "no torch" instead of importing it (seconds). Not done when
    spacy-transformers is installed (its models run on torch), or when torch is already
    imported (nothing to save). Other threads import torch as usual meanwhile."""
    if "torch" in sys.modules or importlib.util.find_spec("spacy_transformers") is not None:
        yield
        return
    blocker = _NoTorchInThread(threading.get_ident())
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(blocker)


class _NoTorchInThread(importlib.abc.MetaPathFinder):
    def __init__(self, thread: int) -> None:
        self.thread = thread

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() == self.thread and (name == "torch" or name.startswith("torch.")):
            raise ModuleNotFoundError(f"No module named {name!r} (while spaCy loads)", name=name)
        return None
