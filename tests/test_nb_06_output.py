"""Notebook 6 (Output): its widgets without a browser.

Each widget is built, its controls are set from Python (w.value = ...) as the browser
would set them, and what it shows (the values of its charts, its text line) is compared
with the model's numbers for the state chosen: at the start, after a slider move, after
an exact typed value (then the slider's echo, rounded to its step), after Reset. Bad
input puts one sentence in its message area, which a later good input clears.
"""

import matplotlib.pyplot as plt
import numpy as np
import pytest

import ipywidgets as widgets

import toy_model as tm
import toy_widgets as tw
from widget_tools import echo, find, press_enter, shown, summary, text

TEXT = "the cat climbed the"
ROOF, WALL = tm.VOCAB.index(" roof"), tm.VOCAB.index(" wall")
Z0 = tm.run(TEXT)["logits"][-1]


def parts(box):
    """(text line, message area) of a widget: its last two HTML children."""
    line, area = find(box, widgets.HTML)[-2:]
    return line, area


def with_logit(j, value):
    z = Z0.copy()
    z[j] = value
    return z


def test_panels_carry_their_css_class():
    for make, name in [(tw.logit_playground, "logit-playground"), (tw.logit_shift, "logit-shift"),
                       (tw.attention_switch, "attention-switch"), (tw.tying_switch, "tying-switch")]:
        assert f"w-{name}" in make()._dom_classes


def check_playground(box, z, j):
    """The chart shows softmax(z), the top bar highlighted; the line names z[j] and p."""
    line, _ = parts(box)
    p = tm.softmax(z)
    assert np.allclose(shown(box.chart), p)
    assert box.chart.highlight == [int(np.argmax(p))]
    assert text(line) == f"logit of {tw.TOKENS[j]}: {tw.fmt(z[j])} · " + summary(p)


def test_logit_playground_shows_the_models_p_and_keeps_exact_logits_through_the_echo():
    box = tw.logit_playground()
    slider = find(box, widgets.FloatSlider)[0]
    typed = find(box, widgets.Text)[0]
    pick = find(box, widgets.Dropdown)[0]
    check_playground(box, Z0, ROOF)
    assert "2.491" in text(parts(box)[0]) and "0.395" in text(parts(box)[0])
    echo(slider)                                  # the browser sends back 2.5
    check_playground(box, Z0, ROOF)
    pick.value = WALL                             # the slider moves to 1.463 ...
    echo(slider)                                  # ... and comes back as 1.5
    check_playground(box, Z0, WALL)
    slider.value = 4.0                            # a real move
    check_playground(box, with_logit(WALL, 4.0), WALL)
    typed.value = "3.33"
    check_playground(box, with_logit(WALL, 3.33), WALL)
    echo(slider)
    check_playground(box, with_logit(WALL, 3.33), WALL)
    find(box, widgets.Button)[0].click()          # Reset
    assert typed.value == "" and pick.value == WALL
    echo(slider)
    check_playground(box, Z0, WALL)


def test_each_enter_applies_the_typed_logit():
    box = tw.logit_playground()
    slider = find(box, widgets.FloatSlider)[0]
    typed = find(box, widgets.Text)[0]
    typed.value = "3.33"
    slider.value = -2.0                           # the box empties: it showed an old value
    assert typed.value == ""
    check_playground(box, with_logit(ROOF, -2.0), ROOF)
    typed.value = "3.33"                          # the same value again is applied again
    check_playground(box, with_logit(ROOF, 3.33), ROOF)
    box.state.set(typed, "-1")                    # text synced without a change event
    press_enter(typed)
    check_playground(box, with_logit(ROOF, -1.0), ROOF)


def test_logit_playground_rejects_bad_logits_and_keeps_its_state():
    box = tw.logit_playground()
    line, area = parts(box)
    slider = find(box, widgets.FloatSlider)[0]
    typed = find(box, widgets.Text)[0]
    for bad, sentence in [("abc", "is not a number"), ("nan", "is not a number"),
                          ("1e6", "between -1000 and 1000")]:
        typed.value = bad
        assert sentence in text(area)
        check_playground(box, Z0, ROOF)
    typed.value = "1000"                          # huge but allowed: p stays finite
    assert text(area) == ""
    check_playground(box, with_logit(ROOF, 1000.0), ROOF)
    slider.value = float("nan")                   # set from code: refused, nothing moves
    assert "finite number" in text(area) and np.isfinite(slider.value)
    check_playground(box, with_logit(ROOF, 1000.0), ROOF)
    find(box, widgets.Dropdown)[0].value = None
    assert "Pick one of the token options" in text(area)
    assert find(box, widgets.Dropdown)[0].value == ROOF
    typed.value = "-1000"
    check_playground(box, with_logit(ROOF, -1000.0), ROOF)
    assert "most likely: ␣wall" in text(line)


