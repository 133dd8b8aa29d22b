"""Reading the files importers parse: a JSON file, one member of a .zip export, or JSONL lines.

Reading is bounded: only regular files (not /dev/zero or a FIFO, which never end), JSON files
and zip members up to `MAX_FILE_BYTES` uncompressed (a 4 MB zip can hold 4 GiB), JSONL lines
up to `MAX_LINE_CHARS`, and nesting the JSON parser can follow.
"""

from __future__ import annotations

import json
import logging
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from smartsearch_mcp.types import InputError

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1 << 30  # 1 GiB: a JSON file, or a zip member once uncompressed
MAX_LINE_CHARS = 16_000_000  # a JSONL line: a turn's text (<= 1,000,000 chars) plus its JSON
_READ_CHUNK = 1 << 20


def check_regular_file(path: Path, *, what: str) -> None:
    """InputError unless `path` is a regular file (or a folder, which callers handle): a
    device or a FIFO would be read forever."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as exc:
        raise InputError(f"{path} does not exist; expected {what}") from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(
            f"{path} is not a regular file (a device, FIFO or socket); expected {what} — "
            "save the data to a file and import that"
        )


def bounded_lines(handle: IO[str], *, source: str, skip_long: bool = False) -> Iterator[str]:
    """The lines of `handle`, each at most MAX_LINE_CHARS characters: a longer line is an
    InputError naming it, or with `skip_long` skipped (logged) without being held in memory."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        number += 1
        if len(line) <= MAX_LINE_CHARS or (line.endswith("\n") and len(line) == MAX_LINE_CHARS + 1):
            yield line
            continue
        if not skip_long:
            raise InputError(
                f"{source}, line {number} is longer than {MAX_LINE_CHARS:,} characters; "
                "a line holds one turn — is this the right file?"
            )
        while line and not line.endswith("\n"):  # skip the rest of the line
            line = handle.readline(_READ_CHUNK)
        log.warning(
            "%s, line %d is longer than %d characters; skipped", source, number, MAX_LINE_CHARS
        )
        yield "\n"  # keeps the line numbers of the lines after it


def load_json(path: Path, *, what: str) -> Any:
    """Parse the JSON file at `path`.

    Raises InputError naming the file and `what` it should hold when it is missing, unreadable
    or not JSON.
    """
    check_regular_file(path, what=what)
    try:
        if path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
            raise InputError(_too_big(str(path), path.stat().st_size, what))
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise InputError(f"{path} does not exist; expected {what}") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path} is a folder; expected {what}") from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    return _decode(raw, source=str(path), what=what)


def load_export_json(path: Path, *, member: str, what: str) -> Any:
    """Parse `path`: a JSON file, or a .zip export holding a file named `member` (any folder).

    Raises InputError when the file is missing, the zip has no `member`, or it is not JSON.
    """
    if path.is_file() and zipfile.is_zipfile(path):
        return _load_zip_member(path, member=member, what=what)
    return load_json(path, what=what)


def describe(value: object) -> str:
    """A short name for the JSON type of `value`, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def zip_member(archive: zipfile.ZipFile, member: str) -> str | None:
    """The name of the file called `member` in `archive` nearest its top (any folder; macOS
    resource forks left out), or None."""
    names = [
        name
        for name in archive.namelist()
        if PurePosixPath(name).name == member and not name.startswith("__MACOSX/")
    ]
    return min(names, key=lambda n: (n.count("/"), n)) if names else None


def _load_zip_member(path: Path, *, member: str, what: str) -> Any:
    try:
        with zipfile.ZipFile(path) as archive:
            name = zip_member(archive, member)
            if name is None:
                raise InputError(f"{path} is a zip file without {member}; expected {what}")
            size = archive.getinfo(name).file_size
            if size > MAX_FILE_BYTES:
                raise InputError(_too_big(f"{path}!{name}", size, what))
            with archive.open(name) as member_file:
                raw = member_file.read(MAX_FILE_BYTES + 1)  # the header's size may lie
            if len(raw) > MAX_FILE_BYTES:
                raise InputError(_too_big(f"{path}!{name}", len(raw), what))
    except zipfile.BadZipFile as exc:
        raise InputError(f"{path} is a damaged zip file: {exc}") from exc
    return _decode(raw, source=f"{path}!{name}", what=what)


def _decode(raw: bytes, *, source: str, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{source} is not UTF-8 text; expected {what}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            f"expected {what}"
        ) from exc
    except RecursionError as exc:
        raise InputError(f"{source}: JSON nested too deeply to read; expected {what}") from exc
    except MemoryError as exc:  # a JSON document under the size limit can still take 10x it
        raise InputError(
            f"{source} ({len(raw) / 2**20:,.0f} MiB) is too large to parse in this machine's "
            f"memory; nothing was imported — expected {what}"
        ) from exc


def _too_big(source: str, size: int, what: str) -> str:
    return (
        f"{source} holds {size / 2**30:.1f} GiB (uncompressed); the import limit is "
        f"{MAX_FILE_BYTES / 2**30:.0f} GiB — expected {what}"
    )
