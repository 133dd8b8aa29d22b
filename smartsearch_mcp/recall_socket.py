"""A running server answers the command line's recalls, warm.

A CLI `recall` in a fresh process spends seconds importing torch and loading models. A
server that is already running on the same database (the one a client started) has them
loaded: it listens on a private Unix socket, and `smartsearch-mcp recall` asks it first.

- Where: one socket per database file, named by a hash of its real path, in a directory
  of this user's only (`$XDG_RUNTIME_DIR/smartsearch-mcp`, else `<tmp>/smartsearch-mcp-<uid>`;
  `$SMARTSEARCH_RUNTIME_DIR` overrides). The directory must be a real directory owned by
  this user with mode 0700, and the socket 0600; on Linux the server also checks that the
  peer runs as the same user. Anything else and the socket is not used.
- What: one JSON line per connection, one JSON line back: the recall tool's text and
  structured result. The prompt hook's `capture` instead hands over its event: the server
  stores it (a first line says so) and replies with what to inject, chosen as the hook's own
  recall would choose (inject.py) with the server's loaded vocabulary, so the hook loads
  neither the store nor a vocabulary. The server answers only when its settings are the
  CLI's (a hash of the effective configuration), so the answer is the one a local recall
  would give.
- Never in the way: no socket, a stale one (server killed), another configuration or any
  failure → the CLI recalls locally, as before. The first server on a database listens
  (it holds a lock on `<socket>.lock` while it does); the others don't.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import logging
import os
import socket
import stat
import struct
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smartsearch_mcp.postgres_url import is_postgres_url
from smartsearch_mcp.types import ConfigError, InputError, SmartSearchError

if TYPE_CHECKING:
    from anyio.abc import SocketStream

    from smartsearch_mcp.capture import HookEvent
    from smartsearch_mcp.config import Config, InjectConfig
    from smartsearch_mcp.memory import Memory
    from smartsearch_mcp.types import RecallResult

# The server side imports anyio where it runs: the client side (a prompt hook asking a
# running server) imports neither it nor the store.

log = logging.getLogger(__name__)

RUNTIME_ENV = "SMARTSEARCH_RUNTIME_DIR"
MAX_LINE = 1_000_000  # bytes of one answer line we read
MAX_REQUEST = 64_000  # bytes of one request line (a query is at most a few thousand words)
# An over-long request is read on (and dropped) up to this many bytes before the error reply, so
# that a client still sending gets the reply instead of a broken pipe; more, and it is closed.
MAX_DRAINED = 4_000_000
MAX_CONNECTIONS = 16  # answered at once; more are closed at once, so idle ones cannot pile up
ACCEPT_RETRY_S = 0.5  # after the process runs out of descriptors (EMFILE), wait, then accept
REQUEST_TIMEOUT_S = 10.0  # a client has this long to send its request
CONNECT_TIMEOUT_S = 1.0
ANSWER_TIMEOUT_S = 300.0  # a recall over a very large memory can take minutes


def runtime_dir(create: bool = False, override: str | Path | None = None) -> Path | None:
    """This user's private directory for sockets (`override`, else $SMARTSEARCH_RUNTIME_DIR,
    else the usual one), or None when it is missing (and not created) or not private (owned
    by another user, a symlink, open to others)."""
    override = override or os.environ.get(RUNTIME_ENV)
    if override:
        directory = Path(override)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        directory = Path(os.environ["XDG_RUNTIME_DIR"]) / "smartsearch-mcp"
    else:
        directory = Path(tempfile.gettempdir()) / f"smartsearch-mcp-{os.getuid()}"
    if create:
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
    try:
        info = directory.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        log.warning(
            "not using %s for the CLI socket: it must be a directory of this user's with mode 0700",
            directory,
        )
        return None
    return directory


def socket_path(
    db: str | Path, create_dir: bool = False, runtime: str | Path | None = None
) -> Path | None:
    """The socket of the server on database `db` (in the `runtime` directory when given, as
    `runtime_dir` takes it), or None where there can be none."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid") or str(db) == ":memory:":
        return None
    directory = runtime_dir(create=create_dir, override=runtime)
    if directory is None:
        return None
    real = str(db) if is_postgres_url(db) else os.path.realpath(os.path.expanduser(str(db)))
    name = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return directory / f"{name}.sock"


