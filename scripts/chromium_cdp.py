"""A tiny client of the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (headless
Chromium reads commands on fd 3 and answers on fd 4, NUL-separated JSON): no websocket library,
no network, no browser download. Used by the browser test and by ``scripts/screenshots.py``."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium and one page. ``open(url)`` loads a page and records what its console
    reported; ``evaluate(js)`` runs an expression in it; ``screenshot(path)`` saves a PNG."""

    def __init__(self, executable: str | None = None, width: int = 1280, height: int = 900, timeout: float = 60):
        executable = executable or find_chromium()
        if executable is None:
            raise FileNotFoundError("no chromium on PATH")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="irlint-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def plumbing():  # in the child: the protocol's pipes on fds 3 and 4, kept across exec
            r, w = os.dup(to_child_r), os.dup(from_child_w)  # out of the way of 3 and 4 first
            os.dup2(r, 3)
            os.dup2(w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-sync",
                "--mute-audio",
                "--disable-dev-shm-usage",
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=plumbing,
            close_fds=False,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    # --- the protocol ---------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_child, data) :]

    def _receive(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise ConnectionError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, event: str) -> dict:
        deadline = time.monotonic() + self.timeout
        for i, seen in enumerate(self.events):
            if seen["method"] == event:
                return self.events.pop(i)
        while True:
            answer = self._receive(deadline)
            if answer.get("method") == event:
                return answer
            if "method" in answer:
                self.events.append(answer)

    # --- what the tests and the screenshot script use -------------------------------------------------
    def open(self, path: str | Path) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": Path(path).resolve().as_uri()})
        self.wait_for("Page.loadEventFired")
        self.evaluate("1")  # events of the load arrive before this answer

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def console_errors(self) -> list[str]:
        """Errors the page reported: uncaught exceptions, console.error/assert, failed loads."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(
                    "console.error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                )
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}".strip())
        return out

    def screenshot(self, path: str | Path, full_page: bool = True, clip_height: int | None = None) -> None:
        params: dict = {"format": "png"}
        if full_page:
            metrics = self.call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            height = size["height"] if clip_height is None else min(size["height"], clip_height)
            params.update(
                captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": size["width"], "height": height, "scale": 1}
            )
        data = self.call("Page.captureScreenshot", params)["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError, TimeoutError, ConnectionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
