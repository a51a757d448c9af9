"""Every widget with several controls set together, checked by its numbers.

A widget can agree with the model for each control alone and still disagree when two are
set together (its own code path combines them), or off its default path (a control other
than the first). Here each widget's controls are set in combination, as a learner would
set them, and every number it shows (bars, heat-map cells, table, text line) is compared
with the model's computation for that combined state; never only "the canvas changed".
"""
import html
import itertools
import re

import ipywidgets as widgets
import numpy as np
import pytest
from widget_tools import find, nats, press_enter, shown, text

import reference as ref
import toy_model as tm
import toy_widgets as tw

TEXT = "the cat climbed the"
Z = tm.forward(tm.encode(TEXT))[-1]


def by_description(root, kind, description):
    (w,) = [w for w in find(root, kind) if w.description == description]
    return w


# --- 07: temperature, top-k and top-p together ----------------------------------------

# The last three: states where top-k first (renormalising the k kept) makes top-p keep fewer
# tokens than top-p first would (1 against 2, 1 against 3, 2 against 3).


@pytest.mark.parametrize("T, k, top_p", [(0.5, 3, 0.9), (1.5, 5, 0.6), (2.0, 12, 0.3),
                                         (0.8, 2, 1.0), (1.0, 4, 0.5), (0.5, 3, 0.6000000000000001),
                                         (1.0, 3, 0.45), (1.5, 3, 0.45), (1.5, 6, 0.45)])
@pytest.mark.parametrize("through", ["boxes", "sliders"])
def test_temperature_explorer_with_all_three_set(T, k, top_p, through):
    root = tw.temperature_explorer()
    if through == "boxes":
        controls = [by_description(root, widgets.FloatText, "exact T"),
                    by_description(root, widgets.IntText, "exact k"),
                    by_description(root, widgets.FloatText, "exact p")]
    else:
        controls = [by_description(root, widgets.FloatSlider, "temperature"),
                    by_description(root, widgets.IntSlider, "top-k"),
                    by_description(root, widgets.FloatSlider, "top-p")]
    for control, value in reversed(list(zip(controls, (T, k, top_p)))):   # the last one first
        control.value = value
    expected = ref.sampling_filter(Z, T, k, top_p)
    exact = top_p if through == "boxes" else round(top_p, 9)          # a slider's noise dropped
    assert (root.state.T, root.state.k, root.state.p) == (T, k, exact)
    assert np.allclose(shown(root.chart), expected), (T, k, top_p)
    assert np.allclose(shown(root.before), ref.sampling_filter(Z, T, 12, 1.0)), "the outlines: T only"
    line = text(find(root, widgets.HTML)[0])
    top = int(np.argmax(expected))
    assert f"kept {int((expected > 0).sum())} of 12 tokens" in line
    assert f"most likely {tm.token_name(top)} with p = {tw.fmt(expected[top])}" in line
    assert f"entropy {tw.fmt(nats(expected))} nats" in line


# --- 06: the logit playground, two tokens edited --------------------------------------

def test_logit_playground_keeps_each_edit_when_another_token_is_edited():
    root = tw.logit_playground()
    pick = find(root, widgets.Dropdown)[0]
    slider = find(root, widgets.FloatSlider)[0]
    typed = find(root, widgets.Text)[0]
    wall, cat = tm.VOCAB.index(" wall"), tm.VOCAB.index(" cat")
    pick.value = wall
    slider.value = 3.0                                  # ␣wall to 3 with the slider
    pick.value = cat
    typed.value = "4.25"                                # ␣cat to 4.25 typed
    press_enter(typed)
    z = Z.copy()
    z[wall], z[cat] = 3.0, 4.25
    p = tm.softmax(z)
    assert np.allclose(shown(root.chart), p)
    line = text([w for w in find(root, widgets.HTML) if w.value][0])
    assert line.startswith(f"logit of ␣cat: 4.250 · most likely: ␣cat with p = {tw.fmt(p[cat])}")


# --- 05: both branches -------------------------------------------------------------------

