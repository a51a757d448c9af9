"""What the widget tests share: walking a widget's tree and reading its bars."""
import numpy as np


def walk(widget):
    """The widget and everything inside it, depth first."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def find(root, kind):
    """Every widget of exactly this class inside root, in order."""
    return [w for w in walk(root) if type(w) is kind]


def heights(bars):
    return np.array([b.get_height() for b in bars])


def figure_of(root):
    """The matplotlib figure of the (first) ipympl canvas inside a widget."""
    return next(w for w in walk(root) if hasattr(w, "figure")).figure
