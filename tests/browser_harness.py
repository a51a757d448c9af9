"""Drive the course in a real browser: JupyterLab + Debian's Chromium via Playwright.

Shared by tests/test_browser.py (does every notebook run, does every widget react?)
and benchmarks/latency.py (how fast do they react?), so the launch code exists once.

The pieces, in the order a test uses them:

    with running_lab(REPO_ROOT) as lab, running_chromium() as browser:
        with lab_page(browser, lab) as page:
            open_notebook(page, lab, "notebooks/06_output.ipynb")
            run_all(page, "notebooks/06_output.ipynb")
            problems = notebook_problems(page, "notebooks/06_output.ipynb")
            perform(page, Interaction("logit-playground", press_slider()), shots_prefix)

(perform, Interaction and the actions are in tests/browser_widgets.py.)

Everything talks to JupyterLab through `window.jupyterapp` (exposed with
--LabApp.expose_app_in_browser), not through menus and clicks: commands and the
notebook model do not change when JupyterLab restyles its menus.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

REPO_ROOT = Path(__file__).resolve().parent.parent
# Debian's headless build of Chromium (package chromium-headless-shell): the same Blink as
# the desktop browser without its window code, which costs the tests a tenth less CPU.
# Playwright's own browser download is blocked here.
CHROMIUM = Path("/usr/bin/chromium-headless-shell")

# As in the machine's probe: without the background-networking flags Chromium keeps
# trying to reach Google's hosts, which this machine's closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# JupyterLab settings that make a scripted run deterministic. They are written as
# *default* overrides into the server's own temporary config dir, so a developer's
# real JupyterLab settings are neither read nor changed.
LAB_SETTING_OVERRIDES = {
    "@jupyterlab/notebook-extension:tracker": {
        # Otherwise a "Select Kernel" dialog can race the kernel list.
        "autoStartDefaultKernel": True,
        # JupyterLab's default, "contentVisibility", leaves a cell out of view unrendered (its
        # text reads empty until it is scrolled to); "full" takes it out of the DOM. "none"
        # renders every cell, so each check reads the whole notebook as a reader scrolling does.
        "windowingMode": "none",
    },
    # Notebooks that live in the repository are never written back (running_lab turns
    # autosave on, with a short interval, only for a folder of copies).
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
    # No news or update checks (the network is closed, and their toasts can cover widgets).
    "@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

AUTOSAVE_INTERVAL = 1  # s, for a lab of copies (JupyterLab's default is 120): a test can wait one out
SERVER_START_TIMEOUT = 60  # s; JupyterLab on 2 cores starts in about 3 s
KERNEL_START_TIMEOUT = 60  # s
WIDGET_RENDER_TIMEOUT = 30  # s; after the last cell has run
QUIET_MS = 1000  # a notebook whose cells have run exchanges no kernel message for this long
INTERACTION_TIMEOUT = 10  # s; from an action on a widget to the change it must cause
ACTION_TIMEOUT = 5  # s; for Playwright to find the control an action uses
PAGE_TIMEOUT = 30  # s; Playwright's default for anything else on the page
# Screenshots of what failed go to tests/screenshots/; with COURSE_SCREENSHOTS=1, of every
# step, to look at (each costs the page as much as the step it shows).
EVERY_SCREENSHOT = os.environ.get("COURSE_SCREENSHOTS") == "1"


# --------------------------------------------------------------------------- availability


def browser_unavailable_reason() -> str | None:
    """Why the browser test cannot run here, or None if it can."""
    if not CHROMIUM.exists():
        return (f"{CHROMIUM} is missing: install Debian's headless Chromium "
                "(apt-get install -y chromium-headless-shell) to run the browser test")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements.txt)"
    return None


def require_browser() -> None:
    """Skip the calling test where the browser cannot run; in CI (CI=true) fail instead:
    there a missing browser is a broken set-up, not a reason to pass quietly."""
    import pytest
    reason = browser_unavailable_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)


# --------------------------------------------------------------------------- JupyterLab server


def free_port() -> int:
    """A loopback port that is free right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    """A running JupyterLab: where it listens and how to authenticate."""

    url: str  # e.g. http://127.0.0.1:41234
    token: str
    root_dir: Path
    process: subprocess.Popen
    log_path: Path

    def api(self, method: str, path: str) -> object:
        """Call the Jupyter server's REST API (path like '/api/sessions'); returns parsed JSON."""
        request = urllib.request.Request(
            self.url + path, method=method, headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shut_down_sessions(self, path: str | None = None) -> None:
        """End every notebook session and its kernel (or only those of the notebook at
        `path`), so the next notebook starts clean."""
        for session in self.api("GET", "/api/sessions"):
            if path is None or session.get("path") == path:
                self.api("DELETE", f"/api/sessions/{session['id']}")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _write_setting_overrides(config_dir: Path, autosave_interval: float | None) -> None:
    # jupyterlab_server reads <config dir>/labconfig/default_setting_overrides.json.
    overrides = json.loads(json.dumps(LAB_SETTING_OVERRIDES))
    if autosave_interval is not None:
        overrides["@jupyterlab/docmanager-extension:plugin"] = {
            "autosave": True, "autosaveInterval": autosave_interval}
    labconfig = config_dir / "labconfig"
    labconfig.mkdir(parents=True)
    (labconfig / "default_setting_overrides.json").write_text(json.dumps(overrides, indent=2))


def _wait_until_serving(lab: LabServer) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if lab.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited at start:\n{lab.log_tail()}")
        with contextlib.suppress(OSError):
            lab.api("GET", "/api/status")
            return
        time.sleep(0.2)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_TIMEOUT} s:\n{lab.log_tail()}")


