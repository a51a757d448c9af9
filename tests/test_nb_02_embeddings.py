"""Notebook 02 (Embeddings): the scatter widget and its plot helper, without a browser: the
widget and the page's picture draw the same rings, every label stays next to its dot; and
Going further's claim about positions."""
import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import toy_model as tm
import toy_widgets as tw

TEXT = "the cat climbed the"
NB02 = Path(__file__).resolve().parents[1] / "notebooks" / "02_embeddings.ipynb"

def _parts(panel):
    controls, canvas, area = panel.children[:3]           # then the course style
    x_dim, y_dim, positions = controls.children
    ax = canvas.figure.axes[0]
    dots, rings = ax.collections
    return x_dim, y_dim, positions, ax, dots, rings, area


def _labels(ax):
    return [t.get_text() for t in ax.texts if t.get_text()]


def test_starts_with_the_12_embeddings_in_d3_and_d4():
    panel = tw.embedding_scatter()
    assert "w-embedding-scatter" in panel._dom_classes
    x_dim, y_dim, positions, ax, dots, rings, area = _parts(panel)
    np.testing.assert_array_equal(dots.get_offsets(), tm.PARAMS["wte"][:, [2, 3]])
    assert not rings.get_visible()
    assert ax.get_xlabel() == "d3 (ending)" and ax.get_ylabel() == "d4 (noun)"
    assert area.value == ""


def test_changing_a_dimension_moves_the_points_and_relabels_the_axis():
    panel = tw.embedding_scatter()
    x_dim, y_dim, positions, ax, dots, rings, area = _parts(panel)
    x_dim.value = 0
    np.testing.assert_array_equal(dots.get_offsets(), tm.PARAMS["wte"][:, [0, 3]])
    assert ax.get_xlabel() == "d1 (go on)"
    # coinciding points share one label instead of overprinting
    assert ", ".join(map(tw.tick_label, ["␣cat", "␣dog", "ed"])) in _labels(ax)
    assert len(ax.collections) == 2   # moved in place, nothing added


def test_same_dimension_twice_gives_a_sentence_and_keeps_the_plot():
    panel = tw.embedding_scatter()
    x_dim, y_dim, positions, ax, dots, rings, area = _parts(panel)
    before = dots.get_offsets().copy()
    x_dim.value = 3
    assert "pick two different dimensions" in area.value
    np.testing.assert_array_equal(dots.get_offsets(), before)
    y_dim.value = 2
    assert area.value == ""
    np.testing.assert_array_equal(dots.get_offsets(), tm.PARAMS["wte"][:, [3, 2]])


@pytest.mark.parametrize("dx, dy", [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)])
def test_static_plot_helper_labels_every_token_once(dx, dy):
    fig, ax = tw.new_figure(6.0, 4.6)
    tw.embedding_scatter_plot(ax, dx=dx, dy=dy)
    lines = [line for label in _labels(ax) for line in label.split("\n")]
    assert not [line for line in lines if line.endswith(",")], "a wrapped label's line ends in a comma"
    names = [name for line in lines for name in line.split(", ")]
    assert tw.tick_label(".") not in lines, "the full stop alone on a line is a speck"
    names = [tw.tick_label(".") if name == f"{tw.tick_label('.')} (full stop)" else name for name in names]
    # each token by its whole name, once (␣ drawn bold, "." quoted, named when alone on a line)
    assert sorted(names) == sorted(tw.tick_label(t) for t in tw.TOKENS)


def test_bad_input_gets_one_sentence():
    """A control set from code (a bad text to the builder: test_bad_input_fuzz.py)."""
    panel = tw.embedding_scatter()
    x_dim, y_dim, positions, ax, dots, rings, area = _parts(panel)
    x_dim.value = None                              # set from code: refused, put back
    assert "Pick one of the x axis options" in area.value
    assert x_dim.value == 2
    np.testing.assert_array_equal(dots.get_offsets(), tm.PARAMS["wte"][:, [2, 3]])
    positions.value = True
    assert area.value == "" and rings.get_visible()


def test_02_the_widget_and_the_picture_draw_the_same_rings():
    x_dim, y_dim, positions, ax, dots, rings, area = _parts(tw.embedding_scatter())
    x_dim.value = 1                                       # x axis: d2, as in the picture
    positions.value = True
    fig, ax = tw.new_figure()
    tw.embedding_scatter_plot(ax, dx=1, dy=3, rows_of=TEXT)
    np.testing.assert_array_equal(rings.get_offsets(), ax.collections[1].get_offsets())


@pytest.mark.parametrize("dx, dy", [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)])
@pytest.mark.parametrize("rows_of", [None, TEXT])
def test_02_every_label_stays_next_to_its_dot(dx, dy, rows_of):
    """A label that would run into its neighbour goes onto several lines, centred on its
    dot's height, rather than up and away from its dot: every label starts just right of
    its dot, its box reaches within a few points of the dot's height, and no other dot is
    nearer to it; no line holds the full stop alone, where its quotes and dot are specks."""
    fig, ax = tw.new_figure(6.0, 4.6)
    tw.embedding_scatter_plot(ax, dx=dx, dy=dy, rows_of=rows_of)
    notes = [t for t in ax.texts if t.get_text() and t.get_color() != tw.VERMILION]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    pt = fig.dpi / 72                                            # pixels per point
    dots = ax.transData.transform(tm.PARAMS["wte"][:, [dx, dy]])
    for note in notes:
        box = note.get_window_extent(canvas.get_renderer())
        x, y = ax.transData.transform(note.xy)
        assert 3 * pt <= box.x0 - x <= 8 * pt, note.get_text()
        assert box.y0 - 6 * pt <= y <= box.y1 + 6 * pt, note.get_text()

        def away(d):
            return np.hypot(max(box.x0 - d[0], 0, d[0] - box.x1), max(box.y0 - d[1], 0, d[1] - box.y1))
        assert min(away(d) for d in dots) >= away((x, y)) - 1e-6, note.get_text()
        assert "'.'" not in note.get_text().split("\n"), note.get_text()
    boxes = [t.get_window_extent(canvas.get_renderer()) for t in notes]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def section_text(heading):
    """The sources of the notebook's `## ` section that starts with heading."""
    cells = json.loads(NB02.read_text(encoding="utf-8"))["cells"]
    sections = [""]
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and source.startswith("## "):
            sections.append("")
        sections[-1] += source + "\n"
    (found,) = [s for s in sections if s.startswith(heading)]
    return " ".join(found.split())


def test_02_without_positions_only_the_last_row_is_blind_to_the_order_before_it():
    """Going further's claim: in the one-block toy, with positions zeroed, the tokens before
    the last one could stand in any order and its row would come out the same. It is made
    after exercise 02.3, whose answer it half gives, and not in the Positions section."""
    blind = tm.copy_params()
    blind["wpe"][:] = 0.0
    ids = tm.encode(TEXT)
    shuffled = [ids[2], ids[0], ids[3], ids[1], ids[4]]
    same, other = tm.forward(ids, blind), tm.forward(shuffled, blind)
    assert np.allclose(same[-1], other[-1], atol=1e-12)
    assert not np.allclose(tm.forward(shuffled)[-1], tm.forward(ids)[-1])    # with positions it differs
    assert "could stand in any order and hand it the same sum" in section_text("## Going further: why the swap")
    assert "could stand in any order" not in section_text("## Positions")
