"""Every notebook, run in JupyterLab in a real browser (Debian's Chromium).

For each notebook: open it, Run All, and check that every code cell ran, no cell shows
an error, and every widget rendered. Then do what INTERACTIONS lists for that notebook
to its widgets, and check that each widget reacts (its plot's pixels or its text change).
Screenshots of each widget before and after go to tests/screenshots/ (not committed).

Needs /usr/bin/chromium: without it the test is skipped, except with CI=true, where it fails.
"""

import os
from pathlib import Path

import pytest

from browser_harness import (
    CANVAS_CHANGES,
    MARKUP_CHANGES,
    REPO_ROOT,
    TEXT_CHANGES,
    Interaction,
    browser_unavailable_reason,
    choose,
    click,
    lab_page,
    notebook_problems,
    open_notebook,
    perform,
    press_slider,
    run_all,
    running_chromium,
    running_lab,
    safe_name,
    type_text,
    watch_kernel_errors,
)

# What to do to each notebook's widgets, and what must change then. Entries are added
# notebook by notebook, as its widgets are written. The key is the notebook's file name;
# `widget` is the name in the widget root's CSS class w-<name> (box.add_class("w-<name>")).
# Actions: press_slider(key="ArrowRight", times=1, nth=0), click(label), type_text(text, nth=0),
# choose(option, nth=0) (all in browser_harness). expect: CANVAS_CHANGES or TEXT_CHANGES;
# contains: a sentence the widget must show afterwards (e.g. a bad-input message).
INTERACTIONS: dict[str, list[Interaction]] = {
    # The harness's own self-test (tests/fixtures/widget_demo.ipynb).
    "widget_demo.ipynb": [
        Interaction("floor", press_slider("ArrowRight"), expect=TEXT_CHANGES),
        Interaction("bars", press_slider("ArrowRight"), expect=CANVAS_CHANGES),
        Interaction("bars", click("highlight"), expect=CANVAS_CHANGES),
        Interaction("one-bar", press_slider("ArrowRight"), expect=CANVAS_CHANGES),
        Interaction("svg-bars", press_slider("ArrowRight"), expect=MARKUP_CHANGES),
        Interaction("words", type_text("the zebra"), expect=TEXT_CHANGES,
                    contains="'zebra' is not in the vocabulary"),
    ],
    "01_tokens.ipynb": [
        Interaction("tokenizer", type_text("the dog climbed the wall."), expect=TEXT_CHANGES,
                    contains="7 tokens"),
        Interaction("tokenizer", type_text("the cat jumped"), expect=TEXT_CHANGES,
                    contains="has no token for"),
    ],
    "02_embeddings.ipynb": [
        Interaction("embedding-scatter", choose("d1 go on"), expect=CANVAS_CHANGES),
        Interaction("embedding-scatter", click("add positions"), expect=CANVAS_CHANGES),
    ],
    "03_qkv.ipynb": [
        Interaction("query-picker", click("4 ed"), expect=CANVAS_CHANGES),
        Interaction("query-picker", type_text("6"), expect=TEXT_CHANGES,
                    contains="Positions run from 1 to 5"),
    ],
    "04_mask_and_heads.ipynb": [
        Interaction("mask-heads", click("causal mask"), expect=CANVAS_CHANGES),
        Interaction("mask-heads", click("head 2"), expect=TEXT_CHANGES),
    ],
    "05_block.ipynb": [
        Interaction("block-branches", click("attention branch"), expect=CANVAS_CHANGES),
        Interaction("block-branches", click("MLP branch"), expect=TEXT_CHANGES),
    ],
    "06_output.ipynb": [
        Interaction("logit-playground", press_slider("ArrowRight", times=5), expect=CANVAS_CHANGES),
        Interaction("logit-playground", type_text("1e6"), expect=TEXT_CHANGES,
                    contains="between -1000 and 1000"),
        Interaction("logit-playground", choose("␣cat"), expect=TEXT_CHANGES),
        Interaction("logit-playground", click("Reset"), expect=TEXT_CHANGES),
        Interaction("logit-shift", press_slider("PageUp"), expect=CANVAS_CHANGES),
        Interaction("logit-shift", type_text("abc"), expect=TEXT_CHANGES, contains="is not a number"),
        Interaction("attention-switch", click("attention on"), expect=CANVAS_CHANGES),
        Interaction("tying-switch", click("own W_U"), expect=CANVAS_CHANGES),
        Interaction("tying-switch", type_text("the zebra"), expect=TEXT_CHANGES, contains="no token for"),
        Interaction("temperature-preview", press_slider("Home"), expect=CANVAS_CHANGES),
        Interaction("temperature-preview", type_text("-1"), expect=TEXT_CHANGES,
                    contains="Temperature must be 0 (greedy) or a positive number"),
    ],
    "07_generation.ipynb": [
        Interaction("temperature", press_slider("ArrowRight"), expect=CANVAS_CHANGES),
        Interaction("temperature", type_text("1.5", nth=2), expect=TEXT_CHANGES,
                    contains="top-p must be above 0"),
        Interaction("generate-steps", click("next token"), expect=CANVAS_CHANGES),
        Interaction("generate-steps", type_text("abc", nth=2), expect=TEXT_CHANGES,
                    contains="The seed must be"),
    ],
}

