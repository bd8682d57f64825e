"""A minimal headless-Chromium driver for the report tests and `first_screen.py` (standard
library only).

Chromium's DevTools protocol over ``--remote-debugging-pipe``: the browser reads
commands from file descriptor 3 and writes replies and events to descriptor 4, each
message one JSON object terminated by a NUL byte. No WebDriver, no websocket library.

:func:`inspect_page` opens a file in a new tab, waits for the load event and returns
what the tests check: console errors and exceptions (CSP violations are console errors),
JavaScript dialogs (an executed ``alert``, dismissed so the page never blocks), the URLs
the page requested, each image's natural size, the number of ``<script>`` elements, the
body text, and a full-page PNG screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--remote-debugging-pipe")
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """Path of a Chromium binary (``CALAUDIT_CHROMIUM`` first), or ``None``."""
    explicit = os.environ.get("CALAUDIT_CHROMIUM")
    if explicit:
        return explicit
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageReport:
    console_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    script_elements: int = -1
    text: str = ""
    title: str = ""
    screenshot: bytes = b""


class Chromium:
    """One headless browser process with a fresh profile, driven through the pipe."""

    def __init__(self, binary: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="calaudit-chromium-")
        log = open(Path(self.profile) / "chromium.log", "wb")  # noqa: SIM115
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends become fds 3 and 4
            reader, writer = os.dup(to_child_r), os.dup(from_child_w)  # reader may be 3
            os.dup2(reader, 3)
            os.dup2(writer, 4)
            os.set_inheritable(3, True)  # dup2 onto itself keeps close-on-exec
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=wire, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log)
        os.close(to_child_r)
        os.close(from_child_w)
        log.close()
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.send("Browser.close", wait=False)
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no message from Chromium")
            ready, _, _ = select.select([self._from_child], [], [], remaining)
            if ready:
                chunk = os.read(self._from_child, 1 << 16)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed = json.loads(message)
        if parsed.get("method") == "Page.javascriptDialogOpening":  # never block the page
            self._write({"id": -1, "method": "Page.handleJavaScriptDialog",
                         "params": {"accept": True}, "sessionId": parsed.get("sessionId")})
        return parsed

    def _write(self, message: dict[str, Any]) -> None:
        os.write(self._to_child, json.dumps(message).encode() + b"\0")

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, wait: bool = True) -> dict[str, Any]:
        """Send one command; return its ``result`` (events seen meanwhile are kept)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session:
            message["sessionId"] = session
        self._write(message)
        if not wait:
            return {}
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str | None = None) -> dict[str, Any]:
        """Wait for an event of ``session`` (one already received counts)."""
        def matches(event: dict[str, Any]) -> bool:
            return event.get("method") == method and event.get("sessionId") == session

        for event in self.events:
            if matches(event):
                return event
        deadline = time.monotonic() + self.timeout
        while True:
            event = self._read_message(deadline)
            self.events.append(event)
            if matches(event):
                return event

    def drain(self, seconds: float) -> None:
        """Collect the events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.events.append(self._read_message(deadline))
            except TimeoutError:
                return


def _collect(events: list[dict[str, Any]], session: str) -> dict[str, list[str]]:
    """Console errors, exceptions, dialogs and requested URLs of one page."""
    found: dict[str, list[str]] = {"errors": [], "dialogs": [], "requests": []}
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found["errors"].append(" ".join(str(a.get("value", a.get("description")))
                                            for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            found["errors"].append(str(params.get("exceptionDetails", {}).get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found["errors"].append(str(params["entry"].get("text")))
        elif method == "Page.javascriptDialogOpening":
            found["dialogs"].append(str(params.get("message")))
        elif method == "Network.requestWillBeSent":
            found["requests"].append(str(params.get("request", {}).get("url", ""))[:80])
    return found


PROBE = """JSON.stringify({
  images: Array.from(document.images).map(i => ({alt: i.alt.slice(0, 60),
      complete: i.complete, width: i.naturalWidth, height: i.naturalHeight})),
  scripts: document.querySelectorAll('script').length,
  text: document.body ? document.body.innerText : '',
  title: document.title,
  height: Math.ceil(document.documentElement.scrollHeight)
})"""


def inspect_page(browser: Chromium, page: Path, width: int = 1100) -> PageReport:
    """Load ``page`` in a new tab of ``browser`` and report what it did."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget",
                           {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.send(f"{domain}.enable", session=session)
    metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    browser.send("Emulation.setDeviceMetricsOverride", metrics, session=session)
    browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    browser.wait_for("Page.loadEventFired", session)
    browser.drain(0.3)  # late console messages
    probe = json.loads(browser.send("Runtime.evaluate", {
        "expression": PROBE, "returnByValue": True}, session=session)["result"]["value"])
    browser.send("Emulation.setDeviceMetricsOverride",
                 {**metrics, "height": min(int(probe["height"]), 16000)}, session=session)
    shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
    browser.send("Target.closeTarget", {"targetId": target})
    found = _collect(browser.events, session)
    return PageReport(console_errors=found["errors"], dialogs=found["dialogs"],
                      requests=found["requests"], images=probe["images"],
                      script_elements=int(probe["scripts"]), text=probe["text"],
                      title=probe["title"], screenshot=base64.b64decode(shot["data"]))


def print_page(browser: Chromium, page: Path) -> bytes:
    """``page`` printed to PDF by Chromium (``Page.printToPDF``, A4, print stylesheet)."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget",
                           {"targetId": target, "flatten": True})["sessionId"]
    browser.send("Page.enable", session=session)
    browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    browser.wait_for("Page.loadEventFired", session)
    printed = browser.send("Page.printToPDF", {"paperWidth": 8.27, "paperHeight": 11.69,
                                               "preferCSSPageSize": True}, session=session)
    browser.send("Target.closeTarget", {"targetId": target})
    return base64.b64decode(printed["data"])
