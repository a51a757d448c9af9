"""The steps of tests/test_browser.py: what a class and a teacher do with each notebook,
in the run's one JupyterLab and one Chromium (the fixtures `lab` and `browser` of
tests/conftest.py). Each step returns what it found wrong, as sentences; the tests
assert, one kind of finding each, so that one failure does not hide another.

The notebooks are copies in the lab's own notebooks/ folder: the repository's files are
never opened for writing, and autosave (on, every AUTOSAVE_INTERVAL s) writes copies.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from browser_harness import (
    INTERACTION_TIMEOUT,
    PAGE_TIMEOUT,
    _poll,
    _state,
    AUTOSAVE_INTERVAL,
    EVERY_SCREENSHOT,
    REPO_ROOT,
    canvas_is_drawn,
    first_open_report,
    notebook_problems,
    open_here,
    run_all,
    save_notebook,
    wait_in_page,
    watch_kernel_errors,
)
from browser_widgets import (
    visible_text,
    perform,
    safe_name,
    widget_root,
)

COURSE_NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
SELF_TEST_NOTEBOOK = REPO_ROOT / "tests" / "fixtures" / "widget_demo.ipynb"
SCREENSHOTS = REPO_ROOT / "tests" / "screenshots"
VIEW = "application/vnd.jupyter.widget-view+json"
STORED_WIDGET = 'class="course-widget'      # the HTML a widget's output is stored as
PROJECTOR = (1366, 768)       # the README's classroom set-up
ZOOM = 1.25                   # the README's suggested zoom for the back row
MIN_TEXT_PX = 14              # what the plots' text keeps too (tests/test_readable.py)
SETTLE = 10                   # s: for stored pictures to load and widgets to come back
# The visible line with a widget's stored form: how to make it live (run the cells), and
# for a picture, that it is one.
NOTE_LIVE = re.compile(r"\brun\b.*\bcells?\b", re.I | re.S)
NOTE_PICTURE = re.compile(r"\bpicture\b", re.I)
NOTE = (NOTE_PICTURE, NOTE_LIVE)
MIN_COLOUR = 0.002            # share of coloured pixels below which a stored plot is empty



# --------------------------------------------------------------------------- a teacher's view
#
# What a class sees: frames of a live plot one key press at a time, widths at a
# projector's size with scrollbars, in Presentation Mode and at 125 % zoom, the size of
# the widgets' text; and the ways a teacher saves, shuts down and closes a notebook.

PRESS_QUIET_MS = 250  # the kernel idle, and no message for this long: a press is done
STILL_MS = 1000  # a plot left alone: the kernel at rest this long, whatever it drew is in


def frames_of_presses(page, path: str, root, keys: list[str], nth: int = 0) -> list[dict]:
    """Press each key in turn on the nth slider of the widget, waiting after each until its
    plot has drawn and is still; return, per press, the distinct frames the page drew
    ("frames", PNG data URLs) and the widget's text afterwards ("text"); the last press
    also has "later": any frame drawn after it, unpressed, until the kernel rests."""
    if not root.evaluate("(el) => window.__harness.recordFrames(el)"):
        raise AssertionError("the widget has no <canvas> to watch")
    handle = root.locator(".noUi-handle, input[type=range]").nth(nth)
    presses = []
    try:
        element = root.element_handle()
        for key in keys:
            handle.press(key)
            # drawn (a frame came), and still: no new frame for 50 ms, the kernel at rest
            wait_in_page(page, """([el, path, ms]) => { const h = window.__harness;
                                     return h.framesSince(el, 50) && h.state(path).kernel === 'idle'
                                            && h.quietFor(path) >= ms; }""",
                         [element, path, PRESS_QUIET_MS], INTERACTION_TIMEOUT,
                         f"the plot to draw after {key}")
            frames = root.evaluate("(el) => window.__harness.takeFrames(el)")
            presses.append({"key": key, "frames": frames, "text": visible_text(root)})
        # Then the plot is left alone: until the kernel has rested a while, whatever it
        # draws is collected; a plot that keeps drawing fails Run All already.
        wait_in_page(page, """([path, ms]) => window.__harness.state(path).kernel === 'idle' &&
                                              window.__harness.quietFor(path) >= ms""",
                     [path, STILL_MS], INTERACTION_TIMEOUT, "the kernel to rest after the last press",
                     every_ms=100)
        presses[-1]["later"] = root.evaluate("(el) => window.__harness.takeFrames(el)")
    finally:
        root.evaluate("(el) => window.__harness.stopFrames(el)")
    return presses


def layout_problems(page, path: str, settle: float = 5.0) -> list[str]:
    """What does not fit its column (harness.layout), asked again for up to `settle`
    seconds while something still does not (plots resize after the page does)."""
    return asked_again(lambda: page.evaluate("(path) => window.__harness.layout(path)", path),
                       lambda found: found, settle, 0.25)


def asked_again(ask, wrong, settle: float, every: float):
    """ask(), asked again every `every` s for up to `settle` s while wrong(its answer)."""
    deadline = time.monotonic() + settle
    while True:
        answer = ask()
        if not wrong(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(every)


def text_sizes(page, path: str) -> list[dict]:
    """Each widget's smallest text: {name, px (CSS), shown (px on screen), text}."""
    return page.evaluate("(path) => window.__harness.textSizes(path)", path)


