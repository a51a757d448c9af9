"""Every notebook as a class meets it, in JupyterLab in a real browser (Debian's Chromium).

One JupyterLab and one Chromium serve the whole run (tests/conftest.py), and each
notebook is run once in it, in one of two pages that work at the same time
(tests/browser_tabs.py: a visit is half waiting). First each notebook is opened as a
fresh clone shows it, nothing run: each widget output shows its stored picture (or HTML form)
with a visible line saying how to make it live, never the widget's raw text or an
error; no stored plot is empty; and opening changes nothing: no notebook is marked
modified, and after an autosave (every AUTOSAVE_INTERVAL s here) the files on disk are
the same bytes. Then each notebook in turn (tests/browser_visit.py does the steps):

- Run All: every code cell ran, no cell shows an error, every widget rendered;
- at a projector's 1366 x 768 with scrollbars showing, in Presentation Mode and at 125 %
  zoom: nothing is wider than its column, and the widgets' text is at least 14 px and
  grows in Presentation Mode;
- INTERACTIONS: each widget reacts (its plot's pixels or its text change) and shows what
  the model computes, here in Python, after Run All, after Reset, after a typed value;
- FRAMES: a live plot pressed one key at a time draws, after each press, the picture of
  that value (the same value reached from below and from above draws the same frame, and
  the text after each press says that value), not only after the last press;
- a teacher's way of saving, shutting the kernel down and closing (ORDERS), then
  reopening: every widget output shows the widget, its saved state or its picture, never
  "Error displaying widget" or "model not found"; and a plot that came back is drawn.

Screenshots of what failed go to tests/screenshots/ (not committed); of every step with
COURSE_SCREENSHOTS=1. Needs /usr/bin/chromium-headless-shell: without it
the browser tests are skipped, except with CI=true, where they fail.
"""

from pathlib import Path

import numpy as np
import pytest

import toy_induction as ti
import toy_model as tm
import toy_widgets as tw

# What the page must show is the line the kernel makes (the widgets' tests check its content):
summary = tw.p_summary
from browser_tabs import Tabs
from browser_widgets import (
    CANVAS_CHANGES,
    MARKUP_CHANGES,
    TEXT_CHANGES,
    TEXT_SHOWS,
    Interaction,
    choose,
    click,
    look,
    press_slider,
    type_text,
)
from browser_visit import (
    COURSE_NOTEBOOKS,
    PROJECTOR,
    SELF_TEST_NOTEBOOK,
    Visit,
    close_tab,
    first_open_all,
    notebook_path,
    visit_notebook,
)
from widget_tools import nats, open_weights_by_hand

# --- What the widgets must show, from the model (numbers formatted as the course does)

PROMPT = "the cat climbed the"
RUN = tm.intermediates(PROMPT)
Z0 = RUN["logits"][-1]
P0 = tm.softmax(Z0)
ROOF, WALL = tm.VOCAB.index(" roof"), tm.VOCAB.index(" wall")
fmt = tw.fmt


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
    weights = open_weights_by_hand(PROMPT)                # written out in the test, not forward's
    leak, h, i = max((np.triu(weights[h], k=1).sum(axis=1)[i], h, i)
                     for h in heads for i in range(len(RUN["tokens"])))
    return (f"With the mask off, row {i + 1} ({RUN['tokens'][i]}) puts {fmt(leak)} of its "
            f"weight on future tokens (head {h + 1}).")


def block_lines(attention_on=True, mlp_on=True):
    params = tm.PARAMS if attention_on else tm.switch_off(tm.PARAMS, "attn")
    r = tm.intermediates(PROMPT, params=params if mlp_on else tm.switch_off(params, "mlp"))
    best = int(np.argmax(r["p"][-1]))
    return (*(fmt(v) for v in r["y"][-1]),
            f"most likely next: {tw.TOKENS[best]} ({fmt(r['p'][-1][best])})")


def playground_line(j, **changed):
    z = Z0.copy()
    for token, value in changed.items():
        z[tm.VOCAB.index(token.replace("_", " "))] = value
    return f"logit of {tw.TOKENS[j]}: {fmt(z[j])} · " + summary(tm.softmax(z))


