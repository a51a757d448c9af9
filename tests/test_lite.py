"""The browser edition (tools/build_lite.py), as a class without Python meets it: built
offline, served on 127.0.0.1, opened in Debian's Chromium with every request for another
host refused and counted (tests/lite_harness.py).

- the site builds, and names no file outside itself: no URL in its kernel settings or in
  Pyodide's lock file, and every file the lock file names is there, with its sha256;
- notebooks 01 and 06 run all their cells without an error: 01 from the moment the toolbar
  first shows its kernel idle, as a learner would start it (Run All must not be lost on a
  kernel still loading), 06 once its kernel is live (it has run a cell that finds ipympl
  and toy_model installed: what the first cell needs is preloaded);
- no cell of 01 or 06 writes to stderr: in particular matplotlib finds the font list the
  site ships, and does not announce "Matplotlib is building the font cache" in the first
  cell (the site's list is the one this matplotlib accepts: same version);
- exercise 01.1 says what the checker says to a wrong answer typed and sent with Enter and
  to the right one sent with Check;
- 06's logit playground shows p = 0.395 for ␣roof first, then the model's p after a click
  on its slider (the logit read from the page) and after a value typed with Enter;
- no request left 127.0.0.1.

All of it runs once, in a thread of its own (Playwright's sync API keeps to the thread that
started it, and the desktop browser tests may hold one in this worker), and each test
asserts one kind of finding. Select these with `pytest -m lite`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import toy_model as tm
import toy_widgets as tw

# What the page must show is the line the kernel makes (the widgets' tests check its content):
summary = tw.p_summary
from browser_harness import REPO_ROOT, notebook_problems, require_browser, run_all, watch_kernel_errors
from browser_widgets import (TEXT_CHANGES, TEXT_SHOWS, Action, Interaction, look, perform, type_text,
                             visible_text)
from lite_harness import TEST_SETTINGS, Offline, open_lite, serving, stderr_outputs


sys.path.insert(0, str(REPO_ROOT / "tools"))
from build_lite import build  # noqa: E402

pytestmark = pytest.mark.lite

SHOTS = REPO_ROOT / "tests" / "screenshots" / "lite"
TOKENS_01 = "notebooks/01_tokens.ipynb"
OUTPUT_06 = "notebooks/06_output.ipynb"
Z0 = tm.intermediates("the cat climbed the")["logits"][-1]
ROOF = tm.VOCAB.index(" roof")


def playground_line(logit: float) -> str:
    """What the playground says with ␣roof's logit set to `logit`, from the model."""
    z = Z0.copy()
    z[ROOF] = logit
    return f"logit of {tw.TOKENS[ROOF]}: {tw.fmt(z[ROOF])} · " + summary(tm.softmax(z))


def exercise_says(answer) -> str:
    return tw.exercise("01.1").try_answer(answer)


def click_slider(where: float) -> Action:
    """Click the widget's first slider at `where` (0 to 1) of its length: the handle jumps
    there, as when a learner clicks the slider's track."""

    def run(root):
        track = root.locator(".noUi-target").first
        box = track.bounding_box()
        track.click(position={"x": box["width"] * where, "y": box["height"] / 2})

    return Action(f"click the slider at {where:g}", run)


def _exercise(page, answer: str, send: str) -> str:
    """Answer 01.1 in the page (Enter, or the Check button); the sentence it shows."""
    box = page.locator(".w-check", has_text="How many tokens")
    field = box.locator("input[type=text]")
    field.fill(answer)
    if send == "Enter":
        field.press("Enter")
    else:
        box.get_by_role("button", name="Check").click()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = " ".join(box.inner_text().split())
        if answer in text and ("Right" in text or "Not quite" in text or "Close" in text):
            return text
        time.sleep(0.1)
    return " ".join(box.inner_text().split())


@contextlib.contextmanager
def _visiting(offline: Offline, label: str, found: dict, then: str):
    """A fresh page for notebook `label`; an error stops its visit with one line for the
    report (and leaves `then`, what was still to check, unchecked), the page for a look."""
    page = offline.page()
    try:
        yield page
    except Exception as error:
        found["run"].append(f"{label}: the visit stopped: {str(error).splitlines()[0]}")
        found[then].append(f"not checked: the visit of {label} stopped")
        page.screenshot(path=SHOTS / f"{label}.png")
    finally:
        page.context.close()


def _open_and_run(page, site: str, path: str, label: str, found: dict, as_a_learner=False) -> None:
    found["seconds"][f"{label} kernel"] = round(open_lite(page, site, path, as_a_learner), 1)
    start = time.monotonic()
    run_all(page, path)
    found["run"] += [f"{label}: {p}" for p in notebook_problems(page, path)]
    found["seconds"][f"{label} run all"] = round(time.monotonic() - start, 1)
    found["stderr"] += [f"{label}: {s}" for s in stderr_outputs(page, path)]