def presentation_mode(page, on: bool) -> None:
    """Switch JupyterLab's Presentation Mode (View menu) on or off."""
    page.evaluate(
        """async (on) => { const app = window.jupyterapp;
                           if (app.shell.presentationMode !== on) {
                             await app.commands.execute('application:toggle-presentation-mode'); } }""",
        on)
    _poll(lambda: page.evaluate("() => window.jupyterapp.shell.presentationMode") == on,
          PAGE_TIMEOUT, "Presentation Mode to switch")


def browser_zoom(page, factor: float, width: int = 1366, height: int = 768):
    """Zoom the page as Ctrl+plus does in a window of width x height: the page is laid out
    in width/factor CSS px, each drawn factor device px wide. Returns the DevTools session
    (its Page.captureScreenshot shows the zoomed page; Playwright's own would undo it)."""
    session = page.context.new_cdp_session(page)
    session.send("Emulation.setDeviceMetricsOverride", {
        "width": round(width / factor), "height": round(height / factor),
        "deviceScaleFactor": factor, "mobile": False})
    _poll(lambda: abs(page.evaluate("() => window.devicePixelRatio") - factor) < 1e-6,
          PAGE_TIMEOUT, f"the zoom to reach {factor:g}")
    return session


def zoomed_screenshot(session, path: Path) -> None:
    path.write_bytes(base64.b64decode(session.send("Page.captureScreenshot", {"format": "png"})["data"]))


def is_dirty(page, path: str) -> bool:
    """Whether JupyterLab marks the open notebook modified (the tab's ●)."""
    return page.evaluate("(path) => window.__harness.panel(path).context.model.dirty", path)


def shut_down_kernel(page, path: str) -> None:
    """Kernel > Shut Down Kernel, in the notebook's own menu."""
    page.evaluate("async (path) => { await window.__harness.panel(path).sessionContext.shutdown(); }",
                  path)
    _poll(lambda: _state(page, path).get("kernel") in ("none", "dead", "unknown"),
          PAGE_TIMEOUT, f"the kernel of {path} to shut down")


