"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe` (standard library only).

Chromium reads NUL-terminated JSON commands on its file descriptor 3 and writes responses and
events on its file descriptor 4; no port is opened and nothing is downloaded. The browser is the
system's (Debian's `chromium`), started headless with a throw-away profile.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any


class CdpError(RuntimeError):
    """A protocol error, a timeout, or a browser that went away."""


def find_chromium(explicit: str | None = None) -> str:
    """The browser to run: --chromium, $CHROMIUM, or the first of the usual names on PATH."""
    for candidate in (explicit, os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (shutil.which(candidate) or os.path.isfile(candidate)):
            return shutil.which(candidate) or candidate
    raise CdpError("no Chromium found (install Debian's `chromium`, or name one with --chromium or $CHROMIUM)")


class Browser:
    """One headless Chromium and one page (a flattened session on a new target)."""

    def __init__(self, chromium: str, width: int = 1500, height: int = 1000) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="kvlower-page-")
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends become fds 3 and 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            chromium, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
            f"--user-data-dir={self.profile.name}", f"--window-size={width},{height}", "about:blank",
        ]
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            close_fds=False, preexec_fn=wire,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._out = os.fdopen(to_child_w, "wb", buffering=0)
        self._in = os.fdopen(from_child_r, "rb", buffering=0)
        self._next_id = 0
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = self._in.read(1 << 16)
            if not chunk:
                self._messages.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                self._messages.put(json.loads(raw))

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False,
             timeout: float = 60.0) -> dict[str, Any]:
        """Sends one command (to the page's session when `session`) and waits for its answer;
        every event read meanwhile is kept in `events`."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self._out.write(json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            got = self._get(deadline, method)
            if got.get("id") == self._next_id:
                if "error" in got:
                    raise CdpError(f"{method}: {got['error']}")
                return got.get("result", {})
            if "method" in got:
                self.events.append(got)

    def _get(self, deadline: float, what: str) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise CdpError(f"timed out waiting for {what}")
        try:
            got = self._messages.get(timeout=left)
        except queue.Empty as e:
            raise CdpError(f"timed out waiting for {what}") from e
        if got is None:
            tail = b"".join(self._stderr[-20:]).decode(errors="replace")
            raise CdpError(f"the browser went away while waiting for {what}\n{tail}")
        return got

    def wait_event(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        """The first event `method` not yet consumed (already received, or the next to come)."""
        for i, e in enumerate(self.events):
            if e.get("method") == method and not e.get("_seen"):
                e["_seen"] = True
                return self.events[i]
        deadline = time.monotonic() + timeout
        while True:
            got = self._get(deadline, method)
            if "method" in got:
                self.events.append(got)
                if got["method"] == method:
                    got["_seen"] = True
                    return got

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception is a CdpError)."""
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True}, session=True)
        if "exceptionDetails" in res:
            raise CdpError(f"evaluating {expression[:80]!r}: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def pump(self, seconds: float) -> None:
        """Collects events for a while (lets the page settle)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                got = self._messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return
            if got is None:
                return
            if "method" in got:
                self.events.append(got)
            if time.monotonic() >= deadline:
                return

    def close(self) -> None:
        with contextlib.suppress(CdpError):
            self.call("Browser.close", timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self.profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
