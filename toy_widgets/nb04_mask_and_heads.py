"""Notebook 04, Mask and two heads: its exercises and the mask-and-heads widget.
"""
import html

import ipywidgets as widgets
import numpy as np

from toy_model import N_CTX, N_HEAD, PARAMS, attention, causal_mask, intermediates, multi_head

from .draw import VERMILION, fmt, heatmap, new_figure, set_heatmap
from .kit import builder_text
from .kit import (WidgetState, guarded, live_artists, live_figure, message_area, on_change,
                  panel, picked, redraw)
from .exercises import EXAMPLE_TEXT, choice_exercise, code_exercise, count_exercise, number_exercise


count_exercise(
    "04.1", f"Count the allowed entries. The toy reads at most {N_CTX} tokens at once. How many of "
            f"the {N_CTX * N_CTX} entries of its {N_CTX} × {N_CTX} causal mask are True?",
    answer=lambda: int(causal_mask(N_CTX).sum()),
    hints=lambda: [
        (int(causal_mask(N_CTX).sum()) - N_CTX,
         f"{int(causal_mask(N_CTX).sum()) - N_CTX} counts only the entries below the diagonal: each "
         "token may also look at itself."),
        (N_CTX * N_CTX, f"{N_CTX * N_CTX} is every entry: the mask forbids looking at later tokens."),
        (N_CTX, f"{N_CTX} is only the diagonal: a token may also look at every earlier token."),
        (int(causal_mask(5).sum()), f"{int(causal_mask(5).sum())} is the 5 × 5 mask above; this one "
         f"is {N_CTX} × {N_CTX}.")],
    solution=lambda: (
        f"{int(causal_mask(N_CTX).sum())}. Row i may see i entries (itself and the i − 1 before it), "
        f"so 1 + 2 + … + {N_CTX} = {int(causal_mask(N_CTX).sum())}, in general n(n + 1) / 2. The "
        f"other {int((~causal_mask(N_CTX)).sum())} are the future."))


def _old_weights(h, i):
    """Row i of head h on the keys the mask allows, with the mask and without it."""
    on, off = intermediates(EXAMPLE_TEXT), intermediates(EXAMPLE_TEXT, mask=False)
    return on["heads"][h]["weights"][i, :i + 1], off["heads"][h]["weights"][i, :i + 1]


def _new_keys_shrink_all_alike():
    """Without the mask, every row that gains keys (all but the last) keeps its old weights
    in proportion, each multiplied by the same factor below 1."""
    n = len(intermediates(EXAMPLE_TEXT)["tokens"])
    factors = [after / before for h in range(N_HEAD) for i in range(n - 1)
               for before, after in [_old_weights(h, i)]]
    return all(np.allclose(f, f[0]) and f[0] < 1 for f in factors)


_NEW_KEYS = ["some go up, some go down", "they can go up, if the new keys score low",
             "every one goes down, all by the same factor", "they stay the same"]

choice_exercise(
    "04.2", "What the new keys take. Taking the mask away gives a row more keys to look at. What "
            "happens to the weights the row already had, on itself and on the keys before it?",
    options=_NEW_KEYS,
    answer=lambda: _NEW_KEYS[2] if _new_keys_shrink_all_alike() else _NEW_KEYS[0],
    hints={"some go up, some go down": "Compare row 4 (ed) of head 1 with and without the mask: "
                                       "which of its old weights went up?",
           "they can go up, if the new keys score low": "Even a very low score adds e^score, "
                                                        "more than 0, to the row's sum.",
           "every one goes down, all by the same factor": "Softmax divides every e^score by the "
                                                          "row's sum: what do the new keys do to it?",
           "they stay the same": "Row 1 gave itself 1.000 with the mask; without it, it looks "
                                 "almost entirely ahead."},
    solution=lambda: (lambda before, after: (
        "Every one goes down, all by the same factor. Each old weight is its e^score divided by "
        "the row's sum of e^scores; the new keys leave every old e^score as it was and add their "
        "own, each more than 0, to the sum, so every old weight is divided by the same larger "
        f"number. Row 4 (ed) of head 1: {', '.join(fmt(w) for w in before)} with the mask, "
        f"{', '.join(fmt(w) for w in after)} without it, each times {fmt(after.sum())}, the share "
        "of the row's weight that stays on the old keys."))(*_old_weights(0, 3)))

