#!/usr/bin/env python3
"""Drives headless Chromium through a `kprof plot` page as a user would, and
prints what it saw as JSON for the test to check.

It speaks the Chrome DevTools protocol over Chromium's --remote-debugging-pipe
(file descriptors 3 and 4, messages ended by NUL), so it needs nothing but the
standard library and Debian's chromium, and no port or network.

    plot_page.py PAGE OUT_DIR [--click TEXT] [--search REGEX]

It loads PAGE (no name resolves), records every console message, uncaught
exception and error logged, measures every figure (an <svg> or the flame
graph's <iframe>, per section) and saves a PNG screenshot of each into OUT_DIR
(`<section id>.png`). In the flame graph it moves the mouse over every frame
and reads the details line each hover writes, clicks the first frame whose
title starts with --click TEXT (then Reset Zoom), and searches --search REGEX
through the Search button and the prompt it opens.
"""

import base64
import json
import os
import select
import subprocess
import sys
import tempfile
import time

WIDTH, HEIGHT = 1100, 900


class Chromium:
    """One headless Chromium, one page, over the DevTools pipe."""

    def __init__(self, profile):
        to_browser = os.pipe()
        from_browser = os.pipe()

        def fds():
            # Chromium reads commands on fd 3 and writes replies on fd 4.
            a, b = os.dup(to_browser[0]), os.dup(from_browser[1])
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                "chromium", "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--host-resolver-rules=MAP * ~NOTFOUND", "--remote-debugging-pipe",
                "--user-data-dir=" + profile, "about:blank",
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=fds,
        )
        os.close(to_browser[0])
        os.close(from_browser[1])
        self.w = to_browser[1]
        self.r = from_browser[0]
        self.buf = b""
        self.next_id = 0
        self.pending = []  # messages read but not yet taken
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("no message from Chromium")
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        if os.environ.get("PLOT_PAGE_TRACE"):
            print("<", msg[:300], file=sys.stderr)
        return json.loads(msg)

    def send(self, method, params=None, session=True):
        """Sends a command; returns its id (see reply)."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        if os.environ.get("PLOT_PAGE_TRACE"):
            print(">", method, file=sys.stderr)
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def take(self, pred, timeout=30):
        """The first message (read or waiting) that pred accepts."""
        deadline = time.time() + timeout
        while True:
            for i, m in enumerate(self.pending):
                if pred(m):
                    return self.pending.pop(i)
            self.pending.append(self._read(deadline))

    def reply(self, cid, timeout=30):
        m = self.take(lambda m: m.get("id") == cid, timeout)
        if "error" in m:
            raise RuntimeError(json.dumps(m["error"]))
        return m.get("result", {})

    def call(self, method, params=None, session=True):
        return self.reply(self.send(method, params, session))

    def events(self, method):
        """Takes every event `method` read so far."""
        got = [m for m in self.pending if m.get("method") == method]
        self.pending = [m for m in self.pending if m.get("method") != method]
        return got

    def drain(self, seconds):
        """Reads whatever comes for `seconds`."""
        deadline = time.time() + seconds
        try:
            while True:
                self.pending.append(self._read(deadline))
        except TimeoutError:
            pass

    def js(self, expr):
        """The value of `expr` evaluated in the page (JSON-able)."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(json.dumps(r["exceptionDetails"]))
        return r["result"].get("value")

    def mouse(self, kind, x, y, wait=True):
        cid = self.send("Input.dispatchMouseEvent", {
            "type": kind, "x": x, "y": y, "button": "left",
            "buttons": 1 if kind == "mousePressed" else 0,
            "clickCount": 1 if kind in ("mousePressed", "mouseReleased") else 0})
        return self.reply(cid) if wait else cid

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)


# The flame graph's document (the iframe's), and its frames with their
# rectangles in the top page's viewport.
FLAME = "document.querySelector('iframe.flame').contentDocument"
FRAMES_JS = """(() => {
  const f = document.querySelector('iframe.flame');
  const d = f.contentDocument, off = f.getBoundingClientRect();
  // The frames' span: their rectangles' (a label may reach past its frame).
  const rects = [...d.querySelectorAll('#frames > g > rect')].map(r => r.getBoundingClientRect())
    .filter(b => b.width > 0);
  const container = Math.max(...rects.map(b => b.right)) - Math.min(...rects.map(b => b.left));
  return {container, frames: [...d.querySelectorAll('#frames > g')].map(g => {
    const r = g.querySelector('rect'), b = r.getBoundingClientRect();
    return {title: g.querySelector('title').textContent,
            fg_x: +r.getAttribute('fg:x'), fg_w: +r.getAttribute('fg:w'),
            fill: r.getAttribute('fill'), hidden: g.classList.contains('hide'),
            label: g.querySelector('text').textContent,
            x: off.left + b.left, y: off.top + b.top, w: b.width, h: b.height};
  })};
})()"""


def scroll_to_flame(b):
    b.js("window.scrollTo(0, document.querySelector('iframe.flame').getBoundingClientRect().top"
         " + window.scrollY - 40)")


def shot(b, path, x, y, width, height):
    """A PNG of the page's area (page coordinates) at `path`."""
    r = b.call("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": x, "y": y, "width": width, "height": height, "scale": 1}})
    with open(path, "wb") as fh:
        fh.write(base64.b64decode(r["data"]))


