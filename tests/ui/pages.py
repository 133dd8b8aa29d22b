"""One small page interface for the browser tests, over two browsers: Chromium driven by
Playwright and Firefox driven over WebDriver BiDi (`firefox.py`), so that one scenario runs in
both. Elements are named by CSS selector (the first match), or by role and accessible name;
a click is a real pointer click; `navigates=True` waits for the page it opens to load. Each
page collects its errors: console errors and uncaught exceptions (both browsers report a
Content-Security-Policy violation as one) and any dialog (alert, confirm) that opened, which
is dismissed."""

from __future__ import annotations

import base64
import functools
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from browser import chromium_path, firefox_path

if TYPE_CHECKING:
    from firefox import BidiConnection

BROWSERS = ("chromium", "firefox")
TIMEOUT = 10.0


class Viewport(TypedDict):
    width: int
    height: int


DESKTOP: Viewport = {"width": 1280, "height": 800}
PHONE: Viewport = {"width": 390, "height": 844}


class Page(Protocol):
    """A tab of a browser, on cookies of its own. `text` and `attribute` wait for their
    element to appear (up to `TIMEOUT`), as `click` does; `count` and `texts` look once."""

    browser: str  # "chromium" or "firefox"
    errors: list[str]  # what went wrong on the page, in the order it happened

    @property
    def url(self) -> str: ...
    def goto(self, url: str) -> None:
        """Open `url` and wait for it to load (following redirects)."""

    def text(self, selector: str) -> str:
        """The rendered text (innerText) of the first element `selector` matches."""

    def texts(self, selector: str) -> list[str]: ...
    def count(self, selector: str) -> int: ...
    def attribute(self, selector: str, name: str) -> str | None: ...
    def html(self) -> str: ...
    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-like values)."""

    def click(self, selector: str, *, navigates: bool = False) -> None: ...
    def click_role(self, role: str, name: str, *, navigates: bool = False) -> None:
        """Click the element of ARIA `role` whose accessible name is exactly `name`."""

    def fill(self, selector: str, value: str) -> None: ...
    def wait_for(self, selector: str) -> None: ...
    def wait_for_url(self, part: str) -> None:
        """Wait until a loaded page's URL contains `part`."""

    def resize(self, viewport: Viewport) -> None: ...
    def screenshot(self, path: Path) -> None: ...


class Browser(Protocol):
    name: str

    def new_page(
        self, viewport: Viewport = DESKTOP, *, dark: bool = False
    ) -> AbstractContextManager[Page]:
        """A new tab with cookies of its own, in light or dark mode; closed afterwards."""
        ...


@contextmanager
def launched(name: str) -> Iterator[Browser]:
    """The system's `name` ("chromium" or "firefox"), headless; skipped (or failed, when
    $SMARTSEARCH_REQUIRE_BROWSER is set) when it is not installed."""
    if name == "chromium":
        executable = chromium_path()
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
            chromium = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            try:
                yield ChromiumBrowser(chromium)
            finally:
                chromium.close()
    elif name == "firefox":
        with launched_firefox(firefox_path()) as firefox:
            yield firefox
    else:
        raise ValueError(f"no such browser: {name!r} (one of {', '.join(BROWSERS)})")


class ChromiumBrowser:
    name = "chromium"

    def __init__(self, chromium: Any) -> None:
        self._chromium = chromium

    @contextmanager
    def new_page(self, viewport: Viewport = DESKTOP, *, dark: bool = False) -> Iterator[Page]:
        context = self._chromium.new_context(
            viewport=viewport, color_scheme="dark" if dark else "light"
        )
        try:
            context.set_default_timeout(TIMEOUT * 1000)
            yield ChromiumPage(context.new_page())
        finally:
            context.close()


class ChromiumPage:
    browser = "chromium"

    def __init__(self, page: Any) -> None:
        self._page = page
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        page.on("dialog", self._dialog)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def _dialog(self, dialog: Any) -> None:
        self.errors.append(f"a dialog opened ({dialog.type}): {dialog.message}")
        dialog.dismiss()

    @property
    def url(self) -> str:
        return str(self._page.url)

    def goto(self, url: str) -> None:
        self._page.goto(url)

    def text(self, selector: str) -> str:
        return str(self._page.locator(selector).first.inner_text())

    def texts(self, selector: str) -> list[str]:
        return list(self._page.locator(selector).all_inner_texts())

    def count(self, selector: str) -> int:
        return int(self._page.locator(selector).count())

    def attribute(self, selector: str, name: str) -> str | None:
        value = self._page.locator(selector).first.get_attribute(name)
        return None if value is None else str(value)

    def html(self) -> str:
        return str(self._page.content())

    def evaluate(self, expression: str) -> Any:
        return self._page.evaluate(expression)

    def click(self, selector: str, *, navigates: bool = False) -> None:
        self._act(self._page.locator(selector).first.click, navigates)

    def click_role(self, role: str, name: str, *, navigates: bool = False) -> None:
        self._act(self._page.get_by_role(role, name=name, exact=True).click, navigates)

    def _act(self, action: Callable[[], None], navigates: bool) -> None:
        if navigates:
            with self._page.expect_navigation():
                action()
        else:
            action()

    def fill(self, selector: str, value: str) -> None:
        self._page.locator(selector).first.fill(value)

    def wait_for(self, selector: str) -> None:
        self._page.locator(selector).first.wait_for()

    def wait_for_url(self, part: str) -> None:
        self._page.wait_for_url(lambda url: part in url)

    def resize(self, viewport: Viewport) -> None:
        self._page.set_viewport_size(viewport)

    def screenshot(self, path: Path) -> None:
        self._page.screenshot(path=str(path))


