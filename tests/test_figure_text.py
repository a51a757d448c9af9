"""Every text a figure of the course draws lies inside its figure: no title, label, tick label,
legend entry or note is cut at the picture's edge (the measure: tools/figure_probe.py).

The figures the notebooks store are measured by tools/run_notebooks.py as it stores them (it
refuses a notebook with a cut text); here, the measure itself, and the widget states in
which a text changes with a control (a title naming the head, the query, the prompt, the
drawn token, an axis naming its dimension): each state is set as a learner sets it, and
measured as the page would show it. A change the widget only repaints (blitting) keeps the
layout of the last full draw, so the new text is measured in that layout first; then in
the layout a full draw gives it.
"""
import sys
from pathlib import Path

import ipywidgets as widgets
import nbformat
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from widget_tools import find

import toy_model as tm
import toy_widgets as tw
from toy_widgets.kit import live_canvases

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from figure_probe import cut_texts, describe, drawn_texts  # noqa: E402  (tools/ is not a package)
from run_notebooks import CutFigure, refuse_cut_figures  # noqa: E402


def canvas_of(fig):
    """A static figure (draw.new_figure) has no canvas that draws: give it the Agg canvas
    tw.static draws it with. A live figure keeps its ipympl canvas."""
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    return fig.canvas


def measure(fig, name, draw=True):
    """Draw fig (unless draw=False: measure it in the layout it has), and fail naming every
    text that sticks out of it. Returns how many texts were measured."""
    canvas = canvas_of(fig)
    if draw:
        canvas.draw()
    cut = cut_texts(fig, canvas.get_renderer())
    assert not cut, f"{name}: {describe(cut)} (figure {fig.bbox.width:.0f} × {fig.bbox.height:.0f} px)"
    return len(drawn_texts(fig))


def test_the_measure_finds_a_title_past_the_edge():
    fig, ax = tw.new_figure(3, 2)
    ax.set_title("a title far too long for a figure three inches wide, cut at both edges")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    (text, out), = cut_texts(fig, canvas.get_renderer())
    assert text is ax.title and set(out) == {"left", "right"} and out["right"] > 50
    with pytest.raises(AssertionError, match=r"'a title far .*' sticks out .* px past the left edge"):
        measure(fig, "a test figure")
    ax.set_title("short")
    assert measure(fig, "a test figure") > 5                # the title and the tick labels


