"""Plots, widgets and exercises for the course's notebooks (matplotlib, ipywidgets).

The model lives in toy_model.py and needs only numpy. This module draws it and lets a
learner move it: the notebooks reach everything here through `toy_model` (for example
`tm.logit_playground()`), which imports this module the first time a notebook asks
for one of its names.
"""
import contextlib
import html
import io
import re
import weakref
from types import SimpleNamespace

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import toy_model as _model                     # the exercises and labs compute from it
from toy_model import (DIMS, EOT, N_CTX, N_HEAD, PARAMS, VOCAB, causal_mask, check_ids, embed,
                       encode, entropy, forward, next_token_probs, run, sample, show, softmax)

# Okabe-Ito colours: distinguishable with the common kinds of colour blindness.
BLUE, ORANGE, GREEN, VERMILION, SKY, PURPLE, GREY = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#999999")
HEAT = "cividis"                                    # heat maps: readable in colour and in grey
TOKENS = [show(t) for t in VOCAB]


def tick_label(token):
    """A token's name as a plot's tick label, readable from across a room: the ␣ of a
    leading space drawn bold (a thin bracket otherwise), and the "." token in quotes
    (a lone dot otherwise)."""
    if token == ".":
        return "'.'"
    return re.sub(r"^␣", r"$\\mathbf{␣}$", token)


def token_html(token):
    """A token's name as HTML (chips, tables): the ␣ of a leading space bold and larger
    (in the text's own colour, so it reads on any chip), the "." token in quotes."""
    if token == ".":
        return "'.'"
    text = html.escape(token)
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


def static(fig):
    """Show a figure as a stored PNG (no kernel needed to see it; same bytes every run)."""
    from IPython.display import Image, display
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf, metadata={"Software": None})
    display(Image(buf.getvalue()))


# Plots are read on a 1366 x 768 projector from the back of a room. At 130 dots per inch
# the smallest text in a plot (8 pt) is 14 px and ordinary text (10 pt) 18 px; no plot is
# wider than the notebook's output area there with the file browser open (934 px), nor
# taller than about two thirds of the screen.
PLOT_DPI = 130
PLOT_MAX_PX = (930, 480)


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
    return fig, fig.subplots()


def token_bars(ax, values, title, ylabel="p", labels=TOKENS, ymax=1.0, color=BLUE,
               highlight=None, accent=ORANGE, xlabel="next token"):
    """A bar per token, token names on the axis, bar `highlight` (an index or a list of
    them) in the accent colour. Returns the bars; BarChart moves them in place."""
    bars = ax.bar(range(len(values)), values, color=color)
    for i in np.atleast_1d(highlight if highlight is not None else []):
        bars[int(i)].set_color(accent)
    ax.set_xticks(range(len(labels)), [tick_label(t) for t in labels], rotation=45, ha="right")
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


_MOVING = weakref.WeakKeyDictionary()      # figure -> {"artists": [...], "background": ...}


def live_artists(fig, artists):
    """Declare the artists a widget moves (bars, a title). redraw(fig) then repaints only
    them over a saved picture of the rest (blitting): a few ms instead of drawing every
    tick label again. The picture is taken at each full draw of the figure."""
    artists = list(artists)
    for a in artists:
        a.set_animated(True)                  # left out of full draws and of the picture
    if fig in _MOVING:                        # declared again: the new list replaces the old
        fig.canvas.mpl_disconnect(_MOVING[fig]["listener"])
    state = _MOVING[fig] = {"artists": artists, "background": None}

    def save_background(_event):
        state["background"] = fig.canvas.copy_from_bbox(fig.bbox)
        for a in artists:
            fig.draw_artist(a)
        _whole_picture(fig)
    state["listener"] = fig.canvas.mpl_connect("draw_event", save_background)


def _whole_picture(fig):
    """Send the browser the whole picture next, not only the pixels that changed. The
    browser drops a picture that arrives while the one before is still loading; a
    dropped list of changes would leave old pixels on the page for good (a bar or a
    label from before), a dropped whole picture is mended by the next one."""
    if hasattr(fig.canvas, "_force_full"):           # ipympl's canvas
        fig.canvas._force_full = True


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
    _whole_picture(fig)
    fig.canvas.blit(fig.bbox)


def picture(fig):
    """A live figure as it stands, as PNG bytes: its moving artists drawn too, into a
    renderer of its own, so the live canvas, its saved background and its listeners are
    left alone. No metadata: the same figure gives the same bytes on every run."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.image import imsave
    moving = _MOVING.get(fig, {}).get("artists", [])
    renderer = RendererAgg(*fig.bbox.size, fig.dpi)
    for a in moving:
        a.set_animated(False)
    try:
        with fig.canvas.callbacks.blocked(signal="draw_event"):
            fig.draw(renderer)
    finally:
        for a in moving:
            a.set_animated(True)
    buf = io.BytesIO()
    imsave(buf, np.asarray(renderer.buffer_rgba()), format="png", dpi=fig.dpi,
           metadata={"Software": None})
    return buf.getvalue()


def _inside(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _inside(child)


def _as_html(widget):
    """What a control shows, as HTML, for the picture of a widget without a plot."""
    name = html.escape(getattr(widget, "description", "") or "")
    if isinstance(widget, (widgets.HTML, widgets.HTMLMath)):
        return widget.value
    if isinstance(widget, widgets.Label):
        return html.escape(widget.value)
    if isinstance(widget, (widgets.Text, widgets.Textarea, widgets.IntText, widgets.FloatText,
                           widgets.Dropdown, widgets.IntSlider, widgets.FloatSlider)):
        value = widget.label if isinstance(widget, widgets.Dropdown) else widget.value
        return f"{name} <code>{html.escape(str(value))}</code>"
    return ""


def _keep_saved_picture_current(canvas, delay=1.0):
    """When the plot has been still for `delay` seconds, send its last frame once more.

    JupyterLab saves a plot's picture with the notebook (the widget state), and shows it
    when the notebook is opened again. ipympl's page takes that picture when a frame
    *arrives*, before drawing it: the picture it keeps is always the frame before the
    last one (blank after the first). The repeated frame looks the same on screen and
    makes the kept picture the plot as it is. (A second is long enough not to cost a
    drag anything, and short beside JupyterLab's autosave, every two minutes.)"""
    import asyncio
    if getattr(canvas, "manager", None) is None or hasattr(canvas, "_course_send_binary"):
        return
    send = canvas._course_send_binary = canvas.send_binary
    pending = {"timer": None, "again": False}

    def send_again():
        pending["timer"], pending["again"] = None, True
        try:
            canvas._force_full = canvas._png_is_old = True     # the whole frame, not a diff
            canvas.manager.refresh_all()
        finally:
            pending["again"] = False

    def send_binary(data):
        send(data)
        if canvas.syncing_data_url:
            # No page has shown the plot yet (a notebook run without a browser): ipympl
            # then stores the frame itself as the picture, without the "data:" prefix
            # its page needs to show it. Nothing to send again.
            if canvas._data_url and not canvas._data_url.startswith("data:"):
                canvas._data_url = "data:image/png;base64," + canvas._data_url
            return
        if pending["again"]:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:                    # no event loop: no page to keep a picture
            return
        if pending["timer"] is not None:
            pending["timer"].cancel()
        pending["timer"] = loop.call_later(delay, send_again)

    canvas.send_binary = send_binary


class Panel(widgets.VBox):
    """The root box of a widget (CSS classes course-widget and w-<name>).

    Where the widget cannot run (a notebook opened before Run All, GitHub, nbviewer, the
    HTML edition), its stored output shows a picture of its first state instead: its
    plot as a PNG (also handed to the plot's canvas, which shows it until the kernel
    draws), or, for a widget without a plot, its text as HTML."""

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        canvases = [w for w in _inside(self) if hasattr(w, "_data_url") and hasattr(w, "figure")]
        if canvases:
            import base64
            pngs = [base64.b64encode(picture(c.figure)).decode("ascii") for c in canvases]
            for canvas, png in zip(canvases, pngs, strict=True):
                canvas._data_url = f"data:image/png;base64,{png}"
                _keep_saved_picture_current(canvas)
            data["image/png"] = pngs[0]
        else:
            parts = [_as_html(w) for w in _inside(self) if not getattr(w, "children", None)]
            data["text/html"] = "".join(f"<div>{p}</div>" for p in parts if p)
        name = next((c for c in self._dom_classes if c.startswith("w-")), "widget")
        data["text/plain"] = f"[{name}: run the notebook's cells to use it]"
        return data


def panel(name, *children):
    """The root box of a widget, tagged with CSS class w-<name> (the browser test finds it)."""
    box = Panel(list(children))
    box.add_class("course-widget")
    box.add_class(f"w-{name}")
    return box


class StyleRule(widgets.HTML):
    """A <style> element inside a widget: an HTML widget of its own kind, never its text."""


def chosen_style():
    """A style rule for a widget's ToggleButtons: the chosen button in solid blue with white
    text (JupyterLab's own marks it only a shade darker grey, unreadable on a projector)."""
    return StyleRule(f"<style>.course-widget .widget-toggle-button.mod-active"
                     f"{{background:{BLUE};color:white}}</style>")


def message_area():
    """Where a widget says what went wrong, in one sentence (empty when all is well)."""
    return widgets.HTML(value="")


def say(area, text="", ok=None):
    """Put one sentence in a message area: ok=False in red-brown, ok=True in green."""
    colour = {None: "inherit", True: GREEN, False: VERMILION}[ok]
    area.value = (f'<span style="color:{colour};white-space:pre-line">{html.escape(text)}</span>'
                  if text else "")                # a "\n" in text starts a new line


class WidgetState(SimpleNamespace):
    """What a widget shows, in one place: the values the learner chose, exactly as chosen
    (a typed 0.333 stays 0.333 whatever the slider next to it can show).

    A widget sets its own controls to match its state inside `with state.quiet():`; the
    callbacks made by guarded(..., state) ignore the changes made there, so a control
    set by the widget never feeds back into the widget."""

    def __init__(self, **values):
        super().__init__(**values)
        self.syncing = False

    @contextlib.contextmanager
    def quiet(self):
        before, self.syncing = self.syncing, True
        try:
            yield
        finally:
            self.syncing = before

    def set(self, control, value):
        """Give a control a value without running the widget's callbacks."""
        with self.quiet():
            control.value = value


def guarded(area, fn, state=None):
    """Wrap a widget callback: a ValueError becomes one sentence in `area`; the kernel
    and the other widgets keep working. With a WidgetState, changes the widget makes
    to its own controls (inside state.quiet()) do not call fn."""
    def wrapper(*args, **kwargs):
        if state is not None and state.syncing:
            return None
        try:
            say(area)
            return fn(*args, **kwargs)
        except ValueError as err:
            say(area, str(err), ok=False)
    return wrapper


def on_change(control, area, state, fn):
    """Call fn(new value) when the learner changes `control` (guarded, as above)."""
    control.observe(guarded(area, lambda change: fn(change["new"]), state), names="value")


def on_enter(box, area, state, fn):
    """Call fn(text) when the learner presses Enter in a Text box: each Enter, also
    when the text is the same as before (a changed value alone would miss that)."""
    def submitted(_widget, content, _buffers):
        if content.get("event") == "submit":
            fn(box.value)
    box.on_msg(guarded(area, submitted, state))
    on_change(box, area, state, fn)          # a changed text (Enter, or leaving the box)


def on_grid(slider, value):
    """A slider's value on its grid (min + k * step), without the float noise of the
    browser's arithmetic (0.6000000000000001 -> 0.6)."""
    k = round((value - slider.min) / slider.step)
    return round(slider.min + k * slider.step, 10)


def slider_move(state, slider, new, exact, what):
    """The value a learner chose by moving a float slider, or None when `new` is only
    the browser sending back `exact` rounded to the slider's step (an echo: the state
    keeps its exact value). Not a number (set from code): the slider goes back to the
    state's value, and one sentence is raised."""
    if new is None or not np.isfinite(new):
        state.set(slider, float(np.clip(exact, slider.min, slider.max)))
        raise ValueError(f"The {what} slider takes a finite number, not {new}.")
    if on_grid(slider, new) == on_grid(slider, float(np.clip(exact, slider.min, slider.max))):
        return None
    return on_grid(slider, new)


def plain(x):
    """A number a learner chose, as they would write it: 0.333, 2.5, 1000."""
    return np.format_float_positional(float(x), precision=6, trim="-")


def typed_number(text, what, low=-1000.0, high=1000.0):
    """A number typed in a widget's box -> float, or one sentence saying what is allowed."""
    cleaned = str(text).strip().replace("−", "-")
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"{cleaned[:20]!r} is not a number: type the {what} as a decimal "
                         "number, such as 2.5.") from None
    if not np.isfinite(value):
        raise ValueError(f"The {what} must be an ordinary finite number (not NaN or infinity).")
    if not low <= value <= high:
        raise ValueError(f"{cleaned[:20]} is too large for the {what} here: type a number "
                         f"between {plain(low)} and {plain(high)}.")
    return value


def picked(state, control, what, fallback):
    """A dropdown's or toggle group's value, or (for None: nothing picked, set from code)
    put `fallback` back and raise one sentence."""
    if control.value is None:
        state.set(control, fallback)
        raise ValueError(f"Pick one of the {what} options (None is not one of them).")
    return control.value


def need_live_backend():
    """Live widgets draw through ipympl: say how to turn it on, rather than fail later."""
    backend = plt.get_backend()
    if "ipympl" not in backend and backend.lower() not in ("widget", "ipympl"):
        raise ValueError(f"This widget draws a live plot, which needs the ipympl backend: "
                         f"run `%matplotlib widget` first (the backend now is {backend!r}).")


_LIVE_FIGURES = {}                          # widget name -> its latest live figure


def live_figure(name, width=6.4, height=3.2):
    """The live figure of widget w-<name>. Building the widget again (running its cell
    again) closes the figure of the previous build, so none piles up."""
    need_live_backend()
    old = _LIVE_FIGURES.pop(name, None)
    if old is not None:
        plt.close(old)
    fig, ax = new_figure(width, height, live=True)
    _LIVE_FIGURES[name] = fig
    return fig, ax


