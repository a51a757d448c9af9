"""What the widget tests share: walking a widget's tree, reading what its charts and
text show, and sending a control what the browser would send."""
import re

import numpy as np


STORED_PNG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def output_pngs(data):
    """The base64 PNGs an output's bundle shows: its image/png, or the pictures inside its
    HTML (how a stored notebook keeps a widget's picture)."""
    if "image/png" in data:
        return [data["image/png"]]
    return STORED_PNG.findall("".join(data.get("text/html", "")))


def walk(widget):
    """The widget and everything inside it, depth first."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def find(root, kind):
    """Every widget of exactly this class inside root, in order."""
    return [w for w in walk(root) if type(w) is kind]


def shown(chart):
    """The values a chart shows: its .values, checked against the heights of its bars
    (so a chart that draws something else than it says fails here)."""
    assert np.allclose([b.get_height() for b in chart.bars], chart.values), "the bars do not show chart.values"
    return chart.values


def text(html_widget):
    """An HTML widget's text without its markup, entities decoded."""
    import html
    return html.unescape(re.sub(r"<[^>]+>", "", html_widget.value))


def echo(slider):
    """What the browser sends back after Python sets a float slider: its value rounded
    to the slider's step (noUiSlider's grid: min + k * step)."""
    k = round((slider.value - slider.min) / slider.step)
    slider.value = slider.min + k * slider.step


def press_enter(box):
    """What the browser sends when the learner presses Enter in a Text box."""
    box._handle_custom_msg({"event": "submit"}, [])


def nats(p):
    """The entropy of p in nats, computed here (0 log 0 counts as 0)."""
    q = np.asarray(p)[np.asarray(p) > 0]
    return float(-(q * np.log(q)).sum())


def names_p(said, p):
    """A widget's line about p names the three most likely tokens with their p, and p's
    entropy (computed here from p)."""
    import toy_widgets as tw
    order = np.argsort(-np.asarray(p), kind="stable")[:3]
    for j in order:
        assert f"{tw.TOKENS[j]}" in said and tw.fmt(p[j]) in said, (tw.TOKENS[j], said)
    assert f"entropy of p: {tw.fmt(nats(p))} nats" in said, said


def figure_of(root):
    """The matplotlib figure of the (first) ipympl canvas inside a widget."""
    return next(w for w in walk(root) if hasattr(w, "figure")).figure


def heads_by_hand(text="the cat climbed the", mask=True):
    """Each head's (q, weights, output) of the toy, from the shared reference
    (tests/reference.py: nothing taken from toy_model's forward or attention)."""
    import reference
    import toy_model as tm
    trace = {}
    reference.forward(tm.encode(text), tm.PARAMS, 2, mask=mask, trace=trace)
    blk = trace["blocks"][0]
    return list(zip(blk["q"], blk["weights"], blk["out"]))


def open_weights_by_hand(text="the cat climbed the"):
    """Each head's weights with the mask off (heads_by_hand)."""
    return [weights for _, weights, _ in heads_by_hand(text, mask=False)]
