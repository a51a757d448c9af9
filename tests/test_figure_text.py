"""Every text a figure of the course draws lies inside its figure: no title, label, tick label,
legend entry or note is cut at the picture's edge.

(a) every figure the notebooks draw: each notebook's drawing cells (those whose stored output
    holds a picture) are run here, with the cells they need before them, as the notebook
    runs them; every figure they make, static (tw.static) or live (a widget's canvas), is
    drawn and measured;
(b) the widget states in which a text changes with a control (a title naming the head, the
    query, the prompt, the drawn token, an axis naming its dimension): each state is set as
    a learner sets it, and measured as the page would show it. A change the widget only
    repaints (blitting) keeps the layout of the last full draw, so the new text is measured
    in that layout first; then in the layout a full draw gives it.

A text is measured by its window extent (`get_window_extent` after `fig.canvas.draw()`)
against the figure's bbox, with a pixel of slack. Texts are those `findobj(Text)` finds,
visible and not empty, leaving out what a draw does not draw: the contents of an invisible
artist (a hidden axes, legend entry), and tick labels of ticks outside the axis' view.
"""
import ast
import itertools
import json
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text
from widget_tools import find, output_pngs

import toy_model as tm
import toy_train as tt
import toy_widgets as tw
import toy_widgets
from toy_widgets.kit import live_canvases

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SLACK = 1.0                                     # px


# --------------------------------------------------------------------------- the measure

def drawn_texts(fig):
    """The texts a draw of fig draws: visible, not empty, inside visible artists only, and of
    an axis only the ticks it draws (those in its view; Axis._update_ticks picks them)."""
    found = []

    def visit(artist):
        if not artist.get_visible():
            return
        if isinstance(artist, Text) and artist.get_text():
            found.append(artist)
        if isinstance(artist, Axis):
            children = [artist.label, artist.offsetText, *artist._update_ticks()]
        else:
            children = artist.get_children()
        for child in children:
            visit(child)
    visit(fig)
    every = {id(t) for t in fig.findobj(Text)}
    assert all(id(t) in every for t in found)
    return found


def cut_texts(fig):
    """[(text, how it sticks out)] for each drawn text outside fig.bbox by more than SLACK."""
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    cut = []
    for t in drawn_texts(fig):
        e = t.get_window_extent(renderer)
        out = {"left": box.x0 - e.x0, "right": e.x1 - box.x1,
               "bottom": box.y0 - e.y0, "top": e.y1 - box.y1}
        out = {side: px for side, px in out.items() if px > SLACK}
        if out:
            cut.append((t, out))
    return cut


def describe(cut):
    return "; ".join(f"{t.get_text()!r} sticks out "
                     + ", ".join(f"{px:.1f} px past the {side} edge" for side, px in out.items())
                     for t, out in cut)


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
    cut = cut_texts(fig)
    assert not cut, f"{name}: {describe(cut)} (figure {fig.bbox.width:.0f} × {fig.bbox.height:.0f} px)"
    return len(drawn_texts(fig))


def test_the_measure_finds_a_title_past_the_edge():
    fig, ax = tw.new_figure(3, 2)
    ax.set_title("a title far too long for a figure three inches wide, cut at both edges")
    FigureCanvasAgg(fig).draw()
    (text, out), = cut_texts(fig)
    assert text is ax.title and set(out) == {"left", "right"} and out["right"] > 50
    with pytest.raises(AssertionError, match=r"'a title far .*' sticks out .* px past the left edge"):
        measure(fig, "a test figure")
    ax.set_title("short")
    assert measure(fig, "a test figure") > 5                # the title and the tick labels


# --------------------------------------------------------------------------- (a) the notebooks

def _scan(statement, stored, modules):
    """(names statement reads before the cell stores them, names it stores or changes)."""
    reads, writes = set(), set()
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        writes.add(statement.name)
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                if node.id not in stored:
                    reads.add(node.id)
            elif not isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
                writes.add(node.id)                  # (a function's own names are its own)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            writes |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            root = node
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name):
                writes.add(root.id)                  # x[i] = ..., x.a = ...: x changes
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id not in modules):
            writes.add(node.func.value.id)           # x.append(...): x may change
    return reads, writes


def cell_names(source, modules):
    """(names a cell reads from the cells before it, names it stores or changes)."""
    reads, stored = set(), set()
    for statement in ast.parse(source).body:
        r, w = _scan(statement, stored, modules)
        reads |= r
        stored |= w
    return reads, stored


