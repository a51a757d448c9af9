"""Notebook 05 (the block): the branch-switch widget, without a browser; and the figures the
page's prose quotes about the MLP (attention off, row by row, a unit you can read), recomputed
with a forward pass written here in numpy."""

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
    p = tm.run(TEXT, params=tm.switch_off(tm.PARAMS, "attn"))["p"][-1]
    assert np.allclose(shown(chart), p)
    assert f"␣cat  ({tw.fmt(p.max())})" in text_of(htmls)
    assert_only_top_highlighted(chart, p)
    toggles["MLP branch"].value = False
    p = tm.run(TEXT, params=tm.switch_off(tm.switch_off(tm.PARAMS, "attn"), "mlp"))["p"][-1]
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
    """(p per row, the MLP's activations, y) from the shared reference (tests/reference.py)."""
    P = P if attention_on else ref.without(P, "attn")
    trace = {}
    logits = ref.forward(ids, P if mlp_on else ref.without(P, "mlp"), 2, trace=trace)
    return ref.softmax_rows(logits), trace["blocks"][0]["act"], trace["blocks"][0]["y"]


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
    assert moved < 1e-5 and "no probability moves by more than about 0.00001" in flat(
        next(f for f, _ in cells if "erases that kind" in f))


def test_05_the_tie_of_dog_and_roof_without_attention_is_said_as_it_is():
    """With the MLP off, LN(x_5) gives ␣dog and ␣roof the same logit; with it on, their p
    differ first in the fifth decimal."""
    dog, roof = tm.VOCAB.index(" dog"), tm.VOCAB.index(" roof")
    x5 = np.asarray(tm.PARAMS["wte"])[tm.VOCAB.index(" the")] + np.asarray(tm.PARAMS["wpe"])[4]
    f = (x5 - x5.mean()) / np.sqrt(x5.var() + 1e-5)
    w_u = np.asarray(tm.PARAMS["w_u"])
    assert np.isclose(f @ w_u[:, dog], f @ w_u[:, roof], rtol=0, atol=1e-12)
    on, _, _ = by_hand(IDS[:-1], attention_on=False)
    a, b = on[-1, dog], on[-1, roof]
    assert f"{a:.4f}" == f"{b:.4f}" and f"{a:.5f}" != f"{b:.5f}"
    text = flat(next(f for f, _ in prose() if "tie at" in f))
    assert (f"tie at {tw.fmt(a)}: with the MLP off they get the same logit, and with it on their p differ "
            "only in the fifth decimal") in text


def test_05_says_where_each_p_moves_and_who_put_it_there():
    """The table gives each position's p with the MLP on and off; the prose counts where the
    MLP helps and says the figures were given in advance and the solve put them there."""
    on, _, _ = by_hand(IDS[:-1])
    off, _, _ = by_hand(IDS[:-1], mlp_on=False)
    on, off = on[np.arange(5), TARGETS], off[np.arange(5), TARGETS]
    helps = int((on > off).sum())
    assert (helps, 5 - helps) == (2, 3)
    printed = next(o for _, o in prose() if "MLP helps" in o)
    for a, b in zip(on, off):
        assert f"{tw.fmt(a)}       {tw.fmt(b)}" in printed
    text = flat(next(f for f, _ in prose() if f.startswith("The MLP helps at two positions")))
    assert "The MLP helps at two positions and hurts at three" in text
    # the constructive side is named, and is there to be read
    assert "read **A unit you can read** in *Going further*" in text
    assert any(m.startswith("### A unit you can read") for m in markdown())
    assert "Why these changes?" not in flat("\n".join(markdown()))
    assert "So, plainly" not in flat("\n".join(markdown())), "one short paragraph, not three"
    intro = flat(next(f for f in markdown() if f.startswith("## What the MLP does in this toy")))
    assert "was solved for so that the toy prints the figures of the next notebook" in intro


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


def test_the_chart_title_names_the_state_of_both_switches(widget):
    toggles, _, chart = parts(widget)
    assert chart.title == "p of the next token after ␣the · attention on · MLP on"
    toggles["attention branch"].value = False
    assert chart.title.endswith("· attention off · MLP on")
    toggles["MLP branch"].value = False
    assert chart.title.endswith("· attention off · MLP off")


# --- the page's structure: one main path, its claims no larger than its numbers ----------

def sections():
    """{heading: (markdown, printed text)} for each `## ` section of the page."""
    found, name = {}, "top"
    for source, printed in prose():
        if source.startswith("## "):
            name = source.splitlines()[0]
        md, out = found.get(name, ("", ""))
        found[name] = (md + "\n" + source, out + printed)
    return found


def main_path():
    text = "\n".join(markdown())
    return flat(text.split("## Check yourself")[0]), flat(text.split("## Going further")[1])


