"""Drive the browser edition (tools/build_lite.py) in Debian's Chromium: a static server
on 127.0.0.1 for the built site, a Chromium that reaches nothing else, and a kernel that
is really ready before Run All. Shared by tests/test_lite.py and benchmarks/lite.py.

Every request for another host is refused twice over: the browser resolves no host name
but 127.0.0.1 (--host-resolver-rules), and each page's requests outside 127.0.0.1 are
aborted and recorded in `Offline.refused` (Playwright's routing, which also sees the
kernel's web worker).

The notebook steps are the desktop browser test's (tests/browser_harness.py: run_all,
notebook_problems; tests/browser_widgets.py: perform), on window.jupyterapp, which the
site exposes as JupyterLab does with --LabApp.expose_app_in_browser.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

from browser_harness import (CHROMIUM, CHROMIUM_ARGS, LAB_SETTING_OVERRIDES, PAGE_TIMEOUT, free_port,
                             new_page, wait_in_page)

LOOPBACK = "127.0.0.1"
KERNEL_READY_TIMEOUT = 90  # s; about 10 s on 2 idle cores
# The desktop test's JupyterLab settings, less autosave (the site saves to the browser's
# own storage, which each fresh context starts without).
TEST_SETTINGS = {plugin: settings for plugin, settings in LAB_SETTING_OVERRIDES.items()
                 if plugin != "@jupyterlab/docmanager-extension:plugin"}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".mjs": "text/javascript",
                      ".js": "text/javascript", ".json": "application/json"}

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[str]:
    """Serve `folder` on a free loopback port, as `python3 -m http.server` would; yields
    its URL."""
    port = free_port()
    server = http.server.ThreadingHTTPServer(
        (LOOPBACK, port), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{port}"
    finally:
        server.shutdown()
        server.server_close()


class Offline:
    """A headless Chromium whose pages reach only 127.0.0.1; `refused` lists every other
    URL a page asked for.

    With `cdn=(prefix, folder)`, a request for a URL under `prefix` (the CDN a site built
    without --offline names) is answered from the file of that name in `folder` instead,
    as the CDN would answer it, and listed in `from_cdn`; a name the folder lacks gets a
    404. That runs the CDN mode here, where the CDN cannot be reached."""

    def __init__(self, playwright, cdn: tuple[str, Path] | None = None):
        self.refused: list[str] = []
        self.from_cdn: list[str] = []
        self.cdn = cdn
        self.browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True,
            args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {LOOPBACK}"])

    def _route(self, route) -> None:
        url = route.request.url
        if self.cdn and url.startswith(self.cdn[0]):
            self.from_cdn.append(url)
            path = self.cdn[1] / urlparse(url).path.rsplit("/", 1)[-1]
            cors = {"Access-Control-Allow-Origin": "*"}
            if path.is_file():
                route.fulfill(path=str(path), headers=cors)
            else:
                route.fulfill(status=404, body="not on the CDN", headers=cors)
        elif urlparse(url).hostname == LOOPBACK:
            route.continue_()
        else:
            self.refused.append(route.request.url)
            route.abort("blockedbyclient")

    def page(self, width: int = 1366, height: int = 768):
        page = new_page(self.browser, width, height, service_workers="allow")
        page.context.route("**/*", self._route)
        return page

    def close(self) -> None:
        self.browser.close()


def open_lite(page, site: str, path: str, as_a_learner: bool = False) -> float:
    """Open the site's JupyterLab on `path`, then wait for a live kernel: one that has run
    a cell (Pyodide loaded, every preload imported), not only said it is idle. With
    `as_a_learner`, wait instead only until the toolbar first shows the kernel idle, the
    moment a learner would press Run All. Returns the seconds from opening the URL."""
    start = time.monotonic()
    page.goto(f"{site}/lab/index.html?path={path}")
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=PAGE_TIMEOUT * 1000)
    page.evaluate("() => window.jupyterapp.restored")
    wait_in_page(page, "(path) => !!window.__harness.panel(path)", path, PAGE_TIMEOUT,
                 f"{path} to open")
    if as_a_learner:
        wait_in_page(page, """(path) => { const c = window.__harness.panel(path).sessionContext;
                                          return !!(c.session && c.session.kernel)
                                                 && c.kernelDisplayStatus === 'idle'; }""",
                     path, KERNEL_READY_TIMEOUT, f"{path}'s kernel to show idle", every_ms=50)
    else:
        kernel_ready(page, path)
    return time.monotonic() - start


def kernel_ready(page, path: str, timeout: float = KERNEL_READY_TIMEOUT) -> None:
    """Wait until the notebook's kernel answers an execute request, which finds ipympl and
    toy_model already installed (preloaded: what the first cell needs). The kernel reports
    'idle' while Pyodide is still starting, and a Run All sent then can run nothing."""
    page.evaluate(
        """async ([path, ms]) => {
             const live = (async () => {
               const panel = window.__harness.panel(path);
               await panel.sessionContext.ready;
               while (!panel.sessionContext.session || !panel.sessionContext.session.kernel) {
                 await new Promise(r => setTimeout(r, 100));
               }
               const kernel = panel.sessionContext.session.kernel;
               // No import statement here: the kernel would load a package it names first.
               const code = 'import importlib.util as u\\n' +
                            'assert u.find_spec("ipympl") and u.find_spec("toy_model"), "not preloaded"';
               const reply = await kernel.requestExecute(
                 {code, silent: true, store_history: false}).done;
               if (reply.content.status !== 'ok') {
                 throw new Error('ipympl and toy_model are not importable before any cell runs: ' +
                                 reply.content.ename + ': ' + reply.content.evalue);
               }
             })();
             // A kernel that never starts (Pyodide or a package that cannot load) must fail
             // the visit, not hang it: every wait above is bounded by this one.
             const late = new Promise((_, reject) => setTimeout(() => reject(new Error(
               'no live kernel for ' + path + ' after ' + ms / 1000 + ' s')), ms));
             await Promise.race([live, late]);
           }""", [path, timeout * 1000])


def stderr_outputs(page, path: str) -> list[str]:
    """What the code cells of `path` wrote to stderr (the outputs JupyterLab shows pink),
    one 'cell N: text' each, from the notebook's model."""
    return page.evaluate(
        """(path) => {
             const found = [];
             window.__harness.panel(path).content.widgets.forEach((cell, i) => {
               if (cell.model.type !== 'code') return;
               for (const o of cell.model.outputs.toJSON()) {
                 if (o.output_type === 'stream' && o.name === 'stderr') {
                   const text = Array.isArray(o.text) ? o.text.join('') : o.text;
                   found.push(`cell ${i + 1}: ${text.trim().slice(0, 300)}`);
                 }
               }
             });
             return found;
           }""", path)