def code_cells(path):
    """[(index, source without IPython magics, pictures in its stored output)]."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(i, "\n".join(line for line in "".join(c["source"]).splitlines()
                          if not line.lstrip().startswith("%")),
             sum(len(output_pngs(o.get("data", {}))) for o in c.get("outputs", [])))
            for i, c in enumerate(cells) if c["cell_type"] == "code"]


def cells_to_run(cells):
    """The drawing cells (a picture in their stored output) and, before them, every cell
    that stores or changes a name one of them (or a cell they need) reads, in order."""
    sources = [s for _, s, _ in cells]
    modules = {a.asname or a.name for s in sources for node in ast.walk(ast.parse(s))
               if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
    names = [cell_names(s, modules) for s in sources]
    needed, chosen = set(), []
    for k in reversed(range(len(cells))):
        reads, writes = names[k]
        if cells[k][2] or writes & needed:
            chosen.append(k)
            needed |= reads
    return [cells[k] for k in reversed(chosen)]


DRAWING = {path.stem: path for path in sorted(NOTEBOOKS.glob("*.ipynb"))
           if any(pictures for _, _, pictures in code_cells(path))}


def test_the_notebooks_that_draw_are_all_here():
    assert set(DRAWING) >= {p.stem for p in NOTEBOOKS.glob("*.ipynb")} - {"01_tokens"}


def test_the_cells_picked_are_those_the_drawing_cells_need():
    cells = [(0, "import numpy as np\nimport toy_model as tm", 0), (1, "slow = tt.train()", 0),
             (2, "r = tm.run('the')\nrows = []", 0), (3, "rows.append(1)", 0),
             (4, "def f(a):\n    return tw.static(a, rows)", 0), (5, "x = np.ones(2)", 0),
             (6, "fig = f(r)", 1)]
    assert [k for k, _, _ in cells_to_run(cells)] == [0, 2, 3, 4, 6]


@pytest.mark.parametrize("name", sorted(DRAWING))
def test_every_figure_a_notebook_draws_keeps_its_text_inside(name, monkeypatch):
    monkeypatch.chdir(NOTEBOOKS)                 # each notebook runs in its own folder
    static, original = [], toy_widgets.draw.static
    modules = [toy_widgets] + [getattr(toy_widgets, m) for m in toy_widgets.MODULES]
    for module in modules:                       # tw.static, and modules that imported it
        if getattr(module, "static", None) is original:
            monkeypatch.setattr(module, "static", static.append)
    namespace = {"__name__": "__main__"}
    measured = 0
    for index, source, pictures in cells_to_run(code_cells(DRAWING[name])):
        before, static[:] = set(plt.get_fignums()), []
        exec(compile(source, f"{name}.ipynb, cell {index}", "exec"), namespace)
        live = [plt.figure(n) for n in plt.get_fignums() if n not in before]
        figures = static + live
        if pictures:
            assert len(figures) >= pictures, f"{name} cell {index} stores {pictures} pictures"
        for k, fig in enumerate(figures):
            kind = f"the live figure w-{fig._course_name}" if fig in live else f"static figure {k + 1}"
            measured += measure(fig, f"{name}.ipynb cell {index}, {kind}")
    assert measured > 20


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
                  for h, m in [*itertools.product(["both", "head 1", "head 2"], [True, False]),
                               ("both", False), ("both", True)]]


def query_picker_states():
    root = tw.query_picker()
    pick = find(root, widgets.ToggleButtons)[0]
    return root, [(f"query {i}", lambda i=i: setattr(pick, "value", i)) for i in range(1, 6)]


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
    return root, [setter(0, 3, True), setter(1, 2, True), setter(2, 0, True), setter(3, 1, True),
                  setter(3, 1, False), setter(1, 3, False)]


def switch_states(builder):
    def states():
        root = getattr(tw, builder)()
        toggle, prompt = find(root, widgets.ToggleButton)[0], find(root, widgets.Text)[0]
        return root, [state(f"prompt {t!r}, switch {'on' if on else 'off'}", (prompt, t), (toggle, on))
                      for t in ["the dog climbed the wall. the", "the cat"] for on in (True, False)]
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
    steps = [(f"step {k}", step.click) for k in range(1, 8)]
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