def _stop(lab: LabServer) -> None:
    """Shut kernels down through the API (they run in their own process groups),
    then end the server's process group, politely first."""
    with contextlib.suppress(Exception):
        lab.shut_down_sessions()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(lab.process.pid, signal.SIGTERM)
    try:
        lab.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(lab.process.pid, signal.SIGKILL)
        lab.process.wait(timeout=10)


@contextlib.contextmanager
def running_lab(root_dir: Path = REPO_ROOT,
                autosave_interval: float | None = None) -> Iterator[LabServer]:
    """Start JupyterLab serving root_dir on a free loopback port; stop it on exit.
    Autosave is off, unless autosave_interval (seconds) is given: only for a root_dir
    whose notebooks are copies.

    Config, runtime, data, settings and workspace dirs are all temporary, so the run
    neither depends on nor changes the developer's own Jupyter set-up.
    """
    with tempfile.TemporaryDirectory(prefix="lab-") as tmp:
        tmp_path = Path(tmp)
        env = dict(os.environ)
        for name in ("config", "runtime", "data"):
            (tmp_path / name).mkdir()
            env[f"JUPYTER_{name.upper()}_DIR"] = str(tmp_path / name)
        _write_setting_overrides(tmp_path / "config", autosave_interval)

        port, token = free_port(), secrets.token_hex(16)
        command = [
            sys.executable, "-m", "jupyterlab",
            f"--ServerApp.root_dir={root_dir}",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.open_browser=False",
            f"--IdentityProvider.token={token}",
            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            # JupyterLab makes a checkpoint of every file it opens: keep them out of the repo.
            f"--FileCheckpoints.checkpoint_dir={tmp_path / 'checkpoints'}",
        ]
        if os.geteuid() == 0:
            command.append("--allow-root")
        log_path = tmp_path / "server.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, cwd=root_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)  # its own process group, so _stop can end it all
        lab = LabServer(f"http://127.0.0.1:{port}", token, Path(root_dir), process, log_path)
        try:
            _wait_until_serving(lab)
            yield lab
        finally:
            _stop(lab)


# --------------------------------------------------------------------------- Chromium