def close_tab(page, path: str, answer: str = "Save") -> None:
    """Close the notebook's tab as a teacher does (its kernel keeps running, as in
    JupyterLab); if JupyterLab asks whether to save changes, answer `answer`
    ("Save" or "Discard"). Any other dialog is a finding: its text goes into the
    error, and it is dismissed, so that the notebooks visited after this one start
    from a page no dialog covers."""
    page.evaluate("(path) => { window.__harness.panel(path).close(); }", path)
    other_dialogs = []

    def closed_or_answered():
        if not _state(page, path)["opened"]:
            return True
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            button = dialog.locator(".jp-Dialog-button", has_text=answer)
            if button.count():
                button.first.click()
            elif (text := " ".join(dialog.first.inner_text().split())) not in other_dialogs:
                other_dialogs.append(text)
        return False

    try:
        _poll(closed_or_answered, PAGE_TIMEOUT, f"{path} to close")
    except TimeoutError as e:
        dismiss_dialogs(page)
        shown = "; ".join(repr(t) for t in other_dialogs) or "no dialog"
        raise TimeoutError(f"{e} (answering {answer!r}); JupyterLab showed: {shown}") from None


def dismiss_dialogs(page) -> None:
    """Cancel whatever dialogs JupyterLab shows (Escape, as a person would)."""
    for _ in range(5):
        if not page.locator(".jp-Dialog").count():
            return
        page.keyboard.press("Escape")
        time.sleep(0.2)


def autosave(page, on: bool) -> None:
    """Turn this page's autosave on or off (Settings > Autosave Documents). The lab of copies
    saves every AUTOSAVE_INTERVAL s, so that a first opening can wait an autosave out. In a
    classroom JupyterLab saves every 120 s, so within a visit, in effect, never; here an
    autosave racing the teacher's own save makes JupyterLab say the file changed on disk
    (two saves at once: the second finds the first's). Visits run with it off."""
    toggled = "() => window.jupyterapp.commands.isToggled('docmanager:toggle-autosave')"
    if page.evaluate(toggled) != on:
        page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:toggle-autosave'); }")
    _poll(lambda: page.evaluate(toggled) == on, PAGE_TIMEOUT, f"autosave to be {'on' if on else 'off'}")


def widget_outputs(notebook: Path) -> list[dict]:
    """The widget outputs stored in a notebook file, each as its MIME bundle."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [o["data"] for c in cells for o in c.get("outputs", []) if is_widget_output(o.get("data", {}))]


def is_widget_output(data: dict) -> bool:
    """A widget's output: its live view, or the picture or HTML form a stored file keeps."""
    return VIEW in data or STORED_WIDGET in "".join(data.get("text/html", ""))


def notebook_path(notebook: Path) -> str:
    return f"notebooks/{notebook.name}"


def settled_report(page, path: str) -> dict:
    """first_open_report, asked again for a few seconds while it still finds problems
    (pictures decoding, widgets coming back from saved state)."""
    return asked_again(lambda: first_open_report(page, path), lambda r: r["problems"], SETTLE, 0.5)


# --------------------------------------------------------------------------- opened fresh


