"""Notebook 07 (Generation): its widgets without a browser, and its prose's numbers.

The widgets are built as the notebook builds them; controls are set programmatically
(w.value = ..., button.click()) and the plot's bars and the widget's text are read back.
"""


import matplotlib
import numpy as np
import pytest

import toy_model as tm
from widget_tools import walk, heights



def control(root, kind, description=None):
    found = [w for w in walk(root) if type(w).__name__ == kind
             and (description is None or getattr(w, "description", None) == description)]
    assert found, f"no {kind} {description!r} in the widget"
    return found[0]


def message(root):
    """The message area: the last HTML child of the panel before the canvas."""
    return root.children[-2].value


# --- w-temperature -------------------------------------------------------------

def test_temperature_widget_starts_at_the_models_p():
    root = tm.temperature_explorer()
    assert "w-temperature" in root._dom_classes
    p = tm.softmax(tm.forward(tm.encode("the cat climbed the"))[-1])
    assert np.allclose(heights(root.bars), p)
    assert "␣roof" in root.children[4].value and "0.395" in root.children[4].value
    assert message(root) == ""


def test_sliders_move_the_bars_and_the_text():
    root = tm.temperature_explorer()
    first = heights(root.bars)
    info = root.children[4].value
    control(root, "FloatSlider", "temperature").value = 0.5
    assert not np.allclose(heights(root.bars), first)
    assert heights(root.bars).max() > first.max()          # sharper
    assert root.children[4].value != info
    assert control(root, "FloatText", "exact T").value == 0.5   # the box follows the slider
    control(root, "IntSlider", "top-k").value = 3
    assert np.count_nonzero(heights(root.bars)) == 3
    assert np.isclose(heights(root.bars).sum(), 1)
    assert np.count_nonzero(heights(root.before)) == 12    # the outline keeps what was cut
    assert "kept <b>3</b>" in root.children[4].value
    control(root, "FloatSlider", "top-p").value = 0.05
    assert np.count_nonzero(heights(root.bars)) == 1
    control(root, "FloatSlider", "temperature").value = 0.0
    assert heights(root.bars).max() == 1.0


@pytest.mark.parametrize("box, kind, bad, sentence", [
    ("exact T", "FloatText", -1.0, "Temperature must be 0 (greedy) or a positive number"),
    ("exact k", "IntText", 0, "top-k must be a whole number of at least 1"),
    ("exact p", "FloatText", 0.0, "top-p must be above 0 and at most 1"),
    ("exact p", "FloatText", 1.5, "top-p must be above 0 and at most 1"),
])
def test_bad_typed_values_get_a_sentence_and_keep_the_plot(box, kind, bad, sentence):
    root = tm.temperature_explorer()
    control(root, kind, box).value = {"FloatText": 0.7, "IntText": 5}[kind]    # a good value first
    good = heights(root.bars)
    control(root, kind, box).value = bad
    assert sentence in message(root)
    assert np.allclose(heights(root.bars), good)
    control(root, "FloatSlider", "temperature").value = 1.3    # a later good input clears it
    assert message(root) == ""
    assert not np.allclose(heights(root.bars), good)


def test_typed_temperature_beyond_the_slider_is_allowed():
    root = tm.temperature_explorer()
    control(root, "FloatText", "exact T").value = 1000.0
    assert message(root) == ""
    assert np.allclose(heights(root.bars), 1 / 12, atol=1e-3)


# --- w-generate-steps ------------------------------------------------------------

def stepper(**kwargs):
    root = tm.generation_stepper(**kwargs)
    buttons = [w for w in walk(root) if type(w).__name__ == "Button"]
    assert [b.description for b in buttons][1:] == ["reset"]
    return root, buttons[0], buttons[1]


def test_greedy_steps_reach_the_end_of_text_and_stop():
    root, step, _ = stepper(temperature=0.0)
    assert "w-generate-steps" in root._dom_classes
    drawn = []
    for _ in range(3):
        before = heights(root.bars)
        text = root.children[3].value
        step.click()
        assert root.children[3].value != text               # the text grows
        assert "<mark" in root.children[3].value             # the new token is highlighted
        if drawn:                                            # a new distribution at each step
            assert not np.allclose(heights(root.bars), before)
        drawn.append(root.state["ids"][-1])
        assert root.bars[drawn[-1]].get_facecolor()[:3] == matplotlib.colors.to_rgb(tm.ORANGE)
    assert [tm.show(i) for i in drawn] == ["␣roof", ".", "<|endoftext|>"]
    assert step.disabled and "finished" in step.description
    assert "<|endoftext|>" in root.children[4].value.replace("&lt;", "<").replace("&gt;", ">")
    step.click()                                             # nothing more happens
    assert len(root.state["ids"]) == 8


@pytest.mark.parametrize("seed", [0, 1])
def test_a_seed_gives_the_same_sequence_as_generate(seed):
    expected = tm.generate("the cat climbed the", temperature=1.0, seed=seed)
    for _ in range(2):                                       # and the same again after reset
        root, step, reset = stepper(temperature=1.0, seed=seed)
        for _ in expected:
            step.click()
        assert root.state["ids"] == expected[-1]["ids"] + [expected[-1]["next"]]
        reset.click()
        assert root.state["ids"] == tm.encode("the cat climbed the")
        assert not step.disabled


def test_a_full_context_stops_the_button():
    root, step, _ = stepper(prompt="the cat climbed the roof. the", temperature=1.0)   # 8 tokens
    assert step.disabled and "context full" in step.description
    root, step, _ = stepper(prompt="the cat climbed the roof climb", temperature=0.0)  # 7 tokens
    step.click()
    assert len(root.state["ids"]) == 8 and step.disabled and "finished" in step.description


@pytest.mark.parametrize("control, value, sentence", [
    ("prompt", "the zebra", "The toy vocabulary has no token for '␣zebra'"),
    ("prompt", "", "The text is empty"),
    ("prompt", "the cat climbed the roof. the cat climbed the", "The prompt has 12 tokens but the context holds at most 8"),
    ("temperature", -1.0, "Temperature must be 0 (greedy) or a positive number"),
    ("seed", "1.5", "The seed must be a whole number of 0 or more"),
    ("seed", "-2", "The seed must be a whole number of 0 or more"),
])
def test_stepper_bad_input_gets_one_sentence(control, value, sentence):
    import html
    root, step, _ = stepper()
    step.click()
    good_bars, good_ids = heights(root.bars), list(root.state["ids"])
    widget = next(w for w in walk(root) if getattr(w, "description", None) == control)
    widget.value = value
    assert sentence in html.unescape(message(root))
    step.click()                                             # a click repeats the sentence, draws nothing
    assert sentence in html.unescape(message(root))
    assert root.state["ids"] == good_ids
    assert np.allclose(heights(root.bars), good_bars)
    widget.value = {"prompt": "the dog", "temperature": 0.5, "seed": "3"}[control]
    assert message(root) == ""


# --- the notebook's prose --------------------------------------------------------
