"""Reading the JSON files importers parse: a plain file, or one member of a .zip export."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from smartsearch_mcp.types import InputError


def load_json(path: Path, *, what: str) -> Any:
    """Parse the JSON file at `path`.

    Raises InputError naming the file and `what` it should hold when it is missing, unreadable
    or not JSON.
    """
    try:
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


def _load_zip_member(path: Path, *, member: str, what: str) -> Any:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [
                name
                for name in archive.namelist()
                if PurePosixPath(name).name == member and not name.startswith("__MACOSX/")
            ]
            if not names:
                raise InputError(f"{path} is a zip file without {member}; expected {what}")
            name = min(names, key=lambda n: (n.count("/"), n))
            raw = archive.read(name)
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