@contextmanager
def launched_firefox(executable: str, *, dark: bool = False) -> Iterator[FirefoxBrowser]:
    """Firefox at `executable` with a BiDi session (`firefox.running_firefox`), light or
    dark (a preference of the profile: the BiDi of Firefox ESR 153 has no command that sets
    the colour scheme of a tab)."""
    from firefox import COLOR_SCHEME_PREF, running_firefox

    with running_firefox(executable, prefs={COLOR_SCHEME_PREF: 0 if dark else 1}) as bidi:
        yield FirefoxBrowser(bidi, executable, dark)


class FirefoxBrowser:
    name = "firefox"
    EVENTS = (
        "log.entryAdded",
        "browsingContext.navigationStarted",
        "browsingContext.load",
        "browsingContext.userPromptOpened",
    )

    def __init__(self, bidi: BidiConnection, executable: str, dark: bool) -> None:
        self._bidi = bidi
        self._executable = executable
        self._dark = dark
        self._pages: dict[str, FirefoxPage] = {}
        bidi.command("session.subscribe", {"events": list(self.EVENTS)})
        for event in self.EVENTS:
            bidi.on(event, functools.partial(self._to_page, event))

    def _to_page(self, event: str, params: dict[str, Any]) -> None:
        context = params["source"]["context"] if event == "log.entryAdded" else params["context"]
        page = self._pages.get(context)
        if page is not None:
            page.note(event, params)

    @contextmanager
    def new_page(self, viewport: Viewport = DESKTOP, *, dark: bool = False) -> Iterator[Page]:
        if dark != self._dark:  # the colour scheme is the profile's: another Firefox
            with (
                launched_firefox(self._executable, dark=dark) as other,
                other.new_page(viewport, dark=dark) as page,
            ):
                yield page
            return
        user_context = self._bidi.command("browser.createUserContext")["userContext"]
        context = ""
        try:
            created = self._bidi.command(
                "browsingContext.create", {"type": "tab", "userContext": user_context}
            )
            context = created["context"]
            page = self._pages[context] = FirefoxPage(self._bidi, context)
            page.resize(viewport)
            yield page
        finally:
            self._pages.pop(context, None)
            # Closes its tab and drops its cookies.
            self._bidi.command("browser.removeUserContext", {"userContext": user_context})


# Script run in the page by FirefoxPage: `selector` names the first element it matches.
_FIRST = (
    "const element = document.querySelector(selector);"
    ' if (!element) throw new Error("no element matches " + selector);'
)
_TEXT = f"(selector) => {{ {_FIRST} return element.innerText; }}"
_TEXTS = "(selector) => Array.from(document.querySelectorAll(selector), (e) => e.innerText)"
_COUNT = "(selector) => document.querySelectorAll(selector).length"
_ATTRIBUTE = f"(selector, name) => {{ {_FIRST} return element.getAttribute(name); }}"
# As Playwright's fill: the value set, then the events typing it would have sent.
_FILL = f"""(selector, value) => {{ {_FIRST}
  element.focus();
  element.value = value;
  element.dispatchEvent(new Event("input", {{bubbles: true}}));
  element.dispatchEvent(new Event("change", {{bubbles: true}}));
}}"""
# Where to click an element: its centre, scrolled into view if need be, if nothing covers it.
_CENTRE = """(element) => {
  element.scrollIntoView({block: "nearest", inline: "nearest"});
  const box = element.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) throw new Error("the element is not visible");
  const x = box.left + box.width / 2, y = box.top + box.height / 2;
  const hit = document.elementFromPoint(x, y);
  if (!element.contains(hit)) throw new Error("the element is covered by " + hit?.outerHTML);
  return [Math.floor(x), Math.floor(y)];
}"""