_COLUMN = np.array([2.0, 0.0, 1.0, 0.0])


def _concat_last():
    """The last row of the concatenation as the question prints it (3 decimals): the
    numbers a learner computes with, so the answer is the one they can reach."""
    r = intermediates(EXAMPLE_TEXT)
    row = np.hstack([r["heads"][0]["out"], r["heads"][1]["out"]])[-1]
    return np.array([float(fmt(c)) for c in row])


number_exercise(
    "04.3", lambda: (
        "One entry of the attention output, by hand. The last row of the concatenation is "
        f"[{', '.join(fmt(c) for c in _concat_last())}]. Suppose W_O's d2 (surface) column were "
        f"({', '.join(fmt(c, 0) for c in _COLUMN)}) instead of the model's: what would the d2 entry "
        "of the last row's attention output be? Multiply entry by entry and add."),
    answer=lambda: _concat_last() @ _COLUMN,
    # The answer is computed from the printed (rounded) row; the unrounded row gives a value
    # that may differ by the inputs' rounding, up to 0.0005 times the column's sum of sizes.
    tolerance=0.0005 * float(np.abs(_COLUMN).sum()),
    hints=lambda: [
        (_concat_last() @ PARAMS["blocks"][0]["attn"]["c_proj"]["w"][:, 1],
         "That is the model's own d2, where head 2 counts 0; with this column its first output counts once."),
        (_concat_last() @ (_COLUMN * [1, 1, -1, 1]),
         "Mind the sign: head 2's first output is negative, so it lowers the sum."),
        (_concat_last()[2], "That is head 2's part alone: add head 1's, its first output times 2.")],
    solution=lambda: (lambda c: (
        f"{fmt(c @ _COLUMN)}: {fmt(c[0])} × 2 + {fmt(c[1])} × 0 + ({fmt(c[2])}) × 1 + {fmt(c[3])} × 0. "
        "Each entry of the output is a dot product of the row with one column of W_O: the column "
        "says how much of each head's output goes into that dimension. The model's own column "
        "counts only head 1, and your changed one lets head 2 lower it."))(_concat_last()))


code_exercise(
    "04.4", "Write `causal_mask(n)`: an n × n array of True and False, True where row i (the "
            "query) may look at column j (the key): itself and every earlier position.",
    reference=lambda n: causal_mask(n).astype(float),
    cases=[("n = 5", (5,)), ("n = 1", (1,)), ("n = 2", (2,)), ("n = 8", (8,))],
    mistakes=[(lambda n: np.triu(np.ones((n, n))),
               "that lets each row see itself and the future: it is the mask upside down (np.tril, not np.triu)."),
              (lambda n: np.tril(np.ones((n, n)), -1),
               "each position may also look at itself: keep the diagonal."),
              (lambda n: np.ones((n, n)), "that allows every entry: hide the later positions."),
              (lambda n: np.eye(n), "that allows only the diagonal: earlier positions are allowed too.")],
    solution='''def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))    # True on and below the diagonal''')


def _heads_of_model(q, k, v, n_head):
    """The model's own multi_head on q, k, v given directly: c_attn the identity (so it
    passes [q | k | v] through) and W_O the identity (so the concatenation comes out)."""
    n, d = q.shape
    c_attn = {"w": np.eye(3 * d), "b": np.zeros(3 * d)}
    c_proj = {"w": np.eye(d), "b": np.zeros(d)}
    return multi_head(np.hstack([q, k, v]), c_attn, c_proj, n_head)     # [n, d]


def _qkv_of(text=EXAMPLE_TEXT):
    r = intermediates(text)
    return r["q"], r["k"], r["v"]                   # each [n, d]: every head's columns


def _random_qkv(n, d, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((n, d)) for _ in range(3))