@contextlib.contextmanager
def running_chromium():
    """Debian's Chromium, headless, started by a Playwright browser server; yields this
    thread's connection to it (Playwright's sync API).

    Another thread joins the same Chromium with `playwright.chromium.connect(endpoint(browser))`:
    the sync API serves only the thread that started it. Each connection is told about its
    own pages only. (Joined over Chromium's DevTools port instead, each thread's Playwright
    took every page of the browser as its own and followed its traffic: two threads did the
    work of four, a kernel's every message decoded by both.)

    The server launches Chromium with a fresh temporary profile (user-data dir), so no
    state carries over between runs.
    """
    from playwright.sync_api import sync_playwright

    options = {"executablePath": str(CHROMIUM), "headless": True, "args": CHROMIUM_ARGS,
               # Playwright hides scrollbars in headless mode; a teacher's desktop browser
               # shows them, and they take their width from the notebook's column.
               "ignoreDefaultArgs": ["--hide-scrollbars"], "host": "127.0.0.1"}
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "chromium.json"
        config.write_text(json.dumps(options), encoding="utf-8")
        server = subprocess.Popen([sys.executable, "-m", "playwright", "launch-server",
                                   "--browser", "chromium", "--config", str(config)],
                                  stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            url = server.stdout.readline().strip()       # the server's first line: ws://...
            if not url.startswith("ws://"):
                raise RuntimeError(f"Playwright's browser server did not start (it said {url!r})")
            with sync_playwright() as playwright:
                browser = playwright.chromium.connect(url)
                _ENDPOINTS[id(browser)] = url
                try:
                    yield browser
                finally:
                    _ENDPOINTS.pop(id(browser), None)
                    browser.close()
        finally:
            with contextlib.suppress(ProcessLookupError):   # the server closes Chromium
                os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.pid, signal.SIGKILL)
                server.wait()


_ENDPOINTS: dict[int, str] = {}


def endpoint(browser) -> str:
    """Where another thread's Playwright joins a Chromium of running_chromium
    (`playwright.chromium.connect(url)`), with a connection of its own."""
    return _ENDPOINTS[id(browser)]


# JavaScript helpers, installed in every page before JupyterLab loads. They read the
# notebook *model* (execution counts, outputs, tags) rather than guess from the DOM.
_PAGE_HELPERS_JS = (Path(__file__).with_name("browser_page.js")).read_text(encoding="utf-8")


def new_page(browser, width: int, height: int, **context_options):
    """A page in a fresh browser context (no cookies, no storage) with the helpers."""
    context = browser.new_context(viewport={"width": width, "height": height}, **context_options)
    context.add_init_script(_PAGE_HELPERS_JS)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT * 1000)
    return page


@contextlib.contextmanager
def lab_page(browser, lab: LabServer, width: int = 1400, height: int = 1000,
             shut_down: bool = True):
    """A page in a fresh browser context (no cookies, no storage), with the helpers, in a
    window of width x height (a projector's 1366 x 768, say).

    On exit the page goes, and (unless shut_down=False: another page still uses the lab)
    so do all notebook sessions and kernels, so the next notebook starts clean.
    """
    page = new_page(browser, width, height)
    try:
        yield page
    finally:
        page.context.close()
        if shut_down:
            lab.shut_down_sessions()


# --------------------------------------------------------------------------- notebooks


def _poll(check: Callable[[], object], timeout: float, what: str, interval: float = 0.25):
    """Call check() until it returns something truthy; return that, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        time.sleep(interval)


def wait_in_page(page, predicate: str, arg, timeout: float, what: str, every_ms: int = 50):
    """Wait until the JavaScript `predicate` (a function of `arg`) returns something
    truthy, asked in the page every `every_ms`; return that, or raise TimeoutError. Cheaper
    than _poll for a frequent question: each page.evaluate from Python costs the page
    about 5 ms of CPU, however small the question, and a run asks thousands."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        return page.wait_for_function(predicate, arg=arg, polling=every_ms,  # (0 ms: no limit)
                                      timeout=max(timeout * 1000, 1)).json_value()
    except PlaywrightTimeout:
        raise TimeoutError(f"waited {timeout:g} s for {what}") from None


def _state(page, path: str) -> dict:
    return page.evaluate("(path) => window.__harness.state(path)", path)


