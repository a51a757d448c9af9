"""Notebook 05, The block: its exercises and the branch switches.
"""
import html

import ipywidgets as widgets
import numpy as np

import toy_model as _model
from toy_model import DIMS, PARAMS, encode, intermediates, switch_off, token_name

from .draw import MONOSPACE, TOKENS, fmt, token_html
from .kit import builder_text
from .kit import WidgetState, guarded, live_chart, message_area, on_change, panel
from .exercises import EXAMPLE_TEXT, choice_exercise, code_exercise, number_exercise


_V5 = np.array([0.0, 2.0, 2.0, 8.0])


def _ln(x):
    return _model.layer_norm(np.asarray(x, dtype=float), 1.0, 0.0)


number_exercise(
    "05.1", "LayerNorm by hand. Compute the LayerNorm of the row [0, 2, 2, 8] (gain 1, bias 0; "
            "ε = 10⁻⁵ makes no difference at 3 decimals). What is its fourth entry?",
    answer=lambda: _ln(_V5)[3], fractions=True,
    hints=lambda: [
        ((_V5 - _V5.mean())[3] / _V5.std(ddof=1), "You used the sample standard deviation (dividing "
         "by n − 1 = 3); LayerNorm uses the population one: divide the squared deviations by n = 4."),
        (_V5[3] / _V5.std(), "Subtract the row's mean before you divide by the standard deviation."),
        ((_V5 - _V5.mean())[3], "You subtracted the mean; now divide by the standard deviation too."),
        (_V5[3], "That is the input unchanged: subtract the mean, then divide by the standard deviation.")],
    solution=lambda: (
        f"Mean {fmt(_V5.sum(), 0)}/4 = {fmt(_V5.mean(), 0)}; deviations "
        f"{[float(v) for v in _V5 - _V5.mean()]}; variance {fmt(((_V5 - _V5.mean()) ** 2).sum(), 0)}/4 = "
        f"{fmt(_V5.var(), 0)}; standard deviation {fmt(_V5.std(), 0)}. So LN = "
        f"[{', '.join(fmt(v) for v in _ln(_V5))}], and the fourth entry is 5/3 = {fmt(_ln(_V5)[3])}. "
        "(With the sample standard deviation you would have divided the sum of squares by 3 instead of 4.)"))

_BOTH = ["y = x", "y = LN(x)", "y = 0", "y = x + LN(x)"]


def branches(attention=True, mlp=True):
    """The toy's weights with the block's attention branch and MLP branch on or off: a branch
    is switched off by zeroing its output projection (tm.switch_off)."""
    params = PARAMS if attention else switch_off(PARAMS, "attn")
    return params if mlp else switch_off(params, "mlp")


def _without_residual_answer():
    """What a block without residuals would give with both branches off: the sum of what
    the branches add, which is all such a block keeps (the model's y minus its x)."""
    r = intermediates(EXAMPLE_TEXT, params=branches(attention=False, mlp=False))
    x, ln, added = r["x"], _ln(r["x"]), r["y"] - r["x"]
    for option, value in zip(_BOTH, [x, ln, 0 * x, x + ln], strict=True):
        if np.allclose(added, value):
            return option
    return None


choice_exercise(
    "05.2", "Without the residual. Suppose a block replaced the stream instead of adding to it: "
            "h = attn(LN₁(x)), y = mlp(LN₂(h)). A branch switched off gives 0. With both branches "
            "off, what would y be?",
    options=_BOTH, answer=_without_residual_answer,
    hints={"y = x": "That is the real block, which adds each branch to x. Here h is the attention "
                    "branch's output alone: what is left of x when that branch gives 0?",
           "y = LN(x)": "LN(x) only feeds the attention branch; with that branch off, nothing of it comes out.",
           "y = x + LN(x)": "Neither x nor LN(x) is carried past a branch here: h is the branch's output alone.",
           "y = 0": "Follow x through both lines once more."},
    solution="y = 0. Without the residual, h is the attention branch's output alone, and a branch "
             "that is off gives 0; then y is the MLP's output alone, 0 again. Nothing of x reaches y, "
             "so every text would end in the same row. With the residual, the same switches give "
             "y = x (try it in the widget): the stream survives whatever the branches do.")


def _gelu_min():
    return float(_model.gelu(np.linspace(-3, 0, 30001)).min())