COURSE_NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
SELF_TEST_NOTEBOOK = REPO_ROOT / "tests" / "fixtures" / "widget_demo.ipynb"
SCREENSHOTS = REPO_ROOT / "tests" / "screenshots"


@pytest.fixture(scope="module")
def lab():
    """JupyterLab serving the repository root, for the whole module."""
    reason = browser_unavailable_reason()
    if reason:
        # In CI a missing browser is a broken set-up, not a reason to pass quietly.
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    served = _notebook_bytes()
    with running_lab(REPO_ROOT) as server:
        yield server
    # Autosave is off and nothing saves: make sure the run left the notebooks as they were.
    # (Not restored automatically: the change may be someone's edit made meanwhile.)
    changed = [str(path) for path, data in served.items()
               if not path.exists() or path.read_bytes() != data]
    assert not changed, f"notebooks changed during the browser run (autosave?): {changed}"


@pytest.fixture(scope="module")
def browser(lab):
    with running_chromium() as chromium:
        yield chromium


def _notebook_bytes() -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in [*COURSE_NOTEBOOKS, SELF_TEST_NOTEBOOK]}


@pytest.mark.browser
@pytest.mark.parametrize(
    "notebook", [*COURSE_NOTEBOOKS, SELF_TEST_NOTEBOOK],
    ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_notebook_runs_and_widgets_react(notebook, lab, browser):
    path = notebook.relative_to(REPO_ROOT).as_posix()
    shots = SCREENSHOTS / notebook.stem
    for old in shots.glob("*.png"):
        old.unlink()
    with lab_page(browser, lab) as page:
        open_notebook(page, lab, path)
        run_all(page, path)
        problems = notebook_problems(page, path)
        if not problems:  # widgets are only worth poking once the notebook itself is fine
            watch_kernel_errors(page, path)
            for i, interaction in enumerate(INTERACTIONS.get(notebook.name, []), start=1):
                prefix = shots / safe_name(f"{i:02d}-{interaction.widget}-{interaction.action}")
                problems += perform(page, interaction, prefix)
        if problems:
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=shots / "page-at-failure.png")
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


def test_interactions_name_existing_notebooks():
    """A typo in an INTERACTIONS key would silently test nothing."""
    known = {path.name for path in [*COURSE_NOTEBOOKS, SELF_TEST_NOTEBOOK]}
    assert set(INTERACTIONS) <= known, f"no such notebook: {set(INTERACTIONS) - known}"
