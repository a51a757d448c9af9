"""Notebook 02, Embeddings: its exercises and the embedding scatter.
"""

import ipywidgets as widgets
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from toy_model import DIMS, PARAMS, check_ids, embed, encode, forward, token_name

from .draw import BLUE, GREY, TOKENS, VERMILION, fmt, tick_label
from .kit import builder_text
from .kit import (WidgetState, guarded, live_artists, live_figure, message_area, on_change, panel,
                  picked, redraw)
from .exercises import EXAMPLE_TEXT, token_id, choice_exercise, code_exercise, number_exercise


_S2 = " dog climbed the"


def _x_of(text):
    ids = encode(text)
    return embed(ids, PARAMS["wte"], PARAMS["wpe"])


number_exercise(
    "02.1", f'Compute by hand: for the text "{_S2}" (it starts with a space, so its first token '
            "is ␣dog), what is X's row 1 in dimension d2? Use the tables E and P printed above.",
    answer=lambda: _x_of(_S2)[0, 1], decimals=1,
    hints=lambda: [(PARAMS["wte"][encode(_S2)[0], 1], "That is ␣dog's own d2: row 1 also gets "
                    "position 1's row added."),
                   (PARAMS["wpe"][0, 1], "That is position 1's d2 alone: add ␣dog's d2 from E.")],
    solution=lambda: (
        f"{fmt(_x_of(_S2)[0, 1], 1)}. `␣dog`'s embedding is "
        f"{[float(v) for v in PARAMS['wte'][encode(_S2)[0]]]}, position 1 adds "
        f"{[float(v) for v in PARAMS['wpe'][0]]}, so d2 is {fmt(PARAMS['wte'][encode(_S2)[0], 1], 1)}"
        f" + ({fmt(PARAMS['wpe'][0, 1], 1)}). Like every token that opens a text, `␣dog` gets the "
        "start-of-text mark."))


def _distances_to_cat():
    E = PARAMS["wte"]
    return np.linalg.norm(E - E[token_id("␣cat")], axis=1)


def _closest_to_cat():
    d = _distances_to_cat()
    d[token_id("␣cat")] = np.inf
    return TOKENS[int(np.argmin(d))]


choice_exercise(
    "02.2", "Which token's embedding is closest to ␣cat's (the smallest straight-line distance "
            "between the two rows of E)?",
    options=["␣roof", "␣the", "␣dog", "ed"], answer=_closest_to_cat,
    hints={"␣roof": "␣roof also has d1 = 1, but it differs in d2 and d4.",
           "␣the": "␣the points along d4 only: it shares nothing with ␣cat.",
           "ed": "ed has d1 = 1 like ␣cat, but +1 on d2 where ␣cat has -1."},
    solution=lambda: (
        f"`{_closest_to_cat()}`, at distance {fmt(np.sort(_distances_to_cat())[1])}: its row differs "
        "from `␣cat`'s only in d2 (-0.5 against -1). Both are animals that a verb follows. In a "
        "trained model this is how similar tokens end up close together: they are followed by "
        "similar things."))

_SWAP = ("the cat climbed the", "the climbed cat the")
_SAME = "The same: positions 2 to 5 add nothing; the last row sees all five, in any order."
_MARKED = "Different, because the position table marks where every token stands."


def _position_predictions():
    """The toy, with its position embeddings, on both texts: the last row of the logits."""
    return [forward(encode(t), PARAMS)[-1] for t in _SWAP]


choice_exercise(
    "02.3", f'The toy, with its position embeddings, reads "{_SWAP[0]}" and "{_SWAP[1]}" (the '
            "same five tokens, ␣cat moved from position 2 to position 4). What can you say about its "
            "prediction for the token after each? Reason from the table P printed above.",
    options=[_MARKED, _SAME,
             "Different, because attention reads the rows from left to right.",
             "There are none: the second text cannot be encoded."],
    answer=lambda: _SAME if np.allclose(*_position_predictions()) else _MARKED,
    hints={_MARKED:
               "Look at P again: which positions does the toy's table mark, and which does the move touch?",
           "Different, because attention reads the rows from left to right.":
               "For the last row, which sees every row, attention compares rows by dot products and "
               "adds them up: neither step knows which row came first.",
           "There are none: the second text cannot be encoded.":
               "It encodes fine: the tokenizer checks the pieces, not the grammar."},
    solution=lambda: (
        f"The same, up to rounding (the largest difference between the two rows of logits is "
        f"{fmt(np.abs(np.subtract(*_position_predictions())).max())}). The toy's only position mark "
        "is on position 1, and both texts start with `the` there; positions 2 to 5 add nothing, so "
        "the moved tokens get the same rows of X wherever they stand. Both texts are then the same "
        f"rows `{' '.join(token_name(i) for i in sorted(set(encode(_SWAP[0])), key=encode(_SWAP[0]).index))}` "
        "in two orders, both ending in `␣the`. The last row looks at every row, and it gives each "
        "row the same score, and so the same weight, wherever that row stands; a weighted sum adds "
        "the same products in another order, so it cannot tell the orders apart.\n\n"
        "A real model learns a distinct row for every position, so it can. Swapping the first two "
        "tokens, as the notebook did, moves the start-of-text mark and changes the toy's prediction "
        "a little."))