def shift_line(c, typed):
    p = tm.softmax(Z0 + c)
    return (f"c = {typed}: every logit moved by {typed}; the largest change of any p is "
            f"{fmt(np.abs(p - P0).max())}", summary(p))         # two lines


def explorer_line(T, k, top_p, typed_T, typed_p):
    p = tm.next_token_probs(Z0, T, k, top_p)
    top = int(np.argmax(p))
    return (f"T = {typed_T}, k = {k}, p = {typed_p}: kept {int((p > 0).sum())} of 12 tokens · "
            f"most likely {tm.token_name(top)} with p = {fmt(p[top])} · entropy {fmt(nats(p))} nats "
            f"(uniform: {fmt(np.log(12))})")


def stepper_lines(temperatures, seed=0, prompt=PROMPT):
    """What the stepper says after one step at each temperature, drawing with one
    Generator seeded at reset."""
    rng, ids, lines = np.random.default_rng(seed), tm.encode(prompt), []
    for k, T in enumerate(temperatures, start=1):
        p = tm.next_token_probs(tm.forward(ids)[-1], T)
        nxt = int(np.argmax(p)) if T == 0 else tm.sample(p, rng)
        ids = ids + [nxt]
        lines.append(f"Step {k}: drew {tm.token_name(nxt)}, which had p = {fmt(p[nxt])}.")
    return lines


STEPS = stepper_lines([1.0, 0.333], seed=18, prompt="the")     # as notebook 07 builds it

# Lab 10's widgets show the model trained live in the browser's kernel; the numbers expected
# come from the shipped checkpoint of that same run, on the row notebook 10 shows.
COPIER = ti.load_copy_model()
ROW = ti.repeat_rows(3, 1, filler_first=True)


def head_line(layer):
    scores = ti.head_scores(COPIER, 1, *ROW)
    return (f"block {layer + 1}'s head: previous-token score {tw.fmt(scores['previous'][layer][0], 2)}"
            f" (its weight on i − 1), induction score {tw.fmt(scores['induction'][layer][0], 2)}")


def switched_line(layer):
    loss = ti.copy_losses(ti.ablate(COPIER, layer, 0, 1), 1, *ROW)[1]
    return f"second copy: {tw.fmt(loss, 2)} nats (block {layer + 1}'s head off)"


def all_on_line():
    return f"second copy: {tw.fmt(ti.copy_losses(COPIER, 1, *ROW)[1], 2)} nats (all heads on)"


# The replay starts where the live run's fall begins: the live run is the sweep's seed.
FALL = next(r["fall"] for r in ti.load_copy_sweep()["runs"] if r["setting"] == "two blocks" and r["seed"] == ti.COPY_SEED)

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
        Interaction("logit-shift", look(), TEXT_SHOWS, shift_line(10.0, "10")),      # the page's start, c = 10
        Interaction("logit-shift", type_text("3.33"), TEXT_CHANGES, shift_line(3.33, "3.33")),
        Interaction("logit-shift", press_slider("PageUp"), expect=CANVAS_CHANGES),
        Interaction("logit-shift", type_text("abc"), expect=TEXT_CHANGES, contains="is not a number"),
        Interaction("attention-switch", look(), TEXT_SHOWS, "attention on: " + summary(P0)),
        Interaction("attention-switch", click("attention on"), CANVAS_CHANGES,
                    "attention off: " + summary(tm.intermediates(PROMPT, params=tm.switch_off(tm.PARAMS, "attn"))["p"][-1])),
        Interaction("tying-switch", look(), TEXT_SHOWS, "own W_U: " + summary(P0)),
        Interaction("tying-switch", click("own W_U"), CANVAS_CHANGES,
                    "tied: W_U = Eᵀ: " + summary(tm.intermediates(PROMPT, params=tm.tie(tm.PARAMS))["p"][-1])),
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
        Interaction("generate-steps", look(), TEXT_SHOWS, "Seed 18: press next token"),
        Interaction("generate-steps", click("next token"), CANVAS_CHANGES, STEPS[0]),
        Interaction("generate-steps", type_text("0.333", nth=1), expect=CANVAS_CHANGES),
        Interaction("generate-steps", click("next token"), CANVAS_CHANGES, STEPS[1]),
        Interaction("generate-steps", click("reset"), TEXT_CHANGES,
                    ("Seed 18: press next token", f"(1 of {tm.N_CTX} tokens)")),
        Interaction("generate-steps", type_text("abc", nth=2), expect=TEXT_CHANGES,
                    contains="is not a number: type the seed as a whole number"),
    ],
    "10_induction.ipynb": [
        Interaction("copy-training", look(), TEXT_SHOWS, f"done: {ti.STEPS} steps"),
        Interaction("head-explorer", look(), TEXT_SHOWS, head_line(1)),
        Interaction("head-explorer", click("block 1's head"), CANVAS_CHANGES, head_line(0)),
        Interaction("head-switches", look(), TEXT_SHOWS, switched_line(0)),        # the page starts with it off
        Interaction("head-switches", click("block 1's head"), CANVAS_CHANGES, all_on_line()),
        Interaction("head-switches", click("block 2's head"), CANVAS_CHANGES, switched_line(1)),
        Interaction("training-replay", press_slider("ArrowLeft"), CANVAS_CHANGES, f"step {FALL - 50}:"),
    ],
}


