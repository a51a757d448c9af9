"""Notebooks 05 (the block) and 06 (output): the states their pictures show, the random toy
that shows gains, biases and a second block, the tying mechanism, and their new exercises.

- the switches of 06 draw the flipped setting as dashed outlines, so each stored picture
  shows the state its prose describes (tied: ␣the leads), and no two pictures are the same;
- typing back the logit the playground shows keeps the exact logit;
- tw.random_toy() has nothing trivial (forward on random models of 1 to 3 blocks against
  the shared reference: tests/test_forward_combinations.py);
- the tying mechanism: E Eᵀ's direct path, and a trained tied toy whose block outvotes it;
- exercises in page order (05.6's and 06.8's mistakes: tests/test_exercises.py).
"""
import base64
import json
import re
from pathlib import Path

import ipywidgets as widgets
import numpy as np
import pytest

import toy_model as tm
import toy_train as tt
import toy_widgets as tw
from widget_tools import find, output_pngs, shown, text

ROOT = Path(__file__).resolve().parents[1]
NB05, NB06 = ROOT / "notebooks" / "05_block.ipynb", ROOT / "notebooks" / "06_output.ipynb"
TEXT = "the cat climbed the"
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
    box = tw.logit_playground()
    typed = find(box, widgets.Text)[0]
    line = find(box, widgets.HTML)[-2]
    z0 = tm.intermediates(TEXT)["logits"][-1]
    roof = tm.VOCAB.index(" roof")
    before = text(line)
    assert z0[roof] != float(tw.fmt(z0[roof])), "the shown logit is rounded"
    typed.value = tw.fmt(z0[roof])                 # 2.491, as shown
    assert np.array_equal(box.state.z, z0) and text(line) == before
    assert np.allclose(shown(box.chart), tm.softmax(z0))
    typed.value = "2.5"                            # another value is applied exactly
    assert box.state.z[roof] == 2.5
    typed.value = ""
    typed.value = "2.491"                          # what is shown now is 2.500: 2.491 applies
    assert box.state.z[roof] == 2.491


# --- the random toy: nothing trivial -----------------------------------------------------

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


# --- exercises: page order ---------------------------------------------------------------

@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("0[1-9]_*.ipynb")), ids=lambda p: p.stem)
def test_exercises_are_numbered_in_page_order(path):
    keys = [m.group(1) for c in load(path)["cells"] if c["cell_type"] == "code"
            for m in [re.search(r'tw\.exercise\("(\d\d\.\d+)"', "".join(c["source"]))] if m]
    numbers = [int(k.split(".")[1]) for k in keys]
    assert numbers == list(range(1, len(numbers) + 1)), keys


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