def _rows_case(ids, start=0):
    return (list(ids), start)


code_exercise(
    "02.4", "Write `embed_rows(ids, start)`: a text read in two parts, as when the model writes "
            "one token at a time (notebook 7), whose first `start` tokens are already embedded; "
            "`ids` are the tokens that follow. It returns their rows of X, one row "
            "per id: the token's row of E (`tm.PARAMS[\"wte\"]`) plus the row of P "
            "(`tm.PARAMS[\"wpe\"]`) for the place where the token stands in the whole text.",
    reference=lambda ids, start: embed(np.asarray(ids), PARAMS["wte"], PARAMS["wpe"], start),
    cases=lambda: [(f'the ids of "{EXAMPLE_TEXT}", start = 0', _rows_case(encode(EXAMPLE_TEXT))),
                   ("the ids [3, 0] (␣dog, then the), start = 0", _rows_case([3, 0])),
                   ("the ids [5, 1] (ed ␣the) after 3 tokens, start = 3", _rows_case([5, 1], 3)),
                   ("the ids [0, 2] (the ␣cat) after 6 tokens, start = 6", _rows_case([0, 2], 6)),
                   ("8 ids, a full context, start = 0", _rows_case([0, 2, 4, 5, 1, 6, 10, 11]))],
    mistakes=[(lambda ids, start: PARAMS["wte"][ids],
               "your rows have no position part: add P's row for each position, P[0] to the "
               "first token of the text (Python counts from 0)."),
              (lambda ids, start: PARAMS["wte"][ids] + PARAMS["wpe"][ids],
               "P is indexed by position (0, 1, 2, ...), not by token id."),
              (lambda ids, start: PARAMS["wte"][ids] + PARAMS["wpe"][:len(ids)],
               "these tokens do not start the text: the first of them stands at position start, "
               "so its row of P is P[start], not P[0]."),
              (lambda ids, start: PARAMS["wpe"][start:start + len(ids)] + 0 * PARAMS["wte"][ids],
               "each row also needs its token's own row of E.")],
    solution='''def embed_rows(ids, start):
    E, P = tm.PARAMS["wte"], tm.PARAMS["wpe"]
    return E[ids] + P[start:start + len(ids)]   # token ids[t] stands at position start + t''')


EMBED_LIMITS = (-1.8, 2.8)                          # every entry of wte + wpe lies inside
DIM_OPTIONS = [(f"d{j + 1} {name}", j) for j, name in enumerate(DIMS)]   # dropdown labels


def grouped_labels(points, names):
    """Labels for points that may coincide: the first point at a place gets all the
    names found there ("␣cat, ␣dog"), the others an empty label (no overprinting)."""
    labels, first = [], {}
    for point, name in zip(map(tuple, np.round(np.asarray(points, float), 6)), names, strict=True):
        if point in first:
            labels[first[point]] += ", " + name
            labels.append("")
        else:
            first[point] = len(labels)
            labels.append(name)
    return labels


def _dim_label(j):
    return f"d{j + 1} ({DIMS[j]})"


LABEL_SIZE = 9                                      # the dots' labels, in points
LABEL_GAP = 5                                       # points from a dot to its label
_TEXT_PATH = TextToPath()
STOP = tick_label(".")
STOP_ALONE = f"{STOP} (full stop)"                  # on a line of its own, its quotes and dot are specks


def label_width(label):
    """A label's width in points as matplotlib draws it at LABEL_SIZE: its longest line."""
    font = FontProperties(size=LABEL_SIZE)
    return max(float(_TEXT_PATH.get_text_width_height_descent(line, font, ismath="$" in line)[0])
               for line in label.split("\n"))


def points_per_unit(ax):
    """Points per data unit along x, from the axes' size as laid out."""
    lo, hi = ax.get_xlim()
    return ax.get_position().width * ax.figure.get_figwidth() * 72 / (hi - lo)