def _accept_kernel_dialog(page) -> None:
    """If JupyterLab asks which kernel to start anyway, take its proposal (the notebook's)."""
    accept = page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept")
    if accept.count():
        accept.first.click()


def open_notebook(page, lab: LabServer, path: str) -> None:
    """Open `path` (relative to the server root) in a reset workspace; wait for an idle kernel."""
    lab_home(page, lab)
    open_here(page, path)


def run_all(page, path: str, timeout: float = 120) -> None:
    """Run All, then wait until every code cell has run (or an error stopped the run)
    and the kernel is idle.

    The stored outputs and execution counts are cleared first (in the browser only;
    nothing is saved): otherwise a notebook saved with its outputs would look finished
    before it started, and stale outputs would be checked instead of fresh ones.
    """
    page.evaluate(
        """async (path) => {
             const app = window.jupyterapp;
             app.shell.activateById(window.__harness.panel(path).id);
             await app.commands.execute('notebook:clear-all-cell-outputs');
             // Fail now, rather than wait for a run that never starts.
             if (!app.commands.isEnabled('notebook:run-all-cells')) {
               throw new Error('Run All is not enabled for ' + path);
             }
             window.__harness.watchTraffic(path);
             app.commands.execute('notebook:run-all-cells');
           }""",
        path)

    finished = """(path) => { const s = window.__harness.state(path);
                              return s.kernel === 'idle' && (s.unrun === 0 || s.stoppedByError); }"""
    # The kernel is idle for a moment between two queued cells: ask for two calm readings.
    deadline = time.monotonic() + timeout
    while True:
        wait_in_page(page, finished, path, max(0.0, deadline - time.monotonic()),
                     f"Run All of {path}", every_ms=250)
        time.sleep(0.3)
        if page.evaluate(finished, path):
            return


def _widgets_rendered(page) -> None:
    """Wait (up to WIDGET_RENDER_TIMEOUT) for no widget to show "Loading widget..."; one that
    still does is reported by the caller's check, cell by cell."""
    with contextlib.suppress(TimeoutError):
        wait_in_page(page, "() => !window.__harness.widgetsStillLoading()", None,
                     WIDGET_RENDER_TIMEOUT, "widgets to render", every_ms=250)


def notebook_problems(page, path: str) -> list[str]:
    """Cells that did not run, error outputs, and widgets that failed or never rendered."""
    _widgets_rendered(page)
    problems = page.evaluate("(path) => window.__harness.problems(path)", path)
    try:
        wait_in_page(page, "([path, ms]) => window.__harness.quietFor(path) >= ms", [path, QUIET_MS],
                     WIDGET_RENDER_TIMEOUT, "the kernel to rest", every_ms=100)
    except TimeoutError:
        problems.append(f"the kernel never rested for {QUIET_MS / 1000:g} s in the "
                        f"{WIDGET_RENDER_TIMEOUT} s after Run All: a figure drawn again and again?")
    state = _state(page, path)
    if state["unrun"]:
        problems.append(f"{state['unrun']} of {state['codeCells']} code cells did not run")
    return problems


def watch_kernel_errors(page, path: str) -> None:
    page.evaluate("(path) => window.__harness.watchKernel(path)", path)


def kernel_errors(page) -> list[str]:
    return page.evaluate("() => window.__harness.kernelErrors.splice(0)")


# --------------------------------------------------------------------------- first open
#
# What a notebook shows before anything runs: stored outputs only, the notebook not yet
# trusted (a fresh clone), or saved by JupyterLab and opened again in a new kernel.

