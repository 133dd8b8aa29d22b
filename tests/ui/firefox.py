"""A small WebDriver BiDi client for the browser tests: Firefox (129 or later speaks BiDi
itself, no geckodriver) started headless on a throw-away profile, one websocket to it, and
just the commands and events the tests use. Whatever happens, Firefox is stopped and its
profile deleted.

    with running_firefox("/usr/bin/firefox-esr") as bidi:
        context = bidi.command("browsingContext.create", {"type": "tab"})["context"]
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from websockets.sync.client import ClientConnection

log = logging.getLogger(__name__)

LISTENING = re.compile(r"WebDriver BiDi listening on (ws://\S+)")
STARTUP_TIMEOUT = 60.0
COMMAND_TIMEOUT = 30.0
PORT_ARGS = ("--remote-debugging-port=0",)  # a free port, printed on stderr

# A quiet profile: no first-run or what's-new pages, no default-browser question, no updates,
# no telemetry (Firefox adds its own recommended automation prefs to these).
QUIET_PREFS: dict[str, bool | int | str] = {
    "app.update.disabledForTesting": True,
    "browser.aboutwelcome.enabled": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "datareporting.policy.dataSubmissionEnabled": False,
    "remote.prefs.recommended": True,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
}
# layout.css.prefers-color-scheme.content-override: 0 dark, 1 light.
COLOR_SCHEME_PREF = "layout.css.prefers-color-scheme.content-override"


class BidiError(RuntimeError):
    """A command's error answer (`error` is the BiDi error code, e.g. "no such frame"), or
    Firefox not answering in time."""

    def __init__(self, method: str, error: str, message: str) -> None:
        super().__init__(f"{method}: {error}: {message}")
        self.method = method
        self.error = error


class BidiConnection:
    """One BiDi session over a websocket. Commands wait for their answer; events read
    meanwhile go to the callbacks registered with `on`, in the order they arrived."""

    def __init__(self, websocket: ClientConnection) -> None:
        self._websocket = websocket
        self._next_id = 0
        self._listeners: dict[str, list[Callable[[dict[str, Any]], None]]] = {}

    def command(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = COMMAND_TIMEOUT
    ) -> dict[str, Any]:
        """Send `method` and return its result; raise `BidiError` on an error answer."""
        self._next_id += 1
        sent = self._next_id
        self._websocket.send(json.dumps({"id": sent, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline, method)
            if message.get("id") != sent:
                continue
            if message.get("type") == "error":
                raise BidiError(method, message.get("error", "?"), message.get("message", ""))
            result: dict[str, Any] = message.get("result", {})
            return result

    def on(self, event: str, callback: Callable[[dict[str, Any]], None]) -> None:
        """Call `callback(params)` for each `event` read from now on (once the session is
        subscribed to it: `session.subscribe`)."""
        self._listeners.setdefault(event, []).append(callback)

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float) -> None:
        """Read events until `condition()` holds (events drive it), or raise `BidiError`."""
        deadline = time.monotonic() + timeout
        while not condition():
            self._receive(deadline, what)

    def _receive(self, deadline: float, what: str) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            message: dict[str, Any] = json.loads(self._websocket.recv(timeout=remaining))
        except TimeoutError:
            raise BidiError(what, "timeout", "Firefox did not answer in time") from None
        if message.get("type") == "event":
            for callback in self._listeners.get(message["method"], []):
                callback(message["params"])
        return message


def remote_value(value: dict[str, Any]) -> Any:
    """A BiDi RemoteValue as Python: primitives, lists and dicts; other objects (nodes,
    windows…) as the RemoteValue itself."""
    kind = value["type"]
    if kind in ("undefined", "null"):
        return None
    if kind == "number" and isinstance(value["value"], str):  # NaN, -0, ±Infinity
        return float(value["value"].replace("Infinity", "inf"))
    if kind in ("string", "number", "boolean"):
        return value["value"]
    if kind == "array":
        return [remote_value(item) for item in value.get("value", [])]
    if kind == "object":
        return {
            key if isinstance(key, str) else str(remote_value(key)): remote_value(item)
            for key, item in value.get("value", [])
        }
    return value


@contextmanager
def running_firefox(
    executable: str, *, prefs: dict[str, bool | int | str] | None = None
) -> Iterator[BidiConnection]:
    """Firefox at `executable`, headless on a new profile (`QUIET_PREFS` and `prefs`), with a
    BiDi session open on it (dialogs dismissed); closed, stopped and its profile deleted
    afterwards. Needs the websockets package."""
    from websockets.sync.client import connect

    profile = Path(tempfile.mkdtemp(prefix="smartsearch-firefox-"))
    process: subprocess.Popen[str] | None = None
    stderr: _Stderr | None = None
    try:
        _write_user_js(profile, {**QUIET_PREFS, **(prefs or {})})
        process = subprocess.Popen(
            [executable, "--headless", "--no-remote", "--profile", str(profile), *PORT_ARGS],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: content processes go with it
        )
        stderr = _Stderr(process)
        url = stderr.listening_url(executable)
        with connect(url + "/session", open_timeout=STARTUP_TIMEOUT, max_size=None) as websocket:
            bidi = BidiConnection(websocket)
            capabilities = {"alwaysMatch": {"unhandledPromptBehavior": {"default": "dismiss"}}}
            bidi.command("session.new", {"capabilities": capabilities}, timeout=STARTUP_TIMEOUT)
            try:
                yield bidi
            finally:
                _close_browser(bidi)
    finally:
        if process is not None:
            _stop(process)
        if stderr is not None:
            stderr.close()
        shutil.rmtree(profile, ignore_errors=True)


def _write_user_js(profile: Path, prefs: dict[str, bool | int | str]) -> None:
    lines = [f"user_pref({json.dumps(key)}, {json.dumps(value)});" for key, value in prefs.items()]
    (profile / "user.js").write_text("\n".join(lines) + "\n")


class _Stderr:
    """Firefox's stderr, read to its end in a thread of its own (a full pipe would stall
    Firefox): the websocket address it prints once BiDi listens, and its last lines for the
    error when it exits or stays silent instead."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        self.url: str | None = None
        self.tail: deque[str] = deque(maxlen=20)
        self._listening = threading.Event()
        self._thread = threading.Thread(target=self._read, name="firefox-stderr", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._process.stderr is not None
        for line in self._process.stderr:
            self.tail.append(line.rstrip())
            match = LISTENING.search(line)
            if match and self.url is None:
                self.url = match.group(1)
                self._listening.set()
        self._listening.set()  # stderr closed: Firefox is gone

    def listening_url(self, executable: str) -> str:
        if self._listening.wait(STARTUP_TIMEOUT) and self.url is not None:
            return self.url
        raise BidiError(
            "start",
            "no WebDriver BiDi",
            f"{executable} did not start WebDriver BiDi within {STARTUP_TIMEOUT:.0f} s "
            "(it needs Firefox 129 or later); its last output:\n" + "\n".join(self.tail),
        )

    def close(self) -> None:
        """Once Firefox is gone: the reader reaches the end, the pipe is closed."""
        self._thread.join(timeout=5)
        if not self._thread.is_alive() and self._process.stderr is not None:
            self._process.stderr.close()


def _close_browser(bidi: BidiConnection) -> None:
    """Ask Firefox to quit (it ends the session); `_stop` deals with one that does not."""
    from websockets.exceptions import ConnectionClosed

    try:
        bidi.command("browser.close", timeout=10)
    except (BidiError, ConnectionClosed) as exc:
        log.info("browser.close: %s", exc)


def _stop(process: subprocess.Popen[str]) -> None:
    """Wait for Firefox to exit; terminate it, then kill its process group, if it does not."""
    for stop in (None, signal.SIGTERM, signal.SIGKILL):
        if stop is not None:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, stop)
        try:
            process.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    with suppress(ProcessLookupError):  # content processes left once the parent has gone
        os.killpg(process.pid, signal.SIGKILL)