def first_open_all(lab, page, notebooks: list[Path]) -> dict[str, dict[str, list[str]]]:
    """Open a fresh copy of every notebook, each in its tab, nothing run; check what each
    shows; leave them all open through two autosave intervals (autosave on); then compare
    the files on disk with the copies. Returns, per notebook name, findings by kind: shown,
    note, empty, modified. The notebooks stay open, each with its kernel, for
    visit_notebook, and autosave goes off again."""
    autosave(page, True)
    found = {nb.name: {"shown": [], "note": [], "empty": [], "modified": []} for nb in notebooks}
    copied = {}
    for notebook in notebooks:       # the repository's file may change meanwhile: keep the bytes
        copied[notebook.name] = notebook.read_bytes()
        (lab.root_dir / notebook_path(notebook)).write_bytes(copied[notebook.name])
    try:
        for notebook in notebooks:      # every tab opens at once, and the kernels start together
            open_here(page, notebook_path(notebook), wait=False)
        for notebook in notebooks:
            path, f = notebook_path(notebook), found[notebook.name]
            expected = widget_outputs(lab.root_dir / path)
            start = time.monotonic()
            open_here(page, path)       # its tab to the front, its kernel started
            report = settled_report(page, path)
            f["shown"] += report["problems"]
            pictures = sum("image/png" in o or "<img" in "".join(o.get("text/html", ""))
                           for o in expected)
            shown = report["shown"]
            if shown["picture"] != pictures or shown["html"] != len(expected) - pictures:
                f["shown"].append(f"expected {pictures} pictures and {len(expected) - pictures} "
                                  f"HTML forms, shown {shown}")
            for node in report["nodes"]:
                where = f"cell {node['cell']}"
                rules = NOTE if node["picture"] else (NOTE_LIVE,)
                if not all(rule.search(node["text"]) for rule in rules):
                    what = "it is a picture and to run" if node["picture"] else "to run"
                    f["note"].append(f"{where}: no visible line saying {what} the cells; it "
                                     f"shows {node['text'][:120]!r}")
                if node["colour"] is not None and node["colour"] < MIN_COLOUR:
                    f["empty"].append(f"{where}: its stored plot is empty (only "
                                      f"{node['colour']:.4f} of its pixels are coloured)")
            if is_dirty(page, path):
                f["modified"].append("marked modified (●) as soon as it opened")
            print(f"{notebook.name}: opened and looked at in {time.monotonic() - start:.1f} s")
        shots = SCREENSHOTS / "opened-fresh"
        shots.mkdir(parents=True, exist_ok=True)
        if EVERY_SCREENSHOT or any(any(kinds.values()) for kinds in found.values()):
            page.screenshot(path=shots / "last-opened.png")
        # Two autosave intervals with every notebook open: a notebook marked modified
        # meanwhile is written to disk by then.
        deadline = time.monotonic() + 2 * AUTOSAVE_INTERVAL + 1
        paths = [notebook_path(notebook) for notebook in notebooks]
        while time.monotonic() < deadline:
            dirty = page.evaluate("(paths) => paths.map(p => window.__harness.panel(p).context.model.dirty)",
                                  paths)
            for notebook, marked in zip(notebooks, dirty):
                if marked and not found[notebook.name]["modified"]:
                    found[notebook.name]["modified"].append("marked modified (●) while only open")
            time.sleep(0.5)
        for notebook in notebooks:
            if (lab.root_dir / notebook_path(notebook)).read_bytes() != copied[notebook.name]:
                found[notebook.name]["modified"].append(
                    f"the file on disk changed while it was only open (autosave every "
                    f"{AUTOSAVE_INTERVAL} s)")
        autosave(page, False)
    except Exception:
        for notebook in notebooks:     # only these: another page may be using the lab
            lab.shut_down_sessions(notebook_path(notebook))
        raise
    return found


# --------------------------------------------------------------------------- one notebook


@dataclass
class Visit:
    name: str
    order: str
    found: dict[str, list[str]] = field(default_factory=lambda: {
        k: [] for k in ("run", "fit", "text", "react", "frames", "reopen")})
    seconds: dict[str, float] = field(default_factory=dict)   # how long each step took

    def timed(self, step: str, since: float) -> float:
        now = time.monotonic()
        self.seconds[step] = round(now - since, 1)
        return now


def _show_widest_plot(page) -> None:
    """Scroll the widest widget (or, with none live, the first picture) of the open
    notebook into view, for the screenshots."""
    page.evaluate("""() => {
        const panel = '.jp-NotebookPanel:not(.lm-mod-hidden) ';
        const shown = [...document.querySelectorAll(panel + '.course-widget')];
        const widest = shown.sort((a, b) => b.scrollWidth - a.scrollWidth)[0] ||
                       document.querySelector(panel + '.jp-OutputArea-output img');
        if (widest) widest.scrollIntoView({block: 'center'});
    }""")