def config_fingerprint(config: Config) -> str:
    """A hash of the settings that decide a recall (not where they were read from)."""
    values = dataclasses.asdict(config)
    values.pop("source", None)
    values.pop("inject", None)  # what the prompt hook injects changes no recall
    text = json.dumps(values, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------- the server side


async def serve_recalls(memory: Memory, db: str | Path, config: Config) -> None:
    """Answer CLI recalls on `db`'s socket until cancelled. Returns at once when the
    socket cannot be used or another server already answers on it. Never raises (but
    cancellation): the CLI's shortcut must not take the server down with it."""
    import anyio

    path = socket_path(db, create_dir=True)
    if path is None:
        return
    try:
        claim = _claim(path)
    except OSError as exc:
        log.info("not answering CLI recalls on %s: %s", path, exc)
        return
    if claim is None:
        log.info("another server answers CLI recalls for %s", db)
        return
    try:
        # Whoever holds the claim owns the path: a socket file left there is stale.
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        try:
            listener = await anyio.create_unix_listener(path, mode=0o600)
        except OSError as exc:  # e.g. the directory is gone
            log.info("not answering CLI recalls on %s: %s", path, exc)
            return
        log.info("answering CLI recalls on %s", path)
        try:
            await _accept(listener, memory, config_fingerprint(config))
        except Exception as exc:  # whatever it is, the server goes on without the socket
            log.warning("stopped answering CLI recalls on %s: %r", path, exc)
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
    finally:
        os.close(claim)


def _claim(path: Path) -> int | None:
    """An exclusive lock on `<socket>.lock` (a descriptor to keep open while serving), or
    None when another server holds it. The lock goes with the process, so a killed
    server's socket is known stale; and two servers starting at once cannot both bind
    (or one unlink the other's socket) as a check-then-bind could."""
    import fcntl  # POSIX only, as are the sockets (socket_path)

    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


async def _accept(listener: Any, memory: Memory, fingerprint: str) -> None:
    """Accept connections until cancelled, at most MAX_CONNECTIONS answered at once. A
    process out of descriptors (EMFILE, ENFILE) or buffers waits and accepts again rather
    than giving up (anyio's own `serve` lets the error end its task group)."""
    import anyio

    active = 0

    async def answer(stream: SocketStream) -> None:
        nonlocal active
        try:
            await _answer(stream, memory, fingerprint)
        finally:
            active -= 1

    async with listener, anyio.create_task_group() as group:
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno not in _OUT_OF_RESOURCES:
                    raise
                log.warning("CLI recall socket: %s; accepting again in %s s", exc, ACCEPT_RETRY_S)
                await anyio.sleep(ACCEPT_RETRY_S)
                continue
            if active >= MAX_CONNECTIONS:
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await stream.aclose()
                continue
            active += 1
            group.start_soon(answer, stream)


_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


async def _answer(stream: SocketStream, memory: Memory, fingerprint: str) -> None:
    """Answer one connection. Never raises but cancellation: a request that breaks the
    JSON reader (nesting), a recall that runs out of memory or any other failure is an
    error reply, and the server goes on."""
    import anyio
    import anyio.abc

    async def send(reply: dict[str, Any]) -> None:
        await stream.send(json.dumps(reply).encode() + b"\n")

    async with stream:
        try:
            if not peer_is_this_user(stream.extra(anyio.abc.SocketAttribute.raw_socket)):
                return
            with anyio.fail_after(REQUEST_TIMEOUT_S):
                try:
                    line = await _read_line(stream)
                except RequestTooLong as too_long:
                    if not too_long.ended:
                        await _drain_line(stream)
                    raise
            request = json.loads(line)
            if isinstance(request, dict) and request.get("op") == "capture":
                reply = await _capture_reply(request, memory, fingerprint, send)
            else:
                reply = await _recall_reply(request, memory, fingerprint)
        except (ValueError, TypeError, TimeoutError, RecursionError, InputError) as exc:
            reply = {"ok": False, "error": f"bad request: {type(exc).__name__}: {exc}"[:500]}
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        except MemoryError:
            reply = {"ok": False, "error": "the server ran out of memory for this recall"}
        except Exception as exc:
            log.exception("CLI recall failed")
            reply = {"ok": False, "error": f"the server failed this recall: {exc!r}"[:500]}
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await send(reply)


Sender = Callable[[dict[str, Any]], Awaitable[None]]


class RequestTooLong(ValueError):
    """A request line over MAX_REQUEST bytes; `ended` when its newline has been read."""

    def __init__(self, ended: bool) -> None:
        super().__init__(f"request over {MAX_REQUEST:,} bytes")
        self.ended = ended


async def _read_line(stream: SocketStream) -> bytes:
    data = b""
    while b"\n" not in data:
        data += await stream.receive()
        if len(data) > MAX_REQUEST:
            raise RequestTooLong(ended=b"\n" in data)
    return data.split(b"\n", 1)[0]


async def _drain_line(stream: SocketStream) -> None:
    """Read and drop the rest of an over-long request line, at most MAX_DRAINED bytes: a
    client still sending it then reads the error reply rather than a broken pipe."""
    import anyio

    drained = 0
    with contextlib.suppress(anyio.EndOfStream):  # the client is done sending: reply
        while drained <= MAX_DRAINED:
            chunk = await stream.receive()
            if b"\n" in chunk:
                return
            drained += len(chunk)


async def _recall_reply(request: Any, memory: Memory, fingerprint: str) -> dict[str, Any]:
    from smartsearch_mcp.output import format_recall, recall_output

    if not isinstance(request, dict) or request.get("op") != "recall":
        raise ValueError("expected {'op': 'recall', ...}")
    if request.get("config") != fingerprint:
        return {"ok": False, "other_config": True}
    query = request.get("query")
    if not isinstance(query, str):
        raise TypeError("query must be a string")
    options: dict[str, Any] = {
        key: request.get(key)
        for key in ("max_tokens", "namespace", "session_id", "since", "until", "explain")
        if request.get(key) is not None
    }
    try:
        result = await memory.recall(query, **options)
    except SmartSearchError as exc:  # the error a local recall would raise, in its words
        return {"ok": False, "error": str(exc), "input_error": isinstance(exc, InputError)}
    return {
        "ok": True,
        "pid": os.getpid(),
        "text": format_recall(query, result),
        "json": recall_output(result).model_dump(mode="json"),
    }


async def _capture_reply(
    request: dict[str, Any], memory: Memory, fingerprint: str, send: Sender
) -> dict[str, Any]:
    """A prompt hook's event stored, then what to inject for its prompt: the first line
    (`{"ok": true, "stored": n}`, sent by `send` as soon as the event is stored, or an error:
    the hook then stores the event itself), then the reply returned here (`injection`:
    inject.injection_json, null when none was asked or the prompt is no query)."""
    from smartsearch_mcp.capture import event_from_json
    from smartsearch_mcp.memory import MAX_QUERY_CHARS

    if request.get("config") != fingerprint:
        return {"ok": False, "other_config": True}
    event = event_from_json(request.get("event"))
    namespace, until, wanted = request.get("namespace"), request.get("until"), request.get("inject")
    if not isinstance(namespace, str) or not isinstance(until, str):
        raise TypeError("a capture needs its namespace and until as strings")
    settings = None if wanted is None else _inject_settings(wanted, memory)
    stored = await memory.capture(event, namespace)
    await send({"ok": True, "pid": os.getpid(), "stored": stored})
    query = (event.prompt or "").strip()[:MAX_QUERY_CHARS]
    if settings is None or not query:
        return {"ok": True, "injection": None}
    try:
        result = await memory.recall(query, namespace=namespace, until=until)
    except SmartSearchError as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True, "injection": _injection(query, result, event, namespace, settings, memory)}


