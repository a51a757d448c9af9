"""The widget kit: panels, state, the feedback guard, live charts, and the ipympl integration.

Every use of ipympl's private attributes is in this file, each named once in IPYMPL_PRIVATE,
and a test checks that the installed ipympl still has them.
"""
import contextlib
import html
import io
import re
from types import SimpleNamespace

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from .draw import (BLUE, GREEN, ORANGE, TOKENS, VERMILION, freeze_layout, new_figure, outline_bars,
                   share_mathtext, token_bars)


# --- ipympl's private attributes ---------------------------------------------------------
# The kit needs a few of ipympl's private attributes. Each is named here once, with what
# the kit uses it for, and read or written only by the small functions that follow;
# tests/test_widgets_ipympl.py fails, naming the attribute, if an installed ipympl lacks one.
IPYMPL_PRIVATE = {
    "_force_full": "send the next frame whole, not as a diff of the last one",
    "_data_url": "the picture the page shows before the kernel draws, stored with the notebook",
    "syncing_data_url": "True until a page has shown the canvas (ipympl stores frames till then)",
    "_handle_message": "the canvas's handler of the page's messages (its 'initialized' hello)",
}


def is_live_canvas(widget):
    """Is this widget an ipympl canvas (a live figure)?"""
    from ipympl.backend_nbagg import Canvas
    return isinstance(widget, Canvas)


def live_canvases(root):
    """The ipympl canvases inside a widget tree, in order."""
    return [w for w in _inside(root) if is_live_canvas(w)]


def send_whole_frame(canvas):
    """The next frame goes to the page whole, not as the pixels that changed. The browser drops a picture that arrives while the one
    before is still loading; a dropped list of changes would leave old pixels on the page
    for good (a bar or a label from before), a dropped whole picture is mended by the next."""
    if is_live_canvas(canvas):
        canvas._force_full = True


def stored_picture(canvas):
    """The picture a canvas shows until the kernel draws (and that a saved notebook keeps)."""
    return canvas._data_url


def store_picture(canvas, png_base64):
    canvas._data_url = f"data:image/png;base64,{png_base64}"


def page_has_shown(canvas):
    """Has a page shown this canvas yet? (Until then ipympl keeps each frame as its picture.)"""
    return not canvas.syncing_data_url


def canvas_ready(canvas):
    """Let a live figure draw while its own cell is still running. The page's hello
    (which sets the canvas size) is only read once the cell ends, so the kernel plays
    that part itself; the page's real hello, later, changes nothing."""
    canvas._handle_message(canvas, {"type": "initialized"}, [])


# --- Live figures: moving artists, redraws, pictures --------------------------------------

def _moving(fig):
    """The record of a figure's moving artists, kept on the figure itself (a record kept
    elsewhere, keyed by the figure, would hold the figure alive through its artists)."""
    return getattr(fig, "_course_moving", None)


def live_artists(fig, artists):
    """Declare the artists a widget moves (bars, a title). redraw(fig) then repaints only
    them over a saved picture of the rest (blitting): a few ms instead of drawing every
    tick label again. The picture is taken at each full draw of the figure."""
    artists = list(artists)
    for a in artists:                         # left out of full draws and of the picture;
        for part in a.findobj():              # its parts too: a legend drawn moves its boxes,
            part.set_animated(True)           # and a part not animated would mark the figure
                                              # stale, which an interactive kernel redraws, forever
    if _moving(fig) is not None:              # declared again: the new list replaces the old
        fig.canvas.mpl_disconnect(_moving(fig)["listener"])
    state = fig._course_moving = {"artists": artists, "background": None}

    def save_background(_event):
        state["background"] = fig.canvas.copy_from_bbox(fig.bbox)
        for a in artists:
            fig.draw_artist(a)
        send_whole_frame(fig.canvas)
    state["listener"] = fig.canvas.mpl_connect("draw_event", save_background)