class BarChart:
    """A bar per token whose heights, colours and title a widget moves.

    show(values, highlight=..., title=...) moves the bars, colours the highlighted
    one(s) and repaints; `.values` and `.highlight` hold what is shown (tests read
    them). outline=True: dashed outlines, for a distribution before a change."""

    def __init__(self, ax, values, title=None, labels=TOKENS, ylabel="p", ymax=1.0,
                 color=BLUE, accent=ORANGE, outline=None, xlabel="next token"):
        self.ax, self.fig = ax, ax.figure
        self.color, self.accent, self.outline = color, accent, outline
        if outline:
            self.bars = outline_bars(ax, values, outline, color=color)
        else:
            self.bars = token_bars(ax, values, title or "", ylabel, labels, ymax, color,
                                   xlabel=xlabel)
        self.values, self.highlight = np.array(values, dtype=float), []

    @property
    def title(self):
        return self.ax.get_title()

    def set(self, values, highlight=None, title=None):
        """Move the bars without repainting (show() repaints)."""
        values = np.array(values, dtype=float)
        marked = sorted({int(i) for i in np.atleast_1d(highlight if highlight is not None else [])})
        for i, (bar, v) in enumerate(zip(self.bars, values, strict=True)):
            bar.set_height(v)
            if not self.outline:
                bar.set_color(self.accent if i in marked else self.color)
        if title is not None:
            self.ax.set_title(title)
        self.values, self.highlight = values, marked

    def show(self, values, highlight=None, title=None):
        self.set(values, highlight, title)
        redraw(self.fig)


def live_chart(name, values, title, width=6.4, height=3.2, moving_title=True, **options):
    """One live bar chart: a figure laid out once, its bars (and title) the moving parts."""
    fig, ax = live_figure(name, width, height)
    chart = BarChart(ax, values, title, **options)
    freeze_layout(fig)
    live_artists(fig, [*chart.bars, *([ax.title] if moving_title else [])])
    return chart


# --- Exercises ("Check yourself") ------------------------------------------------
# A notebook shows an exercise with one line, `tm.exercise("03.1")`; a write-it-yourself
# exercise passes the learner's function too, `tm.exercise("02.4", embed_rows)`.
# Everything else lives here, registered once by key ("NN.k": notebook NN, k-th
# exercise): the question, the answer, the hints and the worked answer. Answers, hints
# and worked answers are functions, called at check time, that compute from the model
# (never from a notebook's variables). Nothing of the answer is on screen, in the widget
# state or in the stored output before the learner asks for it.
#
# Register with one of:
#   number_exercise(key, question, answer, solution, hints=..., decimals=3, tol=None)
#   count_exercise(key, question, answer, solution, hints=...)       (a whole number)
#   choice_exercise(key, question, options, answer, solution, hints=...)
#   code_exercise(key, question, reference, cases, solution, mistakes=...)
# Another notebook's or lab's section may register its own (keys "08.1", "09.2", ...).

EXERCISES = {}                                      # key -> dict, filled by the *_exercise functions
_KEY = re.compile(r"\d\d\.\d+")
NOT_DONE = "Not done yet: complete the function above, run its cell, then run this cell again."


def parse_number(text):
    """A learner's typed number -> float, or a ValueError with one sentence saying what is expected.

    Accepts "0.811", "-1.5" or "−1.5", "1e-3", a simple fraction ("5/3", "1/12") and
    commas between groups of three digits ("7,000" is 7000). Any other comma is an
    error ("0,811": use a point for decimals), never a silent misreading."""
    s = str(text).strip().replace("−", "-").replace("–", "-")
    shown = s if len(s) <= 24 else s[:21] + "..."
    if not s:
        raise ValueError("Type a number first.")
    fraction = re.fullmatch(r"([-+]?\d+(?:\.\d+)?)\s*/\s*([-+]?\d+(?:\.\d+)?)", s)
    if fraction:
        top, bottom = (float(x) for x in fraction.groups())
        if bottom == 0:
            raise ValueError(f"{shown!r} divides by 0: a fraction needs a denominator other than 0.")
        return top / bottom
    if "," in s:
        if not re.fullmatch(r"[-+]?[1-9]\d{0,2}(,\d{3})+(\.\d+)?", s):
            raise ValueError(f"{shown!r}: use a point for decimals (0.811) and commas only "
                             "between groups of three digits (7,000).")
        s = s.replace(",", "")
    try:
        value = float(s) if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?", s, re.I) else None
    except ValueError:
        value = None
    if value is None:
        raise ValueError(f"{shown!r} is not a number: type a decimal number such as 0.395, "
                         "or a fraction such as 5/3.")
    if not np.isfinite(value):
        raise ValueError(f"{shown!r} is too large: type an ordinary finite number.")
    return value


def _now(x):
    """A value or a function computing it: exercises compute their facts at check time."""
    return x() if callable(x) else x


def _register(key, kind, question, solution, **facts):
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"An exercise key is a string such as '03.1' (notebook, number), not {key!r}.")
    if key in EXERCISES:
        raise ValueError(f"Exercise {key} is already registered: give this one another key.")
    if not (callable(question) or isinstance(question, str) and question.strip()):
        raise ValueError(f"Exercise {key} needs its question as a non-empty string "
                         "(or a function returning one, for a question that shows computed numbers).")
    if not (isinstance(solution, str) or callable(solution)):
        raise ValueError(f"Exercise {key} needs its worked answer as a string or a function returning one.")
    EXERCISES[key] = dict(key=key, kind=kind, question=question, solution=solution, **facts)


def number_exercise(key, question, answer, solution, hints=(), decimals=3, tol=None, fractions=False):
    """Register a question answered by a number.

    answer: the right value, or a function computing it from the model (called at check
    time). hints: (wrong value, sentence) pairs, or a function returning them: a typed
    value within tol of a wrong value gets its sentence. decimals: the precision asked
    for, stated under the question ("3 decimals"); tol (default 2 units of the last
    decimal) is how far from the answer a value may be and still be right. A value that
    misses only because it has fewer decimals than asked gets "Close: give 3 decimals".
    fractions=True says under the question that a fraction such as 5/3 is welcome (any
    number field accepts one). solution: the worked answer (text, `code` in backticks,
    paragraphs split by blank lines), or a function returning it; shown only on request
    or after a right answer."""
    tol = 2 * 10.0 ** -decimals if tol is None else tol
    if not (isinstance(decimals, int) and 0 <= decimals <= 6) or not tol > 0:
        raise ValueError(f"Exercise {key}: decimals must be a whole number from 0 to 6 and tol positive.")
    _register(key, "number", question, solution, answer=answer, hints=hints, decimals=decimals,
              tol=tol, fractions=fractions)


def count_exercise(key, question, answer, solution, hints=()):
    """Register a question answered by a whole number (a count): anything else typed
    gets "type a whole number"; hints as in number_exercise, matched exactly."""
    _register(key, "count", question, solution, answer=answer, hints=hints, decimals=0, tol=0.5,
              fractions=False)


def choice_exercise(key, question, options, answer, solution, hints=None):
    """Register a multiple-choice question (radio buttons).

    options: the option strings (or a function computing them, for options that show
    computed numbers); answer: the right option, or a function computing it from the
    model; hints: {wrong option: sentence} (or a function returning that dict)."""
    if not (callable(options) or (isinstance(options, (list, tuple)) and len(options) >= 2
                                  and all(isinstance(o, str) for o in options))):
        raise ValueError(f"Exercise {key}: options must be a list of at least two strings.")
    _register(key, "choice", question, solution, options=options, answer=answer, hints=hints or {})


def code_exercise(key, question, reference, cases, solution, mistakes=()):
    """Register a write-it-yourself exercise: the learner completes a function in the
    notebook and calls tm.exercise(key, their_function).

    reference: the model's function that the learner's must agree with (called with
    the same arguments). cases: (label, args tuple) pairs, or a function returning them,
    tried in order; the first input where the learner's result differs is named.
    mistakes: (wrong function, sentence) pairs: a result that equals a typical wrong
    function's on that input gets its sentence. solution: a worked solution (code),
    shown only on request. A function whose body is still `...` (it returns None) or
    that raises NotImplementedError is "not done yet"."""
    if not callable(reference):
        raise ValueError(f"Exercise {key}: reference must be the model's function to compare with.")
    _register(key, "code", question, solution, reference=reference, cases=cases, mistakes=mistakes)


def _spec(key):
    if not isinstance(key, str) or key not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise ValueError(f"There is no exercise {key!r}; the exercises are: {known}.")
    return EXERCISES[key]


def _precision(spec):
    if spec["kind"] == "count":
        return "Type a whole number."
    if spec["decimals"] == 0:
        return "Type a number; no decimals needed."
    extra = ", or a fraction such as 5/3" if spec["fractions"] else ""
    return f"Give {spec['decimals']} decimal{'s' if spec['decimals'] > 1 else ''}{extra}."


def _decimals_typed(text):
    s = str(text).strip()
    if "/" in s:
        return 99
    m = re.search(r"\.(\d+)", s)
    return len(m.group(1)) if m else 0


def answer_number(key, text):
    """Check a typed answer to a number or count exercise: (right?, one sentence).
    Unreadable input raises ValueError with the sentence to show."""
    spec = _spec(key)
    if spec["kind"] not in ("number", "count"):
        raise ValueError(f"Exercise {key} is a {spec['kind']} exercise, not a number.")
    try:
        value = parse_number(text)
    except ValueError:
        if spec["kind"] == "count":
            raise ValueError(f"{str(text).strip()[:24]!r} is not a count: type a whole number, such as 7.") from None
        raise
    if spec["kind"] == "count" and not float(value).is_integer():
        raise ValueError(f"{str(text).strip()[:24]!r} is not a count: type a whole number, such as 7.")
    answer, tol = float(_now(spec["answer"])), spec["tol"]
    if abs(value - answer) <= tol:
        return True, f"Right: {str(text).strip()} is correct."
    for wrong, sentence in _now(spec["hints"]):
        if abs(value - float(wrong)) <= tol:
            return False, f"Not quite. {sentence}"
    if spec["kind"] == "number":
        typed = _decimals_typed(text)
        if (typed < spec["decimals"] and abs(value - answer) <= 0.5 * 10.0 ** -typed + tol
                or abs(value - answer) <= 5 * tol):
            return False, (f"Close: give {_precision(spec)[5:-1]}, and keep every decimal in the "
                           "steps in between.")
    return False, "Not quite: recompute step by step and try again."


def answer_choice(key, picked):
    """Check a picked option of a choice exercise: (right?, one sentence)."""
    spec = _spec(key)
    if picked is None:
        raise ValueError("Pick one of the options first.")
    options, answer = list(_now(spec["options"])), _now(spec["answer"])
    if picked not in options:
        raise ValueError(f"{picked!r} is not one of the options.")
    if picked == answer:
        return True, "Right."
    return False, "Not quite. " + _now(spec["hints"]).get(picked, "Think it through once more.")


def _short(x):
    a = np.asarray(x)
    if a.ndim == 0:
        return fmt(a) if np.issubdtype(a.dtype, np.number) else repr(x)
    return f"an array of shape {a.shape}"


def _same(got, expected, equal_nan=False):
    """Equal shapes and values (to 1e-6, relative): ±inf match ±inf, NaN only if asked."""
    try:
        got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return False
    return got.shape == expected.shape and bool(
        np.allclose(got, expected, rtol=1e-6, atol=1e-9, equal_nan=equal_nan))


def _copy(args):
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def answer_code(key, function):
    """Run the learner's function on the exercise's inputs against the model's:
    (True, ...) when all agree, (None, NOT_DONE) when it is not written yet, otherwise
    (False, one sentence naming the first input that differs and, if it can, a hint)."""
    spec = _spec(key)
    if spec["kind"] != "code":
        raise ValueError(f"Exercise {key} is answered in its box, not by a function: "
                         f"call tm.exercise({key!r}) alone.")
    if not callable(function):
        raise ValueError(f"Exercise {key} checks a function: pass the function itself "
                         f"(its name, without brackets), not {type(function).__name__}.")
    cases = list(_now(spec["cases"]))
    for label, args in cases:
        expected = spec["reference"](*_copy(args))
        try:
            got = function(*_copy(args))
        except NotImplementedError:
            return None, NOT_DONE
        except Exception as err:       # the learner's code: any error becomes one sentence
            words = str(err).splitlines()[0][:160] if str(err) else ""
            return False, (f"On {label}, your function raised {type(err).__name__}"
                           + (f": {words}" if words else "") + ".")
        if got is None or got is Ellipsis:
            return None, NOT_DONE
        if _same(got, expected):
            continue
        for wrong, sentence in _now(spec["mistakes"]):
            try:
                if _same(got, wrong(*_copy(args)), equal_nan=True):
                    return False, f"Not yet, on {label}: {sentence}"
            except Exception:
                continue
        shape = np.shape(expected)
        if np.shape(got) != shape:
            return False, (f"Not yet, on {label}: your function returns {_short(got)}; "
                           f"the model's has shape {shape}.")
        return False, (f"Not yet, on {label}: your function returns {np.round(np.asarray(got, float), 3)}"
                       f", the model gives {np.round(np.asarray(expected, float), 3)}.")
    return True, f"Right: your function agrees with the model on all {len(cases)} inputs."


