"""Does every text a figure draws lie inside the figure? The measure, and a probe that takes
it in a notebook's own kernel while the notebook runs.

The measure: a text's window extent (`get_window_extent` once the figure is drawn) against
the figure's bbox, with a pixel of slack. The texts are those `findobj(Text)` finds, visible
and not empty, leaving out what a draw does not draw: the contents of an invisible artist (a
hidden axes, a legend entry), and tick labels of ticks outside the axis' view.

The probe (`install`, run in a kernel before the notebook's first cell) measures, in each
cell the notebook runs:
- every picture printed to PNG (tw.static's, a canvas displayed as itself), in the layout it
  was drawn in, just after it is drawn;
- every live figure (pyplot's) the cell made, once the cell ends, drawn as the stored picture
  of it is (kit.drawn_apart: a renderer of its own, the live canvas left alone).
It prints nothing and raises nothing into the cell: a problem of its own is reported with
the measurements. `take()` hands over the cells measured since it was last called, as JSON.
Only matplotlib is imported here (and the course's kit, where a cell made a live figure).
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
import types
import warnings

from matplotlib.axis import Axis
from matplotlib.text import Text

SLACK = 1.0                                     # px
MODULE = "course_figure_probe"                  # its name in the kernel's sys.modules


# --------------------------------------------------------------------------- the measure

def drawn_texts(fig):
    """The texts a draw of fig draws: visible, not empty, inside visible artists only, and of
    an axis only the ticks it draws (those in its view; Axis._update_ticks picks them)."""
    found = []

    def visit(artist):
        if not artist.get_visible():
            return
        if isinstance(artist, Text) and artist.get_text():
            found.append(artist)
        if isinstance(artist, Axis):
            children = [artist.label, artist.offsetText, *artist._update_ticks()]
        else:
            children = artist.get_children()
        for child in children:
            visit(child)
    visit(fig)
    every = {id(t) for t in fig.findobj(Text)}
    assert all(id(t) in every for t in found)
    return found


def cut_texts(fig, renderer):
    """[(text, how it sticks out)] for each drawn text outside fig.bbox by more than SLACK,
    measured with the renderer fig was last drawn with."""
    box = fig.bbox
    cut = []
    for t in drawn_texts(fig):
        e = t.get_window_extent(renderer)
        out = {"left": box.x0 - e.x0, "right": e.x1 - box.x1,
               "bottom": box.y0 - e.y0, "top": e.y1 - box.y1}
        out = {side: px for side, px in out.items() if px > SLACK}
        if out:
            cut.append((t, out))
    return cut


def describe(cut):
    return "; ".join(f"{t.get_text()!r} sticks out "
                     + ", ".join(f"{px:.1f} px past the {side} edge" for side, px in out.items())
                     for t, out in cut)


def finding(fig, renderer, kind):
    """What a figure's measure found: its kind, its size, how many texts, what is cut."""
    return {"kind": kind, "size": [round(fig.bbox.width), round(fig.bbox.height)],
            "texts": len(drawn_texts(fig)), "cut": describe(cut_texts(fig, renderer))}


# --------------------------------------------------------------------------- the probe

class Probe:
    """What one kernel's cells drew, cell by cell (see the module's docstring)."""

    def __init__(self):
        self.cells: list[dict] = []          # one per cell run: its source, its figures
        self.cell: dict | None = None
        self.before: set[int] = set()

    def before_cell(self, info):
        self.cell = {"source": info.raw_cell, "figures": [], "problem": None}
        self.before = {fig.number for fig in self.live_figures()}

    def after_cell(self, result):
        cell, self.cell = self.cell, None
        if cell is None:
            return
        for fig in self.live_figures():
            if fig.number not in self.before:
                from toy_widgets.kit import drawn_apart     # a live figure's notebook has it
                self._measure(cell, lambda fig=fig: finding(
                    fig, drawn_apart(fig), f"live figure w-{getattr(fig, '_course_name', '?')}"))
        self.cells.append(cell)

    @staticmethod
    def live_figures():
        """pyplot's figures, read from its registry: plt.figure(n) would make n the current
        figure, which the notebook's next cell may draw on."""
        if "matplotlib.pyplot" not in sys.modules:
            return []
        from matplotlib._pylab_helpers import Gcf
        return [manager.canvas.figure for manager in Gcf.figs.values()]

    def printed(self, canvas):
        if self.cell is not None:
            self._measure(self.cell, lambda: finding(canvas.figure, canvas.get_renderer(), "picture"))

    @staticmethod
    def _measure(cell, measure):
        """Run a measure quietly: its warnings and prints are not the cell's output."""
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                cell["figures"].append(measure())
        except Exception as error:            # noqa: BLE001  (reported, never raised in the cell)
            cell["problem"] = cell["problem"] or f"{type(error).__name__}: {error}"

    def take(self) -> str:
        cells, self.cells = self.cells, []
        return json.dumps(cells)


def install():
    """Start measuring in this kernel (IPython's cell events, and a hook on Agg's print_png)."""
    from IPython import get_ipython
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    probe = Probe()
    print_png = FigureCanvasAgg.print_png

    def printing(canvas, *args, **kwargs):
        out = print_png(canvas, *args, **kwargs)
        probe.printed(canvas)
        return out
    FigureCanvasAgg.print_png = printing
    shell = get_ipython()
    shell.events.register("pre_run_cell", probe.before_cell)
    shell.events.register("post_run_cell", probe.after_cell)
    handle = types.ModuleType(MODULE, "The figure probe of tools/run_notebooks.py (tools/figure_probe.py).")
    handle.take = probe.take
    sys.modules[MODULE] = handle


# What a client sends the kernel: the code that installs the probe (this file run in a
# namespace of its own: the kernel's names and sys.path stay as they are), and the
# expression that takes what it measured.
INSTALL = f"__import__('runpy').run_path({__file__!r})['install']()"
TAKE = f"__import__('sys').modules[{MODULE!r}].take()"