_FIRST_OPEN_JS = r"""
(path) => {
  const panel = window.__harness.panel(path);
  const raw = /\b(VBox|HBox|Canvas|ToggleButtons?|FloatSlider|IntSlider|Dropdown|RadioButtons)\(|children=\(/;
  const VIEW = 'application/vnd.jupyter.widget-view+json';
  const found = [], nodes = [];
  const shown = {picture: 0, html: 0, live: 0};
  panel.content.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') return;
    const where = `cell ${i + 1} (${cell.model.sharedModel.getSource().split('\n')[0].slice(0, 50)})`;
    const outputs = cell.model.outputs.toJSON();
    const nodes = [...cell.node.querySelectorAll('.jp-OutputArea-child')];
    if (nodes.length !== outputs.length) {
      found.push(`${where}: ${outputs.length} outputs but ${nodes.length} shown`);
      return;
    }
    outputs.forEach((out, k) => {
      const node = nodes[k];
      const text = node.innerText;
      if (raw.test(text)) found.push(`${where}: raw widget text: ${text.slice(0, 120)}`);
      if (text.includes('Error displaying widget')) found.push(`${where}: ${text.slice(0, 200)}`);
      if (text.includes('Loading widget...')) found.push(`${where}: a widget never finished loading`);
      if (!window.__harness.isWidgetOutput(out)) return;
      const live = node.querySelector('.course-widget.jupyter-widgets');  // not a stored HTML form
      const img = node.querySelector('img');   // a PNG output, or HTML holding the picture
      const html = node.querySelector('.jp-RenderedHTMLCommon');
      nodes.push({cell: i + 1, text: text.trim(), picture: !!img,
                  colour: img && img.complete && img.naturalWidth ? window.__harness.colourShare(img) : null});
      if (live) shown.live += 1;
      else if (img && img.complete && img.naturalWidth > 0) shown.picture += 1;
      else if (html && html.innerText.trim()) shown.html += 1;
      else found.push(`${where}: a widget output shows neither the widget, nor its picture, ` +
                      `nor its HTML form: ${text.slice(0, 120)}`);
    });
  });
  return {problems: found, shown, nodes};
}
"""


def first_open_report(page, path: str) -> dict:
    """What the open notebook shows: `problems` (raw widget text such as `VBox(children=…`,
    "Error displaying widget", a widget still loading, a widget output that shows
    nothing) and `shown`: how many widget outputs show the live widget, its stored
    picture (a loaded <img>) or its HTML form; and `nodes`: each widget output's cell number,
    visible text, whether it holds a picture, and that picture's share of coloured pixels
    (None before it has loaded)."""
    _widgets_rendered(page)
    return page.evaluate(_FIRST_OPEN_JS, path)


def canvas_is_drawn(canvas) -> bool:
    """Whether a <canvas> holds anything but one flat colour (an ipympl figure drawn)."""
    return canvas.evaluate(
        """(c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                    for (let i = 4; i < d.length; i += 4) {
                      if (d[i] !== d[0] || d[i+1] !== d[1] || d[i+2] !== d[2] || d[i+3] !== d[3]) return true;
                    }
                    return false; }""")


def save_notebook(page, path: str) -> None:
    """Save the open notebook as JupyterLab's save (or autosave) would."""
    page.evaluate(
        """async (path) => { const panel = window.__harness.panel(path);
                             window.jupyterapp.shell.activateById(panel.id);
                             await panel.context.save(); }""", path)


def lab_home(page, lab: LabServer, workspace: str | None = None) -> None:
    """Load JupyterLab in the page with an empty workspace (?reset: whatever a previous
    page left open is gone); open_here then opens notebook after notebook in it. Pages
    open at the same time each take a `workspace` of their own, so that neither saves
    its tabs over the other's."""
    where = f"/lab/workspaces/{workspace}" if workspace else "/lab"
    page.goto(f"{lab.url}{where}?reset&token={lab.token}")
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("() => window.jupyterapp.restored")


def open_here(page, path: str, wait: bool = True) -> None:
    """Open `path` in the JupyterLab already loaded in the page (or bring its tab to the
    front); unless wait=False, wait for an idle kernel. (The command's result, the
    notebook widget, must not travel back to Python: it cannot be serialized. Hence the
    braces.)"""
    page.evaluate(
        "async (path) => { await window.jupyterapp.commands.execute("
        "'docmanager:open', {path, factory: 'Notebook'}); }",
        path)
    if not wait:
        return

    def kernel_idle():
        _accept_kernel_dialog(page)
        return _state(page, path).get("kernel") == "idle"

    _poll(kernel_idle, KERNEL_START_TIMEOUT, f"the kernel of {path} to start")
