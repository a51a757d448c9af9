"""The notebooks before Run All, in JupyterLab in a real browser (Debian's Chromium).

Two moments a class meets:

- a fresh clone opened with nothing run: the notebook is not trusted yet, so JupyterLab
  shows each widget output's stored picture (or, for a widget without a plot, its HTML
  form), never the widget's raw text (`VBox(children=…`) nor an error; and after
  JupyterLab has saved it (autosave), opening it again still shows no error;
- a rehearsal: Run All, save, close, open again in a new kernel. The course's JupyterLab
  defaults (tools/lab_settings, installed by requirements.txt) keep the widgets' state
  on save, so the widgets come back, plots drawn, instead of "Error displaying widget:
  model not found".

Each test works on a copy of the notebook in a temporary folder (the repository's files
are never opened for writing). The rehearsal also saves a screenshot of every widget at a
projector's 1366 x 768 to tests/screenshots/1366x768/.

Needs /usr/bin/chromium: without it the tests are skipped, except with CI=true.
"""

import json
import shutil
import time
from pathlib import Path

import pytest
from browser_harness import (
    REPO_ROOT,
    require_browser,
    canvas_is_drawn,
    close_notebook,
    first_open_report,
    ink,
    lab_home,
    lab_page,
    notebook_problems,
    open_here,
    run_all,
    running_chromium,
    running_lab,
    save_notebook,
)

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
SCREENSHOTS = REPO_ROOT / "tests" / "screenshots" / "1366x768"
VIEW = "application/vnd.jupyter.widget-view+json"
SETTLE = 10  # s: for stored pictures to load and widgets to come back


