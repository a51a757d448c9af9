"""A widget's life in a kernel: one copy per notebook cell, copies that keep working, and
nothing left behind when a cell runs again.

JupyterLab sends the id of the cell it runs with each request; `cell(...)` below plays
that part (the kernel's parent message), so these tests run the kit's own code path.
"""
import gc
import tempfile

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from ipywidgets.widgets import widget as ipywidget_module
from widget_tools import find, shown

import toy_gpt2 as tg
import toy_model as tm
import toy_train as tt
import toy_widgets as tw
from toy_widgets import kit



class Kernel:
    """The part of ipykernel the widget kit reads: the request being run, with the id of
    its notebook cell (JupyterLab sends it). (Whether a rebuild leaves anything behind is
    measured by benchmarks/rebuild_memory.py --check, which CI runs.)"""

    def __init__(self):
        self.parent, self.runs = {}, 0

    def run(self, cell_id):
        self.runs += 1
        self.parent = {"header": {"msg_id": f"run-{self.runs}"}, "metadata": {"cellId": cell_id}}

    def get_parent(self, channel=None):
        return self.parent


def builders():
    lab = tg.load_gpt2(tg.save_toy_as_gpt2(tempfile.mkdtemp()))
    made = {name: getattr(tw, name) for name in BUILDERS[:11]}
    made["lab_attention"] = lambda: tw.lab_attention(lab)
    made["train_live"] = lambda: (tw.train_live(tt.load_corpus(), steps=2, every=1), tw.train_live.panel)[1]
    made["exercise"] = lambda: tw.exercise("06.3")
    return made

BUILDERS = ["tokenizer_widget", "embedding_scatter", "query_picker", "mask_and_heads",
            "block_branches", "logit_playground", "logit_shift", "attention_switch",
            "tying_switch", "temperature_explorer", "generation_stepper", "lab_attention",
            "train_live", "exercise"]


@pytest.fixture
def kernel(monkeypatch):
    """The kernel's part the kit reads. A cell run again has the kit collect garbage
    (kit._give_memory_back): cheap in a kernel's small heap, but here about a second, with
    every earlier test's objects in the heap. Those are left out of the collections from
    here on (gc.freeze, as tests/conftest.py does with what collection made); nothing the
    tests count depends on them."""
    fake = Kernel()
    monkeypatch.setattr(kit, "running_kernel", lambda: fake)
    gc.freeze()
    try:
        yield fake
    finally:
        kit._BUILT.clear()


def live_widgets():
    return len(ipywidget_module._instances)


def test_the_cell_id_is_read_from_the_request_jupyterlab_sends(kernel):
    kernel.run("cell-a")
    assert kit._cell() == ("cell-a", "run-1")
    kernel.parent = {"header": {"msg_id": "x"}, "metadata": {}}       # nbclient sends no id
    assert kit._cell() is None


def test_without_a_kernel_there_is_no_cell():
    assert kit._cell() is None


def test_running_a_cell_again_closes_only_that_cells_old_copy(kernel):
    kernel.run("cell-1")
    first = tw.logit_playground()
    fig1 = first.chart.fig
    kernel.run("cell-2")
    other = tw.logit_shift()
    before = live_widgets()
    kernel.run("cell-1")                                  # the same cell, run again
    again = tw.logit_playground()
    assert not plt.fignum_exists(fig1.number), "the old copy's figure is closed"
    assert first.comm is None and not first.children, "the old copy's widgets are closed"
    assert not hasattr(first, "chart"), "the old copy lets go of its chart (and figure)"
    assert live_widgets() == before, "the rebuilt widget replaces the old one in the registry"
    assert other.comm is not None and plt.fignum_exists(other.charts["p"].fig.number)
    assert again.comm is not None


def test_a_second_copy_in_another_cell_leaves_the_first_one_working(kernel):
    kernel.run("cell-a")
    a = tw.logit_playground()
    kernel.run("cell-b")
    b = tw.logit_playground("the dog climbed the")
    assert plt.fignum_exists(a.chart.fig.number) and plt.fignum_exists(b.chart.fig.number)
    slider = find(a, widgets.FloatSlider)[0]
    drawn = []
    a.chart.fig.canvas.mpl_connect("draw_event", lambda e: drawn.append(e))
    slider.value = 5.0
    z = tm.intermediates("the cat climbed the")["logits"][-1].copy()
    z[tm.VOCAB.index(" roof")] = 5.0
    assert np.allclose(shown(a.chart), tm.softmax(z)), "a's plot follows its own slider"
    assert np.allclose(shown(b.chart), tm.softmax(tm.intermediates("the dog climbed the")["logits"][-1]))
    assert a.comm is not None and a.chart.fig.canvas.comm is not None


def test_two_copies_built_by_one_run_of_a_cell_both_stay(kernel):
    kernel.run("cell-a")
    a, b = tw.logit_playground(), tw.logit_playground("the dog climbed the")
    assert a.comm is not None and b.comm is not None and hasattr(a, "chart")


def test_exercise_boxes_are_closed_when_their_cell_runs_again(kernel):
    kernel.run("cell-x")
    tw.exercise("06.3")
    count = live_widgets()
    for _ in range(5):
        kernel.run("cell-x")
        tw.exercise("06.3")
    assert live_widgets() == count


@pytest.fixture(scope="module")
def made():
    return builders()


@pytest.mark.parametrize("name", BUILDERS)
def test_a_drawn_live_figure_is_not_left_stale(made, name, capsys):
    """A figure still marked stale once drawn is drawn again by a kernel in interactive mode
    (%matplotlib widget), and again, for as long as the notebook is open: the kernel
    never rests, and a frame goes to the page ten times a second. An animated artist
    whose parts are not animated (a legend moves its boxes as it draws) does that."""
    before = set(plt.get_fignums())
    made[name]()
    figures = [plt.figure(n) for n in sorted(set(plt.get_fignums()) - before)]
    for fig in figures:
        fig.canvas.draw()
        kit.redraw(fig)                                     # the widgets' repaint after a change
        assert not fig.stale, f"{name}: figure {getattr(fig, '_course_name', '?')} is stale " \
                              "after a draw; an interactive kernel would draw it forever"
