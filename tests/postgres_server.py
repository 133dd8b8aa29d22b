"""A PostgreSQL server for the tests: the one $SMARTSEARCH_TEST_POSTGRES_URL names, else a
throw-away cluster started here when PostgreSQL's binaries are installed (initdb refuses to
run as root: as root the cluster runs as the `postgres` user). Each test gets a database of
its own (`fresh_database`), dropped afterwards.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

URL_ENV = "SMARTSEARCH_TEST_POSTGRES_URL"


@dataclass
class Server:
    """A reachable PostgreSQL server; `url` names a database we may create databases from."""

    url: str

    def database_url(self, name: str) -> str:
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))


def unavailable_reason() -> str | None:
    """Why no server can be had, or None when one can."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "the postgres extra is not installed (pip install -e '.[postgres]')"
    if os.environ.get(URL_ENV):
        return None
    return cluster_unavailable_reason()


def cluster_unavailable_reason() -> str | None:
    """Why no throw-away cluster can be started here, or None when one can."""
    if _binaries() is None:
        return f"no PostgreSQL server: set ${URL_ENV}, or install PostgreSQL (its initdb)"
    if os.geteuid() == 0 and (shutil.which("runuser") is None or not _has_user("postgres")):
        return "running as root without runuser or a postgres user to run initdb as"
    return None


class Cluster:
    """A throw-away cluster in a temporary directory, listening on 127.0.0.1 (and a Unix
    socket in that directory) on a free port; as root it runs as the `postgres` user."""

    def __init__(self) -> None:
        bin_dir = _binaries()
        assert bin_dir is not None
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="ss-pg-"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            self.as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.root, "postgres")
        self.data = self.root / "data"
        self.port = _free_port()
        subprocess.run(
            [*self.as_user, str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
             "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options,
             "-l", str(self.root / "server.log"), "-w", "-t", "60", "start"],
            check=True, capture_output=True, timeout=90,
        )  # fmt: skip

    def stop(self) -> None:
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast",
             "-w", "stop"],
            capture_output=True, timeout=60,
        )  # fmt: skip

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def own_cluster() -> Iterator[Cluster]:
    """A cluster of the caller's own (which it may stop and start), removed on exit."""
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        cluster.remove()


@contextlib.contextmanager
def running_server() -> Iterator[Server]:
    """The server of $SMARTSEARCH_TEST_POSTGRES_URL, else a throw-away cluster (stopped and
    deleted on exit)."""
    given = os.environ.get(URL_ENV)
    if given:
        yield Server(given)
        return
    with own_cluster() as cluster:
        yield Server(cluster.url)


@contextlib.contextmanager
def fresh_database(server: Server) -> Iterator[str]:
    """The URL of a new, empty database on `server`, dropped on exit."""
    import psycopg

    name = f"ss_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.database_url(name)
    finally:
        with psycopg.connect(server.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