def _gelu_options():
    low, at = _gelu_min(), float(_model.gelu(-2.0))
    return [f"GELU(−2) = {fmt(0.0)}, as for ReLU", f"GELU(−2) = {fmt(at)}, a little below 0",
            f"GELU(−2) = {fmt(low)}, GELU's lowest value", f"GELU(−2) = {fmt(-2.0)}, the input passed on"]


choice_exercise(
    "05.3", "GELU at −2. Without computing, use the plot of GELU beside ReLU and the values printed "
            "under it: which of the four is GELU(−2)?",
    options=_gelu_options, answer=lambda: _gelu_options()[1],
    hints=lambda: {
        _gelu_options()[0]: "That is ReLU's value. GELU is u times a number between 0 and 1 that is "
                            "never exactly 0: for negative u, GELU stays a little below zero and only "
                            "fades towards 0.",
        _gelu_options()[2]: "GELU reaches its lowest value near u = −0.75; further left it rises back "
                            "towards 0. Compare the values printed for u = −1 and u = −3.",
        _gelu_options()[3]: "GELU passes its input on only well above 0; below 0 it stops it, "
                            "like ReLU, but softly."},
    solution=lambda: (
        f"GELU(−2) = {fmt(float(_model.gelu(-2.0)))}, a little below 0. GELU dips to its lowest value, "
        f"{fmt(_gelu_min())}, near u = −0.75, then fades back towards 0: it is "
        f"{fmt(float(_model.gelu(-1.0)))} at u = −1 and {fmt(float(_model.gelu(-3.0)))} at u = −3, so at "
        "u = −2 it lies between the two, already close to 0, but not 0 as ReLU's is."))

_DOG = "the dog climbed the"


def _dog_off():
    return intermediates(_DOG, params=branches(attention=False))["p"][-1]


choice_exercise(
    "05.4", f"Attention off, another subject. With attention off, \"{EXAMPLE_TEXT}\" is followed most "
            f"likely by ␣cat. Now take the text \"{_DOG}\", attention off (MLP on). Which token is most "
            "likely next?",
    options=["␣roof", "␣cat", "␣dog", "␣the"], answer=lambda: TOKENS[int(np.argmax(_dog_off()))],
    hints={"␣roof": "That needs 'climbed', and without attention the last row cannot see it.",
           "␣dog": "Without attention, can the last row see that the text mentions a dog?",
           "␣the": "The row of ␣the points along d4, 'noun': a noun comes next.",
           "␣cat": "What can the last row see without attention?"},
    solution=lambda: (
        f"`{token_name(int(np.argmax(_dog_off())))}`, with p = {fmt(_dog_off().max())}, as for the cat "
        f"(try `tm.intermediates(\"{_DOG}\", params=tm.switch_off(tm.PARAMS, \"attn\"))[\"p\"][-1]`). Without "
        "attention, the last row "
        "knows only that it holds `␣the` and is not the first token; the earlier words, dog or cat, "
        "never reach it, so the model predicts what follows any \"the\"."))


def _ln_rows(x, ddof=0, center=True, eps=1e-5, eps_inside=True, axis=-1):
    """Typical wrong LayerNorms (and, with the defaults, the right one)."""
    mean = x.mean(axis=axis, keepdims=True) if center else 0
    var = x.var(axis=axis, keepdims=True, ddof=ddof)
    return (x - mean) / (np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps)


code_exercise(
    "05.5", "Write `layer_norm(x)`: GPT-2's LayerNorm with gain 1 and bias 0, row by row. Subtract "
            "each row's mean, divide by the square root of its (population) variance plus ε = 1e-5.",
    reference=_ln,
    cases=lambda: [("the row [0, 2, 2, 8]", (_V5[None, :],)),
                   (f'the block outputs y of "{EXAMPLE_TEXT}"', (np.array(intermediates(EXAMPLE_TEXT)["y"], dtype=float),)),
                   ("the rows [2, 2, 2, 2] and [2, 2, 2, 2.5]", (np.array([[2, 2, 2, 2], [2, 2, 2, 2.5]], float),)),
                   ("a random 3 × 6 array", (np.random.default_rng(0).standard_normal((3, 6)) * 3 + 1,))],
    mistakes=[(lambda x: _ln_rows(x, ddof=1),
               "that is the sample variance (divided by n − 1): LayerNorm divides by n."),
              (lambda x: _ln_rows(x, center=False),
               "subtract each row's mean first."),
              (lambda x: _ln_rows(x, eps_inside=False),
               "ε goes inside the square root: √(variance + ε)."),
              (lambda x: _ln_rows(x, eps=0.0),
               "add ε = 1e-5 to the variance before the square root (it keeps a row of equal "
               "numbers from dividing by 0)."),
              (lambda x: _ln_rows(x, axis=0),
               "that normalises each column: take the mean and variance of each row (axis=-1).")],
    solution='''def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)    # population variance
    return (x - mean) / np.sqrt(var + 1e-5)''')


