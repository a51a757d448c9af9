"""Notebook 04 (mask and two heads): the mask/heads widget, without a browser; 04.2's
answer recomputed by hand; the write-it-yourself 04.5 (split into heads, attend,
concatenate) checked against the model's own multi-head attention, which an independent
reshape-and-softmax version agrees with (its typical mistakes and the stored unfinished
function: tests/test_exercises.py, as for every write-it-yourself exercise)."""


import ipywidgets as widgets
import numpy as np
import pytest

import toy_model as tm
import toy_widgets as tw
from widget_tools import figure_of, find, heads_by_hand, open_weights_by_hand


@pytest.fixture
def mh():
    root = tw.mask_and_heads()
    mask = find(root, widgets.ToggleButton)[0]
    which = find(root, widgets.ToggleButtons)[0]
    html_parts = find(root, widgets.HTML)
    info, area = html_parts[0], html_parts[-1]
    fig = figure_of(root)
    return root, mask, which, info, area, fig


def image(ax):
    return np.ma.filled(np.ma.asarray(ax.images[0].get_array(), dtype=float), np.nan)


def test_future_leak_is_zero_under_the_mask_and_large_without():
    masked = tm.intermediates("the cat climbed the")["heads"][0]["weights"]
    open_ = tm.intermediates("the cat climbed the", mask=False)["heads"][0]["weights"]
    assert np.allclose(tw.future_leak(masked), 0)
    assert tw.future_leak(open_)[0] > 0.99 and tw.future_leak(open_)[-1] == 0


def test_starts_masked_with_both_heads_and_the_future_blank(mh):
    root, mask, which, info, area, fig = mh
    assert "w-mask-heads" in root._dom_classes
    assert mask.value is True and which.value == "both"
    assert all(ax.get_visible() for ax in fig.axes)
    upper = np.triu(np.ones((5, 5), dtype=bool), k=1)
    assert np.all(np.isnan(image(fig.axes[0])[upper]))
    assert "nothing leaks" in info.value
    # 10 future cells outlined on each map
    assert all(len(ax.patches) == 10 for ax in fig.axes)


def test_mask_off_fills_the_future_and_names_the_largest_leak(mh):
    """With the mask off, the maps show the reference's weights (tests/reference.py; every
    combination of the controls against the model's, and the line naming the largest leak:
    test_widgets_combinations.py), both heads, then head 2 alone on one map."""
    root, mask, which, info, area, fig = mh
    w = open_weights_by_hand()
    mask.value = False
    for h in (0, 1):
        np.testing.assert_allclose(image(fig.axes[h]), w[h], atol=1e-12)
    assert "(no mask)" in fig.axes[0].get_title()
    which.value = "head 2"
    assert fig.axes[0].get_visible() and not fig.axes[1].get_visible()
    assert fig.axes[0].get_title().startswith("head 2")
    np.testing.assert_allclose(image(fig.axes[0]), w[1], atol=1e-12)
    mask.value = True
    assert np.all(np.isnan(image(fig.axes[0])[np.triu(np.ones((5, 5), dtype=bool), k=1)]))
    assert area.value == ""
    which.value = "both"
    assert all(ax.get_visible() for ax in fig.axes)


def test_nothing_picked_from_code_is_refused(mh):
    root, mask, which, info, area, fig = mh
    which.value = "head 2"
    which.value = None                         # set from code: refused, put back
    assert "Pick one of the show options" in area.value
    assert which.value == "head 2" and fig.axes[0].get_title().startswith("head 2")
    mask.value = False
    assert area.value == "" and "(head 2)" in info.value


def test_the_future_stays_outlined_when_the_maps_are_repainted(mh):
    """The outlines are drawn over the heat maps also when only the maps are repainted."""
    root, mask, which, info, area, fig = mh
    fig.canvas.draw()                          # a full draw, as the browser asks for first
    mask.value = False                         # then a repaint of the maps alone

    def outline_pixels():
        rgb = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
        return int((np.abs(rgb - [0xD5, 0x5E, 0x00]).sum(axis=2) < 30).sum())
    assert tw.VERMILION == "#D55E00"
    assert outline_pixels() > 2000             # 2 x 10 outlined cells


def test_04_2_taking_the_mask_away_shrinks_every_old_weight_by_one_factor():
    """04.2's answer, by hand (widget_tools.heads_by_hand): without the mask, every row that
    gains keys keeps its old weights in proportion, each times the same factor below 1."""
    masked = [w for _, w, _ in heads_by_hand()]
    for on, off in zip(masked, open_weights_by_hand(), strict=True):
        for i in range(len(on) - 1):
            factor = off[i, :i + 1] / on[i, :i + 1]
            np.testing.assert_allclose(factor, factor[0], rtol=1e-9)
            assert factor[0] < 1
    assert tw.exercise("04.2").try_answer("every one goes down, all by the same factor").startswith("Right")
    assert not tw.exercise("04.2").try_answer("they stay the same").startswith("Right")


def independent_heads(q, k, v, n_head):
    """Multi-head attention written differently from the model: a reshape into
    [n_head, n, d_head], a batched product, a mask by index comparison."""
    n, d = q.shape
    qh, kh, vh = [m.reshape(n, n_head, d // n_head).transpose(1, 0, 2) for m in (q, k, v)]
    scores = qh @ kh.transpose(0, 2, 1) / np.sqrt(d // n_head)
    rows, cols = np.indices((n, n))
    scores[:, cols > rows] = -np.inf
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    out = (w / w.sum(axis=-1, keepdims=True)) @ vh                     # [n_head, n, d_head]
    return out.transpose(1, 0, 2).reshape(n, d)


def test_04_5_the_model_agrees_with_an_independent_version_on_every_input():
    spec = tw.EXERCISES["04.5"]
    cases = list(tw.exercises._now(spec["cases"]))
    assert len(cases) >= 4 and {args[3] for _, args in cases} >= {1, 2, 3}
    for label, args in cases:
        np.testing.assert_allclose(spec["reference"](*args), independent_heads(*args), atol=1e-12,
                                   err_msg=label)
    r = tm.intermediates("the cat climbed the")
    np.testing.assert_allclose(spec["reference"](r["q"], r["k"], r["v"], 2), r["concat"], atol=1e-12)
