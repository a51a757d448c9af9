"""Plots, widgets and exercises for the course's notebooks (matplotlib, ipywidgets).

The model lives in toy_model.py and needs only numpy. This module draws it and lets a
learner move it: the notebooks reach everything here through `toy_model` (for example
`tm.logit_playground()`), which imports this module the first time a notebook asks
for one of its names.
"""
import html
import io
import re
import weakref

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from toy_model import (DIMS, EOT, N_CTX, N_HEAD, PARAMS, VOCAB, causal_mask, check_ids, embed,
                       encode, forward, next_token_probs, run, sample, show, softmax)

# Okabe-Ito colours: distinguishable with the common kinds of colour blindness.
BLUE, ORANGE, GREEN, VERMILION, SKY, PURPLE, YELLOW, GREY = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#999999")
HEAT = "cividis"                                    # heat maps: readable in colour and in grey
TOKENS = [show(t) for t in VOCAB]


def fmt(x, digits=3):
    """A number as the course prints it: 3 decimals, and 0 rather than -0.000."""
    x = float(x)
    return f"{0.0 if abs(x) < 0.5 * 10 ** -digits else x:.{digits}f}"


def entropy(p):
    """How spread out a distribution is, in nats: 0 when one token is certain,
    ln 12 = 2.485 when all 12 are equally likely."""
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def table(rows, header=None):
    """Rows -> a plain-text table with aligned columns (numbers formatted with fmt)."""
    cells = [[fmt(c) if isinstance(c, (float, np.floating)) else str(c) for c in r] for r in rows]
    if header:
        cells.insert(0, list(header))
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths)).rstrip()
             for r in cells]
    if header:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _numeric(s):
    return bool(re.fullmatch(r"[-+−]?(?=[^\d]*\d)[\d.,]+(e[-+]?\d+)?", s))   # needs a digit: "." is a token


def matrix(m, rows=None, cols=None, digits=3):
    """A matrix as text, with row and column labels (token names, dimension names)."""
    m = np.atleast_2d(m)
    rows = rows if rows is not None else [""] * len(m)
    cols = cols if cols is not None else [f"d{j + 1}" for j in range(m.shape[1])]
    return table([[r] + [fmt(v, digits) for v in row] for r, row in zip(rows, m)], [""] + list(cols))


def static(fig):
    """Show a figure as a stored PNG (no kernel needed to see it; same bytes every run)."""
    from IPython.display import Image, display
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf, metadata={"Software": None})
    display(Image(buf.getvalue()))


def new_figure(width=6.4, height=3.2, live=False):
    """A figure for one plot. live=True: an ipympl canvas that widgets redraw in place;
    otherwise a plain Figure meant for static()."""
    if not live:
        fig = Figure(figsize=(width, height), dpi=90, layout="constrained")
        return fig, fig.subplots()
    with plt.ioff():
        fig = plt.figure(figsize=(width, height), dpi=90, layout="constrained")
    fig.canvas.header_visible = False
    fig.canvas.footer_visible = False
    fig.canvas.toolbar_visible = False
    fig.canvas.resizable = False
    return fig, fig.subplots()


def token_bars(ax, values, title, ylabel="p", labels=TOKENS, ymax=1.0, color=BLUE):
    """A bar per token, token names on the axis. Returns the bars, to update in place."""
    bars = ax.bar(range(len(values)), values, color=color)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("next token")
    if ymax is not None:
        ax.set_ylim(0, ymax)
    return bars


def set_bars(bars, values, highlight=None, color=BLUE, accent=ORANGE):
    """Move existing bars to new heights (cheap: no new figure) and colour one of them."""
    for i, (bar, v) in enumerate(zip(bars, values)):
        bar.set_height(v)
        bar.set_color(accent if i == highlight else color)