def label_levels(points, labels, per_unit):
    """How many lines up each label goes (0, 1, 2, ...) so as not to run into the label
    of a point to its left on the same line; per_unit: points per data unit along x. A
    label on several lines stays at 0: wrapped_labels has fitted its lines to the room."""
    levels, ends = [0] * len(labels), {}            # ends: y -> [(x where a label ends, level)]
    for i in sorted(range(len(labels)), key=lambda i: (points[i][1], points[i][0])):
        if labels[i] and "\n" not in labels[i]:
            x, y = (float(v) for v in points[i])
            row = ends.setdefault(round(y, 6), [])
            busy = {level for end, level in row if end > x}
            levels[i] = min(set(range(len(row) + 1)) - busy)
            row.append((x + (LABEL_GAP * 2 + label_width(labels[i])) / per_unit, levels[i]))
    return levels


def wrapped_labels(points, labels, per_unit):
    """A label of several names that would run into the next label to its right on the
    same line goes onto several lines, as many names on each as fit, so that neither label
    has to leave its dot; no comma ends a line, where it would read as part of a name, and
    the full stop alone on a line is named, STOP_ALONE. per_unit: points per data unit
    along x."""
    out = list(labels)
    for i, label in enumerate(labels):
        x, y = (float(v) for v in points[i])
        right = [float(points[j][0]) for j in range(len(labels))
                 if labels[j] and j != i and np.isclose(points[j][1], y) and points[j][0] > x]
        room = (min(right) - x) * per_unit if right else np.inf   # points to the next dot

        def fits(line):
            return LABEL_GAP + label_width(line) + LABEL_GAP <= room

        if ", " not in label or fits(label):
            out[i] = STOP_ALONE if label == STOP and fits(STOP_ALONE) else label
            continue
        units = label.split(", ")                   # the full stop joins its shortest neighbour
        if STOP in units:
            partners = sorted((u for u in units if u != STOP), key=label_width)
            partner = next((u for u in partners if fits(f"{u}, {STOP}")), None)
            if partner is not None:
                units.remove(STOP)
                units[units.index(partner)] = f"{partner}, {STOP}"
        lines = []
        for unit in units:
            if lines and fits(lines[-1] + ", " + unit):
                lines[-1] += ", " + unit
            else:
                lines.append(unit)
        out[i] = "\n".join(STOP_ALONE if line == STOP else line for line in lines)
    return out


def _place(scatter, notes, points, names, step=None, per_unit=None):
    """Move an existing scatter and its annotations to new points (no new artists).
    step: lift each label by this many points per level of label_levels, so that labels
    on one line do not run into each other; a label on several lines is centred on its
    dot's height instead, so that every line stays next to the dot. per_unit: points per
    data unit along x (points_per_unit), with step."""
    scatter.set_offsets(points)
    labels = grouped_labels(points, names)
    labels = wrapped_labels(points, labels, per_unit) if step else labels
    levels = label_levels(points, labels, per_unit) if step else [0] * len(labels)
    for note, xy, label, level in zip(notes, points, labels, levels, strict=True):
        note.xy = tuple(xy)
        note.set_text(label)
        if step:
            several = "\n" in label
            note.set_verticalalignment("center" if several else "baseline")
            note.set_linespacing(1.05 if several else 1.2)          # a close stack, clear of its neighbours
            note.xyann = (LABEL_GAP, 0 if several else LABEL_GAP + step * level)


def x_rings(ax, text, dx=1, dy=3):
    """The rows of X for `text` (token + position) as orange-red rings, each labelled
    "position: token", to draw over the embeddings in dimensions dx and dy.
    Returns the rings, their labels, the rows of X [n, d] and their names."""
    ids = check_ids(encode(text))                   # more tokens than the context: a sentence
    x_rows = embed(ids, PARAMS["wte"], PARAMS["wpe"])
    names = [f"{n + 1}: {token_name(i)}" for n, i in enumerate(ids)]
    rings = ax.scatter(x_rows[:, dx], x_rows[:, dy], s=190, facecolors="none", edgecolors=VERMILION,
                       linewidths=2, zorder=4, label=f"row of X for {text!r} (position: token)")
    notes = [ax.annotate("", (0, 0), xytext=(6, -13), textcoords="offset points", fontsize=9,
                         color=VERMILION, fontweight="bold") for _ in ids]
    _place(rings, notes, x_rows[:, [dx, dy]], names)
    return rings, notes, x_rows, names