def _per_head(q, k, v, n_head, columns, join=np.hstack, **options):
    """Typical wrong versions of the split and the concat: columns(m, h) picks head h's
    part of m; join puts the heads' outputs together."""
    return join([attention(columns(q, h), columns(k, h), columns(v, h), **options)
                 for h in range(n_head)])


def _block(m, h, n_head):
    d_head = m.shape[1] // n_head
    return m[:, h * d_head:(h + 1) * d_head]


code_exercise(
    "04.5", "Write `split_and_concat(q, k, v, n_head)`: q, k and v are n × d, every head's columns "
            "side by side, as `c_attn` gives them. Split each into n_head blocks of d / n_head "
            "neighbouring columns, run `tm.attention(q, k, v)` on each head's three blocks (its "
            "mask is on by default), and place the heads' outputs side by side again: n × d.",
    reference=_heads_of_model,
    cases=lambda: [(f'the toy\'s q, k, v for "{EXAMPLE_TEXT}", 2 heads', (*_qkv_of(), 2)),
                   ("random q, k, v of 6 × 6, 3 heads", (*_random_qkv(6, 6, 0), 3)),
                   ("random q, k, v of 4 × 8, 4 heads", (*_random_qkv(4, 8, 1), 4)),
                   ("random q, k, v of 3 × 4, 1 head", (*_random_qkv(3, 4, 2), 1))],
    mistakes=[(lambda q, k, v, n_head: attention(q, k, v),
               "that is one head over all d columns: split them into n_head heads, each with its "
               "own scores and its own softmax."),
              (lambda q, k, v, n_head: _per_head(q, k, v, n_head, lambda m, h: m[:, h::n_head]),
               "each head owns a block of neighbouring columns (head 1 the first d / n_head), not "
               "every n_head-th column."),
              (lambda q, k, v, n_head: _per_head(q, k, v, n_head, lambda m, h: _block(m, h, n_head),
                                                 join=np.vstack),
               "the heads' outputs go side by side (axis=-1), one block of columns each, not one "
               "under the other."),
              (lambda q, k, v, n_head: _per_head(q, k, v, n_head, lambda m, h: _block(m, h, n_head),
                                                 join=lambda outs: np.sum(outs, axis=0)),
               "the heads' outputs are placed side by side (np.concatenate), not added."),
              (lambda q, k, v, n_head: _per_head(q, k, v, n_head, lambda m, h: _block(m, h, n_head),
                                                 mask=False),
               "each head hides the future too: call tm.attention with its mask (the default).")],
    solution='''def split_and_concat(q, k, v, n_head):
    qs = np.split(q, n_head, axis=-1)           # n_head blocks of [n, d_head]
    ks = np.split(k, n_head, axis=-1)
    vs = np.split(v, n_head, axis=-1)
    outs = [tm.attention(qh, kh, vh) for qh, kh, vh in zip(qs, ks, vs)]   # each [n, d_head]
    return np.concatenate(outs, axis=-1)        # [n, d]: the heads side by side''')


HEAD_TITLES = ["head 1: was something climbed?", "head 2: who is acting?"]


def head_title(h, masked):
    """Head h's map's title: its question, and under it whether the mask is on. Always two
    lines, so that switching the mask (which repaints the titles in the layout they had)
    fits; on one line, "head 2: who is acting? (no mask)" ran past the figure's edge."""
    return f"{HEAD_TITLES[h]}\n({'causal mask' if masked else 'no mask'})"


def future_leak(weights):
    """Per row, the weight that row puts on later positions (the future); 0 under the mask."""
    return np.triu(weights, k=1).sum(axis=1)


def outline_future(ax, n, color=VERMILION):
    """Outline the cells above the diagonal of an n x n heat map (the future)."""
    from matplotlib.patches import Rectangle
    for i in range(n):
        for j in range(i + 1, n):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=color, lw=2))


