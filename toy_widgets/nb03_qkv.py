"""Notebook 03, Q · K · V: its exercises and the query picker.
"""
import html

import ipywidgets as widgets
import numpy as np

from toy_model import N_HEAD, PARAMS, attention, encode, intermediates, softmax

from .draw import fmt
from .kit import builder_text
from .kit import (WidgetState, live_artists, live_chart, message_area, on_change, panel,
                  picked)
from .exercises import EXAMPLE_TEXT, choice_exercise, code_exercise, number_exercise


def _head(h=0, text=EXAMPLE_TEXT):
    return intermediates(text)["heads"][h]


def _ed_dots():
    h = _head(0)
    return np.array([h["q"][3] @ h["k"][0], h["q"][3] @ h["k"][2]])


number_exercise(
    "03.1", lambda: (
        "A softmax of two scores, by hand. Suppose `ed` (row 4) could see only two keys, `the` and "
        f"`␣climb`. Its dot products q·k are {fmt(_ed_dots()[0])} with `the` and {fmt(_ed_dots()[1])} "
        "with `␣climb`, before the division by √2 (row 4 of the score table shows them after it). "
        "What weight would `ed` give to `the`? Divide by √2, exponentiate, and divide by the sum."),
    answer=lambda: softmax(_ed_dots() / np.sqrt(2))[0],
    hints=lambda: [
        (softmax(_ed_dots())[0], "You skipped the division by √2: divide each dot product by √2 first."),
        ((_ed_dots()[0] / np.sqrt(2)) / (_ed_dots() / np.sqrt(2)).sum(),
         "You divided the scores by their sum: take e to the power of each score first."),
        (softmax(_ed_dots() / np.sqrt(2))[1], "That is the weight on ␣climb; the question asks for the weight on 'the'.")],
    solution=lambda: (lambda s, e: (
        f"Divided by √2 the scores are {fmt(s[0])} and {fmt(s[1])} (the same numbers as in row 4 of "
        f"the score table). Then e^{fmt(s[0])} = {fmt(e[0])} and e^{fmt(s[1])} = {fmt(e[1])}, and the "
        f"weight on `the` is {fmt(e[0])} / ({fmt(e[0])} + {fmt(e[1])}) = {fmt(e[0] / e.sum())}."))(
        _ed_dots() / np.sqrt(2), np.exp(_ed_dots() / np.sqrt(2))))

number_exercise(
    "03.2", "A query of zero. Row 2 (`␣cat`) has query 0, so all its scores are 0. Suppose row 5 "
            "(`␣the`) had query 0 as well. What weight would it give `␣climb`? Predict it before you "
            "compute anything.",
    answer=lambda: softmax(np.zeros(len(encode(EXAMPLE_TEXT))))[2], fractions=True,
    hints=lambda: [
        (_head(0)["weights"][4, 2], "That is the real row 5: with query 0 every score is 0, so no key stands out."),
        (1 / (len(encode(EXAMPLE_TEXT)) - 1), "Row 5 may see all 5 keys, itself included."),
        (1 / 2, "That is row 2, which sees only 2 keys; row 5 sees 5.")],
    solution=lambda: (
        f"{fmt(softmax(np.zeros(5))[2])}, that is 1/5. With query 0 every dot product is 0, so "
        "every score is 0 and e^0 = 1 for each of the 5 keys row 5 may see; each gets 1/5. A query "
        "of zero asks for nothing in particular and gets a plain average of the values."))

_SHIFT = ["all grow", "the largest grows, the others shrink", "stay exactly the same",
          "no longer add up to 1"]


def _ed_scores():
    h = _head(0)
    return h["q"][3, None] @ h["k"][:4].T / np.sqrt(2)