def flame_shot(b, path):
    r = b.js("(() => { const r = document.querySelector('iframe.flame')"
             ".getBoundingClientRect(); return {x: r.left + window.scrollX,"
             " y: r.top + window.scrollY, w: r.width, h: r.height}; })()")
    shot(b, path, r["x"], r["y"], r["w"], r["h"])


def main():
    args = sys.argv[1:]
    page, out = os.path.abspath(args[0]), args[1]
    click = args[args.index("--click") + 1] if "--click" in args else None
    term = args[args.index("--search") + 1] if "--search" in args else None
    os.makedirs(out, exist_ok=True)
    report = {"console": [], "figures": []}
    with tempfile.TemporaryDirectory() as profile:
        b = Chromium(profile)
        try:
            target = b.call("Target.createTarget", {"url": "about:blank"}, session=False)
            b.session = b.call("Target.attachToTarget",
                               {"targetId": target["targetId"], "flatten": True},
                               session=False)["sessionId"]
            for m in ("Runtime.enable", "Log.enable", "Page.enable"):
                b.call(m)
            b.call("Emulation.setDeviceMetricsOverride",
                   {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
            b.call("Page.navigate", {"url": "file://" + page})
            b.take(lambda m: m.get("method") == "Page.loadEventFired")
            # The flame graph lays its labels out after a zero timeout.
            b.drain(1.0)

            # Every figure: its size, and a screenshot of it.
            figs = b.js("""[...document.querySelectorAll('section')].map(s => {
              const f = s.querySelector('.fig > svg, .fig > iframe');
              const r = f ? f.getBoundingClientRect() : null;
              return {id: s.id, tag: f ? f.tagName.toLowerCase() : null,
                      x: r && r.left + window.scrollX, y: r && r.top + window.scrollY,
                      width: r ? r.width : 0, height: r ? r.height : 0};
            })""")
            for f in figs:
                if f["width"] > 0 and f["height"] > 0:
                    f["png"] = os.path.join(out, f["id"] + ".png")
                    shot(b, f["png"], f["x"], f["y"], f["width"], f["height"])
                report["figures"].append(f)

            if b.js("!!document.querySelector('iframe.flame')"):
                scroll_to_flame(b)
                layout = b.js(FRAMES_JS)
                report["flame"] = layout
                # Hover each frame (its middle, where the frame is on screen).
                hovers = []
                for fr in layout["frames"]:
                    if fr["w"] < 2 or fr["y"] < 0 or fr["y"] + fr["h"] > HEIGHT:
                        continue
                    b.mouse("mouseMoved", fr["x"] + fr["w"] / 2, fr["y"] + fr["h"] / 2)
                    details = b.js(FLAME + ".getElementById('details').textContent")
                    hovers.append({"title": fr["title"], "details": details})
                report["hovers"] = hovers
                b.mouse("mouseMoved", 1, 1)
                if click:
                    fr = next(f for f in layout["frames"] if f["title"].startswith(click))
                    b.click(fr["x"] + fr["w"] / 2, fr["y"] + fr["h"] / 2)
                    b.drain(0.3)
                    zoomed = b.js(FRAMES_JS)
                    flame_shot(b, os.path.join(out, "icicle-zoomed.png"))
                    report["zoom"] = {"clicked": fr["title"], "layout": zoomed}
                    # Reset Zoom, as a user would.
                    r = b.js(FLAME + ".getElementById('unzoom').getBoundingClientRect().toJSON()")
                    top = b.js("document.querySelector('iframe.flame').getBoundingClientRect().toJSON()")
                    b.click(top["left"] + r["left"] + r["width"] / 2,
                            top["top"] + r["top"] + r["height"] / 2)
                    b.drain(0.3)
                    report["unzoomed"] = b.js(FRAMES_JS)
                if term is not None:
                    # Search opens a prompt: answered when it shows.
                    r = b.js(FLAME + ".getElementById('search').getBoundingClientRect().toJSON()")
                    top = b.js("document.querySelector('iframe.flame').getBoundingClientRect().toJSON()")
                    x = top["left"] + r["left"] + r["width"] / 2
                    y = top["top"] + r["top"] + r["height"] / 2
                    b.mouse("mouseMoved", x, y)
                    b.mouse("mousePressed", x, y)
                    pending = b.mouse("mouseReleased", x, y, wait=False)
                    b.take(lambda m: m.get("method") == "Page.javascriptDialogOpening")
                    b.call("Page.handleJavaScriptDialog", {"accept": True, "promptText": term})
                    b.reply(pending)
                    b.drain(0.3)
                    flame_shot(b, os.path.join(out, "icicle-search.png"))
                    report["search"] = {
                        "term": term,
                        "matched": b.js(FLAME + ".getElementById('matched').textContent"),
                        "searchcolor": b.js("document.querySelector('iframe.flame')"
                                            ".contentWindow.searchcolor"),
                        "layout": b.js(FRAMES_JS),
                    }

            b.drain(0.5)
            for m in b.events("Runtime.consoleAPICalled"):
                p = m["params"]
                report["console"].append(
                    p["type"] + ": " + " ".join(str(a.get("value", a.get("description")))
                                                for a in p.get("args", [])))
            for m in b.events("Runtime.exceptionThrown"):
                d = m["params"]["exceptionDetails"]
                report["console"].append("exception: " + d.get("exception", {}).get(
                    "description", d.get("text", "")))
            for m in b.events("Log.entryAdded"):
                e = m["params"]["entry"]
                if e["level"] in ("error", "warning"):
                    report["console"].append(e["level"] + ": " + e["text"])
        finally:
            b.close()
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
