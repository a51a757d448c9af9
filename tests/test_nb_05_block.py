"""Notebook 05 (the block): the branch-switch widget, without a browser; the readable unit
the page builds, recomputed with the shared reference; exercises not answered above them."""

import re

import ipywidgets as widgets
import numpy as np
import pytest

import reference as ref
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


def assert_only_top_highlighted(chart, p):
    """The most likely token's bar, and only it, in the accent colour."""
    top = int(np.argmax(p))
    assert chart.highlight == [top]
    colours = [matplotlib.colors.to_hex(b.get_facecolor()) for b in chart.bars]
    assert colours[top] == tw.ORANGE.lower()
    assert all(c == tw.BLUE.lower() for i, c in enumerate(colours) if i != top)


def test_default_shows_y5_and_roof(widget):
    """The text names y5 and the most likely token; every state of both switches, its bars
    and its y table: tests/test_widgets_combinations.py."""
    _, htmls, chart = parts(widget)
    r = tm.intermediates(TEXT)
    assert all(tw.fmt(v) in text_of(htmls) for v in r["y"][-1])
    assert f"most likely next:  ␣roof  ({tw.fmt(r['p'][-1].max())})" in text_of(htmls)
    assert_only_top_highlighted(chart, r["p"][-1])


# --- the page's prose: the MLP with attention off, row by row, and a unit you can read -----

NB05 = __import__("pathlib").Path(__file__).resolve().parents[1] / "notebooks" / "05_block.ipynb"


def prose():
    """(source, printed text) of each cell; a markdown cell prints nothing."""
    import json
    cells = json.loads(NB05.read_text(encoding="utf-8"))["cells"]
    return [("".join(c["source"]), "".join("".join(o.get("text", "")) for o in c.get("outputs", [])))
            for c in cells]


def flat(text):
    return re.sub(r"\s+", " ", text).replace("−", "-")


def by_hand(ids, P=tm.PARAMS, attention_on=True, mlp_on=True):
    """(p per row, the MLP's activations, y) from the shared reference (tests/reference.py)."""
    P = P if attention_on else ref.without(P, "attn")
    trace = {}
    logits = ref.forward(ids, P if mlp_on else ref.without(P, "mlp"), 2, trace=trace)
    return ref.softmax_rows(logits), trace["blocks"][0]["act"], trace["blocks"][0]["y"]


IDS = tm.encode(TEXT + " roof")
TARGETS = IDS[1:]


def test_05_the_readable_unit_fires_on_one_row_and_pushes_one_token_up():
    mine = tm.copy_params()
    unit = mine["blocks"][0]["mlp"]
    unit["c_fc"]["w"][:, 0] = [2, 0, -2, 0]
    unit["c_fc"]["b"][0] = -4
    the = tm.VOCAB.index(" the")
    unit["c_proj"]["w"][0] = 0.5 * np.array([1, 1, -1, -0.5])      # ␣the's column of W_U, typed
    assert np.array_equal(unit["c_proj"]["w"][0], 0.5 * tm.PARAMS["w_u"][:, the])
    before, _, _ = by_hand(IDS[:-1])
    after, act, _ = by_hand(IDS[:-1], mine)
    fires = act[:, 0]
    assert fires.argmax() == 3 and np.abs(np.delete(fires, 3)).max() < 0.01
    b, a = before[np.arange(5), TARGETS], after[np.arange(5), TARGETS]
    assert TARGETS[3] == the and np.abs(np.delete(a - b, 3)).max() < 0.002
    loss = float(-np.log(a).mean())
    text = flat(next(f for f, _ in prose() if f.startswith("The key fires on row 4 alone")))
    assert f"(row 4 alone ({tw.fmt(fires[3])};" in "(" + text[len("The key fires on "):]
    assert f"lifts p(`␣the`) from {tw.fmt(b[3])} to {tw.fmt(a[3])}" in text
    assert f"falls to {tw.fmt(loss)} nats" in text


def test_05_exercises_2_3_and_4_are_not_answered_above_them():
    cells = prose()
    for key, question, giveaways in [("05.2", "**2. Without the residual.**", ["y = 0"]),
                                     ("05.3", "**3. GELU at −2.**", [tw.fmt(tm.gelu(-2.0)), "GELU(-2)"])]:
        at = next(i for i, (s, _) in enumerate(cells) if s.startswith(question))
        above = flat(" ".join(s + o for s, o in cells[:at]))
        answer = tw.EXERCISES[key]["answer"]
        assert giveaways[0] in (answer() if callable(answer) else answer).replace("−", "-")
        for mark in giveaways:
            assert mark not in above, (key, mark)
    # 05.4: the reason (the last row sees only its own token) is the worked answer's, not the page's
    at = next(i for i, (s, _) in enumerate(cells) if s.startswith("**4. Attention off, another subject.**"))
    above = flat(" ".join(s + o for s, o in cells[:at]))
    assert "what follows any" in tw.EXERCISES["05.4"]["solution"]() and "what follows any" not in above


# --- the random toy of Going further: nothing trivial ----------------------------------

def test_random_toy_has_nothing_trivial_and_is_read_only():
    rt = tw.random_toy()
    assert len(rt["blocks"]) == 2 and rt["wpe"].any(axis=1).all()
    for name in tm.weight_names(rt):
        w = tm.get_weight(rt, name)
        if name.endswith(".g"):
            assert np.all(np.abs(w - 1) > 1e-6), name
        elif name.endswith(".b"):
            assert np.all(w != 0), name
    with pytest.raises((ValueError, TypeError)):
        rt["wte"][0, 0] = 1.0
    again = tw.random_toy()
    assert all(np.array_equal(tm.get_weight(rt, n), tm.get_weight(again, n)) for n in tm.weight_names(rt))
    assert not np.array_equal(tw.random_toy(seed=1)["wte"], rt["wte"])