choice_exercise(
    "03.3", "Shift a whole row. Add 5 to every score in one row (try it on the row of `ed`). What "
            "happens to that row's weights?",
    options=_SHIFT,
    answer=lambda: (_SHIFT[2] if np.allclose(softmax(_ed_scores()), softmax(_ed_scores() + 5))
                    else _SHIFT[0]),
    hints={"all grow": "They cannot all grow: they must still add up to 1.",
           "the largest grows, the others shrink": "That happens when scores are multiplied (spread out), not shifted.",
           "no longer add up to 1": "Softmax divides by the row's sum, so a row always adds up to 1."},
    solution=lambda: (
        "They stay exactly the same: `ed`'s weights on `the`, `␣cat`, `␣climb`, `ed` are "
        f"{', '.join(fmt(w) for w in softmax(_ed_scores())[0])} before and "
        f"{', '.join(fmt(w) for w in softmax(_ed_scores() + 5)[0])} after. e^(s + 5) = e^5 · e^s: "
        "every term, and so the sum, is multiplied by the same factor e^5, which cancels in the "
        "division. Only differences between scores matter to softmax (that is also why "
        "`tm.softmax` may subtract the row's maximum before exponentiating)."))


def _qkv_case(h):
    head = _head(h)
    return (np.array(head["q"], dtype=float), np.array(head["k"], dtype=float),
            np.array(head["v"], dtype=float))


def _random_qkv(n, d, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((n, d)) for _ in range(3))


def _steps_of_head(q, k, v):
    """tm.attention's steps (scores, weights, out): each typical mistake below is the real
    head with one thing changed."""
    trace = {}
    attention(q, k, v, trace=trace)
    return trace


code_exercise(
    "03.4", "Write `one_head(q, k, v)`: the output of one head, as above, for any number of "
            "tokens n and any head size d_head, both read from q. Scores q kᵀ / √d_head, the future "
            "hidden with the causal mask, the softmax written with np.exp (each row divided by its "
            "own sum), then the weighted sum of the rows of v.",
    reference=lambda q, k, v: attention(q, k, v),
    cases=lambda: [(f'head 1 of "{EXAMPLE_TEXT}"', _qkv_case(0)), (f'head 2 of "{EXAMPLE_TEXT}"', _qkv_case(1)),
                   ("random q, k, v with 3 rows of 3 numbers", _random_qkv(3, 3, 0)),
                   ("random q, k, v with 6 rows of 4 numbers", _random_qkv(6, 4, 1))],
    mistakes=[(lambda q, k, v: attention(q * np.sqrt(q.shape[-1]), k, v),      # scores q kᵀ
               "the scores are not divided by √d_head."),
              (lambda q, k, v: attention(q * np.sqrt(q.shape[-1] / 2), k, v),  # always / √2
               "the scores are divided by √2 whatever the head's size: read d_head from q "
               "(its number of columns)."),
              (lambda q, k, v: attention(q, k, v, mask=False),
               "the future is not hidden: each row may see only itself and earlier rows."),
              (lambda q, k, v: _steps_of_head(q, k, v)["weights"],
               "that is the weights: multiply them by v to get the output."),
              (lambda q, k, v: softmax(_steps_of_head(q, k, v)["scores"], axis=0) @ v,
               "the softmax ran down the columns: each row's weights must add up to 1 (axis=-1)."),
              (lambda q, k, v: (lambda e: e / e.sum() @ v)(np.exp(_steps_of_head(q, k, v)["scores"])),
               "the whole table was divided by one sum: divide each row by its own sum, "
               "e.sum(axis=1, keepdims=True), so that each row adds up to 1.")],
    solution='''def one_head(q, k, v):
    n, d_head = q.shape                                        # read from the input
    scores = q @ k.T / np.sqrt(d_head)                         # [n, n]
    scores = np.where(tm.causal_mask(n), scores, -np.inf)      # hide the future
    e = np.exp(scores)                                         # e^-inf = 0
    weights = e / e.sum(axis=1, keepdims=True)                 # each row adds up to 1
    return weights @ v                                         # [n, d_head]''')