def embedding_scatter_plot(ax, dx=0, dy=3, wte=None, rows_of=None):
    """The 12 token embeddings in dimensions dx (x axis) and dy (y axis), labelled; with
    rows_of="some text", the rows of X for that text ringed on top (x_rings) and a legend.
    Returns the scatter and its annotations, so a widget can move them."""
    wte = PARAMS["wte"] if wte is None else wte
    points = wte[:, [dx, dy]]
    scatter = ax.scatter(points[:, 0], points[:, 1], s=45, color=BLUE, zorder=3,
                         label="token embedding (row of E)")
    notes = [ax.annotate("", (0, 0), xytext=(LABEL_GAP, LABEL_GAP), textcoords="offset points",
                         fontsize=LABEL_SIZE, color=BLUE) for _ in points]
    ax.set_xlim(EMBED_LIMITS)
    ax.set_ylim(EMBED_LIMITS)
    ax.axhline(0, color=GREY, lw=0.6, zorder=1)
    ax.axvline(0, color=GREY, lw=0.6, zorder=1)
    ax.set_xlabel(_dim_label(dx))
    ax.set_ylabel(_dim_label(dy))
    ax.set_title(f"The {len(points)} token embeddings, d{dx + 1} against d{dy + 1}")
    if rows_of is not None:
        x_rings(ax, rows_of, dx, dy)
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title(f"The {len(points)} token embeddings and the rows of X, d{dx + 1} against d{dy + 1}")
    if ax.figure.get_layout_engine() is not None:
        ax.figure.get_layout_engine().execute(ax.figure)   # the axes' final size: labels fitted to it
    _place(scatter, notes, points, [tick_label(t) for t in TOKENS], step=13, per_unit=points_per_unit(ax))
    return scatter, notes


def embedding_scatter(text="the cat climbed the"):
    """Pick the two dimensions to plot; 'add positions' rings the rows of X for `text`
    (token + position) on top of the 12 embeddings. It starts on d3 against d4, rings off:
    d3 is the one dimension the notebook's pictures leave out. The plot is moved in place: the
    rings alone are repainted over the rest when only they change."""
    text = builder_text(text, "embedding_scatter")   # one sentence for a wrong text
    check_ids(encode(text))                         # more tokens than the context: a sentence
    x_dim = widgets.Dropdown(options=DIM_OPTIONS, value=2, description="x axis:")
    y_dim = widgets.Dropdown(options=DIM_OPTIONS, value=3, description="y axis:")
    positions = widgets.ToggleButton(value=False, description="add positions",
                                     tooltip="show the rows of X: token embedding + position embedding")
    area = message_area()
    fig, ax = live_figure("embedding-scatter", 6.0, 4.6)
    scatter, notes = embedding_scatter_plot(ax, x_dim.value, y_dim.value)
    rings, ring_notes, x_rows, row_names = x_rings(ax, text, x_dim.value, y_dim.value)
    legend = ax.legend(loc="lower right", fontsize=8)        # with the rings: two entries
    ax.add_artist(legend)
    dots_legend = ax.legend(handles=[scatter], loc="lower right", fontsize=8)   # without: one
    live_artists(fig, [rings, *ring_notes, ax.title, legend, dots_legend])
    state = WidgetState(dims=(x_dim.value, y_dim.value), positions=positions.value)

    def update(_=None):
        dx = picked(state, x_dim, "x axis", state.dims[0])
        dy = picked(state, y_dim, "y axis", state.dims[1])
        if dx == dy:
            raise ValueError(f"Both axes show d{dx + 1} ({DIMS[dx]}), which would put every token "
                             "on one diagonal line: pick two different dimensions for x and y.")
        moved = (dx, dy) != state.dims
        state.dims, state.positions = (dx, dy), positions.value
        _place(scatter, notes, PARAMS["wte"][:, [dx, dy]], [tick_label(t) for t in TOKENS], step=13,
               per_unit=points_per_unit(ax))
        _place(rings, ring_notes, x_rows[:, [dx, dy]], row_names)
        for artist in [rings, *ring_notes, legend]:
            artist.set_visible(state.positions)
        dots_legend.set_visible(not state.positions)
        positions.button_style = "info" if state.positions else ""
        positions.icon = "check" if state.positions else ""
        ax.set_xlabel(_dim_label(dx))
        ax.set_ylabel(_dim_label(dy))
        ax.set_title(f"The 12 token embeddings{' and the rows of X' if state.positions else ''}, "
                     f"d{dx + 1} against d{dy + 1}")
        if moved:
            fig.canvas.draw_idle()                  # points, labels and axes all change
        else:
            redraw(fig)                             # only the rings and the title change

    for control in (x_dim, y_dim, positions):
        on_change(control, area, state, update)
    guarded(area, update, state)()
    root = panel("embedding-scatter", widgets.HBox([x_dim, y_dim, positions]), fig.canvas, area)
    root.state = state                                        # for tests
    return root