def random_toy(seed=0, n_layer=2):
    """A toy in which nothing is trivial: the toy's layout with n_layer blocks, and every
    number drawn at random from a seed: matrices, embeddings and position rows from
    normal(0, 0.5), LayerNorm gains near 1 (1 + normal(0, 0.3)), every bias near 0
    (normal(0, 0.3)). The hand-set toy hides these (gains 1, biases 0, one block);
    this one shows them at work. Read-only, like tm.PARAMS."""
    rng = np.random.default_rng(seed)
    layout = dict(_model.PARAMS, blocks=[_model.PARAMS["blocks"][0]] * n_layer)

    def draw(path, w):
        if path[-1] == "g":                                 # a LayerNorm gain
            return 1 + rng.normal(0, 0.3, w.shape)
        if path[-1] == "b":                                 # a bias (LayerNorm's or a layer's)
            return rng.normal(0, 0.3, w.shape)
        return rng.normal(0, 0.5, w.shape)                  # a matrix, an embedding table
    return _model.freeze(_model.walk(draw, layout))


def _wrong_order(x, blk, post_ln=False, residual=(True, True), stream_ln=False, mlp_reads="h"):
    """Typical mistakes in the order of the block's four lines, each a flag; with the
    defaults they are tm.block's lines. Mistakes in its arguments (heads, norms) call
    tm.block itself with them changed."""
    a = _model.layer_norm(x, **blk["ln_1"])
    if post_ln:                                             # post-LN: normalise the stream
        h = _model.layer_norm(x + _model.multi_head(x, **blk["attn"], n_head=2), **blk["ln_1"])
        return _model.layer_norm(h + _model.mlp(h, **blk["mlp"]), **blk["ln_2"])
    h = (a if stream_ln else x if residual[0] else 0) + _model.multi_head(a, **blk["attn"], n_head=2)
    u = _model.layer_norm(h if mlp_reads == "h" else x, **blk["ln_2"])
    return (h if residual[1] else 0) + _model.mlp(u, **blk["mlp"])


def _plain_norms(blk):
    """blk with both LayerNorms' gains 1 and biases 0."""
    d = len(blk["ln_1"]["g"])
    plain = {"g": np.ones(d), "b": np.zeros(d)}
    return dict(blk, ln_1=plain, ln_2=plain)


def _block_cases():
    toy, rnd = _model.PARAMS, random_toy()
    x_rnd = _model.intermediates(EXAMPLE_TEXT, params=rnd)["x"]
    return [(f'X of "{EXAMPLE_TEXT}" and the toy\'s block', (np.array(intermediates(EXAMPLE_TEXT)["x"]), toy["blocks"][0])),
            ('X of "the dog climbed the" and the toy\'s block',
             (np.array(intermediates("the dog climbed the")["x"]), toy["blocks"][0])),
            (f'X of "{EXAMPLE_TEXT}" and the first block of tw.random_toy() (gains and biases not trivial)',
             (np.array(x_rnd), rnd["blocks"][0])),
            ("the first block's output and the second block of tw.random_toy()",
             (np.array(_model.block(x_rnd, rnd["blocks"][0], n_head=2)), rnd["blocks"][1]))]


