"""Notebook 02 (Embeddings): the scatter widget and its plot helper, without a browser."""


import numpy as np
import pytest

import toy_model as tm
import toy_widgets as tw


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


def test_add_positions_shows_the_rows_of_x():
    panel = tw.embedding_scatter()
    x_dim, y_dim, positions, ax, dots, rings, area = _parts(panel)
    positions.value = True
    x = tm.intermediates("the cat climbed the")["x"]
    assert rings.get_visible()
    np.testing.assert_array_equal(rings.get_offsets(), x[:, [2, 3]])
    assert "1: the" in _labels(ax)
    positions.value = False
    assert not rings.get_visible()


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
    with pytest.raises(ValueError, match="the context holds at most 8"):
        tw.embedding_scatter("the cat climbed the roof. the cat climbed")
    panel = tw.embedding_scatter()
    x_dim, y_dim, positions, ax, dots, rings, area = _parts(panel)
    x_dim.value = None                              # set from code: refused, put back
    assert "Pick one of the x axis options" in area.value
    assert x_dim.value == 2
    np.testing.assert_array_equal(dots.get_offsets(), tm.PARAMS["wte"][:, [2, 3]])
    positions.value = True
    assert area.value == "" and rings.get_visible()