def heads_figure(r, live=False):
    """Both heads' attention weights (from r = intermediates(...)) as two heat maps side by side,
    masked cells blank, the future outlined; from intermediates(..., mask=False), "(no mask)" under
    the titles, otherwise "(causal mask)". Returns fig, axes, [(im, texts), ...]."""
    tokens = r["tokens"]
    n = len(tokens)
    unmasked = n > 1 and bool(np.isfinite(r["heads"][0]["scores"]).all())
    fig, ax = live_figure("mask-heads", 8.4, 3.9) if live else new_figure(8.4, 3.9)
    ax.remove()
    axes = fig.subplots(1, 2)
    maps = []
    for h, a in enumerate(axes):
        w = r["heads"][h]["weights"]
        maps.append(heatmap(a, np.where(np.isfinite(r["heads"][h]["scores"]), w, np.nan),
                            tokens, tokens, head_title(h, masked=not unmasked), digits=3))
        a.set_xlabel("key (outlined: later tokens, the future)")
        a.set_ylabel("query")
        outline_future(a, n)
    return fig, axes, maps


def mask_and_heads(text="the cat climbed the"):
    """Causal mask on/off and head 1 / head 2 / both: the weight heat maps update in
    place, the future (above the diagonal) is outlined, a line names the largest leak.
    Switching the mask repaints only the maps' cells and titles."""
    text = builder_text(text, "mask_and_heads")   # one sentence for a wrong text
    runs = {True: intermediates(text), False: intermediates(text, mask=False)}
    tokens = runs[True]["tokens"]
    n = len(tokens)
    allowed = causal_mask(n)
    mask_button = widgets.ToggleButton(value=True, description="causal mask",
                                       tooltip="on: each row sees only itself and earlier tokens")
    which = widgets.ToggleButtons(options=["head 1", "head 2", "both"], value="both",
                                  description="show", style={"button_width": "6em"})
    fig, axes, maps = heads_figure(runs[True], live=True)
    grid = axes[0].get_subplotspec().get_gridspec()
    moving = [[im, *a.patches, *(t for row in texts for t in row), a.title]   # outlines over
              for (im, texts), a in zip(maps, axes, strict=True)]               # the image
    live_artists(fig, [artist for slot in moving for artist in slot])
    info = widgets.HTML()
    area = message_area()
    state = WidgetState(masked=True, show="both", heads=[0, 1])

    def update(_=None):
        choice = picked(state, which, "show", state.show)
        masked = mask_button.value
        heads = {"head 1": [0], "head 2": [1], "both": [0, 1]}[choice]
        relayout = heads != state.heads
        state.masked, state.show, state.heads = masked, choice, heads
        r = runs[masked]
        grid.set_width_ratios([1, 1] if len(heads) == 2 else [1, 1e-3])
        for slot, a in enumerate(axes):
            a.set_visible(slot < len(heads))
            for artist in moving[slot]:
                artist.set_visible(slot < len(heads))
            if slot < len(heads):
                w = r["heads"][heads[slot]]["weights"]
                set_heatmap(*maps[slot], np.where(allowed, w, np.nan) if masked else w, digits=3)
                a.set_title(head_title(heads[slot], masked))
        mask_button.icon = "check" if masked else ""     # pressed and ticked: mask on
        if relayout:                     # the maps change size: lay the figure out now, and the
            fig.get_layout_engine().execute(fig)   # page's full draw lays it out again (one
            fig.canvas.draw_idle()       # pass alone, from one head to both, cut off "query")
        else:
            redraw(fig)
        if masked:
            line = ("With the causal mask on, each row sees only itself and earlier tokens: "
                    "the outlined cells (the future) stay blank, nothing leaks.")
        else:
            leaks = [(future_leak(r["heads"][h]["weights"])[i], h, i) for h in heads for i in range(n)]
            leak, h, i = max(leaks)
            line = (f"With the mask off, row {i + 1} ({tokens[i]}) puts {fmt(leak)} of its weight "
                    f"on future tokens (head {h + 1}).")
        info.value = html.escape(line)

    on_change(mask_button, area, state, update)
    on_change(which, area, state, update)
    guarded(area, update, state)()
    root = panel("mask-heads", mask_button, which, fig.canvas, info, area)
    root.state, root.maps = state, maps                       # for tests
    return root