def _inline(text):
    """Question text -> HTML: escaped, `code` in backticks."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text.strip()))


def _rich(text):
    """Worked-answer text -> HTML: paragraphs at blank lines, `code` in backticks."""
    return "".join(f"<p>{_inline(p)}</p>" for p in text.strip().split("\n\n") if p.strip())


class ExerciseBox(widgets.VBox):
    """An exercise's root widget (CSS classes course-widget w-check).

    Outside a live kernel (a notebook opened before Run All, on GitHub or nbviewer) its
    stored text/plain and text/html forms show the question, never the answer.
    For tests and scripts: try_answer(value) types (or picks) a value and presses Check
    and returns the sentence shown; show_answer() presses the answer button; .message
    and .right hold the last sentence and verdict (True, False, None: not checked)."""

    def __init__(self, key, plain, rich):
        super().__init__([])
        self.add_class("course-widget")
        self.add_class("w-check")
        self.key, self._plain, self._html = key, plain, rich
        self.message, self.right, self.answer_shown = "", None, False

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = self._plain
        data["text/html"] = f'<div class="course-widget w-check">{self._html}</div>'
        return data


def exercise(key, function=None):
    """Show exercise `key` ("03.1"): its question, an answer box (or options) with a
    Check button, and a button that shows the worked answer (also shown after a right
    answer). For a write-it-yourself exercise pass the learner's function: it is
    checked at once against the model, and the result is shown under the question."""
    spec = _spec(key)
    kind, question = spec["kind"], _now(spec["question"])
    if kind == "code" and function is None:
        raise ValueError(f"Exercise {key} checks a function you write: call "
                         f"tm.exercise({key!r}, your_function).")
    if kind != "code" and function is not None:
        raise ValueError(f"Exercise {key} is answered in its box: call tm.exercise({key!r}) alone.")
    area = message_area()
    title = widgets.HTML(f"<b>{_inline(question)}</b>")
    worked = widgets.HTML(value="")                 # empty until the learner asks
    reveal = widgets.Button(description="Show a solution" if kind == "code" else "Show the answer")

    def show_answer(_=None):
        text = _now(spec["solution"])
        worked.value = (f"<pre>{html.escape(text.strip())}</pre>" if kind == "code" else _rich(text))
        reveal.disabled, box.answer_shown = True, True

    def report(ok, sentence):
        box.message, box.right = sentence, ok
        say(area, sentence, ok=False if ok is None and kind != "code" else ok)
        if ok:
            show_answer()

    if kind == "code":
        ok, sentence = answer_code(key, function)
        box = ExerciseBox(key, f"Check yourself {key}: {question}\n{sentence}",
                          f"<p><b>{_inline(question)}</b></p><p>{html.escape(sentence)}</p>")
        box.children = [title, area, reveal, worked]
        report(ok, sentence)
    else:
        check = widgets.Button(description="Check", button_style="info")
        if kind == "choice":
            options = list(_now(spec["options"]))
            if _now(spec["answer"]) not in options or len(set(options)) != len(options):
                raise ValueError(f"Exercise {key}: its answer must be exactly one of its distinct options.")
            field = widgets.RadioButtons(options=options, value=None, layout=widgets.Layout(width="auto"))
            box = ExerciseBox(key, f"Check yourself {key}: {question}\n"
                              + "\n".join(f"  ( ) {o}" for o in options),
                              f"<p><b>{_inline(question)}</b></p><ul>"
                              + "".join(f"<li>{html.escape(o)}</li>" for o in options) + "</ul>")
            box.children = [title, field, widgets.HBox([check, reveal]), area, worked]
            judge = answer_choice
        else:
            precision = _precision(spec)
            field = widgets.Text(placeholder="your answer", layout=widgets.Layout(width="12em"))
            box = ExerciseBox(key, f"Check yourself {key}: {question}\n({precision})",
                              f"<p><b>{_inline(question)}</b> <i>{html.escape(precision)}</i></p>")
            title.value += f" <i>{html.escape(precision)}</i>"
            box.children = [title, widgets.HBox([field, check, reveal]), area, worked]
            judge = answer_number
            field.on_msg(lambda _w, content, _b: attempt() if content.get("event") == "submit" else None)

        def attempt(_=None):
            try:
                report(*judge(key, field.value))
            except ValueError as err:               # unreadable input: one sentence, try again
                report(None, str(err))

        def try_answer(value):
            field.value = value if kind == "choice" else str(value)
            attempt()
            return box.message

        check.on_click(attempt)
        box.try_answer = try_answer
    reveal.on_click(show_answer)
    box.show_answer = show_answer
    return box


# The exercises of notebooks 01-07. Each fact is computed from the model when it is
# needed; `_model` is toy_model itself (its functions, not a notebook's variables).

_TEXT = "the cat climbed the"


def _tok(name):
    return TOKENS.index(name)


def _head_out(q, k, v):
    """The model's one-head attention output (whatever else attention returns)."""
    out = _model.attention(q, k, v)
    return out[0] if isinstance(out, tuple) else out


# [01 tokens]

_S1 = "the dog climbed the wall."
count_exercise(
    "01.1", f'How many tokens does "{_S1}" have?',
    answer=lambda: len(encode(_S1)),
    hints=lambda: [(len(_S1.split()), "That is the number of words: ' climbed' is two tokens, "
                    "and '.' is one more."),
                   (len(_S1.split()) + 1, "Close: count both the extra piece of ' climbed' and the '.'.")],
    solution=lambda: (f"{len(encode(_S1))}: `{' '.join(show(i) for i in encode(_S1))}`. "
                      f"`len(tm.encode({_S1!r}))` computes it. Words are not tokens: `climbed` is "
                      "two, and the full stop is a token of its own."))

choice_exercise(
    "01.2", 'Which ids does the text "the roof" give? Work it out from the vocabulary table.',
    options=["[1, 6]", "[0, 6]", "[0, 1, 6]", "[6]"],
    answer=lambda: str(encode("the roof")),
    hints={"[1, 6]": "The text starts with 'the', with no space in front: that is not ␣the.",
           "[0, 1, 6]": "The space belongs to the word after it: ' roof' is one token.",
           "[6]": "'the' is a token too: the tokenizer drops nothing.",
           "[0, 6]": "Count again from the vocabulary table: ids start at 0."},
    solution=lambda: (f"`{encode('the roof')}`: `the` (no space in front, id {VOCAB.index('the')}) and "
                      f"`␣roof` (id {VOCAB.index(' roof')}). `tm.encode(\"the roof\")` prints it."))

_IDS3 = [5, 1, 2, 0]
choice_exercise(
    "01.3", f"Decode the ids {_IDS3} by hand, with the vocabulary table: which text do they give?",
    options=['"ed the cat the"', '"edthecatthe"', '"ed the catthe"', '" ed the cat the"'],
    answer=lambda: f'"{_model.decode(_IDS3)}"',
    hints={'"ed the cat the"': "Look at id 0 again: `the` has no space in front, and decoding "
                               "only joins the tokens' own text, adding no space of its own.",
           '"edthecatthe"': "The spaces are part of the tokens: id 1 is ␣the and id 2 is ␣cat.",
           '" ed the cat the"': "Id 5 is `ed`, with no space in front: the text starts with it.",
           '"ed the catthe"': "Look each id up in the table once more."},
    solution=lambda: (
        "Look each id up and join the strings: "
        + " + ".join(f"{i} → `{show(i)}`" for i in _IDS3)
        + f' gives "{_model.decode(_IDS3)}". The space in front of a word belongs to that word\'s '
        "token, so `the` (id 0), which has none, sticks to the word before it. That is why a "
        "text's first word and the same word later are two different tokens: inside a text a "
        "word follows a space, at the very start it does not."))

# [02 embeddings]

_S2 = " dog climbed the"


def _x_of(text):
    ids = encode(text)
    return embed(ids, PARAMS["wte"], PARAMS["wpe"])