def widget_outputs(notebook: Path) -> list[dict]:
    """The widget outputs stored in a notebook file, each as its MIME bundle."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [o["data"] for c in cells for o in c.get("outputs", []) if VIEW in o.get("data", {})]


def copy_root(tmp: Path) -> Path:
    """A folder that looks like the repository, with notebooks/ a copy of its own: the
    rest linked, so a notebook that reads ../something still finds it."""
    for entry in REPO_ROOT.iterdir():
        if entry.name not in ("notebooks", ".git", ".venv"):
            (tmp / entry.name).symlink_to(entry)
    (tmp / "notebooks").mkdir()
    return tmp


def plot_inks(page) -> list[float]:
    """The ink of each plot on the page, in order (its first canvas: the plot itself)."""
    figures = page.locator(".course-widget .jupyter-matplotlib-figure")
    return [round(ink(figures.nth(i).locator("canvas").first), 4) for i in range(figures.count())]


def settled_report(page, path: str) -> dict:
    """first_open_report, asked again for a few seconds while it still finds problems
    (pictures decoding, widgets coming back from saved state)."""
    deadline = time.monotonic() + SETTLE
    while True:
        report = first_open_report(page, path)
        if not report["problems"] or time.monotonic() > deadline:
            return report
        time.sleep(0.5)


def check_fresh_copies(lab, browser, sources: list[Path]) -> list[str]:
    """Open a fresh copy of each notebook with nothing run and save it (as an autosave
    would); then, in a new page, open each again."""
    problems = []
    for source in sources:
        shutil.copyfile(source, lab.root_dir / "notebooks" / source.name)
    for moment in ("opened fresh, nothing run", "saved by JupyterLab, opened again"):
        with lab_page(browser, lab) as page:
            lab_home(page, lab)
            for source in sources:
                path = f"notebooks/{source.name}"
                expected = widget_outputs(source)
                open_here(page, path)
                report = settled_report(page, path)
                problems += [f"{source.name}, {moment}: {p}" for p in report["problems"]]
                shown = report["shown"]
                if moment.startswith("opened fresh"):
                    pictures = sum("image/png" in o for o in expected)
                    if shown["picture"] != pictures or shown["html"] != len(expected) - pictures:
                        problems.append(f"{source.name}, {moment}: expected {pictures} pictures and "
                                        f"{len(expected) - pictures} HTML forms, shown {shown}")
                    save_notebook(page, path)
                elif sum(shown.values()) != len(expected):
                    problems.append(f"{source.name}, {moment}: {len(expected)} widget outputs, "
                                    f"shown {shown}")
                close_notebook(page, path)
    return problems


def check_rehearsals(lab, browser, sources: list[Path], shots: Path | None = None) -> list[str]:
    """Run All of each notebook at 1366 x 768 (a screenshot of each widget into
    shots/<notebook>/), save, close; then, in a new page, open each again."""
    problems, shown_before = [], {}
    with lab_page(browser, lab, 1366, 768) as page:
        lab_home(page, lab)
        for source in sources:
            path = f"notebooks/{source.name}"
            shutil.copyfile(source, lab.root_dir / path)
            open_here(page, path)
            run_all(page, path)
            problems += [f"{source.name}, Run All: {p}" for p in notebook_problems(page, path)]
            # The plots draw their frames after the kernel is idle; and they keep the picture
            # a save stores a moment after their last frame (toy_widgets.
            # _keep_saved_picture_current; an autosave comes minutes later).
            page.wait_for_timeout(2500)
            if shots is not None:
                folder = shots / source.stem
                for old in folder.glob("*.png"):
                    old.unlink()
                folder.mkdir(parents=True, exist_ok=True)
                roots = page.locator(".course-widget")
                for i in range(roots.count()):
                    root = roots.nth(i)
                    name = next((c[2:] for c in root.get_attribute("class").split()
                                 if c.startswith("w-")), "widget")
                    root.scroll_into_view_if_needed()
                    root.screenshot(path=folder / f"{i + 1:02d}-{name}.png")
            shown_before[source.name] = plot_inks(page)
            save_notebook(page, path)
            close_notebook(page, path)
    with lab_page(browser, lab, 1366, 768) as page:
        lab_home(page, lab)
        for source in sources:
            path = f"notebooks/{source.name}"
            saved = lab.root_dir / path
            expected = widget_outputs(saved)
            state = json.loads(saved.read_text(encoding="utf-8"))["metadata"].get("widgets", {}).get(
                "application/vnd.jupyter.widget-state+json", {}).get("state", {})
            lost = [o[VIEW]["model_id"] for o in expected if o[VIEW]["model_id"] not in state]
            if lost:
                problems.append(f"{source.name}: saved without the state of {len(lost)} of its "
                                f"{len(expected)} widgets (is saveState on?)")
            open_here(page, path)
            report = settled_report(page, path)
            problems += [f"{source.name}, reopened after a save: {p}" for p in report["problems"]]
            if report["shown"]["live"] != len(expected):
                problems.append(f"{source.name}, reopened after a save: {len(expected)} widgets, "
                                f"shown {report['shown']}")
            figures = page.locator(".course-widget .jupyter-matplotlib-figure")
            for i in range(figures.count()):
                canvases = figures.nth(i).locator("canvas")
                if not any(canvas_is_drawn(canvases.nth(k)) for k in range(canvases.count())):
                    problems.append(f"{source.name}, reopened after a save: plot {i + 1} is blank")
            inks = plot_inks(page)
            if len(inks) != len(shown_before[source.name]) or any(
                    abs(a - b) > 0.002 for a, b in zip(inks, shown_before[source.name])):
                problems.append(f"{source.name}, reopened after a save: the plots do not show what "
                                f"they showed when saved (ink {inks} against "
                                f"{shown_before[source.name]})")
            close_notebook(page, path)
    return problems


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a temporary copy of the repository."""
    require_browser()
    with running_lab(copy_root(tmp_path_factory.mktemp("first-open"))) as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    with running_chromium() as chromium:
        yield chromium


@pytest.mark.browser
def test_fresh_copies_show_pictures_and_no_widget_text(lab, browser):
    problems = check_fresh_copies(lab, browser, NOTEBOOKS)
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_after_a_rehearsal_and_a_save_the_widgets_come_back(lab, browser):
    problems = check_rehearsals(lab, browser, NOTEBOOKS, SCREENSHOTS)
    assert not problems, "\n".join(problems)


def test_every_notebook_stores_a_picture_or_text_form_for_each_widget():
    """Without a kernel, a widget output can show only what its bundle stores besides the
    widget view: a PNG, or HTML for a widget without a plot (never the answer of a check)."""
    bare = [f"{nb.name}: widget output {i + 1}" for nb in NOTEBOOKS
            for i, o in enumerate(widget_outputs(nb)) if not {"image/png", "text/html"} & set(o)]
    assert not bare, "widget outputs without a picture or an HTML form:\n" + "\n".join(bare)