def _inject_settings(wanted: Any, memory: Memory) -> InjectConfig:
    """The prompt hook's inject settings (`inject` of its request), checked as a config
    file's; the server's own settings for the keys it leaves out."""
    if not isinstance(wanted, dict):
        raise TypeError("inject must be an object of [inject] settings")
    try:
        return memory.config.with_overrides(inject=wanted).inject
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _injection(
    query: str,
    result: RecallResult,
    event: HookEvent,
    namespace: str,
    settings: InjectConfig,
    memory: Memory,
) -> dict[str, Any]:
    """What the prompt hook injects of `result` — the choice its own recall would make
    (smartsearch_mcp.inject), leaving out the event's session — counted with this server's
    loaded vocabulary."""
    from smartsearch_mcp.capture import session_key
    from smartsearch_mcp.inject import choose_injection, injection_json, recalled_passages
    from smartsearch_mcp.tokens import get_token_counter

    tokenizer = memory.config.truncation.tokenizer
    chosen = choose_injection(
        recalled_passages(result),
        query,
        namespace,
        session_key(event),
        settings,
        lambda: get_token_counter(tokenizer),
    )
    return injection_json(chosen)


def peer_is_this_user(sock: socket.socket) -> bool:
    """Whether the process at the other end runs as this user (Linux: SO_PEERCRED; where
    the platform cannot tell, the socket's 0600 mode and private directory decide)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    pid_uid_gid = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", pid_uid_gid)
    return bool(uid == os.getuid())


# ---------------------------------------------------------------------- the CLI side


@dataclasses.dataclass(frozen=True)
class ServerAnswer:
    pid: int
    text: str
    json: dict[str, Any]


def ask_running_server(
    db: str | Path, config: Config, query: str, options: dict[str, Any]
) -> ServerAnswer | None:
    """The recall of the server running on `db` with these settings, or None when there
    is none (or it cannot answer: the caller recalls locally). A recall error the server
    reports (a bad date, say) is raised as SmartSearchError, as a local recall would."""
    path = _server_socket(db)
    if path is None:
        return None
    request = {"op": "recall", "config": config_fingerprint(config), "query": query, **options}
    reply = _exchange(path, request)
    if reply is None or reply.get("other_config"):
        return None
    if not reply.get("ok"):
        error = reply.get("error")
        if isinstance(error, str) and not error.startswith("bad request"):
            raise (InputError if reply.get("input_error") else SmartSearchError)(error)
        return None
    try:
        return ServerAnswer(pid=int(reply["pid"]), text=str(reply["text"]), json=reply["json"])
    except (KeyError, TypeError, ValueError):
        return None


@dataclasses.dataclass(frozen=True)
class ServerCapture:
    pid: int
    stored: int
    injection: Any  # inject.injection_json's dict as sent; None when none came


def capture_on_server(
    db: str | Path,
    config: Config,
    event: HookEvent,
    namespace: str,
    until: str,
    inject: bool,
    time_limit_s: float,
) -> ServerCapture | None:
    """A prompt hook's `event` stored by the server running on `db` with these settings,
    which then, if `inject`, recalls for its prompt over the turns stored before `until` and
    chooses what to inject (with `config.inject`). None when no server stored
    it within `time_limit_s` (none runs, another configuration, an earlier version, a
    failure): the caller stores it. The injection is waited for `time_limit_s` more."""
    path = _server_socket(db)
    if path is None:
        return None
    request = {
        "op": "capture",
        "config": config_fingerprint(config),
        "event": dataclasses.asdict(event),
        "namespace": namespace,
        "until": until,
        "inject": dataclasses.asdict(config.inject) if inject else None,
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            _send(sock, path, request, time_limit_s)
            lines = sock.makefile("rb")
            stored = _json_line(lines.readline(MAX_LINE))
        except OSError:
            return None
        if stored is None or not stored.get("ok") or type(stored.get("stored")) is not int:
            return None
        try:
            chosen = _json_line(lines.readline(MAX_LINE))
        except OSError:  # past the time limit, or the server went away: nothing injected
            chosen = None
    injection = chosen.get("injection") if chosen is not None and chosen.get("ok") else None
    return ServerCapture(int(stored.get("pid") or 0), stored["stored"], injection)


def _server_socket(db: str | Path) -> Path | None:
    """The socket of the server running on `db`, when there is one that is this user's."""
    path = socket_path(db)
    if path is None:
        return None
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        return None
    return path