class FirefoxPage:
    browser = "firefox"

    def __init__(self, bidi: BidiConnection, context: str) -> None:
        self._bidi = bidi
        self.context = context
        self.errors: list[str] = []
        self._started: list[str | None] = []  # navigation ids, in order
        self._loaded: set[str | None] = set()

    def note(self, event: str, params: dict[str, Any]) -> None:
        """An event of this tab (FirefoxBrowser hands them over)."""
        if event == "log.entryAdded" and params["level"] == "error":
            self.errors.append(f"{params['type']}: {params['text']}")
        elif event == "browsingContext.userPromptOpened":
            self.errors.append(f"a dialog opened ({params['type']}): {params['message']}")
        elif event == "browsingContext.navigationStarted":
            self._started.append(params["navigation"])
        elif event == "browsingContext.load":
            self._loaded.add(params["navigation"])

    @property
    def url(self) -> str:
        return str(self.evaluate("location.href"))

    def goto(self, url: str) -> None:
        params = {"context": self.context, "url": url, "wait": "complete"}
        self._bidi.command("browsingContext.navigate", params)

    def text(self, selector: str) -> str:
        self.wait_for(selector)
        return str(self._call(_TEXT, selector))

    def texts(self, selector: str) -> list[str]:
        return list(self._call(_TEXTS, selector))

    def count(self, selector: str) -> int:
        return int(self._call(_COUNT, selector))

    def attribute(self, selector: str, name: str) -> str | None:
        self.wait_for(selector)
        value = self._call(_ATTRIBUTE, selector, name)
        return None if value is None else str(value)

    def html(self) -> str:
        return str(self.evaluate("document.documentElement.outerHTML"))

    def evaluate(self, expression: str) -> Any:
        return self._script("script.evaluate", {"expression": expression})

    def click(self, selector: str, *, navigates: bool = False) -> None:
        self._click({"type": "css", "value": selector}, selector, navigates)

    def click_role(self, role: str, name: str, *, navigates: bool = False) -> None:
        locator = {"type": "accessibility", "value": {"role": role, "name": name}}
        self._click(locator, f"the {role} {name!r}", navigates)

    def _click(self, locator: dict[str, Any], what: str, navigates: bool) -> None:
        nodes: list[dict[str, Any]] = []

        def located() -> bool:
            params = {"context": self.context, "locator": locator, "maxNodeCount": 1}
            nodes[:] = self._bidi.command("browsingContext.locateNodes", params)["nodes"]
            return bool(nodes)

        self._poll(located, f"an element to click: {what}")
        node = {"sharedId": nodes[0]["sharedId"]}
        x, y = self._script(
            "script.callFunction", {"functionDeclaration": _CENTRE, "arguments": [node]}
        )
        started = len(self._started)
        mouse = [
            {"type": "pointerMove", "x": x, "y": y},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ]
        pointer = {"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}}
        actions = [{**pointer, "actions": mouse}]
        self._bidi.command("input.performActions", {"context": self.context, "actions": actions})
        if navigates:
            self._bidi.wait_until(
                lambda: any(n in self._loaded for n in self._started[started:]),
                f"the page {what} opens to load",
                TIMEOUT,
            )

    def fill(self, selector: str, value: str) -> None:
        self.wait_for(selector)
        self._call(_FILL, selector, value)

    def wait_for(self, selector: str) -> None:
        self._poll(lambda: self.count(selector) > 0, f"an element matching {selector}")

    def wait_for_url(self, part: str) -> None:
        loaded = "document.readyState === 'complete' ? location.href : ''"
        self._poll(lambda: part in str(self.evaluate(loaded)), f"a loaded URL with {part}")

    def resize(self, viewport: Viewport) -> None:
        self._bidi.command(
            "browsingContext.setViewport", {"context": self.context, "viewport": viewport}
        )

    def screenshot(self, path: Path) -> None:
        shot = self._bidi.command("browsingContext.captureScreenshot", {"context": self.context})
        path.write_bytes(base64.b64decode(shot["data"]))

    def _call(self, function: str, *args: str) -> Any:
        arguments = [{"type": "string", "value": arg} for arg in args]
        params = {"functionDeclaration": function, "arguments": arguments}
        return self._script("script.callFunction", params)

    def _script(self, method: str, params: dict[str, Any]) -> Any:
        from firefox import BidiError, remote_value

        target = {"context": self.context}
        answer = self._bidi.command(method, {**params, "target": target, "awaitPromise": True})
        if answer["type"] == "exception":
            raise BidiError(method, "javascript error", answer["exceptionDetails"]["text"])
        return remote_value(answer["result"])

    def _poll(self, condition: Callable[[], bool], what: str) -> None:
        """Until `condition()` holds; a page being replaced meanwhile is not an error."""
        from firefox import BidiError

        deadline = time.monotonic() + TIMEOUT
        problem = ""
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except BidiError as exc:
                problem = f" (last: {exc})"
            time.sleep(0.05)
        raise AssertionError(f"waited {TIMEOUT:.0f} s for {what}{problem}")