def redraw(fig):
    """Show a live figure's changes: repaint only its moving artists when it has them
    and a saved background; otherwise ask for a full draw."""
    state = _moving(fig)
    if state is None or state["background"] is None:
        fig.canvas.draw_idle()
        return
    fig.canvas.restore_region(state["background"])
    for a in state["artists"]:
        fig.draw_artist(a)
    send_whole_frame(fig.canvas)
    fig.canvas.blit(fig.bbox)


def drawn_apart(fig):
    """Draw a live figure as it stands into a renderer of its own, its moving artists drawn
    too, so the live canvas, its saved background and its listeners are left alone;
    returns the renderer."""
    from matplotlib.backends.backend_agg import RendererAgg
    moving = (_moving(fig) or {}).get("artists", [])
    renderer = share_mathtext(RendererAgg(*fig.bbox.size, fig.dpi))
    for a in moving:
        a.set_animated(False)
    try:
        with fig.canvas.callbacks.blocked(signal="draw_event"):
            fig.draw(renderer)
    finally:
        for a in moving:
            a.set_animated(True)
    return renderer


def picture(fig):
    """A live figure as it stands (drawn_apart), as PNG bytes. No metadata: the same figure
    gives the same bytes on every run."""
    from matplotlib.image import imsave
    buf = io.BytesIO()
    imsave(buf, np.asarray(drawn_apart(fig).buffer_rgba()), format="png", dpi=fig.dpi,
           metadata={"Software": None})
    return buf.getvalue()