def test_05_layernorm_refers_back_to_notebook_3_and_shows_only_what_is_new():
    import statistics
    section = next(v for k, v in sections().items() if k.startswith("## 1 LayerNorm"))
    assert "Notebook 3 normalised the row of `ed`" in flat(section[0])
    row = [1.0, 1.0, -1.0, 0.0]                           # ed's embedding, position row 0
    assert np.array_equal(tm.run(TEXT)["x"][3], row)
    mean = statistics.fmean(row)
    population = [tw.fmt((v - mean) / (statistics.pvariance(row) + 1e-5) ** 0.5) for v in row]
    sample = [tw.fmt((v - mean) / statistics.stdev(row)) for v in row]
    assert f"divide by n = 4: {population}" in flat(section[1])
    assert f"divide by n - 1 = 3: {sample}" in flat(section[1]) and sample != population
    assert "variance:" not in section[1], "notebook 3 computed the mean and variance of ed already"


def test_05_the_attention_branch_is_shown_as_its_one_call():
    section = next(v for k, v in sections().items() if k.startswith("## 2 The attention branch"))
    cells = [s for s, _ in prose() if "tm.multi_head(r[\"ln1\"]" in s]
    assert cells and "same as the model's attn: True" in section[1]


def test_05_the_ln2_caveat_quotes_the_models_figure():
    h5 = np.asarray(tm.run(TEXT)["h"][-1])
    ln = (h5 - h5.mean()) / np.sqrt(((h5 - h5.mean()) ** 2).mean() + 1e-5)
    assert h5[2] == 0 and ln[2] < 0
    assert f"`␣the` is 0 on d3 in h, yet {tw.fmt(ln[2])} after LN₂" in main_path()[0]


def test_05_the_relu_count_is_in_going_further_with_the_pairs_that_explain_it():
    r = tm.run(TEXT)
    h = np.asarray(r["h"])
    ln2 = (h - h.mean(1, keepdims=True)) / np.sqrt(h.var(1, keepdims=True) + 1e-5)
    pre = np.hstack([ln2, -ln2])                          # c_fc: +d_k, then -d_k
    assert np.allclose(pre, r["mlp_pre"])
    zeros, pairs, both = int((pre <= 0).sum()), pre.size // 2, int((ln2 == 0).sum())
    assert zeros == pairs + both
    main, further = main_path()
    assert f"{pairs} + {both} = {zeros} of the {pre.size}" in further
    assert f"ReLU, {zeros}" not in main
    outputs_before = "".join(o for _, o in prose()[:next(i for i, (s, _) in enumerate(prose())
                                                          if s.startswith("## Going further"))])
    assert "exactly 0 with ReLU" not in outputs_before


def test_05_the_main_path_leaves_newer_blocks_to_going_further():
    main, further = main_path()
    for term in ("RMSNorm", "RoPE", "gated", "SwiGLU", "groups of heads"):
        assert term not in main, f"{term!r} belongs in Going further"
    for term in ("RMSNorm", "RoPE", "gated MLP", "groups of heads"):
        assert term in further


def test_05_says_the_attention_off_prediction_is_kept_by_construction():
    text = "\n".join(markdown())
    before, _ = text.split("## What the MLP does in this toy")
    assert "the MLP's last layer was chosen to keep this prediction as it was" in flat(before)[-200:]


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


def test_05_no_sentence_claims_more_than_its_numbers():
    text = flat("\n".join(markdown()))
    assert "twice the row gives twice the output" not in text   # false once a bias is added
    assert "exactly the corrections" not in text                # the MLP corrects y, not p
    assert "GELU helped" not in text                            # no fit with ReLU is shown
    assert "The toy has 2d = 8 hidden units, one \"on\" and one \"off\" unit per dimension" in text
    fit = flat(next(m for m in markdown() if m.startswith("### Where the decimals")))
    assert "prints y₅ itself" in fit and "most likely token" in fit and "attention off" in fit
    assert "fix the last row's final vector, LN(y₅)" not in fit  # LN alone leaves scale and shift free
    assert "about 10⁻⁵ across in its tightest directions" in fit      # tools/fit_toy.py: two directions
    assert "y_i = s · f_i + c" in fit                               # how a p becomes a target for y
    assert "Why GPT-2 prefers that" not in text                     # an empirical choice (Going further)
    assert "for a toy's sake" not in text


def test_05_going_further_leaves_the_main_paths_names_alone():
    """Re-running a main-path cell after Going further must still read the toy: the random toy's
    block is rblk, never blk."""
    import ast
    import json
    cells = json.loads(NB05.read_text(encoding="utf-8"))["cells"]
    start = next(i for i, c in enumerate(cells) if "".join(c["source"]).startswith("## Going further"))

    def assigned(part):
        return {x.id for c in part if c["cell_type"] == "code"
                for node in ast.parse(re.sub(r"(?m)^%.*$", "", "".join(c["source"]))).body if isinstance(node, ast.Assign)
                for target in node.targets for x in ast.walk(target) if isinstance(x, ast.Name)}

    kept = {"blk", "mlp", "attn", "r", "text", "ids", "targets"} & assigned(cells[:start])
    assert kept >= {"blk", "r", "text"} and not kept & assigned(cells[start:])


def test_05_says_whose_weights_12_d2_misses_and_where_head_1_looks():
    text = flat("\n".join(markdown()))
    assert "12·d² does not count Llama 3's weights per block" in text
    assert "notebook 4's heat map" in text
    assert "must be nearly the same in d1, d2 and d3" in text