def _fits_and_text(page, path: str, shots: Path) -> tuple[list[str], list[str]]:
    """Widths and text sizes at the projector's size, in Presentation Mode, at 125 %."""
    fit, text = [], []
    fit += [f"at {PROJECTOR[0]} x {PROJECTOR[1]}: {p}" for p in layout_problems(page, path)]
    plain = {t["name"]: t for t in text_sizes(page, path)}
    text += [f"{t['name']}: {t['px']:g} px text ({t['text']!r}) at 100 %"
             for t in plain.values() if t["px"] < MIN_TEXT_PX]
    _show_widest_plot(page)
    if EVERY_SCREENSHOT or fit or text:
        page.screenshot(path=shots / "page-100.png")

    presentation_mode(page, True)
    try:
        fit += [f"in Presentation Mode: {p}" for p in layout_problems(page, path)]
        for t in text_sizes(page, path):
            before = plain.get(t["name"])
            if before and t["px"] <= before["px"]:
                text.append(f"{t['name']}: {t['px']:g} px text ({t['text']!r}) in Presentation "
                            f"Mode, no larger than at 100 % ({before['px']:g} px)")
        _show_widest_plot(page)
        if EVERY_SCREENSHOT or fit or text:
            page.screenshot(path=shots / "page-presentation.png")
    finally:
        presentation_mode(page, False)

    session = browser_zoom(page, ZOOM, *PROJECTOR)
    try:
        fit += [f"at {ZOOM:.0%} zoom: {p}" for p in layout_problems(page, path)]
        text += [f"{t['name']}: {t['shown']:g} px on screen ({t['text']!r}) at {ZOOM:.0%} zoom"
                 for t in text_sizes(page, path) if t["shown"] < MIN_TEXT_PX * ZOOM - 0.01]
        _show_widest_plot(page)
        if EVERY_SCREENSHOT or fit or text:
            zoomed_screenshot(session, shots / "page-zoom.png")
    finally:
        browser_zoom(page, 1.0, *PROJECTOR)
    return fit, text


def _frames(page, path: str, widget: str, keys: list[str], nth: int) -> list[str]:
    """A value met twice in the key sequence must draw the same frame and say the same
    text each time; two different values, different frames; each press, one picture."""
    try:
        root = widget_root(page, widget)
        root.scroll_into_view_if_needed()
        presses = frames_of_presses(page, path, root, keys, nth)
    except (AssertionError, TimeoutError) as error:
        return [f"w-{widget}: {error}"]
    found = []
    for i, press in enumerate(presses):
        if len(press["frames"]) > 1:
            found.append(f"w-{widget}: press {i + 1} ({press['key']}) drew {len(press['frames'])} "
                         "different pictures, one after the other (a wrong frame first?)")
    if presses and presses[-1].get("later"):
        found.append(f"w-{widget}: left alone after the last press, the plot then drew a different "
                     "picture: the frame each press drew was not its value's picture")
    values = _values(keys)
    for i in range(len(presses)):
        for j in range(i + 1, len(presses)):
            same_value = values[i] == values[j]
            same_frame = presses[i]["frames"][-1:] == presses[j]["frames"][-1:]
            same_text = presses[i]["text"] == presses[j]["text"]
            if same_value and not (same_frame and same_text):
                found.append(f"w-{widget}: presses {i + 1} and {j + 1} reach the same value but "
                             + ("draw different frames" if not same_frame else
                                f"say {presses[i]['text'][:150]!r} and {presses[j]['text'][:150]!r}"))
            if not same_value and same_frame:
                found.append(f"w-{widget}: presses {i + 1} and {j + 1} reach different values but "
                             "draw the same frame (a frame behind?)")
    return found


def _values(keys: list[str]) -> list[int]:
    """The slider's position after each key, in steps from where it started."""
    step = {"ArrowRight": 1, "ArrowUp": 1, "ArrowLeft": -1, "ArrowDown": -1,
            "PageUp": 10, "PageDown": -10}
    at, out = 0, []
    for key in keys:
        at += step[key]
        out.append(at)
    return out