def _inside(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _inside(child)


def _as_html(widget):
    """What a control shows, as HTML, for the picture of a widget without a plot."""
    name = html.escape(getattr(widget, "description", "") or "")
    if isinstance(widget, StyleRule):
        return ""
    if isinstance(widget, (widgets.HTML, widgets.HTMLMath)):
        return widget.value
    if isinstance(widget, widgets.Label):
        return html.escape(widget.value)
    if isinstance(widget, (widgets.Text, widgets.Textarea, widgets.IntText, widgets.FloatText,
                           widgets.Dropdown, widgets.IntSlider, widgets.FloatSlider)):
        value = widget.label if isinstance(widget, widgets.Dropdown) else widget.value
        return f"{name} <code>{html.escape(str(value))}</code>"
    return ""


def _store_frames_as_pictures(canvas):
    """Until a page shows the canvas (a notebook run by nbclient, with no browser), ipympl
    stores each frame it sends as the canvas's picture, the one a saved notebook keeps,
    but without the "data:" prefix its page needs to show it: add the prefix."""
    if getattr(canvas, "manager", None) is None or hasattr(canvas, "_course_send_binary"):
        return
    send = canvas._course_send_binary = canvas.send_binary

    def send_binary(data):
        send(data)
        url = stored_picture(canvas)
        if not page_has_shown(canvas) and url and not url.startswith("data:"):
            store_picture(canvas, url)

    canvas.send_binary = send_binary


# --- Widgets' pictures, style, and one copy per notebook cell ------------------------------

PICTURE_NOTE = ("This is a picture of the widget, not the widget: run the notebook's cells "
                "(Run ▸ Run All Cells) to use it.")


def picture_note():
    """The visible line above a widget's stored picture (the note itself, as HTML)."""
    return (f'<p class="course-picture-note" style="font-style:italic;margin:0.3em 0;'
            f'padding:0.2em 0.6em;border-left:3px solid {ORANGE}">{html.escape(PICTURE_NOTE)}</p>')


class Panel(widgets.VBox):
    """The root box of a widget (CSS classes course-widget and w-<name>).

    Where the widget cannot run (a notebook opened before Run All, GitHub, nbviewer, the
    HTML edition), its stored output shows a picture of its first state instead, under a
    line saying that it is a picture and how to make it live: its plot as a PNG (also
    handed to the plot's canvas, which shows it until the kernel draws), or, for a widget
    without a plot, its text as HTML."""

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        canvases = live_canvases(self)
        if canvases:
            import base64
            pngs = [base64.b64encode(picture(c.figure)).decode("ascii") for c in canvases]
            for canvas, png in zip(canvases, pngs, strict=True):
                store_picture(canvas, png)
                _store_frames_as_pictures(canvas)
            data["image/png"] = pngs[0]
            body = "".join(f'<img src="data:image/png;base64,{png}" alt="a picture of the plot" '
                           'style="max-width:100%;height:auto">' for png in pngs)
        else:
            parts = [_as_html(w) for w in _inside(self) if not getattr(w, "children", None)]
            body = "".join(f"<div>{p}</div>" for p in parts if p)
        data["text/html"] = f'<div class="course-widget">{picture_note()}{body}</div>'
        name = next((c for c in self._dom_classes if c.startswith("w-")), "widget")
        data["text/plain"] = f"[{name}: run the notebook's cells to use it]"
        return data


def panel(name, *children):
    """The root box of a widget, tagged with CSS class w-<name> (the browser test finds it),
    with the course's style rule; building the same widget again in the same notebook cell
    closes the copy that cell built before (see own)."""
    box = Panel([*children, course_style()])
    box.add_class("course-widget")
    box.add_class(f"w-{name}")
    return own(box)


def shown_running(name, fig, artists, steps):
    """The widget of a long run that draws as it goes (a training curve): fig's layout
    frozen, `artists` moving (live_artists), a progress line above the canvas, shown at
    once, its axes drawn once. Returns (root, progress, handle); handle.update(root) at the
    end of the run stores the picture of the finished run (handle is None outside a
    notebook)."""
    from IPython.display import display
    freeze_layout(fig)
    live_artists(fig, artists)
    progress = widgets.HTML(f"step 0 of {steps}")
    root = panel(name, progress, fig.canvas)
    handle = display(root, display_id=True)
    canvas_ready(fig.canvas)
    fig.canvas.draw()                                   # the axes once; then only the lines
    return root, progress, handle


_BUILT = {}                     # notebook cell id -> [(id of the run, root widget it built)]


def running_kernel():
    """The ipykernel running this code, or None (a script, a test)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return getattr(get_ipython(), "kernel", None)


def _cell():
    """(id of the notebook cell running now, id of this run of it), or None where the front
    end does not say (a script, a console, nbclient). JupyterLab sends the cell's id with
    each request to run code, in the request's metadata."""
    kernel = running_kernel()
    try:
        parent = kernel.get_parent() if kernel is not None else None
    except (AttributeError, TypeError):             # an ipykernel older than 6
        return None
    if not isinstance(parent, dict):
        return None
    cell = (parent.get("metadata") or {}).get("cellId")
    run = (parent.get("header") or {}).get("msg_id")
    return (cell, run) if cell and run else None


def own(root):
    """Record `root` as built by the notebook cell running now, and close what earlier runs
    of that same cell built: their views left the page when the cell ran again, and closed,
    they leave nothing behind in the kernel. A copy built by another cell keeps working,
    and so does every copy one run of a cell builds."""
    here = _cell()
    if here is not None:
        cell, run = here
        kept, released = [], 0
        for built_by, old in _BUILT.get(cell, []):
            if built_by == run:
                kept.append((built_by, old))
            else:
                release(old)
                released += 1
        _BUILT[cell] = [*kept, (run, root)]
        if released:
            _give_memory_back()
    return root


def _give_memory_back():
    """Hand the memory the released copies held back to the system. glibc's allocator keeps
    freed memory for reuse otherwise, and a kernel whose cells are re-run all lesson long
    would only grow; malloc_trim returns it. (Elsewhere than glibc: nothing to do.)"""
    import ctypes
    import gc
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _close(widget):
    """Close a widget and the widgets it holds apart from its children: its layout, its
    style, a canvas's toolbar (and theirs)."""
    for part in ("layout", "style", "toolbar"):
        value = getattr(widget, part, None)
        if isinstance(value, widgets.Widget) and value.comm is not None:
            _close(value)
    widget.close()


def release(root):
    """Close a widget tree for good: every widget in it, with its layout, style and (for a
    plot) toolbar, leaves ipywidgets' registry; its figures leave matplotlib's list; and
    the root lets go of its parts, so that a reference to it left in a variable or in the
    kernel's output history keeps nothing large alive."""
    tree = list(_inside(root))
    for widget in tree:
        if is_live_canvas(widget):
            widget.figure._course_moving = None
            plt.close(widget.figure)
        _close(widget)
    for widget in tree:
        if getattr(widget, "children", None):
            widget.children = ()
    for name in [n for n in vars(root) if not n.startswith("_")]:
        delattr(root, name)


class StyleRule(widgets.HTML):
    """A <style> element inside a widget: an HTML widget of its own kind, never its text."""


# The course's style for every widget (a <style> in each root box, so it also holds in a
# notebook opened anywhere the course's settings are not installed). Sizes are relative:
# widget text follows the notebook's own text size, which Presentation Mode enlarges,
# never under 0.875rem (14 px at the browser's default 16 px, more if a reader sets a
# larger default), and browser zoom scales it all. Plots fit the column and shrink with it.
COURSE_CSS = f"""
.course-widget {{
  --jp-widgets-font-size: max(0.875rem, var(--jp-content-font-size1, 0.875rem));
  --jp-widgets-inline-height: 2em;
  --jp-widgets-inline-label-width: 6em;
  --jp-widgets-inline-width: 22em;
  --jp-widgets-slider-handle-size: 1.15em;
  font-size: var(--jp-widgets-font-size);
  max-width: 100%;
}}
.course-widget code, .course-widget pre, .course-widget samp, .course-widget kbd,
.course-widget small {{
  font-family: var(--jp-code-font-family, monospace), monospace;
  font-size: 1em;
}}
/* the chosen toggle in solid blue (JupyterLab marks it only a shade darker grey) */
.course-widget .widget-toggle-button.mod-active {{ background: {BLUE}; color: white; }}
.course-widget .jupyter-matplotlib, .course-widget .jupyter-matplotlib-figure,
.course-widget .jupyter-matplotlib-canvas-container {{ max-width: 100%; min-width: 0; }}
.course-widget .jupyter-matplotlib-canvas-div {{
  max-width: 100% !important; height: auto !important;
}}
.course-widget .jupyter-matplotlib-canvas-div > canvas:first-child {{
  position: relative !important; max-width: 100% !important; height: auto !important;
}}
.course-widget .jupyter-matplotlib-canvas-div > canvas:last-child {{
  width: 100% !important; height: 100% !important;
}}
.course-widget img {{ max-width: 100%; height: auto; }}
"""


def course_style():
    """The course's style rule, as a widget to put inside a root box (see COURSE_CSS)."""
    return StyleRule(f"<style>{COURSE_CSS}</style>")


def builder_text(text, who, runnable=True, **settings):
    """A widget builder's arguments, checked before anything is built: its text a string (one
    the toy can run, if runnable: its vocabulary, at most N_CTX tokens), and the settings
    given (temperature, seed) what tm.generate accepts; or one sentence."""
    from toy_checks import shown_value, check_sampling, check_seed
    from toy_model import check_ids, encode
    if not isinstance(text, str):
        raise ValueError(f"{who} takes a text such as 'the cat climbed the', not {shown_value(text)}.")
    if runnable:
        check_ids(encode(text))
    if "temperature" in settings:
        check_sampling(settings["temperature"])
    if "seed" in settings:
        check_seed(settings["seed"])
    return text


def message_area():
    """Where a widget says what went wrong, in one sentence (empty when all is well)."""
    return widgets.HTML(value="")


def say(area, text="", ok=None, code=False):
    """Put one sentence in a message area: ok=False in red-brown, ok=True in green. With
    code=True, `code` in backticks is shown as code, as in an exercise's question."""
    colour = {None: "inherit", True: GREEN, False: VERMILION}[ok]
    body = html.escape(text)
    if code:
        body = re.sub(r"`([^`]+)`", r"<code>\1</code>", body)
    area.value = (f'<span style="color:{colour};white-space:pre-line">{body}</span>'
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
    when the text is the same as before (a changed value alone would miss that).

    A box that sends its text only when it changes (continuous_update=False) sends it when
    the browser reports a change: at Enter in JupyterLab, but in JupyterLite only when
    the box loses its focus. So at each Enter the box is told to give up its focus and take
    it back, which makes the browser report (and send) the text there too."""
    def submitted(_widget, content, _buffers):
        if content.get("event") == "submit":
            box.send({"do": "blur"})
            box.send({"do": "focus"})
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
    """A number a learner chose, as they would write it: 0.333, 2.5, 1000 (and 1e-300 or
    1e+300 for a number too small or too large to write out)."""
    x = float(x)
    if x != 0 and not 1e-4 <= abs(x) < 1e15:
        return np.format_float_scientific(x, precision=3, trim="-")
    return np.format_float_positional(x, precision=6, trim="-")


def typed_number(text, what=None, low=None, high=None, whole=False):
    """A number a learner typed -> float (an int if whole), or a ValueError with one sentence
    saying what is expected. The course's one reader of typed numbers: every exercise's
    answer box and every widget's number box.

    Reads "0.811", "-1.5" or "−1.5", "1e-3", a simple fraction ("5/3", "1/12") and commas
    between groups of three digits ("7,000" is 7000). Any other comma is an error ("0,811":
    use a point for decimals), never a silent misreading; so are "nan", "inf", "1_0" and
    "0x1f", which Python's float() would read. what names the number in the sentences
    ("logit"); low and high bound it; whole asks for a whole number ("15.0" and "1e3" are
    ones), and reads a string of digits exactly, however long (a seed up to 2**63 - 1)."""
    s = str(text).strip().replace("−", "-").replace("–", "-")
    shown = repr(s if len(s) <= 24 else s[:21] + "...")
    as_what = f"the {what} as " if what else ""
    kind = "a whole number, such as 7" if whole else "a decimal number such as 0.25, or a fraction such as 3/4"
    if not s:
        raise ValueError("Type a number first.")
    fraction = re.fullmatch(r"([-+]?\d+(?:\.\d+)?)\s*/\s*([-+]?\d+(?:\.\d+)?)", s)
    if fraction:
        top, bottom = (float(x) for x in fraction.groups())
        if bottom == 0:
            raise ValueError(f"{shown} divides by 0: a fraction needs a denominator other than 0.")
        value = top / bottom
    else:
        if "," in s:
            if not re.fullmatch(r"[-+]?[1-9]\d{0,2}(,\d{3})+(\.\d+)?", s):
                raise ValueError(f"{shown}: use a point for decimals (0.811) and commas only "
                                 "between groups of three digits (7,000).")
            s = s.replace(",", "")
        if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?", s, re.I):
            raise ValueError(f"{shown} is not a number: type {as_what}{kind}.")
        value = int(s) if whole and re.fullmatch(r"[-+]?\d{1,4000}", s) else float(s)
    if low is not None and not low <= value <= high:
        raise ValueError(f"{shown} is out of range: type {as_what}a number between {plain(low)} "
                         f"and {plain(high)}.")
    if isinstance(value, float) and not np.isfinite(value):
        raise ValueError(f"{shown} is too large: type an ordinary finite number.")
    if whole and isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{shown} is not a whole number: type {as_what}{kind}.")
        value = int(value)
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


def live_figure(name, width=6.4, height=3.2):
    """The live figure of widget w-<name>. It lives as long as its widget: building the
    widget again in the same cell closes it with the rest of the old widget (see own)."""
    need_live_backend()
    fig, ax = new_figure(width, height, live=True)
    fig._course_name = name
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
