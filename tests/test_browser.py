"""Every notebook, run in JupyterLab in a real browser (Debian's Chromium).

For each notebook: open it, Run All, and check that every code cell ran, no cell shows
an error, and every widget rendered. Then do what INTERACTIONS lists for that notebook
to its widgets, and check that each widget reacts (its plot's pixels or its text change)
and shows what it must: the numbers a widget displays after Run All, after Reset and
after an exact typed value are compared with the model's, computed here in Python
(and must still be there a moment later, when the browser's slider echo has arrived).
Screenshots of each widget before and after go to tests/screenshots/ (not committed).

Needs /usr/bin/chromium: without it the test is skipped, except with CI=true, where it fails.
"""

from pathlib import Path

import numpy as np
import pytest

import toy_model as tm
from browser_harness import (
    CANVAS_CHANGES,
    MARKUP_CHANGES,
    REPO_ROOT,
    TEXT_CHANGES,
    TEXT_SHOWS,
    Interaction,
    require_browser,
    choose,
    click,
    lab_page,
    look,
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
from widget_tools import nats, summary

# --- What the widgets must show, from the model (numbers formatted as the course does)

PROMPT = "the cat climbed the"
RUN = tm.run(PROMPT)
Z0 = RUN["logits"][-1]
P0 = tm.softmax(Z0)
ROOF, WALL = tm.VOCAB.index(" roof"), tm.VOCAB.index(" wall")
fmt = tm.fmt


def ids_line(text):
    ids = tm.encode(text)
    return f"ids = {ids} ({len(ids)} tokens)"


def query_line(i, head=0):
    """The query picker's numbers for query i (1 to n)."""
    h = RUN["heads"][head]
    out, w = h["out"][i - 1], h["weights"][i - 1]
    return (f"query {i} ({RUN['tokens'][i - 1]}): output = [{fmt(out[0])}, {fmt(out[1])}]",
            f"{fmt(w.max())}")


def leak_line(heads):
    """The largest weight on future tokens with the mask off, over the heads shown."""
    weights = tm.run(PROMPT, mask=False)["heads"]
    leak, h, i = max((np.triu(weights[h]["weights"], k=1).sum(axis=1)[i], h, i)
                     for h in heads for i in range(len(RUN["tokens"])))
    return (f"With the mask off, row {i + 1} ({RUN['tokens'][i]}) puts {fmt(leak)} of its "
            f"weight on future tokens (head {h + 1}).")


def block_lines(**branches):
    r = tm.run(PROMPT, **branches)
    best = int(np.argmax(r["p"][-1]))
    return (*(fmt(v) for v in r["y"][-1]),
            f"most likely next: {tm.TOKENS[best]} ({fmt(r['p'][-1][best])})")


def playground_line(j, **changed):
    z = Z0.copy()
    for token, value in changed.items():
        z[tm.VOCAB.index(token.replace("_", " "))] = value
    return f"logit of {tm.TOKENS[j]}: {fmt(z[j])} · " + summary(tm.softmax(z))


def shift_line(c, typed):
    p = tm.softmax(Z0 + c)
    return (f"c = {typed}: every logit moved by {typed}; the largest change of any p is "
            f"{fmt(np.abs(p - P0).max())}", summary(p))         # two lines


def explorer_line(T, k, top_p, typed_T, typed_p):
    p = tm.next_token_probs(Z0, T, k, top_p)
    top = int(np.argmax(p))
    return (f"T = {typed_T}, k = {k}, p = {typed_p}: kept {int((p > 0).sum())} of 12 tokens · "
            f"most likely {tm.show(top)} with p = {fmt(p[top])} · entropy {fmt(nats(p))} nats "
            f"(uniform: {fmt(np.log(12))})")


def stepper_lines(temperatures, seed=0):
    """What the stepper says after one step at each temperature, drawing with one
    Generator seeded at reset."""
    rng, ids, lines = np.random.default_rng(seed), tm.encode(PROMPT), []
    for k, T in enumerate(temperatures, start=1):
        p = tm.next_token_probs(tm.forward(ids)[-1], T)
        nxt = int(np.argmax(p)) if T == 0 else tm.sample(p, rng)
        ids = ids + [nxt]
        lines.append(f"Step {k}: drew {tm.show(nxt)}, which had p = {fmt(p[nxt])}.")
    return lines


STEPS = stepper_lines([1.0, 0.333])

# What to do to each notebook's widgets, and what must change then. Entries are added
# notebook by notebook, as its widgets are written. The key is the notebook's file name;
# `widget` is the name in the widget root's CSS class w-<name> (box.add_class("w-<name>")).
# Actions: look(), press_slider(key="ArrowRight", times=1, nth=0), click(label),
# type_text(text, nth=0), choose(option, nth=0) (all in browser_harness). expect:
# CANVAS_CHANGES, TEXT_CHANGES, or TEXT_SHOWS (nothing need change); contains: what the
# widget must show afterwards (one text or several), compared without whitespace.
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
        Interaction("tokenizer", look(), TEXT_SHOWS, ids_line(PROMPT)),
        Interaction("tokenizer", type_text("the dog climbed the wall."), TEXT_CHANGES,
                    ids_line("the dog climbed the wall.")),
        Interaction("tokenizer", type_text("the cat jumped"), expect=TEXT_CHANGES,
                    contains="has no token for"),
    ],
    "02_embeddings.ipynb": [
        Interaction("embedding-scatter", choose("d1 go on"), expect=CANVAS_CHANGES),
        Interaction("embedding-scatter", click("add positions"), expect=CANVAS_CHANGES),
        Interaction("embedding-scatter", choose("d4 noun"), expect=TEXT_CHANGES,
                    contains="pick two different dimensions"),
    ],
    "03_qkv.ipynb": [
        Interaction("query-picker", look(), TEXT_SHOWS, query_line(5)),
        Interaction("query-picker", click("4 ed"), CANVAS_CHANGES, query_line(4)),
        Interaction("query-picker", type_text("3"), TEXT_CHANGES, query_line(3)),
        Interaction("query-picker", type_text("6"), expect=TEXT_CHANGES,
                    contains="Positions run from 1 to 5"),
    ],
    "04_mask_and_heads.ipynb": [
        Interaction("mask-heads", look(), TEXT_SHOWS, "nothing leaks"),
        Interaction("mask-heads", click("causal mask"), CANVAS_CHANGES, leak_line([0, 1])),
        Interaction("mask-heads", click("head 2"), TEXT_CHANGES, leak_line([1])),
    ],
    "05_block.ipynb": [
        Interaction("block-branches", look(), TEXT_SHOWS, block_lines()),
        Interaction("block-branches", click("attention branch"), CANVAS_CHANGES,
                    block_lines(attention_on=False)),
        Interaction("block-branches", click("MLP branch"), TEXT_CHANGES,
                    ("y = x", *block_lines(attention_on=False, mlp_on=False))),
    ],
    "06_output.ipynb": [
        Interaction("logit-playground", look(), TEXT_SHOWS, playground_line(ROOF)),
        Interaction("logit-playground", type_text("3.33"), TEXT_CHANGES,
                    playground_line(ROOF, _roof=3.33)),
        Interaction("logit-playground", choose("␣wall"), TEXT_CHANGES,
                    playground_line(WALL, _roof=3.33)),
        Interaction("logit-playground", click("Reset"), TEXT_CHANGES, playground_line(WALL)),
        Interaction("logit-playground", press_slider("ArrowRight", times=5), expect=CANVAS_CHANGES),
        Interaction("logit-playground", type_text("1e6"), expect=TEXT_CHANGES,
                    contains="between -1000 and 1000"),
        Interaction("logit-shift", look(), TEXT_SHOWS, shift_line(0.0, "0")),
        Interaction("logit-shift", type_text("3.33"), TEXT_CHANGES, shift_line(3.33, "3.33")),
        Interaction("logit-shift", press_slider("PageUp"), expect=CANVAS_CHANGES),
        Interaction("logit-shift", type_text("abc"), expect=TEXT_CHANGES, contains="is not a number"),
        Interaction("attention-switch", look(), TEXT_SHOWS, "attention on: " + summary(P0)),
        Interaction("attention-switch", click("attention on"), CANVAS_CHANGES,
                    "attention off: " + summary(tm.run(PROMPT, attention_on=False)["p"][-1])),
        Interaction("tying-switch", look(), TEXT_SHOWS, "own W_U: " + summary(P0)),
        Interaction("tying-switch", click("own W_U"), CANVAS_CHANGES,
                    "tied: W_U = Eᵀ: " + summary(tm.run(PROMPT, tied=True)["p"][-1])),
        Interaction("tying-switch", type_text("the zebra"), expect=TEXT_CHANGES, contains="no token for"),
    ],
    "07_generation.ipynb": [
        Interaction("temperature", look(), TEXT_SHOWS, explorer_line(1.0, 12, 1.0, "1", "1")),
        Interaction("temperature", type_text("0.333"), TEXT_CHANGES,
                    explorer_line(0.333, 12, 1.0, "0.333", "1")),
        Interaction("temperature", type_text("0.333", nth=2), TEXT_CHANGES,
                    explorer_line(0.333, 12, 0.333, "0.333", "0.333")),
        Interaction("temperature", press_slider("ArrowRight"), expect=CANVAS_CHANGES),
        Interaction("temperature", type_text("1.5", nth=2), expect=TEXT_CHANGES,
                    contains="top-p must be above 0"),
        Interaction("generate-steps", look(), TEXT_SHOWS, "Seed 0: press next token"),
        Interaction("generate-steps", click("next token"), CANVAS_CHANGES, STEPS[0]),
        Interaction("generate-steps", type_text("0.333", nth=1), expect=CANVAS_CHANGES),
        Interaction("generate-steps", click("next token"), CANVAS_CHANGES, STEPS[1]),
        Interaction("generate-steps", click("reset"), TEXT_CHANGES,
                    ("Seed 0: press next token", f"(5 of {tm.N_CTX} tokens)")),
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
    require_browser()
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
