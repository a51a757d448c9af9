"""Notebook 05 (the block): the branch-switch widget, without a browser."""

import re

import ipywidgets as widgets
import numpy as np
import pytest

import toy_model as tm
import toy_widgets as tw
import matplotlib.colors

from widget_tools import shown, walk

TEXT = "the cat climbed the"


def parts(box):
    """The widget's controls and outputs, found by walking the panel."""
    found = list(walk(box))
    toggles = {w.description: w for w in found if isinstance(w, widgets.ToggleButton)}
    htmls = [w for w in found if isinstance(w, widgets.HTML) and not isinstance(w, tw.StyleRule)]
    return toggles, htmls, box.chart


def text_of(htmls):
    return " ".join(re.sub(r"<[^>]+>", " ", h.value) for h in htmls)


@pytest.fixture
def widget():
    return tw.block_branches(TEXT)          # conftest closes its figure after the test


def test_panel_has_the_css_class_and_two_switches_on(widget):
    assert "w-block-branches" in widget._dom_classes
    toggles, _, chart = parts(widget)
    assert set(toggles) == {"attention branch", "MLP branch"}
    assert all(t.value for t in toggles.values())
    assert len(shown(chart)) == len(tw.TOKENS)


def test_default_shows_y5_and_roof(widget):
    _, htmls, chart = parts(widget)
    page = text_of(htmls)
    y5 = tm.run(TEXT)["y"][-1]
    for v in y5:
        assert tw.fmt(v) in page
    p = tm.run(TEXT)["p"][-1]
    assert f"most likely next:  ␣roof  ({tw.fmt(p.max())})" in page
    assert np.allclose(shown(chart), p)
    assert_only_top_highlighted(chart, p)


def assert_only_top_highlighted(chart, p):
    """The most likely token's bar, and only it, in the accent colour."""
    top = int(np.argmax(p))
    assert chart.highlight == [top]
    colours = [matplotlib.colors.to_hex(b.get_facecolor()) for b in chart.bars]
    assert colours[top] == tw.ORANGE.lower()
    assert all(c == tw.BLUE.lower() for i, c in enumerate(colours) if i != top)


def test_attention_off_moves_the_bars_and_names_cat(widget):
    toggles, htmls, chart = parts(widget)
    toggles["attention branch"].value = False
    p = tm.run(TEXT, attention_on=False)["p"][-1]
    assert np.allclose(shown(chart), p)
    assert f"␣cat  ({tw.fmt(p.max())})" in text_of(htmls)
    assert_only_top_highlighted(chart, p)
    toggles["MLP branch"].value = False
    p = tm.run(TEXT, attention_on=False, mlp_on=False)["p"][-1]
    assert np.allclose(shown(chart), p)
    assert_only_top_highlighted(chart, p)


def test_both_off_shows_x(widget):
    toggles, htmls, _ = parts(widget)
    toggles["attention branch"].value = False
    toggles["MLP branch"].value = False
    shown = text_of(htmls)
    assert "y = x" in shown
    x = tm.run(TEXT)["x"]
    table = next(h for h in htmls if "<table" in h.value)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table.value)
    assert cells == [tw.fmt(v) for v in x.ravel()]
    # and back on: y_5 again
    toggles["attention branch"].value = True
    toggles["MLP branch"].value = True
    assert tw.fmt(tm.run(TEXT)["y"][-1][1]) in text_of(htmls)


def test_no_message_when_all_is_well(widget):
    toggles, htmls, _ = parts(widget)
    toggles["MLP branch"].value = False
    area = htmls[-1]
    assert area.value == ""