def _visit(site: str, offline: Offline) -> dict:
    found = {"run": [], "stderr": [], "exercise": [], "playground": [], "seconds": {}}
    shots = SHOTS
    shots.mkdir(parents=True, exist_ok=True)
    with _visiting(offline, "01", found, "exercise") as page:
        # Run All the moment the toolbar shows the kernel idle, as a learner would: it must
        # run every cell, not send them to a kernel still loading (run_all waits for each).
        _open_and_run(page, site, TOKENS_01, "01", found, as_a_learner=True)
        for answer, send in (("6", "Enter"), ("7", "Check")):
            shown = _exercise(page, answer, send)
            expected = exercise_says(int(answer))
            if " ".join(expected.split()) not in shown:
                found["exercise"].append(f"01.1 answered {answer} ({send}): expected "
                                         f"{expected!r}, the page shows {shown[-300:]!r}")
    with _visiting(offline, "06", found, "playground") as page:
        _open_and_run(page, site, OUTPUT_06, "06", found)
        watch_kernel_errors(page, OUTPUT_06)
        steps = [Interaction("logit-playground", click_slider(0.75), TEXT_CHANGES, "logit of"),
                 Interaction("logit-playground", type_text("3.33"), TEXT_CHANGES, playground_line(3.33))]
        found["playground"] += perform(page, Interaction("logit-playground", look(),
                                                         TEXT_SHOWS, playground_line(Z0[ROOF])),
                                       shots / "06-first")
        found["playground"] += perform(page, steps[0], shots / "06-slider")
        text = visible_text(page.locator(".w-logit-playground"))
        moved = re.search(r"logit of ␣roof: (-?\d+\.\d+)", text)
        if not moved:
            found["playground"].append(f"after a slider step no logit of ␣roof shows: {text[:300]!r}")
        else:
            logit = float(moved.group(1))
            if not logit > Z0[ROOF] + 0.5:
                found["playground"].append(f"a click at 3/4 of the slider moved the logit from "
                                           f"{tw.fmt(Z0[ROOF])} to {moved.group(1)}, not up past 3")
            if re.sub(r"\s+", "", playground_line(logit)) not in re.sub(r"\s+", "", text):
                found["playground"].append(f"after the slider step the page shows {text[:300]!r}, "
                                           f"the model {playground_line(logit)!r}")
        found["playground"] += perform(page, steps[1], shots / "06-typed")
    return found


def _in_a_thread(site: Path) -> dict:
    from playwright.sync_api import sync_playwright
    with serving(site) as url, sync_playwright() as playwright:
        offline = Offline(playwright)
        try:
            found = _visit(url, offline)
        finally:
            offline.close()
        found["refused"] = list(offline.refused)
        return found


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    """The offline site, built here (timed)."""
    require_browser()
    start = time.monotonic()
    out = build(tmp_path_factory.mktemp("lite") / "lite", offline=True, extra_settings=TEST_SETTINGS)
    return {"path": out, "seconds": round(time.monotonic() - start, 1)}


@pytest.fixture(scope="module")
def visit(site) -> dict:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        found = pool.submit(_in_a_thread, site["path"]).result()
    print(f"browser edition: built in {site['seconds']} s; {found['seconds']}")
    return found


def _assert_none(found: list[str], what: str) -> None:
    assert not found, what + ":\n  " + "\n  ".join(found)


def test_the_site_builds_and_names_no_file_outside_itself(site):
    out = site["path"]
    assert (out / "lab" / "index.html").is_file()
    settings = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = json.dumps(settings["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"])
    assert "://" not in kernel, f"the kernel's settings name a URL: {kernel}"
    lock = json.loads((out / "pyodide" / "pyodide-lock.json").read_text())
    wrong = []
    for name, entry in lock["packages"].items():
        path = out / "pyodide" / entry["file_name"]
        if not path.is_file():
            wrong.append(f"{name}: {entry['file_name']} is not in the site")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            wrong.append(f"{name}: {entry['file_name']} differs from the lock file's sha256")
    _assert_none(wrong, "Pyodide's lock file")
    notebooks = sorted(p.name for p in (REPO_ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in (out / "files" / "notebooks").glob("*.ipynb")) == notebooks


def test_notebooks_01_and_06_run_all_their_cells_without_error(visit):
    _assert_none(visit["run"], "Run All in the browser edition")


def test_no_cell_writes_to_stderr(visit):
    """The first cell's `%matplotlib widget` once printed "Matplotlib is building the font
    cache; this may take a moment." in every notebook: the list the site shipped was not
    the one Pyodide's matplotlib reads."""
    _assert_none(visit["stderr"], "stderr in the browser edition")


def test_the_site_ships_the_font_list_its_matplotlib_accepts(site):
    """Pyodide's matplotlib reads its font list from matplotlib/fontlist.json and rebuilds
    it unless the list's _version is its FontManager's; the course's wheel, installed
    after matplotlib's, brings one of that version."""
    import zipfile
    folder = site["path"] / "pyodide"
    lock = json.loads((folder / "pyodide-lock.json").read_text())["packages"]
    assert "matplotlib" in lock["next-token-course"]["depends"]
    mpl = folder / lock["matplotlib"]["file_name"]
    with zipfile.ZipFile(mpl) as wheel:
        source = wheel.read("matplotlib/font_manager.py").decode()
    assert 'Path(__file__).parent.joinpath("fontlist.json")' in source, \
        "Pyodide's matplotlib no longer reads its font list beside its code"
    version = int(re.search(r"^    __version__ = (\d+)$", source, re.M).group(1))
    with zipfile.ZipFile(folder / lock["next-token-course"]["file_name"]) as wheel:
        shipped = json.loads(wheel.read("matplotlib/fontlist.json"))
    assert shipped["_version"] == version
    assert any(f["name"] == "DejaVu Sans" for f in shipped["ttflist"])


def test_exercise_01_1_answers_a_wrong_and_a_right_answer(visit):
    _assert_none(visit["exercise"], "exercise 01.1 in the browser edition")


def test_the_logit_playground_shows_the_models_p(visit):
    assert tw.fmt(tm.softmax(Z0)[ROOF]) == "0.395"
    _assert_none(visit["playground"], "06's logit playground in the browser edition")


def test_no_request_leaves_the_machine(visit):
    _assert_none(visit["refused"], f"{len(visit['refused'])} requests for other hosts, refused")
