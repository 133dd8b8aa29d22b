"""Install the MCP server (and, where the client has them, the capture hooks) into a client's
config files — merging, never clobbering: other servers, hooks and settings are kept, the
previous file is backed up before a change, and installing twice changes nothing.

Where each client reads its configuration (as documented by each client):

- Claude Code: MCP servers in `~/.claude.json` (`mcpServers`, user scope) or `.mcp.json` at
  the project root (`--project`); hooks in `~/.claude/settings.json` or
  `<project>/.claude/settings.json`, as `hooks.<Event>[{hooks: [{type: "command", command}]}]`
  for UserPromptSubmit, Stop and PreCompact.
- Claude Desktop: `claude_desktop_config.json` in `~/Library/Application Support/Claude/`
  (macOS), `%APPDATA%\\Claude\\` (Windows), `~/.config/Claude/` (Linux); `mcpServers`. No hooks.
- Cursor: `~/.cursor/mcp.json` or `<project>/.cursor/mcp.json`; `mcpServers`.
- Codex: `$CODEX_HOME/config.toml` (default `~/.codex`) or `<project>/.codex/config.toml`,
  table `[mcp_servers.<name>]` with `command` and `args`; hooks in `hooks.json` beside it,
  same shape as Claude Code's, for UserPromptSubmit and Stop.

Writing is safe in an untrusted checkout: with --project, a config path that leaves the
project through a symlink is refused; temporary files come from mkstemp (exclusive, random
name) and backups are created exclusively, both no more readable than the original. A
symlinked user config (dotfiles) is written through, keeping the link; a read-only file, one
that is not UTF-8 JSON/TOML, or one nested too deeply is refused with nothing changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import stat
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from smartsearch_mcp.config import Config
from smartsearch_mcp.types import ConfigError, InputError

SERVER_NAME = "smartsearch"
CLIENT_NAMES = ("claude-code", "claude-desktop", "cursor", "codex")
HOOK_EVENTS: dict[str, dict[str, str]] = {
    "claude-code": {"UserPromptSubmit": "user-prompt", "Stop": "stop", "PreCompact": "pre-compact"},
    "codex": {"UserPromptSubmit": "user-prompt", "Stop": "stop"},
}
HOOK_TIMEOUT_SECONDS = 30


@dataclass(frozen=True, slots=True)
class Commands:
    """What to write: the server's command line, the hook command before `<client> <event>`
    (both absolute), and the options that follow the event."""

    server: list[str]
    hook: list[str]
    hook_options: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Change:
    """One config file: what happened to it, and the entries added (+), replaced (~) or
    removed (-)."""

    path: Path
    action: str  # created | updated | unchanged | removed entries
    entries: list[str] = field(default_factory=list)
    backup: Path | None = None


@dataclass(frozen=True, slots=True)
class Target:
    path: Path
    edit: Callable[[str | None], str | None]  # old text (None: no file) -> new text


def server_namespace(client: str, given: str | None, config: Config) -> str | None:
    """The --namespace an installed server gets: the one the user named, else none — the
    server applies the namespace rule (the git project of the directory the client starts it
    in, else the default) — except for Claude Desktop, which has no project: its memories go
    to the default namespace explicitly (a home directory under git must not capture them)."""
    if given:
        return given
    return config.scope.default_namespace if client == "claude-desktop" else None


def config_paths(
    client: str, home: Path, project: Path | None, platform: str, environ: dict[str, str]
) -> dict[str, Path]:
    """The files `client` reads: {"mcp": path, "hooks": path (when it has hooks)}."""
    if client == "claude-code":
        if project:
            return {"mcp": project / ".mcp.json", "hooks": project / ".claude" / "settings.json"}
        return {"mcp": home / ".claude.json", "hooks": home / ".claude" / "settings.json"}
    if client == "claude-desktop":
        if project:
            raise InputError("Claude Desktop has no project config; install without --project")
        if platform == "darwin":
            folder = home / "Library" / "Application Support" / "Claude"
        elif platform.startswith("win"):
            appdata = environ.get("APPDATA")
            folder = Path(appdata) / "Claude" if appdata else home / "AppData/Roaming/Claude"
        else:
            folder = home / ".config" / "Claude"
        return {"mcp": folder / "claude_desktop_config.json"}
    if client == "cursor":
        return {"mcp": (project or home) / ".cursor" / "mcp.json"}
    if client == "codex":
        folder = (
            project / ".codex" if project else Path(environ.get("CODEX_HOME") or home / ".codex")
        )
        return {"mcp": folder / "config.toml", "hooks": folder / "hooks.json"}
    raise InputError(f"unknown client {client!r}; choose one of: {', '.join(CLIENT_NAMES)}")


def plan(
    client: str, commands: Commands | None, paths: dict[str, Path], changes: list[Change]
) -> list[Target]:
    """The edits installing (`commands`) or uninstalling (None) makes; `changes` collects
    what each edit did."""
    targets: list[Target] = []
    mcp_path = paths["mcp"]
    if client == "codex":
        targets.append(Target(mcp_path, _recording(mcp_path, changes, _codex_toml(commands))))
    else:
        entry: dict[str, Any] | None = None
        if commands is not None:
            entry = {"command": commands.server[0], "args": commands.server[1:]}
            if client == "claude-code":
                entry = {"type": "stdio", **entry, "env": {}}
        targets.append(Target(mcp_path, _recording(mcp_path, changes, _mcp_json(entry))))
    if "hooks" in paths:
        hooks_path = paths["hooks"]
        edit = _hooks_json(client, commands)
        targets.append(Target(hooks_path, _recording(hooks_path, changes, edit)))
    return targets


def apply(
    targets: list[Target],
    changes: list[Change],
    dry_run: bool,
    now: datetime,
    root: Path | None = None,
) -> None:
    """Run the edits: every file is read and checked first, then each changed one is backed
    up and written atomically. `root` is the project whose files these are: a path that
    leaves it through a symlink is refused (a checkout must not make install write
    elsewhere). A symlinked user config is written through: its target changes, the link
    stays. Nothing is written when any file cannot be edited safely."""
    prepared = [_prepare(target, changes, root) for target in targets]
    if dry_run:
        return
    written: list[Path] = []
    for edit in prepared:
        if edit.new is None or edit.new == edit.old:
            continue
        try:
            if edit.old is not None and _holds_nothing(edit.new, edit.real):
                # only our entries were in it: no backup of them, no `{}` left behind
                edit.real.unlink()
                edit.change.action = "removed (nothing else was in it)"
                written.append(edit.real)
                continue
            if edit.old is not None:
                edit.change.backup = _backup(edit.real, edit.old.encode("utf-8"), edit.mode, now)
                _drop_older_backups(edit.real, edit.change.backup)
            _write_atomic(edit.real, edit.new, edit.mode)
        except OSError as exc:
            done = f"; already written: {', '.join(map(str, written))}" if written else ""
            raise ConfigError(
                f"cannot write {edit.real}: {exc.strerror or exc}; that file was not changed{done}"
            ) from exc
        written.append(edit.real)


@dataclass(frozen=True, slots=True)
class _Edit:
    """One target, read and checked: the file to write (a symlink's target), the mode it
    keeps, its old and new text, and the change recorded for it."""

    real: Path
    mode: int
    old: str | None
    new: str | None
    change: Change


_NEW_FILE_MODE = 0o600
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _prepare(target: Target, changes: list[Change], root: Path | None) -> _Edit:
    real = _confined(target.path, root)
    data, mode = _read_regular(real)
    old = None
    if data is not None:
        try:
            old = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{target.path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it "
                "as UTF-8, then run again — nothing was changed"
            ) from exc
    new = target.edit(old)
    change = changes[-1]
    if new is not None and new != old:
        if mode is not None and not mode & stat.S_IWUSR:
            raise ConfigError(
                f"{target.path} is read-only (mode {mode:04o}); make it writable "
                f"(chmod u+w {shlex.quote(str(real))}) or add the entry by hand — "
                "nothing was changed"
            )
        _check_writable_folder(real)
    return _Edit(real, _NEW_FILE_MODE if mode is None else mode, old, new, change)


def _confined(path: Path, root: Path | None) -> Path:
    """The file `path` names after following symlinks. Under a project `root`, a path
    that leaves the project through a symlink (the file itself or any folder between the
    root and it) is refused."""
    real = Path(os.path.realpath(path))
    if root is None:
        return real
    real_root = Path(os.path.realpath(root))
    if real.is_relative_to(real_root):
        return real
    link = path
    for part in reversed([path, *path.parents]):
        if part.is_symlink() and not Path(os.path.realpath(part)).is_relative_to(real_root):
            link = part
            break
    raise ConfigError(
        f"{link} is a symlink to {os.path.realpath(link)}, outside the project {root}; "
        "install --project writes only inside the project (a checkout could otherwise make "
        "it overwrite any of your files) — remove the link, or install without --project. "
        "Nothing was changed"
    )


def _read_regular(real: Path) -> tuple[bytes | None, int | None]:
    """The bytes and permission bits of the regular file `real`; (None, None) when there
    is none. Never follows a last-moment symlink and never blocks on a FIFO."""
    flags = os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise ConfigError(
            f"cannot read {real}: {exc.strerror or exc}; nothing was changed"
        ) from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{real} is not a regular file; nothing was changed")
        return handle.read(), stat.S_IMODE(info.st_mode)


def _check_writable_folder(real: Path) -> None:
    """Fail before anything is written when the folder of `real` (or, not there yet, its
    nearest existing parent) cannot take a new file."""
    existing = real.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"cannot write in {existing} (not a writable folder), so {real} cannot be "
            "updated; nothing was changed"
        )


def _holds_nothing(text: str, path: Path) -> bool:
    """Whether a config's new text holds nothing at all: `{}`, `{"mcpServers": {}}`, an
    empty TOML file."""
    if path.suffix == ".toml":
        return not [line for line in text.splitlines() if line.strip()]
    try:
        value = load_json(text)
    except ValueError:
        return False

    def empty(item: Any) -> bool:
        if isinstance(item, dict):
            return all(empty(v) for v in item.values())
        return isinstance(item, list) and all(empty(v) for v in item)

    return empty(value)


def _drop_older_backups(real: Path, kept: Path) -> None:
    """Keep one backup per file, the newest: each install or uninstall makes one, and the
    newest holds everything the older ones did but our own entries."""
    for older in real.parent.glob(f"{glob_escape(real.name)}.bak-smartsearch-*"):
        if older != kept and older.is_file() and not older.is_symlink():
            with contextlib.suppress(OSError):
                older.unlink()


def _backup(real: Path, old: bytes, mode: int, now: datetime) -> Path:
    """Copy the old file beside it, created exclusively (never through a planted name) and
    no more readable than the original."""
    stem = f"{real.name}.bak-smartsearch-{now:%Y%m%d-%H%M%S}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
    private = mode & 0o666
    for attempt in range(100):
        backup = real.with_name(stem if attempt == 0 else f"{stem}-{attempt}")
        try:
            fd = os.open(backup, flags, private)
        except FileExistsError:
            continue
        _write_fd(fd, backup, old, private)
        return backup
    raise FileExistsError(f"too many backups named {stem}-N beside {real}")


def _write_atomic(real: Path, text: str, mode: int) -> None:
    """Replace `real` by a new file holding `text` with permission bits `mode`: written to
    a fresh temporary name in the same folder (mkstemp: exclusive, random), then renamed."""
    data = text.encode("utf-8")
    real.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".smartsearch-tmp")
    _write_fd(fd, Path(tmp), data, mode)
    try:
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_fd(fd: int, path: Path, data: bytes, mode: int) -> None:
    """Write `data` to the new file `path` open at `fd`; on any failure the file is removed."""
    try:
        with os.fdopen(fd, "wb") as handle:
            if hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


# ---------------------------------------------------------------------- JSON files


def _recording(
    path: Path, changes: list[Change], edit: Callable[[Any], tuple[Any, list[str]]]
) -> Callable[[str | None], str | None]:
    def run(old: str | None) -> str | None:
        try:
            return edit_text(old)
        except RecursionError as exc:
            raise ConfigError(
                f"{path} is nested too deeply to edit safely; add the entry by hand — "
                "nothing was changed"
            ) from exc

    def edit_text(old: str | None) -> str | None:
        if path.suffix == ".toml":
            new_text, entries = edit(old)
            changes.append(_change(path, old, entries))
            return new_text if entries else old
        data = _load_json(path, old)
        new_data, entries = edit(data)
        changes.append(_change(path, old, entries))
        if not entries:
            return old
        return dump_json(new_data) + "\n"

    return run


def _change(path: Path, old: str | None, entries: list[str]) -> Change:
    if not entries:
        return Change(path, "unchanged")
    if all(e.startswith("-") for e in entries):
        return Change(path, "removed entries", entries)
    return Change(path, "created" if old is None else "updated", entries)


class JsonNumber:
    """A JSON number kept as it was written (`1e400`, `1.10`, a 5,000-digit integer), so
    rewriting a file never changes a number or turns one into invalid JSON (`Infinity`)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return self.text


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def load_json(text: str) -> Any:
    """Parse JSON keeping every number as written (see JsonNumber); NaN and Infinity,
    which Python accepts and JSON does not, are refused."""
    return json.loads(text, parse_float=JsonNumber, parse_int=JsonNumber, parse_constant=_not_json)


def dump_json(value: Any, indent: str = "") -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`, writing each JsonNumber as it
    was read."""
    if isinstance(value, JsonNumber):
        return value.text
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{inner}{_json_string(str(key))}: {dump_json(item, inner)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return (
            "[\n" + ",\n".join(inner + dump_json(item, inner) for item in value) + (f"\n{indent}]")
        )
    if isinstance(value, str):
        return _json_string(value)
    return json.dumps(value, ensure_ascii=False)


def _json_string(text: str) -> str:
    # A lone surrogate (read from a `\ud800` escape) cannot be written as UTF-8: keep it
    # escaped, as the file had it.
    written = json.dumps(text, ensure_ascii=False)
    try:
        written.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(text)
    return written


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc}); fix or move it, then run again — "
            "nothing was changed"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def _mcp_json(entry: dict[str, Any] | None) -> Callable[[Any], tuple[Any, list[str]]]:
    def edit(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        servers = data.get("mcpServers")
        if servers is not None and not isinstance(servers, dict):
            raise ConfigError("config key mcpServers is not an object; nothing was changed")
        current = (servers or {}).get(SERVER_NAME)
        key = f"mcpServers.{SERVER_NAME}"
        if entry is None:
            if current is None:
                return data, []
            del data["mcpServers"][SERVER_NAME]
            return data, [f"- {key}"]
        if current == entry:
            return data, []
        data.setdefault("mcpServers", {})[SERVER_NAME] = entry
        sign = "+" if current is None else "~"
        return data, [f"{sign} {key} = {json.dumps(entry, ensure_ascii=False)}"]

    return edit


def is_our_hook(command: object, client: str) -> bool:
    """A hook command this tool installed (for `client`)."""
    return isinstance(command, str) and "smartsearch" in command and f" hook {client} " in command


def _hooks_json(client: str, commands: Commands | None) -> Callable[[Any], tuple[Any, list[str]]]:
    def edit(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        hooks = data.get("hooks")
        if hooks is not None and not isinstance(hooks, dict):
            raise ConfigError("config key hooks is not an object; nothing was changed")
        hooks = dict(hooks or {})
        entries: list[str] = []
        for event, name in HOOK_EVENTS[client].items():
            groups = hooks.get(event, [])
            if not isinstance(groups, list):
                raise ConfigError(f"config key hooks.{event} is not a list; nothing was changed")
            ours = [
                h
                for g in groups
                if isinstance(g, dict)
                for h in g.get("hooks", [])
                if isinstance(h, dict) and is_our_hook(h.get("command"), client)
            ]
            wanted = None
            if commands is not None:
                command = shlex.join([*commands.hook, client, name, *commands.hook_options])
                # as load_json reads it back, so that an unchanged hook compares equal
                timeout = JsonNumber(str(HOOK_TIMEOUT_SECONDS))
                wanted = {"type": "command", "command": command, "timeout": timeout}
            if wanted is not None and ours == [wanted]:
                continue
            kept = _without_ours(groups, client)
            if wanted is not None:
                kept.append({"hooks": [wanted]})
                sign = "~" if ours else "+"
                entries.append(f"{sign} hooks.{event}: {wanted['command']}")
            elif ours:
                entries.append(f"- hooks.{event}: {ours[0].get('command')}")
            if kept:
                hooks[event] = kept
            else:
                hooks.pop(event, None)
        if not entries:
            return data, []
        if hooks:
            data["hooks"] = hooks
        else:
            data.pop("hooks", None)
        return data, entries

    return edit


def _without_ours(groups: list[Any], client: str) -> list[Any]:
    kept = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        handlers = [h for h in group["hooks"] if not is_our_hook(h.get("command"), client)]
        if handlers:
            kept.append({**group, "hooks": handlers})
    return kept


# ---------------------------------------------------------------------- Codex TOML

_HEADER = re.compile(r"^\s*\[")
_OUR_TABLE = re.compile(
    r"^\s*\[\s*mcp_servers\s*\.\s*(?:" + SERVER_NAME + r'|"' + SERVER_NAME + r'")\s*(?:\]|\.)'
)


def _codex_toml(commands: Commands | None) -> Callable[[Any], tuple[str | None, list[str]]]:
    def edit(old: str | None) -> tuple[str | None, list[str]]:
        text = old or ""
        before = _parse_toml(text, "the existing file")
        current = before.get("mcp_servers", {}).get(SERVER_NAME)
        key = f"mcp_servers.{SERVER_NAME}"
        if commands is None:
            if current is None:
                return old, []
            new_text = remove_toml_table(text)
            _verify_toml(new_text, before, None)
            return new_text, [f"- [{key}]"]
        command, args = commands.server[0], commands.server[1:]
        wanted: dict[str, Any] = {"command": command, "args": args}
        if current == wanted:
            return old, []
        body = (
            f"[{key}]\ncommand = {_toml_string(command)}\n"
            f"args = [{', '.join(_toml_string(a) for a in args)}]\n"
        )
        new_text = remove_toml_table(text).rstrip("\n")
        new_text = (new_text + "\n\n" if new_text else "") + body
        _verify_toml(new_text, before, wanted)
        sign = "+" if current is None else "~"
        return new_text, [
            f"{sign} [{key}] command = {wanted['command']!r}, args = {wanted['args']}"
        ]

    return edit


def remove_toml_table(text: str) -> str:
    """`text` without the `[mcp_servers.smartsearch]` table and its sub-tables; every other
    line (comments and formatting included) is kept as it was."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if _HEADER.match(line):
            skipping = bool(_OUR_TABLE.match(line))
        if not skipping:
            out.append(line)
    return "".join(out)


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string for everything json.dumps emits.
    return json.dumps(value, ensure_ascii=False)


def _parse_toml(text: str, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Codex config.toml ({what}) is not valid TOML: {exc}") from exc


def _verify_toml(new_text: str, before: dict[str, Any], wanted: dict[str, Any] | None) -> None:
    """The edit must change our table and nothing else, or it is not written."""
    unsafe = ConfigError(
        f"cannot edit Codex config.toml safely (is [mcp_servers.{SERVER_NAME}] defined "
        "inline?); add the server by hand or with `codex mcp add` — nothing was changed"
    )
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as exc:
        raise unsafe from exc
    expected = json.loads(json.dumps(before))
    servers = expected.setdefault("mcp_servers", {})
    servers.pop(SERVER_NAME, None)
    if wanted is not None:
        servers[SERVER_NAME] = wanted
    if not servers and "mcp_servers" not in after:
        expected.pop("mcp_servers")
    if after != expected:
        raise unsafe