# A live plot pressed one key at a time (frames_of_presses): the keys go to the nth slider
# of the widget; a value met twice in the sequence must draw the same frame both times.
FRAMES: dict[str, list[tuple[str, list[str], int]]] = {
    "widget_demo.ipynb": [("one-bar", ["ArrowRight", "ArrowRight", "ArrowLeft"], 0)],
    "06_output.ipynb": [("logit-playground", ["ArrowLeft", "ArrowLeft", "ArrowRight"], 0),
                        ("logit-shift", ["ArrowRight", "ArrowRight", "ArrowLeft"], 0)],
    "07_generation.ipynb": [("temperature", ["ArrowRight", "ArrowRight", "ArrowLeft"], 0)],
}

# How the teacher ends a rehearsal before reopening the notebook. The two the classroom
# rehearsal found broken are fixed to their notebooks; the others take turns.
ORDERS = ["save, close, shut down", "shut down, close, answer Save",
          "close, answer Save, kernel still running"]
ORDER_OF = {"06_output.ipynb": ORDERS[1], "07_generation.ipynb": ORDERS[0]}


def order_for(notebook: Path) -> str:
    return ORDER_OF.get(notebook.name, ORDERS[COURSE_NOTEBOOKS.index(notebook) % len(ORDERS)]
                        if notebook in COURSE_NOTEBOOKS else ORDERS[0])


def _cost(notebook: Path) -> int:
    """Roughly how long a visit takes, in widget actions: the longest go first."""
    return len(INTERACTIONS.get(notebook.name, [])) + 3 * len(FRAMES.get(notebook.name, []))


@pytest.fixture(scope="module")
def tabs(lab, browser, request) -> Tabs:
    """The module's browser work, shared by two pages at once (tests/browser_tabs.py): they
    take the notebooks from one queue, the longest visit first. Each course notebook is
    first opened fresh, nothing run, and looked at (first_open_all), then visited in the
    same tab (visit_notebook), as the tests selected ask; once, whichever test asks first."""
    asked = [item.callspec.params for item in request.session.items
             if getattr(item, "module", None) is request.module and hasattr(item, "callspec")]
    visits = {params["visit"] for params in asked if "visit" in params}
    wanted = visits | {params["notebook"] for params in asked if "notebook" in params}

    def job(page, nb: Path) -> dict:
        done = {"fresh": first_open_all(lab, page, [nb])[nb.name] if nb in COURSE_NOTEBOOKS else None}
        if nb in visits:
            done["visit"] = visit_notebook(lab, page, nb, INTERACTIONS.get(nb.name, []),
                                           FRAMES.get(nb.name, []), order_for(nb))
        else:
            close_tab(page, notebook_path(nb), "Discard")
            lab.shut_down_sessions(notebook_path(nb))
        return done

    own = [[("comms", lambda page: page.evaluate(
        "() => window.jupyterapp.serviceManager.kernels.commsOverSubshells"))], []]
    shared = [(nb.name, lambda page, nb=nb: job(page, nb))
              for nb in sorted(ALL, key=_cost, reverse=True) if nb in wanted]
    tabs = Tabs(browser, lab, PROJECTOR, own, shared)
    yield tabs
    tabs.close()


