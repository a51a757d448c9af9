"""Notebook 6 (Output): its widgets without a browser, and what its pages and pictures say.

Each widget is built, its controls are set from Python (w.value = ...) as the browser
would set them, and what it shows (the values of its charts, its text line) is compared
with the model's numbers for the state chosen: at the start, after a slider move, after
an exact typed value (then the slider's echo, rounded to its step), after Reset. Bad
input puts one sentence in its message area, which a later good input clears.

Then the page: the switches draw the flipped setting as dashed outlines, so each stored
picture shows the state its prose describes (tied: ␣the leads), and no two pictures are the
same; typing back the logit the playground shows keeps the exact logit; the tying
mechanism: E Eᵀ's direct path, and a trained tied toy whose block outvotes it.
"""
import base64
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

import ipywidgets as widgets

import toy_model as tm
import toy_train as tt
import toy_widgets as tw
from widget_tools import echo, figure_of, find, names_p, output_pngs, press_enter, shown, text

TEXT = "the cat climbed the"
ROOF, WALL = tm.VOCAB.index(" roof"), tm.VOCAB.index(" wall")
Z0 = tm.intermediates(TEXT)["logits"][-1]


def parts(box):
    """(text line, message area) of a widget: its last two HTML children."""
    line, area = find(box, widgets.HTML)[-2:]
    return line, area


def with_logit(j, value):
    z = Z0.copy()
    z[j] = value
    return z


def name(j):
    """A token as the widgets' titles name it: the "." token in quotes."""
    return tw.TOKENS[j]


def softmax_by_hand(z):
    e = np.exp(np.asarray(z, dtype=float) - np.max(z))
    return e / e.sum()


def check_playground(box, z, j):
    """The state the widget computes from holds z and the picked token j; the logits show z,
    the picked token highlighted, and p shows softmax(z), the top bar highlighted; the line
    and both titles (which the stored picture carries) name z[j] and the top token's p."""
    line, _ = parts(box)
    p = softmax_by_hand(z)
    top = int(np.argmax(p))
    assert np.allclose(box.state.z, z, rtol=0, atol=1e-12) and box.state.token == j
    assert np.allclose(shown(box.charts["z"]), z) and box.charts["z"].highlight == [j]
    assert box.charts["p"] is box.chart
    assert np.allclose(shown(box.chart), p) and box.chart.highlight == [top]
    names_p(text(line), p)
    assert f"{tw.TOKENS[j]}: {tw.fmt(z[j])}" in text(line) and f"{name(j)} at {tw.fmt(z[j])}" in box.charts["z"].title
    assert f"{name(top)} leads with {tw.fmt(p[top])}" in box.chart.title