@pytest.mark.parametrize("attention_on, mlp_on", list(itertools.product([True, False], repeat=2)))
def test_block_branches_every_combination(attention_on, mlp_on):
    root = tw.block_branches()
    toggles = {w.description: w for w in find(root, widgets.ToggleButton)}
    toggles["MLP branch"].value = mlp_on
    toggles["attention branch"].value = attention_on
    params = tm.PARAMS if attention_on else tm.switch_off(tm.PARAMS, "attn")
    r = tm.intermediates(TEXT, params=params if mlp_on else tm.switch_off(params, "mlp"))
    assert np.allclose(shown(root.chart), r["p"][-1]) and root.chart.highlight == [int(np.argmax(r["p"][-1]))]
    assert root.chart.title.endswith(f"· attention {'on' if attention_on else 'off'} · MLP {'on' if mlp_on else 'off'}")
    table = next(w for w in find(root, widgets.HTML) if "<table" in w.value)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table.value)
    assert cells == [tw.fmt(v) for v in r["y"].ravel()]


# --- 04: mask and heads -------------------------------------------------------------------

@pytest.mark.parametrize("masked, show", list(itertools.product([True, False],
                                                                ["head 1", "head 2", "both"])))
def test_mask_and_heads_every_combination(masked, show):
    root = tw.mask_and_heads()
    find(root, widgets.ToggleButtons)[0].value = show
    find(root, widgets.ToggleButton)[0].value = masked
    r = tm.intermediates(TEXT, mask=masked)
    heads = {"head 1": [0], "head 2": [1], "both": [0, 1]}[show]
    n = len(r["tokens"])
    for slot, h in enumerate(heads):
        im, texts = root.maps[slot]
        w = r["heads"][h]["weights"]
        expected = np.where(np.tril(np.ones((n, n), bool)), w, np.nan) if masked else w
        assert np.allclose(np.asarray(im.get_array()), expected, equal_nan=True)
        assert [[t.get_text() for t in row] for row in texts] == \
            [["" if np.isnan(v) else f"{v:.3f}" for v in row] for row in expected]
    line = html.unescape(find(root, widgets.HTML)[0].value)
    if not masked:
        leak, h, i = max((np.triu(r["heads"][h]["weights"], 1).sum(1)[i], h, i)
                         for h in heads for i in range(n))
        assert f"row {i + 1} ({r['tokens'][i]}) puts {tw.fmt(leak)} of its weight" in line
        assert f"(head {h + 1})" in line


# --- 03: head 2, a query typed ------------------------------------------------------------

@pytest.mark.parametrize("head, query", [(1, 3), (1, 1), (0, 2)])
def test_query_picker_off_the_default_head_and_query(head, query):
    root = tw.query_picker(head=head)
    find(root, widgets.IntText)[0].value = query
    h = tm.intermediates(TEXT)["heads"][head]
    assert np.allclose(shown(root.chart), h["weights"][query - 1])
    line = html.unescape(find(root, widgets.HTML)[0].value)
    assert f"output = [{tw.fmt(h['out'][query - 1][0])}, {tw.fmt(h['out'][query - 1][1])}]" in line


# --- 02: other dimensions, positions on --------------------------------------------------

@pytest.mark.parametrize("dx, dy", [(2, 3), (2, 0), (0, 1), (3, 2)])
def test_embedding_scatter_other_dimensions_with_positions(dx, dy):
    root = tw.embedding_scatter()
    x_dim, y_dim = find(root, widgets.Dropdown)
    find(root, widgets.ToggleButton)[0].value = True
    x_dim.value, y_dim.value = dx, dy
    ax = root.children[1].figure.axes[0]
    dots, rings = ax.collections[:2]
    np.testing.assert_array_equal(dots.get_offsets(), tm.PARAMS["wte"][:, [dx, dy]])
    np.testing.assert_allclose(rings.get_offsets(), tm.intermediates(TEXT)["x"][:, [dx, dy]])
    assert rings.get_visible()
    find(root, widgets.ToggleButton)[0].value = False
    assert not rings.get_visible()