def heatmap(ax, m, rows, cols, title, vmin=0.0, vmax=1.0, digits=2):
    """A matrix as colours with its numbers written in; rows/cols labelled by token."""
    im = ax.imshow(m, cmap=HEAT, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_title(title)
    texts = [[ax.text(j, i, "", ha="center", va="center", fontsize=9) for j in range(len(cols))]
             for i in range(len(rows))]
    set_heatmap(im, texts, m, vmin, vmax, digits)
    return im, texts


def set_heatmap(im, texts, m, vmin=0.0, vmax=1.0, digits=2):
    """Update a heatmap in place (colours and the numbers written in the cells)."""
    im.set_data(m)
    for i, row in enumerate(texts):
        for j, t in enumerate(row):
            v = m[i, j]
            t.set_text("" if not np.isfinite(v) else f"{v:.{digits}f}")
            t.set_color("black" if (v - vmin) / (vmax - vmin or 1) > 0.6 else "white")


def freeze_layout(fig):
    """Lay a live figure out once, then keep that layout: every redraw after that skips
    the constrained-layout pass (about half the cost of drawing a bar chart)."""
    fig.get_layout_engine().execute(fig)
    fig.set_layout_engine("none")


_MOVING = weakref.WeakKeyDictionary()      # figure -> {"artists": [...], "background": ...}


def live_artists(fig, artists):
    """Declare the artists a widget moves (bars, a title). redraw(fig) then repaints only
    them over a saved picture of the rest (blitting): a few ms instead of drawing every
    tick label again. The picture is taken at each full draw of the figure."""
    artists = list(artists)
    for a in artists:
        a.set_animated(True)                  # left out of full draws and of the picture
    state = _MOVING[fig] = {"artists": artists, "background": None}

    def save_background(_event):
        state["background"] = fig.canvas.copy_from_bbox(fig.bbox)
        for a in artists:
            fig.draw_artist(a)
    fig.canvas.mpl_connect("draw_event", save_background)


def redraw(fig):
    """Show a live figure's changes: repaint only its moving artists when it has them
    and a saved background; otherwise ask for a full draw."""
    state = _MOVING.get(fig)
    if state is None or state["background"] is None:
        fig.canvas.draw_idle()
        return
    fig.canvas.restore_region(state["background"])
    for a in state["artists"]:
        fig.draw_artist(a)
    fig.canvas.blit(fig.bbox)


def panel(name, *children):
    """The root box of a widget, tagged with CSS class w-<name> (the browser test finds it)."""
    box = widgets.VBox(list(children))
    box.add_class("course-widget")
    box.add_class(f"w-{name}")
    return box


def message_area():
    """Where a widget says what went wrong, in one sentence (empty when all is well)."""
    return widgets.HTML(value="")


def say(area, text="", ok=None):
    """Put one sentence in a message area: ok=False in red-brown, ok=True in green."""
    colour = {None: "inherit", True: GREEN, False: VERMILION}[ok]
    area.value = f'<span style="color:{colour}">{html.escape(text)}</span>' if text else ""


def guarded(area, fn):
    """Wrap a widget callback: a ValueError becomes one sentence in `area`; the kernel
    and the other widgets keep working."""
    def wrapper(*args, **kwargs):
        try:
            say(area)
            return fn(*args, **kwargs)
        except ValueError as err:
            say(area, str(err), ok=False)
    return wrapper


def parse_number(text):
    """A learner's typed number -> float, or a ValueError that says what is expected."""
    try:
        value = float(str(text).strip().replace("−", "-").replace(",", "."))
    except ValueError:
        raise ValueError(f"{text!r} is not a number: type a decimal number such as 0.395.") from None
    if not np.isfinite(value):
        raise ValueError("Type an ordinary finite number (not NaN or infinity).")
    return value


def check_number(question, answer, tol=5e-3, hints=()):
    """A 'check yourself' box: the learner types a number and presses Check.

    hints: (wrong_value, sentence) pairs naming likely mistakes; a wrong answer near
    one of them gets that sentence, any other wrong answer a generic nudge.
    The answer is never shown here: it stays in the collapsed block below."""
    box = widgets.Text(placeholder="your answer", layout=widgets.Layout(width="12em"))
    button = widgets.Button(description="Check", button_style="info")
    area = message_area()

    def check(_=None):
        value = parse_number(box.value)
        if abs(value - answer) <= tol:
            say(area, f"Right: {box.value.strip()} is correct.", ok=True)
            return
        for wrong, hint in hints:
            if abs(value - wrong) <= tol:
                say(area, f"Not quite. {hint}", ok=False)
                return
        say(area, "Not quite: recompute step by step and try again.", ok=False)

    button.on_click(guarded(area, check))
    box.on_submit(guarded(area, check))
    return panel("check", widgets.HTML(f"<b>{question}</b>"), widgets.HBox([box, button]), area)


def check_choice(question, options, answer, hints=None):
    """A 'check yourself' multiple choice: pick an option, press Check, get right/wrong
    and, for a wrong pick, the hint given for it in `hints` (option -> sentence)."""
    pick = widgets.RadioButtons(options=options, value=None, layout=widgets.Layout(width="auto"))
    button = widgets.Button(description="Check", button_style="info")
    area = message_area()

    def check(_=None):
        if pick.value is None:
            raise ValueError("Pick one of the options first.")
        if pick.value == answer:
            say(area, "Right.", ok=True)
        else:
            say(area, "Not quite. " + (hints or {}).get(pick.value, "Think it through once more."), ok=False)

    button.on_click(guarded(area, check))
    return panel("check", widgets.HTML(f"<b>{question}</b>"), pick, button, area)


# --- Widgets of each notebook (each section owned by its notebook) --------------

# [01 tokens]

CHIP_COLOURS = [SKY, ORANGE]                        # alternating chip backgrounds (black text)


def token_chips(ids):
    """Token ids -> HTML: one coloured chip per token (␣ for the space), its id beneath."""
    chips = []
    for n, i in enumerate(ids):
        colour = CHIP_COLOURS[n % len(CHIP_COLOURS)]
        chips.append(
            f'<span class="token-chip" style="display:inline-block;margin:2px;padding:2px 6px;'
            f'border-radius:4px;background:{colour};color:black;text-align:center;'
            f'font-family:monospace;line-height:1.3">{html.escape(show(i))}'
            f'<br><small>{i}</small></span>')
    return "".join(chips)


def tokenizer_widget(text="the cat climbed the"):
    """Type text, see its tokens as chips and its ids; text the vocabulary cannot
    cover gets encode's sentence naming the part that failed."""
    box = widgets.Text(value=text, description="text:", continuous_update=True,
                       layout=widgets.Layout(width="32em"))
    chips = widgets.HTML()
    id_list = widgets.HTML()
    area = message_area()

    def update(_=None):
        try:
            ids = encode(box.value)
        except ValueError:
            chips.value = id_list.value = ""
            raise
        chips.value = token_chips(ids)
        id_list.value = f"<code>ids = {ids}</code> ({len(ids)} tokens)"

    update = guarded(area, update)
    box.observe(update, names="value")
    update()
    return panel("tokenizer", box, chips, id_list, area)

# [02 embeddings]

EMBED_LIMITS = (-1.8, 2.8)                          # every entry of wte + wpe lies inside
DIM_OPTIONS = [(f"d{j + 1} {name}", j) for j, name in enumerate(DIMS)]   # dropdown labels


def grouped_labels(points, names):
    """Labels for points that may coincide: the first point at a place gets all the
    names found there ("␣cat, ␣dog"), the others an empty label (no overprinting)."""
    labels, first = [], {}
    for point, name in zip(map(tuple, np.round(np.asarray(points, float), 6)), names):
        if point in first:
            labels[first[point]] += ", " + name
            labels.append("")
        else:
            first[point] = len(labels)
            labels.append(name)
    return labels


def _dim_label(j):
    return f"d{j + 1} ({DIMS[j]})"


def _place(scatter, notes, points, names):
    """Move an existing scatter and its annotations to new points (no new artists)."""
    scatter.set_offsets(points)
    for note, xy, label in zip(notes, points, grouped_labels(points, names)):
        note.xy = tuple(xy)
        note.set_text(label)


def embedding_scatter_plot(ax, dx=0, dy=3, wte=None):
    """The 12 token embeddings in dimensions dx (x axis) and dy (y axis), labelled.
    Returns the scatter and its annotations, so a widget can move them."""
    wte = PARAMS["wte"] if wte is None else wte
    points = wte[:, [dx, dy]]
    scatter = ax.scatter(points[:, 0], points[:, 1], s=45, color=BLUE, zorder=3,
                         label="token embedding (row of E)")
    notes = [ax.annotate("", (0, 0), xytext=(5, 5), textcoords="offset points", fontsize=9,
                         color=BLUE) for _ in points]
    _place(scatter, notes, points, TOKENS)
    ax.set_xlim(EMBED_LIMITS)
    ax.set_ylim(EMBED_LIMITS)
    ax.axhline(0, color=GREY, lw=0.6, zorder=1)
    ax.axvline(0, color=GREY, lw=0.6, zorder=1)
    ax.set_xlabel(_dim_label(dx))
    ax.set_ylabel(_dim_label(dy))
    ax.set_title(f"The {len(points)} token embeddings, d{dx + 1} against d{dy + 1}")
    return scatter, notes


def embedding_scatter(text="the cat climbed the"):
    """Pick the two dimensions to plot; 'add positions' rings the rows of X for `text`
    (token + position) on top of the 12 embeddings. The plot is moved in place."""
    ids = encode(text)
    x_rows = embed(ids, PARAMS["wte"], PARAMS["wpe"])
    row_names = [f"{n + 1}: {show(i)}" for n, i in enumerate(ids)]
    x_dim = widgets.Dropdown(options=DIM_OPTIONS, value=1, description="x axis:")
    y_dim = widgets.Dropdown(options=DIM_OPTIONS, value=3, description="y axis:")
    positions = widgets.ToggleButton(value=False, description="add positions",
                                     tooltip="show the rows of X: token embedding + position embedding")
    area = message_area()
    fig, ax = new_figure(6.0, 4.6, live=True)
    scatter, notes = embedding_scatter_plot(ax, x_dim.value, y_dim.value)
    rings = ax.scatter(x_rows[:, 1], x_rows[:, 3], s=190, facecolors="none", edgecolors=VERMILION,
                       linewidths=2, zorder=4, label=f"row of X for {text!r} (position: token)")
    ring_notes = [ax.annotate("", (0, 0), xytext=(6, -13), textcoords="offset points", fontsize=9,
                              color=VERMILION, fontweight="bold") for _ in ids]
    ax.legend(loc="upper right", fontsize=8)

    def update(_=None):
        dx, dy = x_dim.value, y_dim.value
        if dx == dy:
            raise ValueError(f"Both axes show d{dx + 1} ({DIMS[dx]}), which would put every token "
                             "on one diagonal line: pick two different dimensions for x and y.")
        _place(scatter, notes, PARAMS["wte"][:, [dx, dy]], TOKENS)
        _place(rings, ring_notes, x_rows[:, [dx, dy]], row_names)
        for artist in [rings, *ring_notes]:
            artist.set_visible(positions.value)
        ax.set_xlabel(_dim_label(dx))
        ax.set_ylabel(_dim_label(dy))
        ax.set_title(f"The 12 token embeddings{' and the rows of X' if positions.value else ''}, "
                     f"d{dx + 1} against d{dy + 1}")
        redraw(fig)

    update = guarded(area, update)
    for control in (x_dim, y_dim, positions):
        control.observe(update, names="value")
    update()
    return panel("embedding-scatter", widgets.HBox([x_dim, y_dim, positions]), fig.canvas, area)

# [03 qkv]

def head_weights(head=0, params=PARAMS):
    """W_Q, W_K, W_V of one head (each [d, d_head]): its columns of c_attn.w = [W_Q | W_K | W_V]."""
    w = params["blocks"][0]["attn"]["c_attn"]["w"]
    d = w.shape[0]
    d_head = d // N_HEAD
    cols = slice(head * d_head, (head + 1) * d_head)
    return w[:, :d][:, cols], w[:, d:2 * d][:, cols], w[:, 2 * d:][:, cols]


def query_picker(text="the cat climbed the", head=0):
    """Pick a query token (buttons, or type its position): one row of the head's
    attention weights as bars over the key tokens, its output and its winning key."""
    r = run(text)
    tokens, h = r["tokens"], r["heads"][head]
    n = len(tokens)
    pick = widgets.ToggleButtons(options=[(f"{i + 1} {t}", i + 1) for i, t in enumerate(tokens)],
                                 value=n, description="query")
    pick.style.button_width = "auto"
    pos = widgets.IntText(value=n, description="position", layout=widgets.Layout(width="12em"))
    fig, ax = new_figure(live=True)
    bars = token_bars(ax, h["weights"][n - 1], "", ylabel="attention weight", labels=tokens)
    ax.set_xlabel("key token (what the query looks at)")
    hidden = [ax.text(j, 0.03, "masked", ha="center", va="bottom", rotation=90, color=GREY)
              for j in range(n)]
    ax.set_title(f"head {head + 1}, query {n} ({tokens[-1]}): its row of weights")  # room for titles
    freeze_layout(fig)
    live_artists(fig, [*bars, *hidden, ax.title])
    info = widgets.HTML()
    area = message_area()

    def show_row(i):                       # i: the query's position, 1 to n
        w = h["weights"][i - 1]
        wins = np.flatnonzero(np.isclose(w, w.max()))
        set_bars(bars, w)
        for j in wins:
            bars[j].set_color(ORANGE)       # the winning key(s)
        for j, t in enumerate(hidden):
            t.set_visible(j >= i)           # the future: the mask gives it weight 0
        ax.set_title(f"head {head + 1}, query {i} ({tokens[i - 1]}): its row of weights")
        redraw(fig)
        out = h["out"][i - 1]
        if len(wins) == 1:
            most = f"it attends most to {tokens[wins[0]]} (position {wins[0] + 1}, weight {fmt(w.max())})"
        else:
            most = (f"its largest weight, {fmt(w.max())}, is shared by "
                    + " and ".join(tokens[j] for j in wins))
        info.value = html.escape(
            f"query {i} ({tokens[i - 1]}): output = [{fmt(out[0])}, {fmt(out[1])}]; {most}.")

    def on_pick(change):
        if pos.value != change["new"]:
            pos.value = change["new"]
        show_row(change["new"])

    def on_pos(change):
        i = change["new"]
        if not 1 <= i <= n:
            pos.value = pick.value             # the box shows the query the plot shows
            raise ValueError(f"Positions run from 1 to {n}, one per token of {text!r}; "
                             f"{i} is not one of them.")
        if pick.value != i:
            pick.value = i

    pick.observe(guarded(area, on_pick), names="value")
    pos.observe(guarded(area, on_pos), names="value")
    show_row(n)
    return panel("query-picker", pick, pos, fig.canvas, info, area)


# [04 mask and heads]

HEAD_TITLES = ["head 1: what was climbed?", "head 2: who is acting?"]


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
    """Both heads' attention weights (from r = run(...)) as two heat maps side by side,
    masked cells blank, the future outlined. Returns fig, axes, [(im, texts), ...]."""
    tokens = r["tokens"]
    n = len(tokens)
    fig, ax = new_figure(width=8.4, height=3.9, live=live)
    ax.remove()
    axes = fig.subplots(1, 2)
    maps = []
    for h, a in enumerate(axes):
        w = r["heads"][h]["weights"]
        maps.append(heatmap(a, np.where(np.isfinite(r["heads"][h]["scores"]), w, np.nan),
                            tokens, tokens, HEAD_TITLES[h]))
        a.set_xlabel("key (outlined: later tokens, the future)")
        a.set_ylabel("query")
        outline_future(a, n)
    return fig, axes, maps


def mask_and_heads(text="the cat climbed the"):
    """Causal mask on/off and head 1 / head 2 / both: the weight heat maps update in
    place, the future (above the diagonal) is outlined, a line names the largest leak."""
    runs = {True: run(text), False: run(text, mask=False)}
    tokens = runs[True]["tokens"]
    n = len(tokens)
    allowed = causal_mask(n)
    mask_button = widgets.ToggleButton(value=True, description="causal mask",
                                       tooltip="on: each row sees only itself and earlier tokens")
    which = widgets.ToggleButtons(options=["head 1", "head 2", "both"], value="both",
                                  description="show")
    fig, axes, maps = heads_figure(runs[True], live=True)
    grid = axes[0].get_subplotspec().get_gridspec()
    info = widgets.HTML()
    area = message_area()

    def shown_heads():
        return {"head 1": [0], "head 2": [1], "both": [0, 1]}[which.value]

    def update(_=None):
        masked = mask_button.value
        heads = shown_heads()
        r = runs[masked]
        grid.set_width_ratios([1, 1] if len(heads) == 2 else [1, 1e-3])
        for slot, a in enumerate(axes):
            a.set_visible(slot < len(heads))
            if slot < len(heads):
                w = r["heads"][heads[slot]]["weights"]
                set_heatmap(*maps[slot], np.where(allowed, w, np.nan) if masked else w)
                a.set_title(HEAD_TITLES[heads[slot]] + ("" if masked else " (no mask)"))
        mask_button.icon = "check" if masked else ""     # pressed and ticked: mask on
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

    mask_button.observe(guarded(area, update), names="value")
    which.observe(guarded(area, update), names="value")
    update()
    return panel("mask-heads", widgets.HBox([mask_button, which]), fig.canvas, info, area)


# [05 block]

def matrix_html(m, rows, cols, digits=3, bold_last=False):
    """A small matrix as an HTML table with row and column labels (numbers as fmt)."""
    cell = 'style="padding:2px 10px;text-align:{}"'
    head = "".join(f"<th {cell.format('right')}>{html.escape(c)}</th>" for c in cols)
    body = []
    for i, (name, row) in enumerate(zip(rows, np.atleast_2d(m))):
        weight = "bold" if bold_last and i == len(rows) - 1 else "normal"
        tds = "".join(f"<td {cell.format('right')}>{fmt(v, digits)}</td>" for v in row)
        body.append(f'<tr style="font-weight:{weight}"><th {cell.format("left")}>'
                    f"{html.escape(name)}</th>{tds}</tr>")
    return (f'<table style="font-family:monospace;border-collapse:collapse">'
            f"<tr><th></th>{head}</tr>{''.join(body)}</table>")


def block_branches(text="the cat climbed the"):
    """Widget: switch the block's attention branch and MLP branch on and off.

    Shows y (n x 4) as a table and the last row's next-token p as bars, updated in place."""
    attention = widgets.ToggleButton(value=True, description="attention branch", button_style="success")
    mlp_branch = widgets.ToggleButton(value=True, description="MLP branch", button_style="success")
    formula = widgets.HTML()
    y_table = widgets.HTML()
    top = widgets.HTML()
    area = message_area()
    tokens = [show(i) for i in encode(text)]
    fig, ax = new_figure(6.4, 3.0, live=True)
    bars = token_bars(ax, np.zeros(len(TOKENS)), f"p of the next token after the last row ({tokens[-1]})",
                      ymax=0.6)
    freeze_layout(fig)
    live_artists(fig, bars)

    def update(_=None):
        r = run(text, attention_on=attention.value, mlp_on=mlp_branch.value)
        for button in (attention, mlp_branch):
            button.button_style = "success" if button.value else ""
            button.icon = "check" if button.value else ""
        h = "x + attn(LN1(x))" if attention.value else "x"
        y = "h + mlp(LN2(h))" if mlp_branch.value else "h"
        note = "  (both branches off: the block passes x through unchanged, y = x)" if not (
            attention.value or mlp_branch.value) else ""
        formula.value = f"<code>h = {h}, y = {y}</code>{note}"
        y_table.value = "<b>y</b> (rows: tokens, columns: dimensions)" + matrix_html(
            r["y"], r["tokens"], [f"d{j + 1} {name}" for j, name in enumerate(DIMS)], bold_last=True)
        p = r["p"][-1]
        best = int(np.argmax(p))
        set_bars(bars, p, highlight=best)
        top.value = f"most likely next: <b>{TOKENS[best]}</b> ({fmt(p[best])})"
        redraw(fig)

    callback = guarded(area, update)
    attention.observe(callback, names="value")
    mlp_branch.observe(callback, names="value")
    callback()
    return panel("block-branches", widgets.HBox([attention, mlp_branch]), formula, y_table,
                 fig.canvas, top, area)

# [06 output]

def vector(v, digits=3):
    """A vector as the course prints it in prose: [-0.436, 1.551, -0.461, 1.698]."""
    return "[" + ", ".join(fmt(x, digits) for x in np.ravel(v)) + "]"


def p_summary(p, n_top=3):
    """One line about p: the most likely tokens with their p, and the entropy."""
    order = np.argsort(-np.asarray(p), kind="stable")[:n_top]
    first, rest = order[0], order[1:]
    then = ", ".join(f"{TOKENS[j]} {fmt(p[j])}" for j in rest)
    return (f"most likely: {TOKENS[first]} with p = {fmt(p[first])}"
            + (f" (then {then})" if then else "") + f" · entropy of p: {fmt(entropy(p))} nats")


def _p_chart(title, p, width=6.4, height=3.2):
    """A live bar chart of p, one bar per token, the most likely one highlighted."""
    fig, ax = new_figure(width, height, live=True)
    bars = token_bars(ax, p, title)
    set_bars(bars, p, highlight=int(np.argmax(p)))
    freeze_layout(fig)
    live_artists(fig, bars)
    return fig, ax, bars


def _show_p(fig, bars, line, p, prefix=""):
    """Move the bars to p, highlight the top token, rewrite the text line; then draw."""
    set_bars(bars, p, highlight=int(np.argmax(p)))
    say(line, prefix + p_summary(p))
    redraw(fig)


def _typed_logit(text, what="logit"):
    """A typed logit (or shift): any finite number from -1000 to 1000."""
    value = parse_number(text)
    if abs(value) > 1000:
        raise ValueError(f"{text.strip()} is too large for a {what} here: "
                         "type a number between -1000 and 1000.")
    return value


def _last_logits(text, **options):
    return run(text, **options)["logits"][-1]


def logit_playground(text="the cat climbed the"):
    """Edit one logit of the last row (pick the token, drag or type its logit): p follows."""
    z0 = _last_logits(text)
    z = z0.copy()
    roof = VOCAB.index(" roof")
    fig, ax, bars = _p_chart(f'p after "{text}", from your logits', softmax(z))
    pick = widgets.Dropdown(options=[(t, j) for j, t in enumerate(TOKENS)], value=roof,
                            description="token")
    slider = widgets.FloatSlider(value=z[roof], min=-10, max=10, step=0.1, description="its logit",
                                 continuous_update=True, readout_format=".2f")
    typed = widgets.Text(value="", placeholder="or type any logit, then Enter",
                         description="type", continuous_update=False)
    reset = widgets.Button(description="Reset", tooltip="back to the model's logits")
    line, area = message_area(), message_area()
    syncing = [False]

    def update():
        j = pick.value
        _show_p(fig, bars, line, softmax(z), f"logit of {TOKENS[j]}: {fmt(z[j])} · ")

    def sync_slider():
        syncing[0] = True
        slider.value = float(np.clip(z[pick.value], slider.min, slider.max))
        syncing[0] = False

    def on_slider(change):
        if not syncing[0]:
            z[pick.value] = change["new"]
            update()

    def on_pick(change):
        sync_slider()
        update()

    def on_typed(change):
        if change["new"].strip():
            z[pick.value] = _typed_logit(change["new"])
            sync_slider()
            update()

    def on_reset(_):
        z[:] = z0
        sync_slider()
        typed.value = ""
        update()

    slider.observe(guarded(area, on_slider), names="value")
    pick.observe(guarded(area, on_pick), names="value")
    typed.observe(guarded(area, on_typed), names="value")
    reset.on_click(guarded(area, on_reset))
    update()
    return panel("logit-playground", widgets.HBox([pick, slider]), widgets.HBox([typed, reset]),
                 fig.canvas, line, area)


def logit_shift(text="the cat climbed the"):
    """Add the same constant c to every logit: the logits move, p does not."""
    z0 = _last_logits(text)
    p0 = softmax(z0)
    top = int(np.argmax(z0))
    fig, _ = new_figure(10, 3.4, live=True)
    fig.clear()
    ax_z, ax_p = fig.subplots(1, 2)
    z_bars = token_bars(ax_z, z0, "the logits z + c", ylabel="logit", ymax=None, color=SKY)
    ax_z.set_ylim(-14, 14)
    ax_z.axhline(0, color=GREY, linewidth=0.8)
    p_bars = token_bars(ax_p, p0, "p = softmax(z + c)")
    freeze_layout(fig)
    slider = widgets.FloatSlider(value=0, min=-10, max=10, step=0.1, description="add c",
                                 continuous_update=True, readout_format=".1f")
    typed = widgets.Text(value="", placeholder="or type any c, then Enter",
                         description="type c", continuous_update=False)
    line, area = message_area(), message_area()
    syncing = [False]

    def apply(c):
        z = z0 + c
        p = softmax(z)
        set_bars(z_bars, z, highlight=top, color=SKY)
        lo, hi = min(-14, z.min() - 1), max(14, z.max() + 1)
        if (lo, hi) != ax_z.get_ylim():
            ax_z.set_ylim(lo, hi)
        _show_p(fig, p_bars, line, p,
                f"c = {fmt(c, 2)}: every logit moved by {fmt(c, 2)}; the largest change of any p "
                f"is {fmt(np.abs(p - p0).max())} · ")

    def on_slider(change):
        if not syncing[0]:
            apply(change["new"])

    def on_typed(change):
        if change["new"].strip():
            c = _typed_logit(change["new"], "constant")
            syncing[0] = True
            slider.value = float(np.clip(c, slider.min, slider.max))
            syncing[0] = False
            apply(c)

    slider.observe(guarded(area, on_slider), names="value")
    typed.observe(guarded(area, on_typed), names="value")
    apply(0.0)
    return panel("logit-shift", widgets.HBox([slider, typed]), fig.canvas, line, area)


def _switch(name, option, labels, text, title):
    """A toggle that reruns the model with option on/off, plus a prompt box; p of the
    last row as bars. labels = (label when True, label when False)."""
    state = {"text": text, "on": True}
    fig, ax, bars = _p_chart(title, softmax(_last_logits(text)))
    toggle = widgets.ToggleButton(value=True, description=labels[0], button_style="info")
    prompt = widgets.Text(value=text, description="prompt", continuous_update=False,
                          placeholder="a prompt in the toy vocabulary, then Enter")
    line, area = message_area(), message_area()

    def update():
        p = softmax(_last_logits(state["text"], **{option: state["on"]}))
        ax.set_title(f'{title}: "{state["text"]}"')
        _show_p(fig, bars, line, p, f"{toggle.description}: ")

    def on_toggle(change):
        state["on"] = change["new"]
        toggle.description = labels[0] if change["new"] else labels[1]
        update()

    def on_prompt(change):
        run(change["new"])                          # raises the sentence for a bad prompt
        state["text"] = change["new"]
        update()

    toggle.observe(guarded(area, on_toggle), names="value")
    prompt.observe(guarded(area, on_prompt), names="value")
    update()
    return panel(name, widgets.HBox([toggle, prompt]), fig.canvas, line, area), toggle


def attention_switch(text="the cat climbed the"):
    """Switch the attention branch off (h = x) and back: the last row's p changes."""
    box, toggle = _switch("attention-switch", "attention_on", ("attention on", "attention off"),
                          text, "p of the last row")
    return box


def tying_switch(text="the cat climbed the"):
    """Use the embedding table as the output layer (z = f E^T) or the toy's own W_U."""
    box, toggle = _switch("tying-switch", "tied", ("tied: W_U = E^T", "own W_U"),
                          text, "p of the last row")
    toggle.value = False                            # start from the toy's own W_U
    return box


def temperature_preview(text="the cat climbed the"):
    """Divide the logits by a temperature before softmax: 0 is greedy, large is uniform."""
    z = _last_logits(text)
    fig, ax, bars = _p_chart(f'p after "{text}" at temperature T', softmax(z))
    slider = widgets.FloatSlider(value=1.0, min=0.0, max=5.0, step=0.05, description="T",
                                 continuous_update=True, readout_format=".2f")
    typed = widgets.FloatText(value=1.0, description="type T", step=0.05)
    line, area = message_area(), message_area()
    syncing = [False]

    def apply(t):
        p = next_token_probs(z, temperature=t)     # raises the sentence for a bad T
        _show_p(fig, bars, line, p, f"T = {fmt(t, 2)}" + (" (greedy)" if t == 0 else "") + ": ")

    def on_slider(change):
        if not syncing[0]:
            apply(change["new"])
            syncing[0] = True
            typed.value = change["new"]
            syncing[0] = False

    def on_typed(change):
        if not syncing[0]:
            apply(change["new"])
            syncing[0] = True
            slider.value = float(np.clip(change["new"], slider.min, slider.max))
            syncing[0] = False

    slider.observe(guarded(area, on_slider), names="value")
    typed.observe(guarded(area, on_typed), names="value")
    apply(1.0)
    return panel("temperature-preview", widgets.HBox([slider, typed]), fig.canvas, line, area)


# [07 generation]

def outline_bars(ax, values, label, color=GREY):
    """Bars drawn as outlines only, on a token axis: what a distribution was before a change,
    drawn over the filled bars of what it is now. Returns the bars, to update in place."""
    return ax.bar(range(len(values)), values, fill=False, edgecolor=color, linewidth=1.2,
                  linestyle="--", label=label)


def set_heights(bars, values):
    """Move existing bars to new heights, leaving their colours alone."""
    for bar, v in zip(bars, values):
        bar.set_height(v)


def _whole_seed(text):
    """The seed a learner typed -> a whole number >= 0, or one sentence saying what is allowed."""
    text = str(text).strip()
    if not re.fullmatch(r"\d+", text):
        raise ValueError(f"The seed must be a whole number of 0 or more (such as 0, 1 or 42), "
                         f"not {text!r}.")
    return int(text)


def temperature_explorer(prompt="the cat climbed the"):
    """w-temperature: the last row's p under a temperature, a top-k and a top-p, live.

    Filled bars: the distribution a token would be drawn from; dashed outlines: the
    same before top-k and top-p cut it (temperature only). Sliders follow the drag;
    the boxes below take exact values, and a value that is not allowed gets one
    sentence while the plot keeps its last good state."""
    logits = forward(encode(prompt))[-1]
    n = len(VOCAB)
    style = {"description_width": "7em"}
    wide = widgets.Layout(width="30em")
    t_slider = widgets.FloatSlider(value=1.0, min=0.0, max=3.0, step=0.05, description="temperature",
                                   readout_format=".2f", continuous_update=True, style=style, layout=wide)
    k_slider = widgets.IntSlider(value=n, min=1, max=n, step=1, description="top-k",
                                 continuous_update=True, style=style, layout=wide)
    p_slider = widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top-p",
                                   readout_format=".2f", continuous_update=True, style=style, layout=wide)
    box_style = {"description_width": "6em"}
    box_layout = widgets.Layout(width="13em")
    t_box = widgets.FloatText(value=1.0, step=0.05, description="exact T", style=box_style,
                              layout=box_layout)
    k_box = widgets.IntText(value=n, description="exact k", style=box_style, layout=box_layout)
    p_box = widgets.FloatText(value=1.0, step=0.05, description="exact p", style=box_style,
                              layout=box_layout)
    info = widgets.HTML()
    area = message_area()

    fig, ax = new_figure(7.2, 3.4, live=True)
    # The title stays put (the sliders show T, k and p): redrawing its text would cost
    # more than redrawing all 24 bars.
    bars = token_bars(ax, np.zeros(n), f'p after "{prompt}" under your temperature, top-k, top-p')
    ax.title.set_fontsize(10)
    before = outline_bars(ax, np.zeros(n), "before top-k / top-p (temperature only)")
    bars.set_label("drawn from")
    ax.legend(handles=[bars, before], loc="upper left", fontsize=8)
    live_artists(fig, [*bars, *before])

    state = {"T": 1.0, "k": n, "p": 1.0}
    syncing = [False]

    def apply(**change):
        new = dict(state, **change)
        p = next_token_probs(logits, new["T"], new["k"], new["p"])   # ValueError: one sentence
        state.update(new)
        top = int(np.argmax(p))
        set_heights(before, next_token_probs(logits, new["T"]))
        set_bars(bars, p, highlight=top)
        redraw(fig)
        info.value = (f"kept <b>{int((p > 0).sum())}</b> of {n} tokens · most likely "
                      f"<b>{show(top)}</b> with p = {fmt(p[top])} · entropy {fmt(entropy(p))} nats "
                      f"(uniform: {fmt(np.log(n))})")
        syncing[0] = True                       # show the same values everywhere, quietly
        try:
            for control, key in ((t_slider, "T"), (k_slider, "k"), (p_slider, "p"),
                                 (t_box, "T"), (k_box, "k"), (p_box, "p")):
                control.value = state[key]
        finally:
            syncing[0] = False

    def on(key):
        def callback(change):
            if not syncing[0]:
                apply(**{key: change["new"]})
        return guarded(area, callback)

    for control, key in ((t_slider, "T"), (k_slider, "k"), (p_slider, "p"),
                         (t_box, "T"), (k_box, "k"), (p_box, "p")):
        control.observe(on(key), names="value")
    apply()
    freeze_layout(fig)
    root = panel("temperature", t_slider, k_slider, p_slider,
                 widgets.HBox([t_box, k_box, p_box]), info, area, fig.canvas)
    root.figure, root.bars, root.before = fig, bars, before     # for tests
    return root