def check_shift(box, c):
    line, _ = parts(box)
    z, p = Z0 + c, tm.softmax(Z0 + c)
    assert np.allclose(shown(box.charts["z"]), z)
    assert np.allclose(shown(box.charts["p"]), tm.softmax(Z0))          # p does not move
    assert np.allclose(shown(box.charts["p"]), p)
    assert text(line) == (f"c = {tw.plain(c)}: every logit moved by {tw.plain(c)}; the largest "
                          f"change of any p is {tw.fmt(np.abs(p - tm.softmax(Z0)).max())}\n"
                          + summary(p))


def test_logit_shift_moves_logits_not_p_and_keeps_an_exact_c():
    box = tw.logit_shift()
    line, area = parts(box)
    slider = find(box, widgets.FloatSlider)[0]
    typed = find(box, widgets.Text)[0]
    check_shift(box, 0.0)
    slider.value = 10.0
    check_shift(box, 10.0)
    typed.value = "3.33"
    check_shift(box, 3.33)
    assert "c = 3.33:" in text(line)
    echo(slider)                                  # 3.3 from the browser
    check_shift(box, 3.33)
    typed.value = "ten"
    assert "is not a number" in text(area)
    check_shift(box, 3.33)
    typed.value = "-1000"
    assert text(area) == ""
    check_shift(box, -1000.0)


def test_attention_switch_gives_the_two_distributions():
    box = tw.attention_switch()
    line, area = parts(box)
    p_on = tm.run(TEXT)["p"][-1]
    p_off = tm.run(TEXT, attention_on=False)["p"][-1]
    assert np.allclose(shown(box.chart), p_on)
    assert text(line) == "attention on: " + summary(p_on)
    find(box, widgets.ToggleButton)[0].value = False
    assert np.allclose(shown(box.chart), p_off)
    assert text(line) == "attention off: " + summary(p_off) and "␣cat with p = 0.455" in text(line)
    prompt = find(box, widgets.Text)[0]
    for bad, sentence in [("the zebra", "no token for"), ("", "empty"),
                          ("the the the the the the the the the", "at most 8")]:
        prompt.value = bad
        assert sentence in text(area)
        assert np.allclose(shown(box.chart), p_off)
    prompt.value = "the dog climbed the"
    assert text(area) == "" and "attention off" in text(line)
    assert np.allclose(shown(box.chart), tm.run("the dog climbed the", attention_on=False)["p"][-1])
    assert box.chart.title == 'p of the last row: "the dog climbed the"'


def test_tying_switch_starts_untied_and_ties():
    box = tw.tying_switch()
    line, area = parts(box)
    assert np.allclose(shown(box.chart), tm.run(TEXT)["p"][-1])
    assert "␣roof with p = 0.395" in text(line)
    toggle = find(box, widgets.ToggleButton)[0]
    assert toggle.description == "own W_U"
    toggle.value = True
    tied = tm.run(TEXT, tied=True)["p"][-1]
    assert np.allclose(shown(box.chart), tied)
    assert text(line) == "tied: W_U = Eᵀ: " + summary(tied)
    find(box, widgets.Text)[0].value = "cats"
    assert "no token for" in text(area)


def test_a_live_widget_without_the_widget_backend_says_what_to_run():
    backend = plt.get_backend()
    plt.switch_backend("agg")
    try:
        with pytest.raises(ValueError, match=r"run `%matplotlib widget` first"):
            tw.logit_playground()
    finally:
        plt.switch_backend(backend)


def test_p_summary_and_table_refuse_empty_input_with_a_sentence():
    with pytest.raises(ValueError, match="p_summary needs one distribution over the 12 tokens"):
        tw.p_summary([])
    with pytest.raises(ValueError, match="table needs at least one row"):
        tw.table([])
    assert tw.p_summary(tm.softmax(Z0)) == summary(tm.softmax(Z0))