def _exchange(path: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            _send(sock, path, request, ANSWER_TIMEOUT_S)
            data = _receive_line(sock.recv)
        except OSError:  # refused (a stale socket), reset, timed out
            return None
    return _json_line(data)


def _send(sock: socket.socket, path: Path, request: dict[str, Any], timeout: float) -> None:
    """Connect `sock` to the server at `path` and send `request` as one line; what follows
    waits at most `timeout` seconds for each read."""
    sock.settimeout(CONNECT_TIMEOUT_S)
    sock.connect(str(path))
    sock.settimeout(timeout)
    sock.sendall(json.dumps(request).encode() + b"\n")


def _json_line(data: bytes) -> dict[str, Any] | None:
    """A reply line read as a JSON object; None when it is not one (or cut short)."""
    try:
        reply = json.loads(data)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def _receive_line(receive: Callable[[int], bytes]) -> bytes:
    data = b""
    while b"\n" not in data:
        chunk = receive(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > 50 * MAX_LINE:
            raise OSError("answer too long")
    return data.split(b"\n", 1)[0]


def describe(answer: ServerAnswer) -> str:
    return f"answered by the server already running on this database (pid {answer.pid})"


__all__ = [
    "RUNTIME_ENV",
    "ServerAnswer",
    "ServerCapture",
    "ask_running_server",
    "capture_on_server",
    "config_fingerprint",
    "describe",
    "peer_is_this_user",
    "runtime_dir",
    "serve_recalls",
    "socket_path",
]