class _Fresh:
    """What opening each notebook fresh found, by notebook name, once that is done."""

    def __init__(self, tabs: Tabs):
        self.tabs = tabs

    def __getitem__(self, name: str) -> dict[str, list[str]]:
        return self.tabs.result(name)["fresh"]


@pytest.fixture
def fresh(tabs) -> _Fresh:
    """Every course notebook opened as a fresh clone shows it (nothing run)."""
    return _Fresh(tabs)


@pytest.fixture
def visit(request, tabs) -> Visit:
    """One notebook run through, as the module docstring says; what each step found."""
    return tabs.result(request.param.name)["visit"]


def _ids(path):
    return path.stem


ALL = [*COURSE_NOTEBOOKS, SELF_TEST_NOTEBOOK]
course = pytest.mark.parametrize("notebook", COURSE_NOTEBOOKS, ids=_ids)
every = pytest.mark.parametrize("visit", ALL, ids=_ids, indirect=True)
taught = pytest.mark.parametrize("visit", COURSE_NOTEBOOKS, ids=_ids, indirect=True)


def _assert_none(found: list[str], what: str):
    assert not found, what + ":\n  " + "\n  ".join(found)


@pytest.mark.browser
def test_widget_messages_are_handled_in_the_kernels_main_thread(tabs):
    """JupyterLab can send widget messages to a kernel subshell, a second thread that
    runs them while a cell runs in the first. Matplotlib is not thread-safe: two figures
    drawn at once can fail inside FreeType ("raster overflow"). The course's settings
    (tools/lab_settings) turn that off; this reads what the page really uses."""
    mode = tabs.result("comms")
    assert mode == "disabled", f"widget messages go to kernel subshells ({mode!r})"


@pytest.mark.browser
@course
def test_opened_fresh_shows_pictures_and_no_widget_text(fresh, notebook):
    _assert_none(fresh[notebook.name]["shown"], f"{notebook.name}, opened fresh")


@pytest.mark.browser
@course
def test_each_picture_says_it_is_a_picture_and_how_to_make_it_live(fresh, notebook):
    _assert_none(fresh[notebook.name]["note"], f"{notebook.name}, opened fresh")


@pytest.mark.browser
@course
def test_no_stored_plot_is_empty(fresh, notebook):
    _assert_none(fresh[notebook.name]["empty"], f"{notebook.name}, opened fresh")


@pytest.mark.browser
@course
def test_opening_changes_nothing_even_after_an_autosave(fresh, notebook):
    _assert_none(fresh[notebook.name]["modified"], f"{notebook.name}, opened and left alone")


@pytest.mark.browser
@every
def test_run_all_runs_every_cell_without_error(visit):
    _assert_none(visit.found["run"], f"{visit.name}, Run All")


@pytest.mark.browser
@taught
def test_every_figure_fits_its_column_at_a_projectors_size_presentation_mode_and_zoom(visit):
    _assert_none(visit.found["fit"], f"{visit.name}, after Run All")


@pytest.mark.browser
@taught
def test_widget_text_is_at_least_14_px_and_grows_in_presentation_mode(visit):
    _assert_none(visit.found["text"], f"{visit.name}, after Run All")


@pytest.mark.browser
@every
def test_widgets_react_and_show_the_models_numbers(visit):
    _assert_none(visit.found["react"], f"{visit.name}, widgets")


@pytest.mark.browser
@every
def test_each_key_press_draws_its_own_value(visit):
    _assert_none(visit.found["frames"], f"{visit.name}, key presses one at a time")


@pytest.mark.browser
@taught
def test_reopened_after_a_teachers_save_and_shut_down_no_widget_errors(visit):
    _assert_none(visit.found["reopen"], f"{visit.name}, {visit.order}, reopened")


def test_interactions_and_frames_name_existing_notebooks():
    """A typo in a key would silently test nothing."""
    known = {path.name for path in ALL}
    assert set(INTERACTIONS) <= known, f"no such notebook: {set(INTERACTIONS) - known}"
    assert set(FRAMES) <= known and set(ORDER_OF) <= known