def _end_and_reopen(page, lab, path: str, order: str, shots: Path) -> list[str]:
    """End the rehearsal as `order` says, then open the notebook again and look."""
    if order == "save, close, shut down":
        save_notebook(page, path)
        close_tab(page, path, "Save")
        lab.shut_down_sessions(path)
    elif order == "shut down, close, answer Save":
        shut_down_kernel(page, path)
        close_tab(page, path, "Save")
    elif order == "close, answer Save, kernel still running":
        close_tab(page, path, "Save")
    else:
        raise ValueError(f"unknown order {order!r}")
    found = []
    open_here(page, path)
    report = settled_report(page, path)
    found += report["problems"]
    saved = widget_outputs(lab.root_dir / path)
    if sum(report["shown"].values()) != len(saved):
        found.append(f"{len(saved)} widget outputs saved, shown {report['shown']}")
    figures = page.locator(".course-widget .jupyter-matplotlib-figure")
    for i in range(figures.count()):
        canvases = figures.nth(i).locator("canvas")
        if not any(canvas_is_drawn(canvases.nth(k)) for k in range(canvases.count())):
            found.append(f"plot {i + 1} came back blank")
    _show_widest_plot(page)
    if EVERY_SCREENSHOT or found:
        page.screenshot(path=shots / "reopened.png")
    return found


def visit_notebook(lab, page, notebook: Path, interactions, frames, order: str) -> Visit:
    """Run one notebook through Run All, the layout checks, its interactions and frames,
    and the teacher's ending `order` and reopening; return what each step found."""
    visit = Visit(notebook.name, order)
    found = visit.found
    path = notebook_path(notebook)
    already_open = page.evaluate("(path) => window.__harness.state(path).opened", path)
    if not already_open:
        shutil.copyfile(notebook, lab.root_dir / path)
    shots = SCREENSHOTS / notebook.stem
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    t = time.monotonic()
    stage = "run"                       # the finding a timeout belongs to
    try:
        open_here(page, path)           # or, already open, bring its tab to the front
        t = visit.timed("open", t)
        run_all(page, path)
        found["run"] += notebook_problems(page, path)
        t = visit.timed("run all", t)
        if found["run"]:
            page.screenshot(path=shots / "page-at-failure.png")
            for kind in ("fit", "text", "react", "frames", "reopen"):
                found[kind].append("not checked: Run All failed")
            return visit
        stage = "fit"
        if notebook.parent.name == "notebooks":
            found["fit"], found["text"] = _fits_and_text(page, path, shots)
            t = visit.timed("fit and text", t)
        stage = "react"
        watch_kernel_errors(page, path)
        for i, interaction in enumerate(interactions, start=1):
            prefix = shots / safe_name(f"{i:02d}-{interaction.widget}-{interaction.action}")
            found["react"] += perform(page, interaction, prefix)
        t = visit.timed("interactions", t)
        stage = "frames"
        for widget, keys, nth in frames:
            found["frames"] += _frames(page, path, widget, keys, nth)
        t = visit.timed("frames", t)
        if found["react"] or found["frames"]:
            page.screenshot(path=shots / "page-at-failure.png")
        stage = "reopen"
        if notebook.parent.name == "notebooks":
            found["reopen"] += _end_and_reopen(page, lab, path, order, shots)
            t = visit.timed("end and reopen", t)
    except TimeoutError as e:           # this notebook's finding; the next one starts afresh
        page.screenshot(path=shots / "page-at-failure.png")
        found[stage].append(f"the visit stopped: {e}")
        stages = ["run", "fit", "text", "react", "frames", "reopen"]
        for kind in stages[stages.index(stage) + 1:]:
            found[kind].append(f"not checked: the visit stopped at {stage!r}")
    finally:
        dismiss_dialogs(page)
        if page.evaluate("(path) => window.__harness.state(path).opened", path):
            close_tab(page, path, "Discard")
        lab.shut_down_sessions(path)
        print(f"{notebook.name}: {visit.seconds}")
    return visit
