"""Colours, number formats, tables and figures: what every notebook draws with (matplotlib).
"""
import html
import inspect
import io
import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.mathtext import MathTextParser

from toy_model import VOCAB, token_name


# Okabe-Ito colours: distinguishable with the common kinds of colour blindness.
BLUE, ORANGE, GREEN, VERMILION, SKY, PURPLE, GREY = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#999999")
HEAT = "cividis"                                    # heat maps: readable in colour and in grey
TOKENS = [token_name(t) for t in VOCAB]
# Monospaced text in HTML: the notebook's code font. (A lone "monospace" would make the
# browser shrink the text to 13 px, its old default size for monospaced fonts.)
MONOSPACE = "var(--jp-code-font-family, monospace), monospace"


def tick_label(token):
    """A token's name (tm.token_name) as a plot's tick label, readable from across a room:
    the ␣ of a leading space drawn bold (a thin bracket otherwise)."""
    return re.sub(r"^␣", r"$\\mathbf{␣}$", token_name(token))


def stop_tick(ax):
    """The '.' token's tick label upright, bold and larger: small and slanted, its dot
    vanishes between its quotes from the back of a room."""
    for label in ax.get_xticklabels():
        if label.get_text() == token_name("."):
            label.update({"fontsize": 16, "fontweight": "bold", "rotation": 0, "ha": "center"})


# The bold ␣ is matplotlib's mathtext, which each renderer parses with a parser of its own,
# caching what it parsed for that renderer only: every new figure parsed the twelve labels
# again (a sixth of building a widget). The course's renderers share one parser instead,
# and so its cache; what it draws is the same.
_MATHTEXT = MathTextParser("path")


def share_mathtext(renderer):
    """Give an Agg renderer the course's one mathtext parser, if it parses for the same
    output (matplotlib 3.8's Agg, as in the browser edition, parses for raster output and
    keeps its own); returns the renderer."""
    parser = getattr(renderer, "mathtext_parser", None)
    if isinstance(parser, MathTextParser) and parser._output_type == _MATHTEXT._output_type:
        renderer.mathtext_parser = _MATHTEXT
    return renderer


def token_html(token):
    """A token's name (tm.token_name) as HTML (chips, tables): the ␣ of a leading space bold
    and larger (in the text's own colour, so it reads on any chip)."""
    text = html.escape(token_name(token), quote=False)
    if text.startswith("␣"):
        text = '<b style="font-size:1.25em;line-height:1">␣</b>' + text[1:]
    return text


def fmt(x, digits=3):
    """A number as the course prints it: 3 decimals, and 0 rather than -0.000."""
    x = float(x)
    return f"{0.0 if abs(x) < 0.5 * 10 ** -digits else x:.{digits}f}"


def table(rows, header=None):
    """Rows -> a plain-text table with aligned columns (numbers formatted with fmt)."""
    rows = [list(r) for r in rows]
    if not rows or any(len(r) != len(rows[0]) for r in rows + ([list(header)] if header else [])):
        raise ValueError("table needs at least one row, and every row (and the header) the "
                         "same number of cells, for example table([['␣roof', 0.395]]).")
    cells = [[fmt(c) if isinstance(c, (float, np.floating)) else str(c) for c in r] for r in rows]
    if header:
        cells.insert(0, list(header))
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.rjust(w) if _numeric(c) else c.ljust(w)
                       for c, w in zip(r, widths, strict=True)).rstrip()
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
    body = [[r] + [fmt(v, digits) for v in row] for r, row in zip(rows, m, strict=True)]
    return table(body, [""] + list(cols))


def source(fn):
    """Print a function's code as its module holds it, without the @checked(...) line above
    it: the lines that computed the numbers a notebook has just shown (tw.source(tm.softmax))."""
    if not inspect.isfunction(fn):
        raise ValueError(f"source takes a function, such as tm.softmax, not {type(fn).__name__}.")
    lines = inspect.getsource(inspect.unwrap(fn)).splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    print("\n".join(lines))


def static(fig):
    """Show a figure as a stored PNG (no kernel needed to see it; same bytes every run)."""
    from IPython.display import Image, display
    buf = io.BytesIO()
    canvas = FigureCanvasAgg(fig)
    share_mathtext(canvas.get_renderer())               # the renderer print_png uses
    canvas.print_png(buf, metadata={"Software": None})
    display(Image(buf.getvalue()))


# Plots are read on a 1366 x 768 projector from the back of a room. At 130 dots per inch
# the smallest text in a plot (8 pt) is 14 px and ordinary text (10 pt) 18 px. No plot is
# wider than a 900 px column (the notebook's output area at 1366 x 768 is 919 px with the
# file browser open and scrollbars showing; ipympl's canvas adds a few px of its own), nor
# taller than about two thirds of the screen; in a narrower column the course's style
# (kit.COURSE_CSS) shrinks the plot with the page.
PLOT_DPI = 130
COLUMN_PX = 900
PLOT_MAX_PX = (880, 480)


def new_figure(width=6.4, height=3.2, live=False):
    """A figure for one plot. live=True: an ipympl canvas that widgets redraw in place;
    otherwise a plain Figure meant for static(). Sizes in inches, capped at PLOT_MAX_PX."""
    width, height = min(width, PLOT_MAX_PX[0] / PLOT_DPI), min(height, PLOT_MAX_PX[1] / PLOT_DPI)
    if not live:
        fig = Figure(figsize=(width, height), dpi=PLOT_DPI, layout="constrained")
        return fig, fig.subplots()
    with plt.ioff():
        fig = plt.figure(figsize=(width, height), dpi=PLOT_DPI, layout="constrained")
    fig.canvas.header_visible = False
    fig.canvas.footer_visible = False
    fig.canvas.toolbar_visible = False
    fig.canvas.resizable = False
    share_mathtext(fig.canvas.get_renderer())
    return fig, fig.subplots()


def token_bars(ax, values, title, ylabel="p", labels=TOKENS, ymax=1.0, color=BLUE,
               highlight=None, accent=ORANGE, xlabel="next token"):
    """A bar per token, token names on the axis, bar `highlight` (an index or a list of
    them) in the accent colour. Returns the bars; BarChart moves them in place."""
    bars = ax.bar(range(len(values)), values, color=color)
    for i in np.atleast_1d(highlight if highlight is not None else []):
        bars[int(i)].set_color(accent)
    ax.set_xticks(range(len(labels)), [tick_label(t) for t in labels], rotation=45, ha="right")
    stop_tick(ax)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    if ymax is not None:
        ax.set_ylim(0, ymax)
    return bars


def heatmap(ax, m, rows, cols, title, vmin=0.0, vmax=1.0, digits=2):
    """A matrix as colours with its numbers written in; rows/cols labelled by token."""
    im = ax.imshow(m, cmap=HEAT, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(cols)), [tick_label(t) for t in cols], rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), [tick_label(t) for t in rows])
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


def outline_bars(ax, values, label, color=GREY):
    """Bars drawn as outlines only, on a token axis: what a distribution was before a change,
    drawn over the filled bars of what it is now. Returns the bars, to update in place."""
    return ax.bar(range(len(values)), values, fill=False, edgecolor=color, linewidth=1.2,
                  linestyle="--", label=label)
