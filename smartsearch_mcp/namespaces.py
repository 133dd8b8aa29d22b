"""Which namespace a memory belongs to: one rule for every command, hook, server and installer.

The namespace is, first match wins:
1. `--namespace NAME` (a command option, or the option an installer wrote into a client's
   config);
2. `$SMARTSEARCH_NAMESPACE`;
3. the project: when the working directory (a hook: the session's directory) lies inside a
   git repository, the namespace of its root;
4. else `scope.default_namespace` from the config (`default`).

"auto" given as a name (1 or 2) means "apply 3 and 4". A project is the nearest directory at or
above the working directory that holds `.git` (a directory, or a file in a worktree or
submodule). Its namespace is `project:<directory name>-<8 hex digits of the sha256 of its
absolute path>`: readable in listings, stable across sessions and tools, and distinct for two
checkouts that share a name.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

AUTO = "auto"
PROJECT_PREFIX = "project:"
_UNSAFE = re.compile(r"[^\w.-]+")
_MAX_NAME_CHARS = 64


@dataclass(frozen=True, slots=True)
class NamespaceChoice:
    """A resolved namespace and why it was chosen (shown to the user: "namespace X (why)")."""

    namespace: str
    reason: str

    def describe(self) -> str:
        return f"namespace {self.namespace!r} ({self.reason})"


def git_root(start: str | Path) -> Path | None:
    """The nearest directory at or above `start` holding `.git`, made absolute; None outside
    any git repository."""
    path = _absolute(start)
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_root(start: str | Path) -> Path:
    """The git root at or above `start` (a directory), else `start` itself, made absolute."""
    return git_root(start) or _absolute(start)


def choose_namespace(
    given: str | None, from_env: str | None, cwd: str | Path, default_namespace: str
) -> NamespaceChoice:
    """The namespace by the module's rule: `given` (--namespace), else `from_env`
    ($SMARTSEARCH_NAMESPACE), else the git project of `cwd`, else `default_namespace`."""
    for value, source in ((given, "--namespace"), (from_env, "$SMARTSEARCH_NAMESPACE")):
        if value is None or not value.strip():
            continue
        if value.strip().lower() != AUTO:
            return NamespaceChoice(value, f"from {source}")
        break  # "auto": the project, else the default
    root = git_root(cwd)
    if root is not None:
        return NamespaceChoice(project_namespace(root), f"the git repository {root}")
    return NamespaceChoice(
        default_namespace,
        f"scope.default_namespace: {_absolute(cwd)} is not inside a git repository",
    )


def directory_namespace(directory: str | Path) -> str | None:
    """The project namespace a session that ran in `directory` belongs to (an imported
    transcript's working directory): its git project; None for an existing directory outside
    any git repository (the default applies). A directory that does not exist here (a
    transcript from another machine) cannot be checked and counts as its own project."""
    root = git_root(directory)
    if root is not None:
        return project_namespace(root)
    return None if _absolute(directory).is_dir() else project_namespace(directory)


def project_namespace(start: str | Path) -> str:
    """The namespace of the project that contains `start` (see the module docstring)."""
    root = project_root(start)
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    name = _UNSAFE.sub("-", root.name).strip("-")[:_MAX_NAME_CHARS] or "root"
    return f"{PROJECT_PREFIX}{name}-{digest}"


def _absolute(start: str | Path) -> Path:
    path = Path(start).expanduser()
    try:
        return path.resolve()
    except OSError:
        return path.absolute()
