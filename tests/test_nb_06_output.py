"""Notebook 6 (Output): its widgets without a browser, and its prose figures.

Each widget is built, its controls are set from Python (w.value = ...), and the test
checks that the bars of its live figure moved, that its text line changed, and that
bad input puts one sentence in its message area which a later good input clears.
"""

import re

import numpy as np

import ipywidgets as widgets

import toy_model as tm
from widget_tools import find

ROOF = tm.VOCAB.index(" roof")


def text(html):
    return re.sub(r"<[^>]+>", "", html.value)


def parts(box):
    """(text line, message area) of a widget: its last two HTML children."""
    line, area = find(box, widgets.HTML)[-2:]
    return line, area


def heights(box):
    return [[b.get_height() for b in ax.patches] for ax in box.children[-3].figure.axes]


def test_panels_carry_their_css_class():
    for make, name in [(tm.logit_playground, "logit-playground"), (tm.logit_shift, "logit-shift"),
                       (tm.attention_switch, "attention-switch"), (tm.tying_switch, "tying-switch"),
                       (tm.temperature_preview, "temperature-preview")]:
        assert f"w-{name}" in make()._dom_classes


def test_logit_playground_moves_bars_and_rejects_bad_logits():
    box = tm.logit_playground()
    line, area = parts(box)
    assert "␣roof with p = 0.395" in text(line)
    before = heights(box)
    slider = find(box, widgets.FloatSlider)[0]
    slider.value = 5.0
    assert heights(box) != before and "logit of ␣roof: 5.000" in text(line)
    typed = find(box, widgets.Text)[0]
    for bad, sentence in [("abc", "is not a number"), ("nan", "not NaN"), ("1e6", "between -1000 and 1000")]:
        typed.value = bad
        assert sentence in text(area)
    typed.value = "1000"                         # huge but allowed: p stays finite
    assert text(area) == "" and np.isfinite(heights(box)[0]).all()
    assert "␣roof with p = 1.000" in text(line)
    typed.value = "-1000"
    assert "most likely: ␣wall" in text(line)
    find(box, widgets.Dropdown)[0].value = tm.VOCAB.index(".")
    slider.value = 10.0
    assert "most likely: ." in text(line)
    find(box, widgets.Button)[0].click()
    assert "␣roof with p = 0.395" in text(line)


def test_logit_shift_moves_logits_not_p():
    box = tm.logit_shift()
    line, area = parts(box)
    z_before, p_before = heights(box)
    find(box, widgets.FloatSlider)[0].value = 10.0
    z_after, p_after = heights(box)
    assert np.allclose(np.array(z_after) - z_before, 10) and np.allclose(p_after, p_before)
    assert "largest change of any p is 0.000" in text(line)
    find(box, widgets.Text)[0].value = "ten"
    assert "is not a number" in text(area)
    find(box, widgets.Text)[0].value = "-1000"
    assert text(area) == "" and np.allclose(heights(box)[1], p_before)


def test_attention_switch_gives_the_two_distributions():
    box = tm.attention_switch()
    line, area = parts(box)
    assert "␣roof with p = 0.395" in text(line)
    before = heights(box)
    find(box, widgets.ToggleButton)[0].value = False
    assert heights(box) != before and "␣cat with p = 0.455" in text(line)
    prompt = find(box, widgets.Text)[0]
    prompt.value = "the zebra"
    assert "no token for" in text(area)
    prompt.value = ""
    assert "empty" in text(area)
    prompt.value = "the the the the the the the the the"
    assert "at most 8" in text(area)
    prompt.value = "the dog climbed the"
    assert text(area) == "" and "attention off" in text(line)


def test_tying_switch_puts_the_first():
    box = tm.tying_switch()
    line, area = parts(box)
    assert "␣roof with p = 0.395" in text(line)
    find(box, widgets.ToggleButton)[0].value = True
    assert "most likely: ␣the" in text(line)
    find(box, widgets.Text)[0].value = "cats"
    assert "no token for" in text(area)


def test_temperature_preview_greedy_uniform_and_negative():
    box = tm.temperature_preview()
    line, area = parts(box)
    slider = find(box, widgets.FloatSlider)[0]
    slider.value = 0.0
    assert heights(box)[0][ROOF] == 1.0 and "(greedy)" in text(line)
    typed = find(box, widgets.FloatText)[0]
    typed.value = -1.0
    assert "Temperature must be 0 (greedy) or a positive number" in text(area)
    typed.value = 1000.0
    assert text(area) == "" and np.allclose(heights(box)[0], 1 / 12, atol=2e-3)

