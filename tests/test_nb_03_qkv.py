"""Notebook 03 (Q · K · V): the query picker, without a browser, and the notebook's numbers."""




import ipywidgets as widgets
import numpy as np
import pytest

import toy_model as tm
from widget_tools import figure_of, find, heights



@pytest.fixture
def picker():
    root = tm.query_picker()
    pick = find(root, widgets.ToggleButtons)[0]
    pos = find(root, widgets.IntText)[0]
    html_parts = find(root, widgets.HTML)
    info, area = html_parts[0], html_parts[-1]
    bars = figure_of(root).axes[0].patches
    return root, pick, pos, info, area, bars


def test_head_weights_are_head_1s_columns_of_c_attn():
    w = tm.PARAMS["blocks"][0]["attn"]["c_attn"]["w"]
    W_Q, W_K, W_V = tm.head_weights(0)
    assert np.array_equal(np.hstack([W_Q, W_K, W_V]), w[:, [0, 1, 4, 5, 8, 9]])
    r = tm.run("the cat climbed the")
    assert np.allclose(r["ln1"] @ W_Q, r["heads"][0]["q"])


def test_picker_starts_on_the_last_token_and_names_climb(picker):
    root, pick, pos, info, area, bars = picker
    assert "w-query-picker" in root._dom_classes
    assert pick.value == 5 and pos.value == 5
    weights = tm.run("the cat climbed the")["heads"][0]["weights"]
    assert np.allclose(heights(bars), weights[4])
    assert "␣climb" in info.value and "0.997" in info.value and "0.995" in info.value


def test_clicking_a_query_moves_the_bars_and_the_text(picker):
    root, pick, pos, info, area, bars = picker
    before, text = heights(bars), info.value
    pick.value = 4
    weights = tm.run("the cat climbed the")["heads"][0]["weights"]
    assert not np.allclose(heights(bars), before)
    assert np.allclose(heights(bars), weights[3])
    assert info.value != text and "query 4 (ed)" in info.value
    assert pos.value == 4                       # the two controls agree
    pick.value = 2
    assert "shared by the and ␣cat" in info.value   # a tie is named as a tie


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

