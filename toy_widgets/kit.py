"""The widget kit: panels, state, the feedback guard, live charts, and the ipympl integration.

Every use of ipympl's private attributes is in this file, each named once in IPYMPL_PRIVATE,
and a test checks that the installed ipympl still has them.
"""
import contextlib
import html
import io
import weakref
from types import SimpleNamespace

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from .draw import (BLUE, GREEN, ORANGE, TOKENS, VERMILION, freeze_layout, new_figure, outline_bars,
                   token_bars)


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


def _canvas_ready(canvas):
    """Let a live figure draw while its own cell is still running. The page's hello
    (which sets the canvas size) is only read once the cell ends, so the kernel plays
    that part itself; the page's real hello, later, changes nothing."""
    canvas._handle_message(canvas, {"type": "initialized"}, [])
