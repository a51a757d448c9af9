"""Notebook 03 (Q · K · V): the query picker, without a browser, and the notebook's numbers."""


import ipywidgets as widgets
import numpy as np
import pytest

import toy_model as tm
import toy_widgets as tw
from widget_tools import find, shown


WEIGHTS = tm.intermediates("the cat climbed the")["heads"][0]["weights"]


@pytest.fixture
def picker():
    root = tw.query_picker()
    pick = find(root, widgets.ToggleButtons)[0]
    pos = find(root, widgets.IntText)[0]
    html_parts = find(root, widgets.HTML)
    info, area = html_parts[0], html_parts[-1]
    return root, pick, pos, info, area, root.chart


def check_row(root, i):
    """The chart shows row i (1 to 5) of head 1's weights, its largest weight(s) marked."""
    w = WEIGHTS[i - 1]
    assert np.allclose(shown(root.chart), w)
    assert root.chart.highlight == list(np.flatnonzero(np.isclose(w, w.max())))
    assert root.chart.title.startswith(f"head 1, query {i} ")


def test_head_weights_are_head_1s_columns_of_c_attn():
    w = tm.PARAMS["blocks"][0]["attn"]["c_attn"]["w"]
    W_Q, W_K, W_V = tw.head_weights(0)
    assert np.array_equal(np.hstack([W_Q, W_K, W_V]), w[:, [0, 1, 4, 5, 8, 9]])
    r = tm.intermediates("the cat climbed the")
    assert np.allclose(r["ln1"] @ W_Q, r["heads"][0]["q"])


def test_picker_starts_on_the_last_token_and_names_climb(picker):
    root, pick, pos, info, area, bars = picker
    assert "w-query-picker" in root._dom_classes
    assert pick.value == 5 and pos.value == 5
    check_row(root, 5)
    out, w = tm.intermediates("the cat climbed the")["heads"][0]["out"][4], WEIGHTS[4]
    assert info.value == (f"query 5 (␣the): output = [{tw.fmt(out[0])}, {tw.fmt(out[1])}]; it "
                          f"attends most to ␣climb (position 3, weight {tw.fmt(w[2])}).")
    assert w.argmax() == 2


def test_clicking_a_query_moves_the_bars_and_the_text(picker):
    root, pick, pos, info, area, bars = picker
    text = info.value
    pick.value = 4
    check_row(root, 4)
    assert info.value != text and "query 4 (ed)" in info.value
    assert pos.value == 4                       # the two controls agree
    pick.value = 2
    check_row(root, 2)
    assert root.chart.highlight == [0, 1]
    assert "shared by the and ␣cat" in info.value   # a tie is named as a tie
    pos.value = 3
    check_row(root, 3)
    assert pick.value == 3


def test_typed_position_out_of_range_gives_one_sentence_then_clears(picker):
    root, pick, pos, info, area, bars = picker
    for bad in (0, 6, -1):
        pos.value = bad
        assert "Positions run from 1 to 5" in area.value
        assert area.value.count(".") >= 1 and pick.value == 5      # nothing else moved
        assert pos.value == 5                  # the box goes back to the query the plot shows
    pos.value = 3
    assert area.value == ""
    assert pick.value == 3 and "query 3 (␣climb)" in info.value
    check_row(root, 3)
    pick.value = None                          # set from code: refused, put back
    assert "Pick one of the query options" in area.value
    assert pick.value == 3 and pos.value == 3
    check_row(root, 3)