def generation_stepper(prompt="the cat climbed the", temperature=1.0, seed=0):
    """w-generate-steps: draw the next token one click at a time.

    "next token" draws from the last row's distribution at the current temperature
    (0 = greedy) with a numpy Generator seeded at reset, appends the token and shows
    the distribution it came from. Changing the prompt or the seed starts again, so a
    given seed always gives the same sequence (the same one tm.generate gives)."""
    n = len(VOCAB)
    style = {"description_width": "7em"}
    prompt_box = widgets.Text(value=prompt, description="prompt", continuous_update=False,
                              style=style, layout=widgets.Layout(width="30em"))
    t_box = widgets.FloatText(value=temperature, step=0.1, description="temperature", style=style,
                              layout=widgets.Layout(width="13em"))
    seed_box = widgets.Text(value=str(seed), description="seed", continuous_update=False,
                            style=style, layout=widgets.Layout(width="13em"))
    step_button = widgets.Button(description="next token", button_style="primary",
                                 layout=widgets.Layout(width="16em"))
    reset_button = widgets.Button(description="reset")
    text_view = widgets.HTML()
    status = widgets.HTML()
    area = message_area()

    fig, ax = new_figure(7.2, 3.2, live=True)
    bars = token_bars(ax, np.zeros(n), "the distribution the next token will be drawn from")
    freeze_layout(fig)
    live_artists(fig, [*bars, ax.title])
    state = {"ids": [], "start": 0, "rng": None, "done": False}

    def settings():
        """Read every box; a bad one raises its one sentence."""
        ids = check_ids(encode(prompt_box.value))
        T = t_box.value
        next_token_probs(np.zeros(1), T)                # temperature check
        return ids, T, _whole_seed(seed_box.value)

    def show_text(new=None):
        parts = [html.escape(VOCAB[i]) for i in state["ids"]]
        if new is not None:
            parts[-1] = f'<mark style="background:{ORANGE}">{parts[-1]}</mark>'
        prompt_part = "".join(parts[:state["start"]])
        added = "".join(parts[state["start"]:])
        text_view.value = (f'<span style="font-family:monospace;font-size:1.1em;white-space:pre">{prompt_part}'
                           f'<b>{added}</b></span> ({len(state["ids"])} of {N_CTX} tokens)')

    def finish_if_done():
        ids = state["ids"]
        if ids[-1] == EOT:
            state["done"], why, label = True, ("The model drew <|endoftext|>: the text is finished; "
                                               "press reset to start again."), "finished: <|endoftext|>"
        elif len(ids) >= N_CTX:
            state["done"], why, label = True, (f"The context is full ({N_CTX} tokens): the model cannot "
                                               "read more; press reset to start again."), "finished: context full"
        else:
            return
        step_button.description = label
        step_button.disabled = True
        status.value = why.replace("<", "&lt;").replace(">", "&gt;")

    def reset(_=None):
        ids, T, s = settings()
        state.update(ids=list(ids), start=len(ids), rng=np.random.default_rng(s), done=False)
        step_button.description, step_button.disabled = "next token", False
        p = next_token_probs(forward(ids)[-1], T) if ids[-1] != EOT else np.zeros(n)
        set_bars(bars, p)
        ax.set_title("the distribution the next token will be drawn from", fontsize=10)
        redraw(fig)
        show_text()
        status.value = f"Seed {s}: press <b>next token</b> to draw one token."
        finish_if_done()

    def step(_=None):
        ids, T, s = settings()
        if ids != state["ids"][:state["start"]] or state["rng"] is None:
            reset()                                     # the prompt changed without Enter
        if state["done"]:
            return
        p = next_token_probs(forward(state["ids"])[-1], T)
        nxt = int(np.argmax(p)) if T == 0 else sample(p, state["rng"])
        state["ids"].append(nxt)
        set_bars(bars, p, highlight=nxt)
        k = len(state["ids"]) - state["start"]
        ax.set_title(f"step {k}: {show(nxt)} drawn from this distribution (T = {T:g})", fontsize=10)
        redraw(fig)
        show_text(new=nxt)
        status.value = (f"Step {k}: drew <b>{show(nxt).replace('<', '&lt;').replace('>', '&gt;')}"
                        f"</b>, which had p = {fmt(p[nxt])}.")
        finish_if_done()

    step_button.on_click(guarded(area, step))
    reset_button.on_click(guarded(area, reset))
    prompt_box.observe(guarded(area, reset), names="value")
    seed_box.observe(guarded(area, lambda _: (_whole_seed(seed_box.value), reset())), names="value")
    t_box.observe(guarded(area, lambda _: next_token_probs(np.zeros(1), t_box.value)), names="value")
    reset()
    root = panel("generate-steps", prompt_box, widgets.HBox([t_box, seed_box]),
                 widgets.HBox([step_button, reset_button]), text_view, status, area, fig.canvas)
    root.figure, root.bars, root.state = fig, bars, state                 # for tests
    return root