def tick_names(ax):
    return [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


@pytest.mark.parametrize("make", [tw.logit_playground, tw.logit_shift])
def test_logits_over_p_name_each_token_once_with_room_between_the_names(make):
    """The logits sit above p, one column per token; only p's axis names the tokens, and
    neighbouring names, slanted at 45°, are further apart across the slant than 1.5 times
    their text's size (side by side, the two panels' names ran into each other)."""
    box = make()
    fig = figure_of(box)
    ax_z, ax_p = fig.axes
    fig.canvas.draw()
    assert ax_z.get_shared_x_axes().joined(ax_z, ax_p)
    assert not any(t.get_visible() for t in ax_z.get_xticklabels() if t.get_text())
    assert len(tick_names(ax_p)) == len(tm.VOCAB)
    x = [ax_p.transData.transform((i, 0))[0] for i in range(len(tm.VOCAB))]
    gap = min(np.diff(x)) * np.sin(np.pi / 4)
    size = max(t.get_fontsize() for t in ax_p.get_xticklabels() if t.get_text() != "'.'") * fig.dpi / 72
    assert gap >= 1.5 * size, f"{gap:.0f} px between names of {size:.0f} px"


def static_bars():
    """A static bar chart of p, as the notebooks draw one with tw.token_bars."""
    fig = plt.figure()
    tw.token_bars(fig.add_subplot(), tm.softmax(Z0), "p")
    return fig


@pytest.mark.parametrize("make", [tw.logit_playground, tw.logit_shift, tw.attention_switch,
                                  tw.tying_switch, tw.temperature_explorer, tw.generation_stepper,
                                  static_bars])
def test_the_full_stop_tick_reads_from_the_back_of_the_room(make):
    """The '.' token's tick, in every live chart and static bar chart: upright, bold and at
    least 1.5 times the size of the others, so its dot does not vanish between its quotes."""
    made = make()
    fig = made if isinstance(made, plt.Figure) else figure_of(made)
    ax = fig.axes[-1]
    labels = {t.get_text(): t for t in ax.get_xticklabels()}
    stop, others = labels.pop("'.'"), list(labels.values())
    assert stop.get_rotation() == 0 and stop.get_fontweight() == "bold"
    assert stop.get_fontsize() >= 1.5 * max(t.get_fontsize() for t in others)


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
    """The state holds c; the logits show z + c, p stays softmax(z); the line and the lower
    title (which the stored picture carries) name c and the top token's p."""
    line, _ = parts(box)
    p0 = softmax_by_hand(Z0)
    assert box.state.c == c
    assert np.allclose(shown(box.charts["z"]), Z0 + c)
    assert np.allclose(shown(box.charts["p"]), p0)                  # p does not move
    assert f"c = {tw.plain(c)}" in text(line)
    names_p(text(line), p0)
    assert f"leads with {tw.fmt(p0.max())}" in box.charts["p"].title


@pytest.mark.parametrize("make", [tw.logit_playground, tw.logit_shift])
def test_the_logit_axis_fits_the_logits_and_widens_and_narrows_with_them(make):
    """The model's logits reach 2.5: the axis starts at ±4, not ±10, and moves in steps of 4 so
    that every bar stays inside with room above it, for a typed 9, -1000, and back to 0."""
    box = make()
    ax, typed = box.charts["z"].ax, find(box, widgets.Text)[0]
    assert ax.get_ylim() == (-4, 4)
    for value, limit in [("9", 12), ("-1000", 1004), ("0", 4)]:
        typed.value = value
        heights = np.abs(shown(box.charts["z"]))
        assert ax.get_ylim() == (-limit, limit), value
        assert heights.max() + 0.5 <= limit and (limit == 4 or heights.max() + 0.5 > limit - 4)


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
    slider.value = -3.0                           # typed, then slid
    check_shift(box, -3.0)


def test_attention_switch_gives_the_two_distributions():
    """Its line names both distributions; the bars: test_a_switch_draws_the_flipped_setting_dashed."""
    box = tw.attention_switch()
    line, area = parts(box)
    assert text(line).startswith("attention on: ")
    names_p(text(line), tm.intermediates(TEXT)["p"][-1])
    find(box, widgets.ToggleButton)[0].value = False
    p_off = tm.intermediates(TEXT, params=tm.switch_off(tm.PARAMS, "attn"))["p"][-1]
    assert text(line).startswith("attention off: ") and "␣cat with p = 0.455" in text(line)
    names_p(text(line), p_off)
    prompt = find(box, widgets.Text)[0]
    for bad, sentence in [("the zebra", "no token for"), ("", "empty"),
                          ("the the the the the the the the the", "at most 8")]:
        prompt.value = bad
        assert sentence in text(area)
        assert np.allclose(shown(box.chart), p_off)
    prompt.value = "the dog climbed the"
    assert text(area) == "" and "attention off" in text(line)
    assert box.chart.title == 'p of the last row: "the dog climbed the"'


def test_a_live_widget_without_the_widget_backend_says_what_to_run():
    backend = plt.get_backend()
    plt.switch_backend("agg")
    try:
        with pytest.raises(ValueError, match=r"run `%matplotlib widget` first"):
            tw.logit_playground()
    finally:
        plt.switch_backend(backend)


def test_p_summary_names_the_top_three_and_the_entropy():
    """(Its refusal of empty input, and table's: test_bad_input.py's table.)"""
    assert tw.p_summary(tm.softmax(Z0)) == ("most likely: ␣roof with p = 0.395 (then ␣wall 0.141, "
                                            "␣sofa 0.089) · entropy of p: 1.972 nats")


# --- the page: its figures, its pictures, the tying mechanism ------------------------------

NB06 = Path(__file__).resolve().parents[1] / "notebooks" / "06_output.ipynb"
THE = tm.VOCAB.index(" the")


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def prose(path):
    return "\n".join("".join(c["source"]) for c in load(path)["cells"]
                     if c["cell_type"] == "markdown").replace("−", "-")


# --- the figures quoted in prose ---------------------------------------------------------

def test_the_direct_path_is_symmetric_and_repeats_most_tokens():
    E = np.asarray(tm.PARAMS["wte"])
    assert np.allclose(E @ E.T, (E @ E.T).T)
    f = (E - E.mean(1, keepdims=True)) / np.sqrt(E.var(1, keepdims=True) + 1e-5)   # ln_f by hand
    direct = f @ E.T
    repeats = sum(direct[i, i] >= direct[i].max() - 1e-9 for i in range(len(E)))
    out = "\n".join(o.get("text", "") if isinstance(o.get("text"), str) else "".join(o.get("text", []))
                    for c in load(NB06)["cells"] for o in c.get("outputs", []))
    assert f"scores first after themselves: {repeats} of 12" in out
    assert repeats > len(E) / 2


def test_a_trained_tied_toy_outvotes_the_direct_path():
    corpus = tt.load_corpus()
    trained, _ = tt.train(corpus, steps=200, seed=2, lr=0.05, tied=True)
    assert "w_u" not in trained
    with_block = tm.intermediates(TEXT, params=trained)["p"][-1]
    bypassed = tm.intermediates(TEXT, params=tm.switch_off(tm.switch_off(trained, "attn"), "mlp"))["p"][-1]
    assert tw.TOKENS[int(bypassed.argmax())] == "␣the" and bypassed[THE] > 0.5
    assert with_block[THE] < 0.01
    assert tw.TOKENS[int(with_block.argmax())] in ("␣roof", "␣sofa", "␣wall", "␣floor")


def markdown_cells(path):
    return ["".join(c["source"]) for c in load(path)["cells"] if c["cell_type"] == "markdown"]


def stored_pngs(path):
    return {"".join(c["source"]).strip(): output_pngs(o["data"])[0]
            for c in load(path)["cells"] for o in c.get("outputs", []) if output_pngs(o.get("data", {}))}


def test_06_widget_pictures_differ():
    pngs = stored_pngs(NB06)
    widgets_ = [k for k in pngs if k.startswith("tw.")]
    assert {"tw.logit_playground()", "tw.tying_switch()", "tw.attention_switch()"} <= set(widgets_)
    assert len({pngs[k] for k in pngs}) == len(pngs), "two stored pictures are the same"


@pytest.mark.parametrize("make, flipped, now, other", [
    (tw.tying_switch, {"params": tm.tie(tm.PARAMS)}, "own W_U", "tied: W_U = Eᵀ"),
    (tw.attention_switch, {"params": tm.switch_off(tm.PARAMS, "attn")}, "attention on", "attention off")])
def test_a_switch_draws_the_flipped_setting_dashed(make, flipped, now, other):
    box = make()
    ax = box.chart.ax
    outlines = [b for b in ax.patches if not b.get_fill()]
    assert len(outlines) == len(tw.TOKENS) and all(b.get_linestyle() == "--" for b in outlines)
    start = make is tw.attention_switch                           # the toggle's first value
    p_now = tm.intermediates(TEXT)["p"][-1]                                 # both start as the toy is
    p_other = tm.intermediates(TEXT, **flipped)["p"][-1]
    assert np.allclose(shown(box.chart), p_now)
    assert np.allclose([b.get_height() for b in outlines], p_other)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == now and other in legend[2]
    find(box, widgets.ToggleButton)[0].value = not start          # flip: the two swap
    assert np.allclose(shown(box.chart), p_other)
    assert np.allclose([b.get_height() for b in outlines], p_now)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == other and now in legend[2]
    find(box, widgets.Text)[0].value = "the dog climbed the"       # a new prompt: both follow
    assert np.allclose([b.get_height() for b in outlines], tm.intermediates("the dog climbed the")["p"][-1])
    assert np.allclose(shown(box.chart), tm.intermediates("the dog climbed the", **flipped)["p"][-1])


def test_the_tying_picture_shows_the_the_leading_when_tied():
    box = tw.tying_switch()
    outlines = [b for b in box.chart.ax.patches if not b.get_fill()]
    assert tw.TOKENS[int(np.argmax([b.get_height() for b in outlines]))] == "␣the"
    assert tw.TOKENS[int(np.argmax(shown(box.chart)))] == "␣roof"
    assert "dashed" in prose(NB06) and "with tying (dashed) ␣the takes\nthe lead" in prose(NB06)
    png = base64.b64decode(box._repr_mimebundle_()["image/png"])
    assert png.startswith(b"\x89PNG")


# --- the playground keeps the exact logit when it is typed back as shown -----------------

def test_typing_back_the_shown_logit_changes_nothing():
    """The logit shown (2.491) typed back keeps the exact logit; typed once more after another
    value, it applies (other typed values: test_logit_playground_shows_the_models_p_...)."""
    box = tw.logit_playground()
    typed = find(box, widgets.Text)[0]
    before = text(parts(box)[0])
    assert Z0[ROOF] != float(tw.fmt(Z0[ROOF])), "the shown logit is rounded"
    typed.value = tw.fmt(Z0[ROOF])
    assert np.array_equal(box.state.z, Z0) and text(parts(box)[0]) == before
    typed.value = "2.5"
    typed.value = "2.491"                          # what is shown now is 2.500: 2.491 applies
    assert box.state.z[ROOF] == 2.491


# --- the loss from the logits, position 5, the direct path and the subject ----------------

def test_06_loss_from_the_logits_needs_only_that_p_underflows_to_0():
    """The point is -ln 0 = infinity: e^-1000 is 0 in float64 and float32, with no tour of
    the subnormal limits."""
    assert np.exp(-1000.0) == 0 and np.exp(np.float32(-1000)) == 0
    with np.errstate(divide="ignore"):
        assert -np.log(np.exp(-1000.0)) == np.inf
    cells = markdown_cells(NB06)
    start = next(i for i, m in enumerate(cells) if m.startswith("### The loss straight from the logits"))
    cell = "\n".join(cells[start:start + 2])      # the formula, then what floating point does to it
    assert "subnormal" not in cell and "10⁻" not in cell
    assert "**floating point**" in cells[start + 1], "floating point is said where the loss needs it"
    assert "a p as small as e^(−1000) is below every positive number" in re.sub(r"\s+", " ", cell)