code_exercise(
    "05.6", "Write `block(x, blk)`: one pre-LN block, h = x + attn(LN1(x)), y = h + mlp(LN2(h)), "
            "with the block's weights blk (such as `tm.PARAMS[\"blocks\"][0]`). Use "
            "`tm.layer_norm(x, **blk[\"ln_1\"])`, `tm.multi_head(a, **blk[\"attn\"], n_head=2)` "
            "and `tm.mlp(u, **blk[\"mlp\"])`.",
    reference=lambda x, blk: _model.block(x, blk, n_head=_model.N_HEAD), cases=_block_cases,
    mistakes=[(lambda x, blk: _wrong_order(x, blk, post_ln=True),
               "that normalises the stream after each branch (post-LN, the original Transformer's "
               "order); GPT-2 normalises only what enters each branch: h = x + attn(LN1(x))."),
              (lambda x, blk: _wrong_order(x, blk, stream_ln=True),
               "the stream must carry x itself: h = x + attn(LN1(x)), not LN1(x) + attn(LN1(x))."),
              (lambda x, blk: _wrong_order(x, blk, residual=(False, True)),
               "add the attention branch to the stream: h = x + attn(LN1(x)), not attn(LN1(x)) alone."),
              (lambda x, blk: _wrong_order(x, blk, residual=(True, False)),
               "add the MLP's output to the stream: y = h + mlp(LN2(h)), not mlp(LN2(h)) alone."),
              (lambda x, blk: _wrong_order(x, blk, mlp_reads="x"),
               "the MLP reads the stream after attention: LN2(h), not LN2(x)."),
              (lambda x, blk: _model.block(x, blk, n_head=1),
               "the toy's attention has 2 heads: pass n_head=2 to tm.multi_head."),
              (lambda x, blk: _model.block(x, dict(blk, ln_2=blk["ln_1"]), n_head=2),
               "each norm has its own gain and bias: the MLP's is blk[\"ln_2\"], not blk[\"ln_1\"]."),
              (lambda x, blk: _model.block(x, _plain_norms(blk), n_head=2),
               "use each norm's own gain and bias, tm.layer_norm(x, **blk[\"ln_1\"]): in the toy they "
               "are 1 and 0, in tw.random_toy() they are not.")],
    solution='''def block(x, blk):
    a = tm.layer_norm(x, **blk["ln_1"])                       # what the attention branch reads
    h = x + tm.multi_head(a, **blk["attn"], n_head=2)         # first residual
    u = tm.layer_norm(h, **blk["ln_2"])                       # what the MLP reads
    return h + tm.mlp(u, **blk["mlp"])                        # second residual''')


def matrix_html(m, rows, cols, digits=3, bold_last=False):
    """A small matrix as an HTML table with row and column labels (numbers as fmt)."""
    cell = 'style="padding:2px 10px;text-align:{}"'
    head = "".join(f"<th {cell.format('right')}>{html.escape(c)}</th>" for c in cols)
    body = []
    for i, (name, row) in enumerate(zip(rows, np.atleast_2d(m), strict=True)):
        weight = "bold" if bold_last and i == len(rows) - 1 else "normal"
        tds = "".join(f"<td {cell.format('right')}>{fmt(v, digits)}</td>" for v in row)
        body.append(f'<tr style="font-weight:{weight}"><th {cell.format("left")}>'
                    f"{token_html(name)}</th>{tds}</tr>")
    return (f'<table style="font-family:{MONOSPACE};border-collapse:collapse">'
            f"<tr><th></th>{head}</tr>{''.join(body)}</table>")


def _branches_title(last, attention, mlp):
    """The chart's title: whose next token, and the state of both switches."""
    return (f"p of the next token after {last} · attention {'on' if attention else 'off'}"
            f" · MLP {'on' if mlp else 'off'}")


def block_branches(text="the cat climbed the"):
    """Widget: switch the block's attention branch and MLP branch on and off.

    Shows y (n x 4) as a table and the last row's next-token p as bars, updated in place."""
    text = builder_text(text, "block_branches")   # one sentence for a wrong text
    attention = widgets.ToggleButton(value=True, description="attention branch", button_style="success")
    mlp_branch = widgets.ToggleButton(value=True, description="MLP branch", button_style="success")
    formula = widgets.HTML()
    y_table = widgets.HTML()
    top = widgets.HTML()
    area = message_area()
    tokens = [token_name(i) for i in encode(text)]
    chart = live_chart("block-branches", np.zeros(len(TOKENS)), _branches_title(tokens[-1], True, True),
                       height=3.0, ymax=0.6)
    state = WidgetState(attention=True, mlp=True)

    def update(_=None):
        state.attention, state.mlp = attention.value, mlp_branch.value
        r = intermediates(text, params=branches(state.attention, state.mlp))
        for button in (attention, mlp_branch):
            button.button_style = "success" if button.value else ""
            button.icon = "check" if button.value else ""
        h = "x + attn(LN1(x))" if state.attention else "x"
        y = "h + mlp(LN2(h))" if state.mlp else "h"
        note = "  (both branches off: the block passes x through unchanged, y = x)" if not (
            state.attention or state.mlp) else ""
        formula.value = f"<code>h = {h}, y = {y}</code>{note}"
        y_table.value = "<b>y</b> (rows: tokens, columns: dimensions)" + matrix_html(
            r["y"], r["tokens"], [f"d{j + 1} {name}" for j, name in enumerate(DIMS)], bold_last=True)
        p = r["p"][-1]
        best = int(np.argmax(p))
        chart.show(p, highlight=best, title=_branches_title(tokens[-1], state.attention, state.mlp))
        top.value = f"most likely next: <b>{html.escape(token_name(best))}</b> ({fmt(p[best])})"

    on_change(attention, area, state, update)
    on_change(mlp_branch, area, state, update)
    guarded(area, update, state)()
    root = panel("block-branches", widgets.HBox([attention, mlp_branch]), formula, y_table,
                 chart.fig.canvas, top, area)
    root.chart, root.state = chart, state                     # for tests
    return root


