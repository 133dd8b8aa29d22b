"""PostgreSQL URLs: recognised, and shown without their password (no driver needed here).

Every message that names a database goes through `mask_url`; text from the driver (which may
quote its connection string) through `scrub`; and the driver's own loggers through
`SecretFilter`, so that no log line or error holds a password.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")
MASK = "***"
_PASSWORD_IN_TEXT = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_PASSWORD_PARAMETER = re.compile(r"((?:^|[&;])password=)([^&;#]*)", re.IGNORECASE)


def is_postgres_url(target: object) -> bool:
    """Whether `target` names a PostgreSQL database rather than an SQLite file."""
    return isinstance(target, str) and target.strip().lower().startswith(SCHEMES)


def _userinfo(url: str) -> tuple[str, str, str, str] | None:
    """`url` read by hand as scheme://user[:password]@rest, or None without a user part.

    Read without urlsplit so that a URL it refuses (`[::1` without its `]`) or misreads (a
    `#` in the password starts a fragment there) still has its password found and masked.
    The user part ends at the last `@`, as a password may hold one unquoted."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not sep or not at:
        return None
    user, _, password = userinfo.partition(":")
    return scheme, user, password, host


def _query_passwords(url: str) -> list[str]:
    return [m.group(2) for m in _PASSWORD_PARAMETER.finditer(url.partition("?")[2])]


def passwords(url: str) -> list[str]:
    """The passwords a URL holds (in its user part, or as a `password=` parameter), as
    written and unquoted."""
    found: list[str] = []
    parts = _userinfo(url)
    if parts and parts[2]:
        found.append(parts[2])
    found += _query_passwords(url)
    found += [unquote(secret) for secret in found]
    return [p for p in dict.fromkeys(found) if p]


def mask_url(url: str) -> str:
    """`url` with any password replaced by ***, fit to show in messages and logs (also a
    URL that does not parse)."""
    parts = _userinfo(url)
    if parts is not None:
        scheme, user, password, host = parts
        url = f"{scheme}://{user}:{MASK}@{host}" if password else url
    base, question, query = url.partition("?")
    return base + question + _PASSWORD_PARAMETER.sub(lambda m: m.group(1) + MASK, query)


def scrub(text: str, url: str) -> str:
    """`text` (e.g. a driver's error) with the URL's passwords, and any `password=…`
    connection parameter, masked."""
    for secret in sorted(passwords(url), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _PASSWORD_IN_TEXT.sub(lambda m: m.group(1) + MASK, text)


class SecretFilter(logging.Filter):
    """Masks the passwords of the URLs opened in this process in every record it sees
    (installed on psycopg's loggers)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = message
        for url in self.urls:
            clean = scrub(clean, url)
        clean = _PASSWORD_IN_TEXT.sub(lambda m: m.group(1) + MASK, clean)
        if clean != message:
            record.msg, record.args = clean, None
        return True


SECRETS = SecretFilter()


def guard_driver_logs(url: str) -> None:
    """Mask `url`'s password in everything psycopg and its pool log."""
    SECRETS.urls.add(url)
    for name in ("psycopg", "psycopg.pool"):
        logger = logging.getLogger(name)
        if SECRETS not in logger.filters:
            logger.addFilter(SECRETS)


def with_search_path(url: str, schema: str) -> str:
    """`url` with its sessions' search_path set to `schema` (then public, where extensions
    live): a memory in a schema of its own inside a shared database."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "options"]
    query.append(("options", f"-csearch_path={schema},public"))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))
