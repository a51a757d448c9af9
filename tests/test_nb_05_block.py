"""Notebook 05 (the block): the branch-switch widget, without a browser; and the figures the
page's prose quotes about the MLP (attention off, row by row, a unit you can read), recomputed
with a forward pass written here in numpy."""

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


# --- the page's prose: the MLP with attention off, row by row, and a unit you can read -----

NB05 = __import__("pathlib").Path(__file__).resolve().parents[1] / "notebooks" / "05_block.ipynb"


def prose():
    """(source, printed text) of each cell; a markdown cell prints nothing."""
    import json
    cells = json.loads(NB05.read_text(encoding="utf-8"))["cells"]
    return [("".join(c["source"]), "".join("".join(o.get("text", "")) for o in c.get("outputs", [])))
            for c in cells]


def markdown():
    import json
    cells = json.loads(NB05.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def flat(text):
    return re.sub(r"\s+", " ", text).replace("−", "-")


def by_hand(ids, P=tm.PARAMS, attention_on=True, mlp_on=True):
    """The toy's forward pass in plain numpy, apart from the course's functions: p per row."""
    P = {k: P[k] for k in ("wte", "wpe", "w_u")} | {"blk": P["blocks"][0]}
    blk = P["blk"]

    def ln(x):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)

    def gelu(u):
        return 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))

    x = np.asarray(P["wte"])[ids] + np.asarray(P["wpe"])[:len(ids)]
    n = len(ids)
    h = x
    if attention_on:
        qkv = ln(x) @ blk["attn"]["c_attn"]["w"]
        heads = []
        for c in (slice(0, 2), slice(2, 4)):
            q, k, v = qkv[:, c], qkv[:, 4:8][:, c], qkv[:, 8:12][:, c]
            s = q @ k.T / np.sqrt(2)
            s[np.triu_indices(n, 1)] = -np.inf
            w = np.exp(s - s.max(1, keepdims=True))
            heads.append(w / w.sum(1, keepdims=True) @ v)
        h = x + np.hstack(heads) @ blk["attn"]["c_proj"]["w"]
    act = gelu(ln(h) @ blk["mlp"]["c_fc"]["w"] + blk["mlp"]["c_fc"]["b"])
    y = h + act @ blk["mlp"]["c_proj"]["w"] if mlp_on else h
    z = ln(y) @ P["w_u"]
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True), act, y


IDS = tm.encode(TEXT + " roof")
TARGETS = IDS[1:]


def test_05_with_attention_off_the_mlp_moves_y_and_leaves_p_as_the_page_says():
    p_on, _, y_on = by_hand(IDS[:-1], attention_on=False)
    p_off, _, y_off = by_hand(IDS[:-1], attention_on=False, mlp_on=False)
    moved = np.abs(p_on[-1] - p_off[-1]).max()
    assert np.abs(y_on[-1] - y_off[-1]).max() > 1 and moved < 1e-5
    cells = prose()
    claim = next(f for f, _ in cells if "the MLP still changes y, but not p" in f)
    assert "0.455 with it and without it" in flat(claim)
    assert tw.fmt(p_on[-1].max()) == tw.fmt(p_off[-1].max()) == "0.455"
    assert f"largest change of p: {moved:.1e}" in next(o for _, o in cells if "largest change of p" in o)
    assert "no probability moves by as much as 0.00001" in flat(next(f for f, _ in cells if "erases that kind" in f))


def test_05_says_row_by_row_what_the_mlp_does_with_the_models_numbers():
    on, _, _ = by_hand(IDS[:-1])
    off, _, _ = by_hand(IDS[:-1], mlp_on=False)
    on, off = on[np.arange(5), TARGETS], off[np.arange(5), TARGETS]
    text = flat(next(f for f, _ in prose() if f.startswith("Why these changes?")))
    pairs = re.findall(r"(lowers|raises) `[^`]+`(?: after `[^`]+`)? \((\d\.\d{3}) to (\d\.\d{3})\)", text)
    pairs += re.findall(r"and `[^`]+` \((\d\.\d{3}) to (\d\.\d{3})\)", text)
    quoted = [(a, b) for *_, a, b in pairs]
    assert len(quoted) == 5, pairs
    ordered = sorted(quoted, key=lambda ab: [tw.fmt(v) for v in off].index(ab[0]))
    assert ordered == [(tw.fmt(a), tw.fmt(b)) for a, b in zip(off, on)]
    assert all((w == "lowers") == (float(b) < float(a)) for w, a, b in pairs[:4] if w in ("lowers", "raises"))


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


def test_05_loss_and_nats_are_defined_where_first_used():
    texts = markdown()[1:]                                  # after the map
    first_loss = next(f for f in texts if re.search(r"\bloss\b", f))
    assert "**loss**" in first_loss
    first_nats = next(f for f in texts if re.search(r"\bnats\b", f))
    assert "**nats**" in first_nats
