"""Which namespace a memory belongs to: one per project, derived from where the agent runs.

A project is the nearest directory at or above the working directory that holds `.git` (a
directory, or a file in a worktree or submodule); without one, the working directory itself.
Its namespace is `project:<directory name>-<8 hex digits of the sha256 of its absolute path>`:
readable in listings, stable across sessions and tools (the hooks and the server derive the
same key from the same directory), and distinct for two checkouts that share a name.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

AUTO = "auto"
PROJECT_PREFIX = "project:"
_UNSAFE = re.compile(r"[^\w.-]+")
_MAX_NAME_CHARS = 64


def project_root(start: str | Path) -> Path:
    """The git root at or above `start` (a directory), else `start` itself, made absolute."""
    path = Path(start).expanduser()
    try:
        path = path.resolve()
    except OSError:
        path = path.absolute()
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return path


def project_namespace(start: str | Path) -> str:
    """The namespace of the project that contains `start` (see the module docstring)."""
    root = project_root(start)
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    name = _UNSAFE.sub("-", root.name).strip("-")[:_MAX_NAME_CHARS] or "root"
    return f"{PROJECT_PREFIX}{name}-{digest}"


def resolve_auto(namespace: str | None, cwd: str | Path) -> str | None:
    """`namespace` itself, or the project namespace of `cwd` when it is "auto"."""
    if namespace is not None and namespace.strip().lower() == AUTO:
        return project_namespace(cwd)
    return namespace