# --- The block as a stream with two side roads ---------------------------------------

def block_picture(text="the cat climbed the"):
    """The block's two lines drawn as a stream with two side roads: x runs along the stream
    to y; each branch leaves it, normalises (LN), computes (attention, the MLP) and is added
    back at a ⊕. Every array is labelled with its shape, read from tm.intermediates(text)."""
    import matplotlib.patches as patches
    from .draw import BLUE, ORANGE, new_figure, static
    text = builder_text(text, "block_picture")
    r = intermediates(text)

    def shape(a):
        return " × ".join(str(n) for n in np.shape(a))

    fig, ax = new_figure(6.8, 2.9)
    stream_y, road_y = 0.0, 1.5
    xs = {"x": 0.0, "plus1": 3.3, "h": 4.2, "plus2": 7.5, "y": 8.4}
    # the stream
    ax.annotate("", xy=(xs["y"] - 0.42, stream_y), xytext=(xs["x"] + 0.42, stream_y),
                arrowprops=dict(arrowstyle="-|>", color=BLUE, linewidth=3), zorder=1)
    for name, key in [("x", "x"), ("h", "h"), ("y", "y")]:
        ax.text(xs[key], stream_y, f"{name}\n{shape(r[key])}", ha="center", va="center", fontsize=10, zorder=5,
                bbox=dict(boxstyle="round,pad=0.35", facecolor="white", edgecolor=BLUE, linewidth=1.5))
    for key in ("plus1", "plus2"):
        ax.add_patch(patches.Circle((xs[key], stream_y), 0.22, facecolor="white", edgecolor=BLUE,
                                    linewidth=1.5, zorder=3))
        ax.text(xs[key], stream_y, "+", ha="center", va="center", fontsize=13, color=BLUE, zorder=4)
    # the side roads: leave the stream, LN, compute, come back at the +
    roads = [(xs["x"] + 0.6, xs["plus1"], "LN₁", "attention", shape(r["attn"]), "tokens look at\nearlier tokens"),
             (xs["h"] + 0.6, xs["plus2"], "LN₂", "MLP", shape(r["mlp"]), "each row\non its own")]
    for start, plus, ln, what, out_shape, note in roads:
        left, right = start + 0.15, plus
        ax.plot([left, left], [stream_y + 0.08, road_y], color=ORANGE, linewidth=2)
        ax.annotate("", xy=(right, stream_y + 0.24), xytext=(right, road_y),
                    arrowprops=dict(arrowstyle="-|>", color=ORANGE, linewidth=2))
        ln_x, f_x = left + 0.75, left + 2.0
        ax.plot([left, right], [road_y, road_y], color=ORANGE, linewidth=2, zorder=1)
        for at, label in [(ln_x, ln), (f_x, what)]:
            ax.text(at, road_y, label, ha="center", va="center", fontsize=10, zorder=5,
                    bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor=ORANGE, linewidth=1.5))
        ax.text(f_x, road_y + 0.42, note, ha="center", va="bottom", fontsize=8, color="#555555")
        ax.text(right + 0.1, (stream_y + road_y) / 2 + 0.1, f"adds\n{out_shape}", ha="left", va="center",
                fontsize=8, color=ORANGE)
    ax.text((xs["x"] + xs["y"]) / 2, stream_y - 0.55, "the stream: each row of x goes on unchanged, and each branch's result is added to it",
            ha="center", va="top", fontsize=8, color=BLUE)
    ax.set_xlim(-0.6, 9.0)
    ax.set_ylim(-1.0, 2.55)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_axis_off()
    ax.set_title("h = x + attn(LN₁(x)),   y = h + mlp(LN₂(h))", fontsize=10)
    static(fig)