def test_run_notebooks_refuses_a_cut_figure_and_an_unmeasured_picture():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("draw()", outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"})])])
    fine = {"problem": None, "figures": [{"kind": "picture", "size": [640, 480], "texts": 9, "cut": ""}]}
    refuse_cut_figures(Path("a.ipynb"), notebook, {0: fine})
    cut = {"problem": None, "figures": [{**fine["figures"][0], "cut": "'title' sticks out"}]}
    with pytest.raises(CutFigure, match=r"a\.ipynb: not stored: cell 0, picture \(640 × 480 px\): 'title'"):
        refuse_cut_figures(Path("a.ipynb"), notebook, {0: cut})
    with pytest.raises(CutFigure, match="shows 1 pictures, 0 were measured"):
        refuse_cut_figures(Path("a.ipynb"), notebook, {0: {"problem": None, "figures": []}})


# --------------------------------------------------------------------------- (b) widget states

def watch_full_draws(fig):
    """Record the canvas's requests for a full draw (draw_idle), which a page answers by
    drawing the figure whole; a change without one is only repainted (blitted)."""
    asked = []
    fig.canvas.draw_idle = lambda *args, **kwargs: asked.append(True)
    return asked


def visit_states(root, name, states):
    """Set each state (label, function) in turn, and measure the widget's figure as the page
    shows it: in the last full draw's layout if the widget only repainted, and after a
    full draw. Returns how many texts were measured."""
    (canvas,) = live_canvases(root)
    fig = canvas.figure
    asked = watch_full_draws(fig)
    measured = measure(fig, f"{name}, first state")     # the page's first draw
    for label, set_state in states:
        asked.clear()
        set_state()
        if not asked:                                    # repainted in the old layout
            measured += measure(fig, f"{name}, {label} (repainted)", draw=False)
        measured += measure(fig, f"{name}, {label}")
    return measured


def state(label, *settings):
    """A widget state: its label, and a function setting each (control, value) in turn."""
    def set_state():
        for control, value in settings:
            control.value = value
    return label, set_state


def mask_and_heads_states():
    root = tw.mask_and_heads()
    mask, show = find(root, widgets.ToggleButton)[0], find(root, widgets.ToggleButtons)[0]
    # the mask switched alone under each choice of heads (a repaint), then one head to both
    return root, [state(f"mask {'on' if m else 'off'}, show {h}", (show, h), (mask, m))
                  for h, m in [("head 2", True), ("both", False)]]


def query_picker_states():
    root = tw.query_picker()
    pick = find(root, widgets.ToggleButtons)[0]
    return root, [(f"query {i}", lambda i=i: setattr(pick, "value", i)) for i in (1, 5)]


def embedding_scatter_states():
    root = tw.embedding_scatter()
    x_dim, y_dim = find(root, widgets.Dropdown)
    positions = find(root, widgets.ToggleButton)[0]

    def setter(dx, dy, on):
        def set_state():
            y_dim.value = next(j for j in range(4) if j not in (x_dim.value, dx))
            x_dim.value, y_dim.value, positions.value = dx, dy, on
        return (f"d{dx + 1} against d{dy + 1}, positions {'on' if on else 'off'}", set_state)
    # each dimension's label on each axis, the title with and without the rows of X
    return root, [setter(3, 1, True), setter(1, 3, False)]


def switch_states(builder):
    def states():
        root = getattr(tw, builder)()
        toggle, prompt = find(root, widgets.ToggleButton)[0], find(root, widgets.Text)[0]
        return root, [state(f"prompt {t!r}, switch {'on' if on else 'off'}", (prompt, t), (toggle, on))
                      for t, on in [("the dog climbed the wall. the", False), ("the cat", True)]]
    return states


def logit_playground_states():
    root = tw.logit_playground()
    pick, typed = find(root, widgets.Dropdown)[0], find(root, widgets.Text)[0]
    eot, stop = tm.VOCAB.index("<|endoftext|>"), tm.VOCAB.index(".")
    # the longest names in both titles, and logits far outside the axis
    return root, [state("<|endoftext|> at -1000", (pick, eot), (typed, "-1000")),
                  state("<|endoftext|> at 1000", (typed, "1000")),
                  state("'.' at -12.345", (pick, stop), (typed, "-12.345"))]


def logit_shift_states():
    root = tw.logit_shift()
    typed = find(root, widgets.Text)[0]
    return root, [state(f"c = {c}", (typed, c)) for c in ["-1000", "999.99", "-3.33"]]


def generation_stepper_states():
    root = tw.generation_stepper(prompt="the", temperature=1, seed=18)
    step = next(w for w in find(root, widgets.Button) if w.description == "next token")
    t_box = find(root, widgets.FloatText)[0]
    prompt = find(root, widgets.Text)[0]
    steps = [("step 1", step.click)]
    return root, steps + [("T = 0.25", lambda: setattr(t_box, "value", 0.25)),
                          ("the prompt ends the text",
                           lambda: setattr(prompt, "value", "the cat<|endoftext|>")),
                          ("the longest text and token",                  # 7 tokens + one
                           lambda: (setattr(prompt, "value", "the dog climbed the floor. the"),
                                    step.click()))]


STATES = {"w-mask-heads": mask_and_heads_states, "w-query-picker": query_picker_states,
          "w-embedding-scatter": embedding_scatter_states,
          "w-attention-switch": switch_states("attention_switch"),
          "w-tying-switch": switch_states("tying_switch"),
          "w-generate-steps": generation_stepper_states,
          "w-logit-playground": logit_playground_states, "w-logit-shift": logit_shift_states}


@pytest.mark.parametrize("name", STATES)
def test_every_state_of_a_widget_keeps_its_text_inside(name):
    root, states = STATES[name]()
    assert name in root._dom_classes
    assert visit_states(root, name, states) > 20 * len(states)