number_exercise(
    "02.1", f'Compute by hand: for the text "{_S2}" (it starts with a space, so its first token '
            "is ␣dog), what is X's row 1 in dimension d2? Use the tables E and P printed above.",
    answer=lambda: _x_of(_S2)[0, 1], decimals=1, tol=1e-3,
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
    return np.linalg.norm(E - E[_tok("␣cat")], axis=1)


def _closest_to_cat():
    d = _distances_to_cat()
    d[_tok("␣cat")] = np.inf
    return TOKENS[int(np.argmin(d))]


choice_exercise(
    "02.2", "Which token's embedding is closest to ␣cat's (the smallest straight-line distance "
            "between the two rows of E)?",
    options=["␣roof", "␣the", "␣dog", "ed"], answer=_closest_to_cat,
    hints={"␣roof": "␣roof also has d1 = 1, but it differs in d2 and d4.",
           "␣the": "␣the points along d4 only: it shares nothing with ␣cat.",
           "ed": "ed has d1 = 1 like ␣cat, but +1 on d2 where ␣cat has -1.",
           "␣dog": "Compare the rows once more, dimension by dimension."},
    solution=lambda: (
        f"`{_closest_to_cat()}`, at distance {fmt(np.sort(_distances_to_cat())[1])}: its row differs "
        "from `␣cat`'s only in d2 (-0.5 against -1). Both are animals that a verb follows. In a "
        "trained model this is how similar tokens end up close together: they are followed by "
        "similar things."))

_SWAP = ("the cat climbed the", "the climbed cat the")
_SAME = "Exactly the same: the last row mixes the same set of rows with the same weights, in any order."


def _no_position_predictions():
    no_pos = {**PARAMS, "wpe": np.zeros_like(PARAMS["wpe"])}
    return [forward(encode(t), no_pos)[-1] for t in _SWAP]


choice_exercise(
    "02.3", f'The toy without its position embeddings reads "{_SWAP[0]}" and "{_SWAP[1]}". '
            "What can you say about its prediction for the token after each?",
    options=["Different, because the ids are different.", _SAME,
             "Different, because attention reads the rows from left to right.",
             "There are none: the second text cannot be encoded."],
    answer=lambda: (_SAME if np.allclose(*_no_position_predictions())
                    else "Different, because the ids are different."),
    hints={"Different, because the ids are different.":
               "They are the same five ids (check with tm.encode), only in another order.",
           "Different, because attention reads the rows from left to right.":
               "Attention compares rows by dot products and adds them up: neither knows which row came first.",
           "There are none: the second text cannot be encoded.":
               "It encodes fine: the tokenizer checks the pieces, not the grammar.",
           _SAME: "Compare the two texts' ids once more."},
    solution=lambda: (
        f"Exactly the same (the largest difference between the two rows of logits is "
        f"{fmt(np.abs(np.subtract(*_no_position_predictions())).max())}). Both texts are the ids "
        f"`{' '.join(show(i) for i in sorted(set(encode(_SWAP[0])), key=encode(_SWAP[0]).index))}` "
        "in two orders, and both end in `␣the`. The last row looks at every row; scores and "
        "weights travel with their rows, so a weighted sum cannot tell the orders apart.\n\n"
        "One more thing: the toy *with* its positions cannot tell them apart either. Its only "
        "position mark is on position 1, and both texts start with `the`. A real model learns a "
        "distinct row for every position, so it can."))


def _rows_case(ids):
    return (list(ids),)


code_exercise(
    "02.4", "Write `embed_rows(ids)`: it returns X, one row per id, each the token's row of E "
            "(`tm.PARAMS[\"wte\"]`) plus its position's row of P (`tm.PARAMS[\"wpe\"]`).",
    reference=lambda ids: embed(ids, PARAMS["wte"], PARAMS["wpe"]),
    cases=lambda: [(f'the ids of "{_TEXT}"', _rows_case(encode(_TEXT))),
                   ("the ids [3, 0] (␣dog, then the)", _rows_case([3, 0])),
                   (f'the ids of "{_S2}"', _rows_case(encode(_S2))),
                   ("8 ids, a full context", _rows_case([0, 2, 4, 5, 1, 6, 10, 11]))],
    mistakes=[(lambda ids: PARAMS["wte"][ids],
               "your rows have no position part: add P's row for each position, P[0] to the "
               "first row (Python counts from 0)."),
              (lambda ids: PARAMS["wte"][ids] + PARAMS["wpe"][ids],
               "P is indexed by position (0, 1, 2, ...), not by token id: take P[:len(ids)]."),
              (lambda ids: PARAMS["wpe"][:len(ids)] + 0 * PARAMS["wte"][ids],
               "each row also needs its token's own row of E.")],
    solution='''def embed_rows(ids):
    E, P = tm.PARAMS["wte"], tm.PARAMS["wpe"]
    return E[ids] + P[:len(ids)]      # row t: token ids[t]'s row + position t's row''')

# [03 q k v]


def _head(h=0, text=_TEXT):
    return run(text)["heads"][h]


def _ed_dots():
    h = _head(0)
    return np.array([h["q"][3] @ h["k"][0], h["q"][3] @ h["k"][2]])


number_exercise(
    "03.1", lambda: (
        "A softmax of two scores, by hand. Suppose ed (row 4) could see only two keys, the and "
        f"␣climb. Its dot products q·k are {fmt(_ed_dots()[0])} with the and {fmt(_ed_dots()[1])} "
        "with ␣climb, before the division by √2. What weight would ed give to the? Divide by √2, "
        "exponentiate, and divide by the sum."),
    answer=lambda: softmax(_ed_dots() / np.sqrt(2))[0], tol=3e-3,
    hints=lambda: [
        (softmax(_ed_dots())[0], "You skipped the division by √2: divide each dot product by √2 first."),
        ((_ed_dots()[0] / np.sqrt(2)) / (_ed_dots() / np.sqrt(2)).sum(),
         "You divided the scores by their sum: take e to the power of each score first."),
        (softmax(_ed_dots() / np.sqrt(2))[1], "That is the weight on ␣climb; the question asks for the weight on the.")],
    solution=lambda: (lambda s, e: (
        f"Divided by √2 the scores are {fmt(s[0])} and {fmt(s[1])} (the same numbers as in row 4 of "
        f"the score table). Then e^{fmt(s[0])} = {fmt(e[0])} and e^{fmt(s[1])} = {fmt(e[1])}, and the "
        f"weight on the is {fmt(e[0])} / ({fmt(e[0])} + {fmt(e[1])}) = {fmt(e[0] / e.sum())}."))(
        _ed_dots() / np.sqrt(2), np.exp(_ed_dots() / np.sqrt(2))))

number_exercise(
    "03.2", "A query of zero. Row 2 (␣cat) has query 0, so all its scores are 0. Suppose row 5 "
            "(␣the) had query 0 as well. What weight would it give ␣climb? Predict it before you "
            "compute anything.",
    answer=lambda: softmax(np.zeros(len(encode(_TEXT))))[2], fractions=True,
    hints=lambda: [
        (_head(0)["weights"][4, 2], "That is the real row 5: with query 0 every score is 0, so no key stands out."),
        (1 / (len(encode(_TEXT)) - 1), "Row 5 may see all 5 keys, itself included."),
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
    "03.3", "Shift a whole row. Add 5 to every score in one row (try it on the row of ed). What "
            "happens to that row's weights?",
    options=_SHIFT,
    answer=lambda: (_SHIFT[2] if np.allclose(softmax(_ed_scores()), softmax(_ed_scores() + 5))
                    else _SHIFT[0]),
    hints={"all grow": "They cannot all grow: they must still add up to 1.",
           "the largest grows, the others shrink": "That happens when scores are multiplied (spread out), not shifted.",
           "no longer add up to 1": "Softmax divides by the row's sum, so a row always adds up to 1.",
           "stay exactly the same": "Write e^(s + 5) as a product and look again."},
    solution=lambda: (
        "They stay exactly the same: ed's weights on the, ␣cat, ␣climb, ed are "
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


def _attend(q, k, v, scale=True, mask=True, axis=-1, weights_only=False):
    """Typical wrong versions of one head (and, with the defaults, the right one)."""
    s = q @ k.T / (np.sqrt(q.shape[-1]) if scale is True else scale)
    if mask:
        s = np.where(np.tril(np.ones((len(q), len(k)), dtype=bool)), s, -np.inf)
    w = np.exp(s - s.max(axis=axis, keepdims=True))
    w = w / w.sum(axis=axis, keepdims=True)
    return w if weights_only else w @ v


code_exercise(
    "03.4", "Write `one_head(q, k, v)`: the output of one head, as above. Scores q kᵀ / √d_head "
            "(d_head = the number of columns of q), the future hidden with "
            "`np.where(tm.causal_mask(n), scores, -np.inf)`, softmax along each row, then the "
            "weighted sum of the rows of v.",
    reference=_head_out,
    cases=lambda: [(f'head 1 of "{_TEXT}"', _qkv_case(0)), (f'head 2 of "{_TEXT}"', _qkv_case(1)),
                   ("random q, k, v with 3 rows of 3 numbers", _random_qkv(3, 3, 0)),
                   ("random q, k, v with 6 rows of 4 numbers", _random_qkv(6, 4, 1))],
    mistakes=[(lambda q, k, v: _attend(q, k, v, scale=1.0),
               "the scores are not divided by √d_head."),
              (lambda q, k, v: _attend(q, k, v, mask=False),
               "the future is not hidden: each row may see only itself and earlier rows."),
              (lambda q, k, v: _attend(q, k, v, weights_only=True),
               "that is the weights: multiply them by v to get the output."),
              (lambda q, k, v: _attend(q, k, v, axis=0),
               "the softmax ran down the columns: each row's weights must add up to 1 (axis=-1).")],
    solution='''def one_head(q, k, v):
    n, d_head = q.shape
    scores = q @ k.T / np.sqrt(d_head)                         # [n, n]
    scores = np.where(tm.causal_mask(n), scores, -np.inf)      # hide the future
    weights = tm.softmax(scores)                               # each row adds up to 1
    return weights @ v                                         # [n, d_head]''')

# [04 mask and heads]

count_exercise(
    "04.1", "Count the allowed entries. How many of the 25 entries of a 5 × 5 causal mask are True?",
    answer=lambda: int(causal_mask(5).sum()),
    hints=[(10, "10 counts only the entries below the diagonal: each token may also look at itself."),
           (25, "25 is every entry: the mask forbids looking at later tokens."),
           (5, "5 is only the diagonal: a token may also look at every earlier token.")],
    solution=lambda: (
        f"{int(causal_mask(5).sum())}. Row i may see i entries (itself and the i − 1 before it), so "
        f"1 + 2 + 3 + 4 + 5 = {int(causal_mask(5).sum())}, in general n(n + 1) / 2. The other "
        f"{int((~causal_mask(5)).sum())} are the future."))


def _mask_rows():
    return [f"row {i + 1} ({t})" for i, t in enumerate(run(_TEXT)["tokens"])]


def _mask_changes():
    on, off = run(_TEXT), run(_TEXT, mask=False)
    return np.max([np.abs(on["heads"][h]["weights"] - off["heads"][h]["weights"]).max(axis=1)
                   for h in range(N_HEAD)], axis=0)


choice_exercise(
    "04.2", "Where the mask changes nothing. Use the widget above: switch the mask off and compare "
            "the rows. In which row does switching the mask off change nothing?",
    options=_mask_rows,
    answer=lambda: _mask_rows()[int(np.flatnonzero(_mask_changes() < 1e-12)[0])],
    hints=lambda: dict(zip(_mask_rows(), [
        "Row 1 changes the most: unmasked, it looks almost entirely ahead.",
        "Row 2 has three later tokens it could look at without the mask.",
        "Row 3 has two later tokens it could look at without the mask.",
        "Row 4 still has one later token, ␣the, to peek at.",
        "Look at what the mask hides in this row once more."], strict=True)),
    solution=lambda: (
        "Row 5, the last token: there is no later token to hide, so the mask forbids nothing in "
        "that row. The largest change of any weight in each row, over both heads, when the mask "
        "is switched off: "
        + ", ".join(f"{r} {fmt(c)}" for r, c in zip(_mask_rows(), _mask_changes(), strict=True)) + "."))

_COLUMN = np.array([2.0, 0.0, 1.0, 0.0])


def _concat_last():
    r = run(_TEXT)
    return np.hstack([r["heads"][0]["out"], r["heads"][1]["out"]])[-1]


number_exercise(
    "04.3", lambda: (
        "One entry of the attention output, by hand. The last row of the concatenation is "
        f"[{', '.join(fmt(c) for c in _concat_last())}]. Suppose W_O's d2 (surface) column were "
        f"({', '.join(fmt(c, 0) for c in _COLUMN)}) instead of the model's: what would the d2 entry "
        "of the last row's attention output be? Multiply entry by entry and add."),
    answer=lambda: _concat_last() @ _COLUMN, tol=3e-3,
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


def _masked(scores, below=0, fill=-np.inf):
    n = len(scores)
    return np.where(np.tril(np.ones((n, n), dtype=bool), below), scores, fill)


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

# [05 the block]

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


def _both_off_answer():
    r = run(_TEXT, attention_on=False, mlp_on=False)
    x, ln = r["x"], _ln(r["x"])
    for option, value in zip(_BOTH, [x, ln, 0 * x, x + ln], strict=True):
        if np.allclose(r["y"], value):
            return option
    return None


choice_exercise(
    "05.2", "Both branches off. Predict first, then switch off both branches in the widget above. "
            "What is y?",
    options=_BOTH, answer=_both_off_answer,
    hints={"y = LN(x)": "LayerNorm only feeds a branch; the stream itself is never normalised inside the block.",
           "y = 0": "A branch that is off adds nothing; it does not wipe the stream.",
           "y = x + LN(x)": "LN(x) goes into the branch, not into the stream: with the branch off it goes nowhere.",
           "y = x": "Follow the stream through the block once more."},
    solution="y = x. Each branch only ever adds to the stream; with both off nothing is added, so "
             "the block passes X through unchanged. The widget's table then shows X itself.")


def _gelu_min():
    return float(_model.gelu(np.linspace(-3, 0, 30001)).min())


def _gelu_options():
    g0, g10 = float(_model.gelu(0.0)), float(_model.gelu(-10.0))
    return ["GELU(0) = 0.500, GELU(−10) = 0.000", f"GELU(0) = {fmt(g0)}, GELU(−10) = {fmt(g10)}",
            "GELU(0) = 0.000, GELU(−10) = -10.000", f"GELU(0) = 0.000, GELU(−10) = {fmt(_gelu_min())}"]


choice_exercise(
    "05.3", "GELU at 0 and far below 0. Without computing, use the plot (and where its left end is "
            "heading): what are GELU(0) and GELU(−10)?",
    options=_gelu_options, answer=lambda: _gelu_options()[1],
    hints=lambda: {
        _gelu_options()[0]: "You may be thinking of the sigmoid, which is 0.5 at 0; GELU is u "
                            "times something, so it is 0 at u = 0.",
        _gelu_options()[2]: "That is the identity; GELU fades to 0 for large negative inputs, like ReLU.",
        _gelu_options()[3]: "That is GELU's lowest value, reached near u = −0.75; further left it rises back to 0."},
    solution="Both are 0. GELU(u) is u times a number between 0 and 1, so it is exactly 0 at u = 0; "
             "far below zero that number is practically 0, and GELU fades out like ReLU. Only in "
             "between, around u = −0.75, does it dip below zero.")

_DOG = "the dog climbed the"


def _dog_off():
    return run(_DOG, attention_on=False)["p"][-1]


choice_exercise(
    "05.4", f"Attention off, another subject. With attention off, {_TEXT} is followed most likely by "
            f"␣cat. Now take the text {_DOG}, attention off (MLP on). Which token is most likely next?",
    options=["␣roof", "␣cat", "␣dog", "␣the"], answer=lambda: TOKENS[int(np.argmax(_dog_off()))],
    hints={"␣roof": "That needs 'climbed', and without attention the last row cannot see it.",
           "␣dog": "Without attention, can the last row see that the text mentions a dog?",
           "␣the": "The row of ␣the points along d4, 'noun': a noun comes next.",
           "␣cat": "What can the last row see without attention?"},
    solution=lambda: (
        f"`{TOKENS[int(np.argmax(_dog_off()))]}`, with p = {fmt(_dog_off().max())}, as for the cat "
        f"(try `tm.run(\"{_DOG}\", attention_on=False)[\"p\"][-1]`). Without attention, the last row "
        "knows only that it holds `␣the` at position 5; the earlier words, dog or cat, never reach it, "
        "so the model predicts what follows any \"the\"."))


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
                   (f'the block outputs y of "{_TEXT}"', (np.array(run(_TEXT)["y"], dtype=float),)),
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

# [06 output]

_OUT = ["A word: the one with the highest logit", "12 probabilities, one per token, that add up to 1",
        "The 4 numbers of f_5", "12 logits, and the largest one is the answer"]


def _softmax_output():
    p = run(_TEXT)["p"][-1]
    return _OUT[1] if len(p) == len(VOCAB) and np.isclose(p.sum(), 1) else _OUT[3]


choice_exercise(
    "06.1", "Does the model output a word? After the output layer and the softmax, what exactly has "
            "the model produced for the last position?",
    options=_OUT, answer=_softmax_output,
    hints={_OUT[0]: "No token has been chosen yet; choosing is a separate step.",
           _OUT[2]: "f_5 is an input of the output layer, not its result.",
           _OUT[3]: "That is one step earlier. Real code does stop there: a forward pass returns the "
                    "logits (`model(...).logits`, nanoGPT's `logits, loss = model(idx, targets)`), and "
                    "the softmax lives in the loss or in the sampler. What does the softmax make of them?",
           _OUT[1]: "Follow the last row through the output layer and the softmax once more."},
    solution="No word at all: the model's output is a distribution, one probability per token of "
             "its vocabulary (12 in the toy, 50,257 in GPT-2), adding up to 1. A word appears only "
             "after one token is chosen from that distribution and its id is decoded back into text, "
             "which is the subject of the next notebook.\n\n"
             "In real code the forward pass stops one step earlier, at the logits; the softmax is "
             "applied by whatever uses them: the loss (as a log-softmax) or the sampler.")

_ADD = ["p(␣roof) stays exactly the same", "p(␣roof) grows e^10 times",
        "p(␣roof) grows and the others shrink", "p(␣roof) comes close to 1"]


def _last_z():
    return run(_TEXT)["logits"][-1]


choice_exercise(
    "06.2", "Add 10 to every logit. Suppose you add 10 to each of the 12 logits of the last row. "
            "What happens to p(␣roof)? Work it out from the softmax formula (or in the cell above).",
    options=_ADD,
    answer=lambda: _ADD[0] if np.allclose(softmax(_last_z() + 10), softmax(_last_z())) else _ADD[2],
    hints={_ADD[1]: "You changed the numerator but not the sum below it: every e^z in the sum grows too.",
           _ADD[2]: "That is what adding 10 to ␣roof's logit alone would do; here every logit moves.",
           _ADD[3]: "That would need ␣roof's logit to move away from the others; here they all move together.",
           _ADD[0]: "Write e^(z + 10) as a product and look again."},
    solution=lambda: (
        f"Nothing changes: p(␣roof) stays {fmt(softmax(_last_z() + 10)[_tok('␣roof')])}, and so does "
        "every other p. Each exponential becomes e^(z+10) = e^10 · e^z, the sum below grows by the "
        "same factor e^10, and the factor cancels. Only differences between logits matter, so a "
        "single logit means nothing on its own. The widget below shows it for any shift."))

_H6 = np.array([1.0, 0.0, 1.0, 0.0])


def _tied_z():
    return PARAMS["wte"] @ _H6


number_exercise(
    "06.3", "Score the vocabulary with tied weights, by hand. With W_U = Eᵀ and no final norm, the "
            "logit of token j for h = [1, 0, 1, 0] is h · E[j]. What is the highest of the 12 logits?",
    answer=lambda: _tied_z().max(), decimals=1, tol=1e-3,
    hints=lambda: [(float((_H6 @ PARAMS["w_u"]).max()), "Several tokens score 1 (and 1 is the top if "
                    "you used W_U's columns); look for a row with something on both d1 and d3."),
                   (0.5, "Add both parts: the d1 entry and the d3 entry of the row.")],
    solution=lambda: (
        f"{fmt(_tied_z().max(), 1)}, for `{TOKENS[int(_tied_z().argmax())]}`: the logit of each token "
        "is \"d1 + d3\" of its row of E. The 12 logits: "
        + ", ".join(f"{t} {fmt(z, 1)}" for t, z in zip(TOKENS, _tied_z(), strict=True)) + "."))

choice_exercise(
    "06.4", "With the same tied weights and h = [1, 0, 1, 0]: which token gets the highest logit?",
    options=["␣the", "␣cat", "␣climb", "␣floor", "."], answer=lambda: TOKENS[int(_tied_z().argmax())],
    hints={".": "'.' wins with the columns of W_U; with tied weights, use the rows of E.",
           "␣the": "␣the's embedding lies on d4 only, which h ignores: it scores 0.",
           "␣cat": "␣cat scores 1 (d1 only); another token also has something on d3.",
           "␣climb": "␣climb scores 1 (d3 only); another token also has something on d1.",
           "␣floor": "Add d1 and d3 of each row once more."},
    solution=lambda: (
        f"`{TOKENS[int(_tied_z().argmax())]}`, whose embedding "
        f"{[float(v) for v in PARAMS['wte'][int(_tied_z().argmax())]]} gives {fmt(_tied_z().max(), 1)}. "
        "With tied weights, a logit just measures how much h looks like each token's embedding. "
        f"With the toy's own W_U, `{TOKENS[int((_H6 @ PARAMS['w_u']).argmax())]}` would have come first instead."))

def _tied_p():
    return softmax(_tied_z())


_FLOOR = VOCAB.index(" floor")


def _mean_loss():
    """The toy's mean loss on "the cat climbed the roof": notebook 6's 0.979."""
    ids = encode(_TEXT + " roof")
    return float(np.mean(-np.log(run(ids[:-1])["p"][np.arange(len(ids) - 1), ids[1:]])))

number_exercise(
    "06.6", "Carry the card's example through the softmax. With the same tied weights, no norm "
            "and h = [1, 0, 1, 0], what probability does ␣floor get?",
    answer=lambda: _tied_p()[_FLOOR],
    hints=lambda: [(1 / 12, "That is the uniform 1/12: the logits are not all equal, so p is not either."),
                   (float(_tied_z()[_FLOOR] / _tied_z()[_tied_z() > 0].sum()),
                    "Divide e^z by the sum of e^z over all 12 tokens, not z by a sum of logits."),
                   (float(softmax(_H6 @ PARAMS["w_u"])[_FLOOR]),
                    "That is the toy's own W_U; with tied weights the logits are h · E[j].")],
    solution=lambda: (
        "Exponentiate all twelve logits and divide by their sum: "
        + ", ".join(f"{t} {fmt(z, 1)} → {fmt(q)}" for t, z, q in zip(TOKENS, _tied_z(), _tied_p(), strict=True))
        + f". ␣floor leads, yet gets only {fmt(_tied_p()[_FLOOR])}: six other tokens score 1, half a "
        "unit behind, and together they take most of the mass."))

number_exercise(
    "06.7", "And the loss: if the token that really came next were ␣floor, what would this "
            "prediction cost, in nats?",
    answer=lambda: -np.log(_tied_p()[_FLOOR]),
    hints=lambda: [(float(-np.log10(_tied_p()[_FLOOR])), "Use the natural log, ln, not log base 10."),
                   (float(-np.log2(_tied_p()[_FLOOR])), "That is in bits (log base 2); the loss is in nats (ln)."),
                   (float(_tied_p()[_FLOOR]), "That is p itself; the loss is −ln p.")],
    solution=lambda: (
        f"−ln {fmt(_tied_p()[_FLOOR])} = {fmt(-np.log(_tied_p()[_FLOOR]))} nats. Even a right guess costs "
        f"this much, more than the toy's mean loss of {fmt(_mean_loss())} "
        "on its own sentence: small gaps between logits make a flat p, and a flat p makes a high loss, "
        "however the gaps come about."))


def _softmax_rows(z, shift="row", axis=-1):
    """Typical wrong softmaxes of each row (and, with the defaults, the right one)."""
    m = {"row": z.max(axis=-1, keepdims=True), "all": z.max(), "none": 0.0}[shift]
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(z - m)
        return e / (e.sum(axis=axis, keepdims=True) if axis is not None else e.sum())


def _softmax_cases():
    rng = np.random.default_rng(0)
    return [(f'the logits of "{_TEXT}"', (np.array(run(_TEXT)["logits"], dtype=float),)),
            ("the rows [1000, 999, 0] and [0, 1, 2]", (np.array([[1000.0, 999.0, 0.0], [0.0, 1.0, 2.0]]),)),
            ("the rows [-1000, -1001] and [0, 1]", (np.array([[-1000.0, -1001.0], [0.0, 1.0]]),)),
            ("random logits, 3 rows of 12", (rng.standard_normal((3, 12)) * 3,))]


code_exercise(
    "06.5", "Write `softmax(z)`: the probabilities of each row of the logits z (an n × V array). "
            "Subtract each row's largest logit first, so that e^z stays finite for logits like "
            "1000; then exponentiate and divide each row by its own sum.",
    reference=lambda z: softmax(z), cases=_softmax_cases,
    mistakes=[(lambda z: _softmax_rows(z, shift="none"),
               "e^1000 overflows: subtract each row's largest logit before exponentiating."),
              (lambda z: _softmax_rows(z, axis=None),
               "you divided by the sum of the whole array: divide each row by its own sum (axis=-1)."),
              (lambda z: _softmax_rows(z, axis=0),
               "each column adds up to 1, not each row: sum along axis=-1."),
              (lambda z: _softmax_rows(z, shift="all"),
               "subtract each row's own largest logit: with the largest of the whole array, a row "
               "of very negative logits underflows to 0 / 0.")],
    solution='''def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))     # each row's largest logit -> e^0 = 1
    return e / e.sum(axis=-1, keepdims=True)          # each row adds up to 1''')

# [07 generation]


def _p07(temperature=1.0, **options):
    return next_token_probs(forward(encode(_TEXT))[-1], temperature, **options)


def _t0_options():
    top = TOKENS[int(np.argmax(_p07()))]
    return [f"all the probability on {top}: 1 there, 0 elsewhere", "1/12 for every token",
            "unchanged: temperature only matters when sampling", "the order of the tokens changes"]


choice_exercise(
    "07.1", "Temperature toward 0. What happens to the last row's p as the temperature goes toward "
            "0? Try it with the temperature slider above, then choose.",
    options=_t0_options,
    answer=lambda: _t0_options()[0] if _p07(1e-3).max() > 1 - 1e-9 else _t0_options()[2],
    hints=lambda: {
        "1/12 for every token": "That is the other end: a very large T makes every z / T close to 0.",
        "unchanged: temperature only matters when sampling":
            "Dividing by a small T stretches the gaps between the logits; watch the bars at T = 0.05.",
        "the order of the tokens changes": "Dividing every logit by the same positive T keeps their order.",
        _t0_options()[0]: "Divide the logits by a tiny T and look again."},
    solution=lambda: (
        f"All the mass goes to the largest logit, {TOKENS[int(np.argmax(_p07()))]}: dividing by a tiny "
        "T makes the gap between it and every other token huge, so their e^(z/T) vanish next to its "
        f"(at T = 0.01 it gets {fmt(_p07(0.01).max())}). That is greedy, which is why temperature 0 "
        "means greedy."))

_WALL_P, _ROOF_P = VOCAB.index(" wall"), VOCAB.index(" roof")

number_exercise(
    "07.2", "Temperature 0.5, by hand. At T = 0.5 every logit is doubled, so each e^(z/T) is the "
            "square of e^z, and p at T = 0.5 is proportional to p² at T = 1. Using the p column of "
            "the first table (or the logits), what probability does ␣wall get at T = 0.5?",
    answer=lambda: _p07(0.5)[_WALL_P],
    hints=lambda: [(_p07()[_WALL_P], "That is p(␣wall) at T = 1: square each p first."),
                   (_p07(2.0)[_WALL_P], "That is T = 2: at T = 0.5 the logits are doubled, not halved."),
                   (_p07()[_WALL_P] ** 2, "Squaring is half of it: divide by the sum of all twelve squares, "
                    "so that the new p add up to 1 again.")],
    solution=lambda: (lambda p: (
        f"{fmt(_p07(0.5)[_WALL_P])}. Squared, ␣wall's p is {fmt(p[_WALL_P])}² = {fmt(p[_WALL_P] ** 2, 4)}; "
        f"the twelve squares add up to {fmt((p ** 2).sum(), 4)}, and {fmt(p[_WALL_P] ** 2, 4)} / "
        f"{fmt((p ** 2).sum(), 4)} = {fmt(_p07(0.5)[_WALL_P])}. ␣roof's share grows from "
        f"{fmt(p[_ROOF_P])} to {fmt(_p07(0.5)[_ROOF_P])}: squaring favours the large p, which is what a "
        "temperature below 1 does."))(_p07()))

_K1 = ["the same text as greedy, whatever the temperature and the seed",
       "different: sampling is random", "the same only at temperature 0"]


def _k1_runs():
    return ([s["next"] for s in _model.generate(_TEXT, temperature=1.5, top_k=1, seed=3)],
            [s["next"] for s in _model.generate(_TEXT, temperature=0)])


choice_exercise(
    "07.3", "Top-k = 1. You sample with top-k = 1 at T = 1.5 and seed 3. Is the text different from greedy?",
    options=_K1, answer=lambda: _K1[0] if _k1_runs()[0] == _k1_runs()[1] else _K1[1],
    hints={_K1[1]: "After top-k = 1 only one token has p > 0; what can a draw return?",
           _K1[2]: "Temperature never changes which token is most likely, so top-k = 1 always keeps the argmax.",
           _K1[0]: "Ask what a draw can return when one token has all the probability."},
    solution=lambda: (
        "The same. Top-k = 1 keeps one token, the most likely, with p = 1 after renormalising, so "
        "every draw returns it. Temperature cannot change which token that is (it keeps the order), "
        "and the seed cannot either. With top-k = 1, T = 1.5 and seed 3, `tm.generate` adds "
        f"{', '.join(show(i) for i in _k1_runs()[0])}; greedy adds "
        f"{', '.join(show(i) for i in _k1_runs()[1])}."))

_ROOF, _WALL = VOCAB.index(" roof"), VOCAB.index(" wall")

number_exercise(
    "07.4", lambda: (
        f"By hand: top-k = 2. At T = 1, p(␣roof) = {fmt(_p07()[_ROOF])} and p(␣wall) = "
        f"{fmt(_p07()[_WALL])} are the two largest. With top-k = 2, what is the probability of "
        "␣wall after renormalising?"),
    answer=lambda: _p07(top_k=2)[_WALL],
    hints=lambda: [(_p07()[_WALL], "That is p before the cut; the two kept tokens must add up to 1 "
                    "again: divide by their total."),
                   (_p07(top_k=2)[_ROOF], "That is ␣roof's share; the question asks for ␣wall."),
                   (_p07(top_k=3)[_WALL], "That is top-k = 3; keep only two tokens.")],
    solution=lambda: (
        f"The two kept tokens are ␣roof ({fmt(_p07()[_ROOF])}) and ␣wall ({fmt(_p07()[_WALL])}). "
        f"Renormalising divides each by their total: p(␣wall) = {fmt(_p07()[_WALL])} / "
        f"({fmt(_p07()[_ROOF])} + {fmt(_p07()[_WALL])}) = {fmt(_p07(top_k=2)[_WALL])}, and ␣roof "
        f"gets the rest, {fmt(_p07(top_k=2)[_ROOF])}. You can also set "
        "top-k to 2 in the temperature widget above and read it on the line under the boxes."))

_DOG2 = "the dog"


def _greedy_dog():
    return [s["next"] for s in _model.generate(_DOG2, temperature=0)]


count_exercise(
    "07.5", f'How long is the greedy answer? Starting from "{_DOG2}", how many tokens does greedy '
            "generation add before it stops? Run `tm.generate` (or the stepper) to find out.",
    answer=lambda: len(_greedy_dog()),
    hints=lambda: [(len(_greedy_dog()) - 1, "Count <|endoftext|> too: it is a token the model chose, "
                    "and choosing it is what stops the loop."),
                   (N_CTX - len(encode(_DOG2)), "That is how many places the context has left; the "
                    "loop stopped before it was full."),
                   (N_CTX, "That is the length of the whole context, prompt included; count only the new tokens.")],
    solution=lambda: (
        f"{len(_greedy_dog())}: {', '.join(show(i) for i in _greedy_dog())}. It stops because the "
        "model picked `<|endoftext|>`, before the context was full "
        f"({len(encode(_DOG2))} + {len(_greedy_dog())} = {len(encode(_DOG2)) + len(_greedy_dog())} of "
        f"{N_CTX} places). Without attention to the subject the toy has not learned what a dog "
        "climbs, so the text goes wrong after `ed`."))


def _nucleus(p, top_p, strict=False, renormalise=True, ascending=False):
    """Typical wrong top-p filters (and, with the defaults, the right one)."""
    order = np.argsort(p if ascending else -p, kind="stable")
    before = np.cumsum(p[order]) - p[order]
    keep = np.zeros(len(p), dtype=bool)
    keep[order[(np.cumsum(p[order]) <= top_p) if strict else (before < top_p)]] = True
    q = np.where(keep, p, 0.0)
    return q / q.sum() if renormalise and q.sum() > 0 else q


def _top_p_cases():
    p = np.array(_p07(), dtype=float)
    return [("the toy's p at T = 1, top_p = 0.6", (p, 0.6)), ("the toy's p at T = 1, top_p = 0.9", (p, 0.9)),
            ("the toy's p at T = 1, top_p = 0.3", (p, 0.3)),
            ("p = [0.1, 0.2, 0.3, 0.4], top_p = 0.5", (np.array([0.1, 0.2, 0.3, 0.4]), 0.5)),
            ("the toy's p at T = 1, top_p = 1", (p, 1.0))]


code_exercise(
    "07.6", "Write `top_p_filter(p, top_p)`: keep the smallest set of most likely tokens whose "
            "probabilities add up to at least top_p, set every other p to 0, and renormalise so "
            "the kept ones add up to 1. Return an array as long as p.",
    reference=lambda p, top_p: next_token_probs(np.log(p), 1.0, top_p=top_p),
    cases=_top_p_cases,
    mistakes=[(lambda p, top_p: _nucleus(p, top_p, strict=True),
               "you stopped before the token that makes the total reach top_p: keep it too."),
              (lambda p, top_p: _nucleus(p, top_p, renormalise=False),
               "the kept probabilities must add up to 1 again: divide them by their total."),
              (lambda p, top_p: _nucleus(p, top_p, ascending=True),
               "you kept the least likely tokens: sort from the most likely down.")],
    solution='''def top_p_filter(p, top_p):
    order = np.argsort(-p)                          # most likely first
    before = np.cumsum(p[order]) - p[order]         # mass of the tokens ranked above each
    keep = np.zeros(len(p), dtype=bool)
    keep[order[before < top_p]] = True             # until the total reaches top_p
    q = np.where(keep, p, 0.0)
    return q / q.sum()''')


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
            f'font-family:monospace;line-height:1.3">{token_html(show(i))}'
            f'<br><small>{i}</small></span>')
    return "".join(chips)


def tokenizer_widget(text="the cat climbed the"):
    """Type text, see its tokens as chips and its ids, at every key. Text the vocabulary
    cannot cover gets encode's sentence naming the part that failed once it is finished
    (Enter); while a word is half typed, a quiet note only."""
    box = widgets.Text(value=text, description="text:", continuous_update=True,
                       layout=widgets.Layout(width="32em"))
    chips = widgets.HTML()
    id_list = widgets.HTML()
    area = message_area()
    state = WidgetState(ids=[])

    def update(value, finished=False):
        try:
            state.ids = encode(value)
        except ValueError:
            state.ids = []
            chips.value = id_list.value = ""
            if finished:
                raise
            say(area, "Not all of it is in the vocabulary yet: keep typing, or press Enter "
                      "to see why.")
            return
        chips.value = token_chips(state.ids)
        id_list.value = f"<code>ids = {state.ids}</code> ({len(state.ids)} tokens)"

    def submitted(_widget, content, _buffers):
        if content.get("event") == "submit":
            update(box.value, finished=True)

    on_change(box, area, state, update)
    box.on_msg(guarded(area, submitted, state))
    guarded(area, update, state)(text, finished=True)
    root = panel("tokenizer", box, chips, id_list, area)
    root.state = state                                        # for tests
    return root

# [02 embeddings]

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


def label_levels(points, labels, room=0.065):
    """How many lines up each label goes (0, 1, 2, ...) so as not to run into the label
    of a point to its left on the same line; a character takes about `room` data units."""
    levels, ends = [0] * len(labels), {}            # ends: y -> [(x where a label ends, level)]
    for i in sorted(range(len(labels)), key=lambda i: (points[i][1], points[i][0])):
        if labels[i]:
            x, y = (float(v) for v in points[i])
            row = ends.setdefault(round(y, 6), [])
            busy = {level for end, level in row if end > x}
            levels[i] = min(set(range(len(row) + 1)) - busy)
            shown = re.sub(r"\$\\mathbf\{(.)\}\$", r"\1", labels[i])     # mathtext: one character
            row.append((x + room * (len(shown) + 1), levels[i]))
    return levels


def _place(scatter, notes, points, names, step=None):
    """Move an existing scatter and its annotations to new points (no new artists).
    step: lift each label by this many points per level of label_levels, so that labels
    on one line do not run into each other."""
    scatter.set_offsets(points)
    labels = grouped_labels(points, names)
    levels = label_levels(points, labels) if step else [0] * len(labels)
    for note, xy, label, level in zip(notes, points, labels, levels, strict=True):
        note.xy = tuple(xy)
        note.set_text(label)
        if step:
            note.xyann = (5, 5 + step * level)


def embedding_scatter_plot(ax, dx=0, dy=3, wte=None):
    """The 12 token embeddings in dimensions dx (x axis) and dy (y axis), labelled.
    Returns the scatter and its annotations, so a widget can move them."""
    wte = PARAMS["wte"] if wte is None else wte
    points = wte[:, [dx, dy]]
    scatter = ax.scatter(points[:, 0], points[:, 1], s=45, color=BLUE, zorder=3,
                         label="token embedding (row of E)")
    notes = [ax.annotate("", (0, 0), xytext=(5, 5), textcoords="offset points", fontsize=9,
                         color=BLUE) for _ in points]
    _place(scatter, notes, points, [tick_label(t) for t in TOKENS], step=13)
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
    (token + position) on top of the 12 embeddings. The plot is moved in place: the
    rings alone are repainted over the rest when only they change."""
    ids = check_ids(encode(text))                   # more tokens than the context: a sentence
    x_rows = embed(ids, PARAMS["wte"], PARAMS["wpe"])
    row_names = [f"{n + 1}: {show(i)}" for n, i in enumerate(ids)]
    x_dim = widgets.Dropdown(options=DIM_OPTIONS, value=1, description="x axis:")
    y_dim = widgets.Dropdown(options=DIM_OPTIONS, value=3, description="y axis:")
    positions = widgets.ToggleButton(value=False, description="add positions",
                                     tooltip="show the rows of X: token embedding + position embedding")
    area = message_area()
    fig, ax = live_figure("embedding-scatter", 6.0, 4.6)
    scatter, notes = embedding_scatter_plot(ax, x_dim.value, y_dim.value)
    rings = ax.scatter(x_rows[:, 1], x_rows[:, 3], s=190, facecolors="none", edgecolors=VERMILION,
                       linewidths=2, zorder=4, label=f"row of X for {text!r} (position: token)")
    ring_notes = [ax.annotate("", (0, 0), xytext=(6, -13), textcoords="offset points", fontsize=9,
                              color=VERMILION, fontweight="bold") for _ in ids]
    legend = ax.legend(loc="lower right", fontsize=8)
    live_artists(fig, [rings, *ring_notes, ax.title, legend])
    state = WidgetState(dims=(1, 3), positions=False)

    def update(_=None):
        dx = picked(state, x_dim, "x axis", state.dims[0])
        dy = picked(state, y_dim, "y axis", state.dims[1])
        if dx == dy:
            raise ValueError(f"Both axes show d{dx + 1} ({DIMS[dx]}), which would put every token "
                             "on one diagonal line: pick two different dimensions for x and y.")
        moved = (dx, dy) != state.dims
        state.dims, state.positions = (dx, dy), positions.value
        _place(scatter, notes, PARAMS["wte"][:, [dx, dy]], [tick_label(t) for t in TOKENS], step=13)
        _place(rings, ring_notes, x_rows[:, [dx, dy]], row_names)
        for artist in [rings, *ring_notes, legend.legend_handles[1], legend.get_texts()[1]]:
            artist.set_visible(state.positions)
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

# [03 qkv]

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


def query_picker(text="the cat climbed the", head=0):
    """Pick a query token (buttons, or type its position): one row of the head's
    attention weights as bars over the key tokens, its output and its winning key."""
    head = _check_head(head)
    r = run(text)
    tokens, h = r["tokens"], r["heads"][head]
    n = len(tokens)
    pick = widgets.ToggleButtons(options=[(f"{i + 1} {t}", i + 1) for i, t in enumerate(tokens)],
                                 value=n, description="query")
    pick.style.button_width = "auto"
    pos = widgets.IntText(value=n, description="position", layout=widgets.Layout(width="12em"))
    chart = live_chart("query-picker", h["weights"][n - 1],
                       f"head {head + 1}, query {n} ({tokens[-1]}): its row of weights",
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
                   title=f"head {head + 1}, query {i} ({tokens[i - 1]}): its row of weights")
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
    root = panel("query-picker", pick, pos, chart.fig.canvas, info, area, chosen_style())
    root.chart, root.state = chart, state                     # for tests
    return root

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
    fig, ax = live_figure("mask-heads", 8.4, 3.9) if live else new_figure(8.4, 3.9)
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
    place, the future (above the diagonal) is outlined, a line names the largest leak.
    Switching the mask repaints only the maps' cells and titles."""
    runs = {True: run(text), False: run(text, mask=False)}
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
                set_heatmap(*maps[slot], np.where(allowed, w, np.nan) if masked else w)
                a.set_title(HEAD_TITLES[heads[slot]] + ("" if masked else " (no mask)"))
        mask_button.icon = "check" if masked else ""     # pressed and ticked: mask on
        if relayout:
            fig.canvas.draw_idle()                       # the maps change size: draw it all
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
    root = panel("mask-heads", mask_button, which, fig.canvas, info, area, chosen_style())
    root.state, root.maps = state, maps                       # for tests
    return root

# [05 block]

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
    chart = live_chart("block-branches", np.zeros(len(TOKENS)),
                       f"p of the next token after the last row ({tokens[-1]})",
                       height=3.0, moving_title=False, ymax=0.6)
    state = WidgetState(attention=True, mlp=True)

    def update(_=None):
        state.attention, state.mlp = attention.value, mlp_branch.value
        r = run(text, attention_on=state.attention, mlp_on=state.mlp)
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
        chart.show(p, highlight=best)
        top.value = f"most likely next: <b>{TOKENS[best]}</b> ({fmt(p[best])})"

    on_change(attention, area, state, update)
    on_change(mlp_branch, area, state, update)
    guarded(area, update, state)()
    root = panel("block-branches", widgets.HBox([attention, mlp_branch]), formula, y_table,
                 chart.fig.canvas, top, area)
    root.chart, root.state = chart, state                     # for tests
    return root

# [06 output]

def vector(v, digits=3):
    """A vector as the course prints it in prose: [-0.436, 1.551, -0.461, 1.698]."""
    return "[" + ", ".join(fmt(x, digits) for x in np.ravel(v)) + "]"


def p_summary(p, n_top=3):
    """One line about p: the most likely tokens with their p, and the entropy."""
    p = np.asarray(p, dtype=float)
    if p.shape != (len(TOKENS),):
        raise ValueError(f"p_summary needs one distribution over the {len(TOKENS)} tokens "
                         f"(a list of {len(TOKENS)} probabilities), not an array of shape {p.shape}.")
    order = np.argsort(-p, kind="stable")[:n_top]
    first, rest = order[0], order[1:]
    then = ", ".join(f"{TOKENS[j]} {fmt(p[j])}" for j in rest)
    return (f"most likely: {TOKENS[first]} with p = {fmt(p[first])}"
            + (f" (then {then})" if then else "") + f" · entropy of p: {fmt(entropy(p))} nats")


def _last_logits(text, **options):
    return run(text, **options)["logits"][-1]


def logit_playground(text="the cat climbed the"):
    """Edit one logit of the last row (pick the token, drag or type its logit): p follows.

    The state holds the logits exactly; the slider only shows where the picked one is
    (its own rounding, sent back by the browser, is not taken as a new logit)."""
    z0 = _last_logits(text)
    roof = VOCAB.index(" roof")
    state = WidgetState(z=z0.copy(), token=roof)
    chart = live_chart("logit-playground", softmax(z0), f'p after "{text}", from your logits')
    pick = widgets.Dropdown(options=[(t, j) for j, t in enumerate(TOKENS)], value=roof,
                            description="token")
    slider = widgets.FloatSlider(value=z0[roof], min=-10, max=10, step=0.1, description="its logit",
                                 continuous_update=True, readout=False)
    typed = widgets.Text(value="", placeholder="or type any logit, then Enter",
                         description="type", continuous_update=False)
    reset = widgets.Button(description="Reset", tooltip="back to the model's logits")
    line, area = message_area(), message_area()

    def update():
        j = state.token
        p = softmax(state.z)
        chart.show(p, highlight=int(np.argmax(p)))
        say(line, f"logit of {TOKENS[j]}: {fmt(state.z[j])} · " + p_summary(p))
        state.set(slider, float(np.clip(state.z[j], slider.min, slider.max)))

    def set_logit(value):
        z = state.z.copy()
        z[state.token] = value
        state.z = z

    def on_slider(value):
        value = slider_move(state, slider, value, state.z[state.token], "logit")
        if value is not None:
            set_logit(value)
            state.set(typed, "")                # the box is empty or shows what is applied
            update()

    def on_pick(_):
        state.token = picked(state, pick, "token", state.token)
        state.set(typed, "")
        update()

    def on_typed(text):
        if text.strip():
            set_logit(typed_number(text, "logit"))
            update()

    def on_reset(_):
        state.z = z0.copy()
        state.set(typed, "")
        update()

    on_change(slider, area, state, on_slider)
    on_change(pick, area, state, on_pick)
    on_enter(typed, area, state, on_typed)
    reset.on_click(guarded(area, on_reset, state))
    update()
    root = panel("logit-playground", widgets.HBox([pick, slider]), widgets.HBox([typed, reset]),
                 chart.fig.canvas, line, area)
    root.chart, root.state = chart, state                     # for tests
    return root


def logit_shift(text="the cat climbed the"):
    """Add the same constant c to every logit: the logits move, p does not."""
    z0 = _last_logits(text)
    p0 = softmax(z0)
    top = int(np.argmax(z0))
    fig, _ = live_figure("logit-shift", 10, 3.4)
    fig.clear()
    ax_z, ax_p = fig.subplots(1, 2)
    z_chart = BarChart(ax_z, z0, "the logits z + c", ylabel="logit", ymax=None, color=SKY)
    ax_z.set_ylim(-14, 14)
    ax_z.axhline(0, color=GREY, linewidth=0.8)
    p_chart = BarChart(ax_p, p0, "p = softmax(z + c)")
    freeze_layout(fig)
    live_artists(fig, [*z_chart.bars, *p_chart.bars])
    slider = widgets.FloatSlider(value=0, min=-10, max=10, step=0.1, description="add c",
                                 continuous_update=True, readout=False)
    typed = widgets.Text(value="", placeholder="or type any c, then Enter",
                         description="type c", continuous_update=False)
    line, area = message_area(), message_area()
    state = WidgetState(c=0.0)

    def apply(c):
        state.c = c
        z = z0 + c
        p = softmax(z)
        z_chart.set(z, highlight=top)
        p_chart.set(p, highlight=int(np.argmax(p)))
        lo, hi = min(-14, z.min() - 1), max(14, z.max() + 1)
        if (lo, hi) != ax_z.get_ylim():
            ax_z.set_ylim(lo, hi)
            fig.canvas.draw_idle()                  # the axis changes: draw it all
        else:
            redraw(fig)
        state.set(slider, float(np.clip(c, slider.min, slider.max)))
        say(line, f"c = {plain(c)}: every logit moved by {plain(c)}; the largest change of "
                  f"any p is {fmt(np.abs(p - p0).max())}\n" + p_summary(p))

    def on_slider(value):
        value = slider_move(state, slider, value, state.c, "c")
        if value is not None:
            state.set(typed, "")
            apply(value)

    def on_typed(text):
        if text.strip():
            apply(typed_number(text, "constant c"))

    on_change(slider, area, state, on_slider)
    on_enter(typed, area, state, on_typed)
    apply(0.0)
    root = panel("logit-shift", widgets.HBox([slider, typed]), fig.canvas, line, area)
    root.charts, root.state = {"z": z_chart, "p": p_chart}, state     # for tests
    return root


def _switch(name, option, labels, text, title, on=True):
    """A toggle that reruns the model with option on/off, plus a prompt box; p of the
    last row as bars. labels = (label when True, label when False)."""
    state = WidgetState(text=text, on=on)
    chart = live_chart(name, softmax(_last_logits(text)), title)
    toggle = widgets.ToggleButton(value=on, description=labels[0 if on else 1], button_style="info")
    prompt = widgets.Text(value=text, description="prompt", continuous_update=False,
                          placeholder="a prompt in the toy vocabulary, then Enter")
    line, area = message_area(), message_area()

    def update():
        p = softmax(_last_logits(state.text, **{option: state.on}))
        chart.show(p, highlight=int(np.argmax(p)), title=f'{title}: "{state.text}"')
        say(line, f"{toggle.description}: " + p_summary(p))

    def on_toggle(value):
        state.on = value
        toggle.description = labels[0] if value else labels[1]
        update()

    def on_prompt(value):
        run(value)                                  # raises the sentence for a bad prompt
        state.text = value
        update()

    on_change(toggle, area, state, on_toggle)
    on_enter(prompt, area, state, on_prompt)
    update()
    root = panel(name, widgets.HBox([toggle, prompt]), chart.fig.canvas, line, area)
    root.chart, root.state = chart, state                     # for tests
    return root


def attention_switch(text="the cat climbed the"):
    """Switch the attention branch off (h = x) and back: the last row's p changes."""
    return _switch("attention-switch", "attention_on", ("attention on", "attention off"),
                   text, "p of the last row")


def tying_switch(text="the cat climbed the"):
    """Use the embedding table as the output layer (z = f Eᵀ) or the toy's own W_U;
    it starts from the toy's own W_U."""
    return _switch("tying-switch", "tied", ("tied: W_U = Eᵀ", "own W_U"),
                   text, "p of the last row", on=False)


# [07 generation]

def outline_bars(ax, values, label, color=GREY):
    """Bars drawn as outlines only, on a token axis: what a distribution was before a change,
    drawn over the filled bars of what it is now. Returns the bars, to update in place."""
    return ax.bar(range(len(values)), values, fill=False, edgecolor=color, linewidth=1.2,
                  linestyle="--", label=label)


def _whole_seed(text):
    """The seed a learner typed -> a whole number >= 0, or one sentence saying what is allowed."""
    text = str(text).strip()
    if not re.fullmatch(r"\d+", text):
        raise ValueError(f"The seed must be a whole number of 0 or more (such as 0, 1 or 42), "
                         f"not {text[:20]!r}.")
    return int(text)


def temperature_explorer(prompt="the cat climbed the"):
    """w-temperature: the last row's p under a temperature, a top-k and a top-p, live.

    Filled bars: the distribution a token would be drawn from; dashed outlines: the
    same before top-k and top-p cut it (temperature only). Sliders follow the drag;
    the boxes below take exact values (and show the values applied), and a value that
    is not allowed gets one sentence while the plot keeps its last good state."""
    logits = forward(encode(prompt))[-1]
    n = len(VOCAB)
    style = {"description_width": "7em"}
    wide = widgets.Layout(width="30em")
    t_slider = widgets.FloatSlider(value=1.0, min=0.0, max=3.0, step=0.05, description="temperature",
                                   readout=False, continuous_update=True, style=style, layout=wide)
    k_slider = widgets.IntSlider(value=n, min=1, max=n, step=1, description="top-k",
                                 readout=False, continuous_update=True, style=style, layout=wide)
    p_slider = widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top-p",
                                   readout=False, continuous_update=True, style=style, layout=wide)
    box_style = {"description_width": "6em"}
    box_layout = widgets.Layout(width="13em")
    t_box = widgets.FloatText(value=1.0, step=0.05, description="exact T", style=box_style,
                              layout=box_layout)
    k_box = widgets.IntText(value=n, description="exact k", style=box_style, layout=box_layout)
    p_box = widgets.FloatText(value=1.0, step=0.05, description="exact p", style=box_style,
                              layout=box_layout)
    info = widgets.HTML()
    area = message_area()

    # The title stays put (the boxes show T, k and p): redrawing its text would cost
    # more than redrawing all 24 bars.
    chart = live_chart("temperature", np.zeros(n),
                       f'p after "{prompt}" under your temperature, top-k, top-p',
                       width=7.2, height=3.4, moving_title=False)
    ax = chart.ax
    ax.title.set_fontsize(10)
    before = BarChart(ax, np.zeros(n), outline="before top-k / top-p (temperature only)")
    chart.bars.set_label("drawn from")
    ax.legend(handles=[chart.bars, before.bars], loc="upper left", fontsize=8)
    live_artists(chart.fig, [*chart.bars, *before.bars])
    state = WidgetState(T=1.0, k=n, p=1.0)
    controls = {"T": (t_slider, t_box), "k": (k_slider, k_box), "p": (p_slider, p_box)}

    def apply(**change):
        new = {key: change.get(key, getattr(state, key)) for key in ("T", "k", "p")}
        p = next_token_probs(logits, new["T"], new["k"], new["p"])   # ValueError: one sentence
        for key, value in new.items():
            setattr(state, key, value)
        top = int(np.argmax(p))
        before.set(next_token_probs(logits, state.T))
        chart.show(p, highlight=top)
        info.value = (f"T = {plain(state.T)}, k = {state.k}, p = {plain(state.p)}: kept "
                      f"<b>{int((p > 0).sum())}</b> of {n} tokens · most likely "
                      f"<b>{show(top)}</b> with p = {fmt(p[top])} · entropy {fmt(entropy(p))} nats "
                      f"(uniform: {fmt(np.log(n))})")
        with state.quiet():                     # every control shows the values applied
            for key, (slider, box) in controls.items():
                value = getattr(state, key)
                slider.value = min(max(value, slider.min), slider.max)
                box.value = value

    def from_slider(key, what):
        slider = controls[key][0]

        def callback(value):
            if key != "k":
                value = slider_move(state, slider, value, getattr(state, key), what)
            if value is not None:
                apply(**{key: value})
        on_change(slider, area, state, callback)

    def from_box(key, what):
        box = controls[key][1]

        def callback(value):
            if not np.isfinite(value):
                state.set(box, getattr(state, key))
                raise ValueError(f"Type {what} as a finite number, not {value}.")
            apply(**{key: value})
        on_change(box, area, state, callback)

    for key, what in (("T", "temperature"), ("k", "top-k"), ("p", "top-p")):
        from_slider(key, what)
        from_box(key, what)
    apply()
    root = panel("temperature", t_slider, k_slider, p_slider,
                 widgets.HBox([t_box, k_box, p_box]), info, area, chart.fig.canvas)
    root.chart, root.before, root.state = chart, before, state         # for tests
    return root


def generation_stepper(prompt="the cat climbed the", temperature=1.0, seed=0):
    """w-generate-steps: draw the next token one click at a time.

    "next token" draws from the last row's distribution at the current temperature
    (0 = greedy) with a numpy Generator seeded at reset, appends the token and shows
    the distribution it came from. Changing the temperature shows the next token's
    distribution at the new temperature. Changing the prompt or the seed starts again,
    so a given seed always gives the same sequence (the same one tm.generate gives)."""
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
    area.layout.min_height = "1.6em"                # an error line does not push the chart down

    chart = live_chart("generate-steps", np.zeros(n),
                       "the distribution the next token will be drawn from", width=7.2)
    chart.ax.title.set_fontsize(10)
    marker = chart.ax.annotate(                     # points at the drawn token, however small
        "drawn", (0, 0), xytext=(0, 18), textcoords="offset points", ha="center", fontsize=9,
        color=VERMILION, arrowprops={"arrowstyle": "->", "color": VERMILION}, visible=False)
    live_artists(chart.fig, [*chart.bars, chart.ax.title, marker])
    state = WidgetState(ids=[], start=0, rng=None, done=False, T=None, seed=None, p=np.zeros(n))

    def read_temperature():
        T = t_box.value
        next_token_probs(np.zeros(2), T)            # a bad T raises its sentence
        return T

    def show_text(new=None):
        parts = [html.escape(VOCAB[i]) for i in state.ids]
        if new is not None:
            parts[-1] = f'<mark style="background:{ORANGE}">{parts[-1]}</mark>'
        prompt_part = "".join(parts[:state.start])
        added = "".join(parts[state.start:])
        text_view.value = (f'<span style="font-family:monospace;font-size:1.1em;white-space:pre">'
                           f'{prompt_part}<b>{added}</b></span> ({len(state.ids)} of {N_CTX} tokens)')

    def show_next():
        """The chart shows the distribution the next token will be drawn from."""
        if state.done:
            return
        state.p = next_token_probs(forward(state.ids)[-1], state.T)
        marker.set_visible(False)
        chart.show(state.p, title="the distribution the next token will be drawn from "
                                  f"(T = {plain(state.T)})")

    def finish_if_done(drawn):
        ids = state.ids
        if ids[-1] == EOT and not drawn:
            why, label = ("The prompt already ends with <|endoftext|>: there is nothing to "
                          "continue; change the prompt."), "finished: <|endoftext|>"
        elif ids[-1] == EOT:
            why, label = ("The model drew <|endoftext|>: the text is finished; "
                          "press reset to start again."), "finished: <|endoftext|>"
        elif len(ids) >= N_CTX:
            why, label = (f"The context is full ({N_CTX} tokens): the model cannot read more; "
                          "press reset to start again."), "finished: context full"
        else:
            return False
        state.done = True
        step_button.description, step_button.disabled = label, True
        status.value = (status.value + " " if drawn else "") + html.escape(why)
        return True

    def reset(_=None):
        ids = check_ids(encode(prompt_box.value))
        T, s = read_temperature(), _whole_seed(seed_box.value)
        state.ids, state.start, state.done = list(ids), len(ids), False
        state.T, state.seed, state.rng = T, s, np.random.default_rng(s)
        step_button.description, step_button.disabled = "next token", False
        show_text()
        status.value = f"Seed {s}: press <b>next token</b> to draw one token."
        if finish_if_done(drawn=False):
            marker.set_visible(False)
            chart.show(np.zeros(n), title="nothing to draw: the prompt ends the text")
        else:
            show_next()

    def step(_=None):
        ids = check_ids(encode(prompt_box.value))   # every box is read: a bad one says so
        T, s = read_temperature(), _whole_seed(seed_box.value)
        if ids != state.ids[:state.start] or s != state.seed:
            reset()                                 # a box changed without Enter
        elif T != state.T:
            on_temperature()
        if state.done:
            return
        p = state.p
        nxt = int(np.argmax(p)) if state.T == 0 else sample(p, state.rng)
        state.ids.append(nxt)
        k = len(state.ids) - state.start
        marker.xy = (nxt, p[nxt])
        marker.xyann = (0, 18) if p[nxt] < 0.8 else (-32, -12)   # tall bar: beside its top
        marker.set_ha("center" if p[nxt] < 0.8 else "right")
        marker.set_visible(True)
        chart.show(p, highlight=nxt, title=f"step {k}: {show(nxt)} drawn from this distribution "
                                           f"(T = {plain(state.T)})")
        show_text(new=nxt)
        status.value = f"Step {k}: drew <b>{html.escape(show(nxt))}</b>, which had p = {fmt(p[nxt])}."
        if not finish_if_done(drawn=True):
            state.p = next_token_probs(forward(state.ids)[-1], state.T)   # drawn from next

    def on_temperature(_=None):
        state.T = read_temperature()
        show_next()

    step_button.on_click(guarded(area, step, state))
    reset_button.on_click(guarded(area, reset, state))
    on_change(prompt_box, area, state, reset)
    on_change(seed_box, area, state, reset)
    on_change(t_box, area, state, on_temperature)
    guarded(area, reset, state)()
    root = panel("generate-steps", prompt_box, widgets.HBox([t_box, seed_box]),
                 widgets.HBox([step_button, reset_button]), text_view, status, area,
                 chart.fig.canvas)
    root.chart, root.state = chart, state                     # for tests
    return root


# [08 training]
# The training lab: a live loss curve while the toy trains, a static plot of finished
# runs, and the lab's exercises (registered with the functions of "Exercises" above).

def _canvas_ready(canvas):
    """Let a live figure draw while its own cell is still running. The page's hello
    (which sets the canvas size) is only read once the cell ends, so the kernel plays
    that part itself; the page's real hello, later, changes nothing."""
    canvas._handle_message(canvas, {"type": "initialized"}, [])


def loss_axes(ax, steps, title):
    """Axes for loss curves: steps across, nats up, ln 12 (the uniform guess) dashed."""
    ax.axhline(np.log(len(VOCAB)), color=GREY, linestyle="--", linewidth=1,
               label=f"uniform guess, ln {len(VOCAB)} = {fmt(np.log(len(VOCAB)))}")
    ax.set_xlim(0, steps)
    ax.set_ylim(0, 3.2)
    ax.set_xlabel("training step")
    ax.set_ylabel("mean loss on the corpus (nats)")
    ax.set_title(title)


def train_live(corpus, steps=200, every=10, **options):
    """w-train: tm.train(corpus, steps, **options) drawing its loss curve as it goes, with
    a progress line. Returns what train returns: (trained params, loss history)."""
    from IPython.display import display
    fig, ax = live_figure("train", 7.2, 3.2)
    loss_axes(ax, steps, "Training the toy from random weights")
    line, = ax.plot([], [], color=BLUE, linewidth=2, label="loss of the model being trained")
    ax.legend(loc="upper right")
    freeze_layout(fig)
    live_artists(fig, [line])
    progress = widgets.HTML(f"step 0 of {steps}")
    root = panel("train", progress, fig.canvas)
    root.line, root.progress = line, progress
    train_live.panel = root                             # the last one shown, for tests
    display(root)
    _canvas_ready(fig.canvas)
    fig.canvas.draw()                                   # the axes once; then only the line
    losses = []

    def on_step(step, loss):
        losses.append(loss)
        if step % every == 0 or step == steps:
            line.set_data(range(len(losses)), losses)
            progress.value = f"step {step} of {steps} · loss {fmt(loss)} nats"
            redraw(fig)

    params, history = _model.train(corpus, steps=steps, callback=on_step, **options)
    line.set_data(range(len(history)), history)
    progress.value = (f"done: {steps} steps · loss {fmt(history[0])} → {fmt(history[-1])} nats "
                      f"(uniform guess {fmt(np.log(len(VOCAB)))})")
    redraw(fig)
    return params, history


def loss_curves(histories, title="Loss during training"):
    """A static plot of finished runs: {label: loss history}, one line each."""
    steps = max(len(h) for h in histories.values()) - 1
    fig, ax = new_figure(7.2, 3.2)
    loss_axes(ax, steps, title)
    for (label, history), color in zip(histories.items(), [BLUE, ORANGE, GREEN, PURPLE]):
        ax.plot(range(len(history)), history, color=color, linewidth=2, label=label)
    ax.legend(loc="upper right")
    static(fig)


def _example():
    """The Output page's example: ids, targets (the next tokens, then ␣roof), its logits."""
    ids = encode(_TEXT)
    return ids, ids[1:] + [VOCAB.index(" roof")], forward(ids)


def _dz_last(token):
    """d(-ln p(target)) / dz for `token` on the example's last row (target ␣roof)."""
    ids, targets, logits = _example()
    return float(_model.softmax_cross_entropy_backward(logits[-1:], targets[-1:])[0, _tok(token)])


number_exercise(
    "08.1", lambda: "p − onehot by hand. On the last row the target is ␣roof, which the model "
                    f"gives p = {fmt(1 + _dz_last('␣roof'))}. What is the gradient of that row's "
                    "loss, −ln p(␣roof), with respect to ␣roof's own logit?",
    answer=lambda: _dz_last("␣roof"),
    hints=lambda: [(-_dz_last("␣roof"), "Check the sign: raising ␣roof's logit makes the loss "
                    "smaller, so the gradient is negative."),
                   (1 + _dz_last("␣roof"), "That is p(␣roof) itself; the target also gets the "
                    "one-hot's 1 taken away."),
                   (_dz_last("␣roof") / 5, "That is the share of the mean over 5 rows; the "
                    "question asks for the last row's own loss.")],
    solution=lambda: (
        f"p − 1 = {fmt(1 + _dz_last('␣roof'))} − 1 = {fmt(_dz_last('␣roof'))}. For the target, the "
        "one-hot vector holds a 1, so its gradient is p − 1: always negative, and the further p "
        "is from 1, the stronger the push up. Every other token gets p − 0 = p, which is positive."))

_SIGN = ["its logit goes down, and p(␣wall) with it",
         "its logit goes up: a positive gradient means the loss wants more ␣wall",
         "nothing: ␣wall is not the target, so its gradient is 0"]


choice_exercise(
    "08.2", lambda: "The sign of a gradient. On the last row, the gradient of the loss with "
                    f"respect to ␣wall's logit is p(␣wall) = {fmt(_dz_last('␣wall'))}, a positive "
                    "number. Gradient descent moves every weight by −learning rate × its "
                    "gradient. What does one small step do to ␣wall's logit?",
    options=_SIGN, answer=lambda: _SIGN[0] if _dz_last("␣wall") > 0 else _SIGN[1],
    hints={_SIGN[1]: "A positive gradient says the loss grows when the logit grows; descent goes "
                     "the other way.",
           _SIGN[2]: "Every token's logit shares one softmax: a wrong token with p > 0 has the "
                     "gradient p − 0 = p.",
           _SIGN[0]: "Look at the sign once more."},
    solution=lambda: (
        f"It goes down. The gradient {fmt(_dz_last('␣wall'))} is positive: raising ␣wall's logit "
        "would raise the loss, because ␣wall takes probability away from the target. The step is "
        "−lr × (a positive number), so the logit falls, p(␣wall) falls, and the probability it "
        "gives up goes to the other tokens, the target first among them."))


def _sgd_cases():
    ids, targets, _ = _example()
    _, grads = _model.loss_and_grads(ids, targets)
    rng = np.random.default_rng(8)
    return [("W_U with its gradient, lr = 1", (PARAMS["w_u"], grads["w_u"], 1.0)),
            ("wte with its gradient, lr = 0.1", (PARAMS["wte"], grads["wte"], 0.1)),
            ("a random 3 × 2 weight, lr = 0.5", (rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), 0.5))]


code_exercise(
    "08.3", "Write `sgd_update(w, g, lr)`: one step of gradient descent on one weight array w "
            "whose gradient is g. Return the new array (leave w itself unchanged: the model's "
            "weights are read-only).",
    reference=lambda w, g, lr: _model.sgd_step({"w": w}, {"w": g}, lr)["w"], cases=_sgd_cases,
    mistakes=[(lambda w, g, lr: w + lr * g, "that climbs uphill: the step goes against the gradient."),
              (lambda w, g, lr: w - g, "the learning rate sets the size of the step: multiply g by lr."),
              (lambda w, g, lr: -lr * g, "return the new weights, not only the change: start from w."),
              (lambda w, g, lr: w - g / lr, "multiply by lr, do not divide.")],
    solution='''def sgd_update(w, g, lr):
    return w - lr * g          # a new array; w itself is not changed''')


def _after_prompt():
    """Counts [V] of what follows "the cat climbed the" in the corpus."""
    return _model.next_token_counts(_model.load_corpus(), encode(_TEXT))


def _roof_share():
    counts = _after_prompt()
    return counts[_tok("␣roof")] / counts.sum()


def _best_split():
    counts = _after_prompt()
    return ", ".join(f"{TOKENS[j]} {counts[j]}" for j in np.argsort(-counts, kind="stable") if counts[j])


number_exercise(
    "08.4", "The best possible prediction. In the corpus, count what follows \"the cat climbed the\". "
            "Which p(␣roof) after that prompt makes the loss on the corpus as small as it can be?",
    answer=_roof_share, fractions=True,
    hints=lambda: [(1.0, "p = 1 would be perfect only if ␣roof always came next; when another "
                    "token comes, −ln p of it would be infinite."),
                   (_after_prompt()[_tok("␣roof")] / len(_model.load_corpus()),
                    "Count only the sentences that begin with \"the cat climbed the\", not every "
                    "line of the corpus.")],
    solution=lambda: (
        f"The corpus's own frequency, {_after_prompt()[_tok('␣roof')]}/{_after_prompt().sum()} = "
        f"{fmt(_roof_share())}. After \"the cat climbed the\" the corpus goes on with: "
        f"{_best_split()}. The loss over those cases, a sum of count × (−ln p) over the tokens, is "
        "smallest when each p equals its token's share of the count. A model trained on the "
        "corpus moves towards these frequencies; no model can do better than them."))


# [09 gpt2]

LAB_MAX_TOKENS = 12                                  # a longer text makes an unreadable map


def lab_attention(lab, text="the cat climbed the"):
    """A loaded checkpoint's attention (lab = load_gpt2(folder)): pick a layer and a head
    with the sliders, type a text and press Enter; the heat map shows that head's weights,
    one row per token looking, one column per token looked at."""
    blocks, n_head = lab["params"]["blocks"], lab["n_head"]
    fig, ax = live_figure("lab-attention", 6.4, 4.8)
    layer_box = widgets.IntSlider(value=1, min=1, max=len(blocks), description="layer")
    head_box = widgets.IntSlider(value=1, min=1, max=n_head, description="head")
    text_box = widgets.Text(value=text, description="text", continuous_update=False,
                            layout=widgets.Layout(width="30em"))
    info, area = widgets.HTML(), message_area()
    state = WidgetState(text=None, trace=None, tokens=None, layer=0, head=0)

    def read(new_text):
        ids = lab["encode"](new_text)
        if not 0 < len(ids) <= LAB_MAX_TOKENS:
            raise ValueError(f"The text has {len(ids)} tokens: type 1 to {LAB_MAX_TOKENS}, "
                             "so that every cell of the map stays readable.")
        trace = {}
        forward(ids, lab["params"], n_head, trace=trace)
        state.text, state.trace, state.tokens = new_text, trace, _model.token_texts(lab, ids)

    def draw(_=None):
        layer, head = layer_box.value - 1, head_box.value - 1
        w = state.trace["blocks"][layer]["heads"][head]["weights"]
        n = len(w)
        ax.clear()
        heatmap(ax, np.where(causal_mask(n), w, np.nan), state.tokens, state.tokens,
                f"layer {layer + 1}, head {head + 1}: attention weights")
        ax.set_xlabel("key: the token looked at")
        ax.set_ylabel("query: the token looking")
        fig.canvas.draw_idle()
        state.layer, state.head = layer, head
        j = int(np.argmax(w[-1]))
        info.value = html.escape(f"The last token, {state.tokens[-1]}, puts most of its weight "
                                 f"({fmt(w[-1, j])}) on {state.tokens[j]}.")

    def new_text(value):
        read(value)
        draw()

    read(text)
    draw()
    on_change(layer_box, area, state, draw)
    on_change(head_box, area, state, draw)
    on_change(text_box, area, state, new_text)
    root = panel("lab-attention", widgets.HBox([layer_box, head_box]), text_box, fig.canvas,
                 info, area)
    root.state, root.figure = state, fig                      # for tests
    return root


def _gpt2_size(n_layer, d, vocab, n_ctx):
    """How many numbers a GPT-2 holds: embeddings, n_layer blocks (two LayerNorms, c_attn,
    c_proj, an MLP of width 4d, each with its biases), ln_f; the unembedding tied to wte."""
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    return vocab * d + n_ctx * d + n_layer * block + 2 * d


code_exercise(
    "09.1", "Write `gpt2_size(n_layer, d, vocab, n_ctx)`: how many numbers a GPT-2 holds, with an "
            "MLP of width 4d and the unembedding tied to wte. Count every weight and every bias, the "
            "LayerNorms' gains and biases included.",
    reference=_gpt2_size,
    cases=[("GPT-2 small (12, 768, 50257, 1024)", (12, 768, 50257, 1024)),
           ("GPT-2 medium (24, 1024, 50257, 1024)", (24, 1024, 50257, 1024)),
           ("a small one (2, 8, 12, 8)", (2, 8, 12, 8))],
    mistakes=[(lambda L, d, V, n: _gpt2_size(L, d, V, n) + V * d,
               "the unembedding is tied: it is wte itself, so do not count it again."),
              (lambda L, d, V, n: _gpt2_size(L, d, V, n) - L * 9 * d,
               "count the biases too: c_attn has 3d, c_proj d, the MLP 4d and d."),
              (lambda L, d, V, n: _gpt2_size(L, d, V, n) - L * 4 * d - 2 * d,
               "each LayerNorm has a gain and a bias of d numbers: two per block, and ln_f."),
              (lambda L, d, V, n: _gpt2_size(L, d, V, n) - n * d,
               "the position embeddings wpe count too: n_ctx rows of d.")],
    solution="""def gpt2_size(n_layer, d, vocab, n_ctx):
    block = (2 * 2 * d                   # ln_1 and ln_2: gain and bias
             + d * 3 * d + 3 * d         # c_attn: W_Q, W_K, W_V side by side
             + d * d + d                 # attention's c_proj (W_O)
             + d * 4 * d + 4 * d         # the MLP's c_fc
             + 4 * d * d + d)            # the MLP's c_proj
    return vocab * d + n_ctx * d + n_layer * block + 2 * d    # + ln_f

# GPT-2 small: 124,439,808 numbers, a third of them in wte.""")


def _positions(prompt, new, cache):
    """Positions run through the blocks to generate `new` tokens after a prompt."""
    return prompt + new - 1 if cache else sum(prompt + k for k in range(new))


count_exercise(
    "09.2", "Generate 20 tokens after a prompt of 5 tokens, rerunning the whole context at every "
            "step (no cache). How many positions go through the blocks in all?",
    answer=lambda: _positions(5, 20, cache=False),
    hints=lambda: [(_positions(5, 20, cache=True), "That is with the KV cache: without it, step k "
                    "runs all 5 + k - 1 positions again."),
                   (20, "Each step runs the whole context, not only the new token."),
                   (25 * 20, "The context grows from 5 to 24 tokens; it is not 25 at every step.")],
    solution=lambda: (
        f"Step 1 runs the 5 prompt positions, step 2 runs 6, ..., step 20 runs 24: "
        f"5 + 6 + ... + 24 = {_positions(5, 20, cache=False)}. With the KV cache the prompt runs "
        f"once and each later step runs only its new token: 5 + 19 = {_positions(5, 20, cache=True)}."
        "\n\nEach position run costs a read of every weight, which is why `tm.generate_fast` keeps "
        "the cache."))


number_exercise(
    "09.3", "A model that knows nothing gives every one of GPT-2's 50,257 tokens the same p. What "
            "is its loss on any text, in nats? (The toy's was ln 12 = 2.485.)",
    answer=lambda: float(np.log(50257)),
    hints=lambda: [(np.log(12), "That is the toy's 12 tokens; GPT-2 has 50,257."),
                   (1 / 50257, "That is p itself; the loss is -ln p.")],
    solution=lambda: (
        f"Each p is 1/50,257, so the loss is -ln(1/50,257) = ln 50,257 = {fmt(np.log(50257))} "
        "nats, at every position. A trained model's loss below that figure is what it learned."))