def _check_head(head, n_head=N_HEAD):
    """A head number as the code counts them (0 for head 1), or one sentence."""
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < n_head:
        raise ValueError(f"head must be a whole number from 0 to {n_head - 1} (the toy has "
                         f"{n_head} heads; head 1 is head=0), not {head!r}.")
    return int(head)


def head_weights(head=0, params=PARAMS):
    """W_Q, W_K, W_V of one head (each [d, d_head]): its columns of c_attn.w = [W_Q | W_K | W_V]."""
    head = _check_head(head)
    w = params["blocks"][0]["attn"]["c_attn"]["w"]
    d = w.shape[0]
    d_head = d // N_HEAD
    cols = slice(head * d_head, (head + 1) * d_head)
    return w[:, :d][:, cols], w[:, d:2 * d][:, cols], w[:, 2 * d:][:, cols]


def _picker_title(head, i, tokens, h):
    """The picture's title: which row it shows, and that row's output (the stored
    picture of the widget shows the title, not the line of text under it)."""
    out = h["out"][i - 1]
    return (f"head {head + 1}, query {i} ({tokens[i - 1]}): weights; "
            f"output [{fmt(out[0])}, {fmt(out[1])}]")


def query_picker(text="the cat climbed the", head=0):
    """Pick a query token (buttons, or type its position): one row of the head's
    attention weights as bars over the key tokens, its output and its winning key."""
    text = builder_text(text, "query_picker")   # one sentence for a wrong text
    head = _check_head(head)
    r = intermediates(text)
    tokens, h = r["tokens"], r["heads"][head]
    n = len(tokens)
    pick = widgets.ToggleButtons(options=[(f"{i + 1} {t}", i + 1) for i, t in enumerate(tokens)],
                                 value=n, description="query")
    pick.style.button_width = "auto"
    pos = widgets.IntText(value=n, description="position", layout=widgets.Layout(width="12em"))
    chart = live_chart("query-picker", h["weights"][n - 1], _picker_title(head, n, tokens, h),
                       ylabel="attention weight", labels=tokens,
                       xlabel="key token (what the query looks at)")
    ax = chart.ax
    hidden = [ax.text(j, 0.03, "masked", ha="center", va="bottom", rotation=90, color="#555555")
              for j in range(n)]
    live_artists(chart.fig, [*chart.bars, *hidden, ax.title])
    info = widgets.HTML()
    area = message_area()
    state = WidgetState(query=n)

    def show_row(i):                       # i: the query's position, 1 to n
        w = h["weights"][i - 1]
        wins = np.flatnonzero(np.isclose(w, w.max()))
        state.query = i
        with state.quiet():                # the two controls show the same query
            pick.value = pos.value = i
        for j, t in enumerate(hidden):
            t.set_visible(j >= i)           # the future: the mask gives it weight 0
        chart.show(w, highlight=wins,       # the winning key(s)
                   title=_picker_title(head, i, tokens, h))
        out = h["out"][i - 1]
        if len(wins) == 1:
            most = f"it attends most to {tokens[wins[0]]} (position {wins[0] + 1}, weight {fmt(w.max())})"
        else:
            most = (f"its largest weight, {fmt(w.max())}, is shared by "
                    + " and ".join(tokens[j] for j in wins))
        info.value = html.escape(
            f"query {i} ({tokens[i - 1]}): output = [{fmt(out[0])}, {fmt(out[1])}]; {most}.")

    def on_pick(i):
        show_row(picked(state, pick, "query", state.query))

    def on_pos(i):
        if not 1 <= i <= n:
            state.set(pos, state.query)         # the box shows the query the plot shows
            raise ValueError(f"Positions run from 1 to {n}, one per token of {text!r}; "
                             f"{i} is not one of them.")
        show_row(i)

    on_change(pick, area, state, on_pick)
    on_change(pos, area, state, on_pos)
    show_row(n)
    root = panel("query-picker", pick, pos, chart.fig.canvas, info, area)
    root.chart, root.state = chart, state                     # for tests
    return root
