"""Plots readable on a 1366 x 768 projector, and each widget's stored picture.

- every text drawn in a widget's plot (titles, labels, tick labels, legends, the numbers
  in a heat map) is at least 14 px tall, and no plot is wider than a 900 px column (with
  the few px ipympl's canvas adds); the course's style shrinks plots with a narrower page;
- every widget carries the course's style: its text at least 14 px (0.875rem), following
  the notebook's text size (which Presentation Mode enlarges), in relative units; no
  widget writes a smaller size of its own;
- the ␣ of a leading space and the "." token have a tick-label form that shows;
- a widget's display bundle carries a PNG of its plot as it stands, the same bytes
  every time, which its canvas also shows until the kernel draws, and an HTML form that
  shows the same picture under a visible line saying it is a picture and how to make it
  live (JupyterLab shows that form in a notebook opened before Run All, and so does the
  HTML edition).
"""
import base64
import html
import re

import numpy as np
import pytest
from matplotlib.text import Text
from widget_tools import walk

import toy_model as tm
import toy_widgets as tw

BUILDERS = ["embedding_scatter", "query_picker", "mask_and_heads", "block_branches",
            "logit_playground", "logit_shift", "attention_switch", "tying_switch",
            "temperature_explorer", "generation_stepper"]
MIN_PX = 14
CANVAS_CHROME_PX = 8                  # ipympl's canvas around the figure (938 px for 930)
WIDGETS = BUILDERS + ["tokenizer_widget"]


def figures(root):
    return [c.figure for c in tw.live_canvases(root)]


@pytest.mark.parametrize("name", WIDGETS)
def test_each_widget_is_readable_and_says_its_picture_is_one(name):
    """One build of each widget, every rule on it: its plot's text and width, its stored
    picture's line, the course's style, and no text size of its own below the course's."""
    root = getattr(tw, name)()
    if name in BUILDERS:
        plot_text_is_at_least_14_px_and_the_plot_fits(name, root)
    stored_picture_says_it_is_a_picture_and_how_to_make_it_live(root)
    rules = [w for w in walk(root) if isinstance(w, tw.StyleRule)]
    assert any(tw.COURSE_CSS in r.value for r in rules), f"{name} has no course style"
    no_text_size_of_its_own_below_the_course_size(name, root)


def plot_text_is_at_least_14_px_and_the_plot_fits(name, root):
    figs = figures(root)
    assert figs, f"{name} has no plot"
    for fig in figs:
        tw.picture(fig)                         # draws it: every tick label exists now
        small = sorted({(t.get_text(), round(t.get_fontsize() * fig.dpi / 72, 1))
                        for t in fig.findobj(Text)
                        if t.get_visible() and t.get_text().strip()
                        and t.get_fontsize() * fig.dpi / 72 < MIN_PX})
        assert not small, f"{name}: text under {MIN_PX} px: {small[:5]}"
        assert fig.bbox.width + CANVAS_CHROME_PX <= tw.COLUMN_PX == 900, \
            f"{name}: {fig.bbox.width:.0f} px wide"


# The toy's twelve tokens as the course names them, typed here: ␣ for the leading space,
# the "." token in quotes.
NAMES = ["the", "␣the", "␣cat", "␣dog", "␣climb", "ed", "␣roof", "␣wall", "␣sofa", "␣floor", "'.'",
         "<|endoftext|>"]


def test_every_form_of_a_token_carries_the_one_name():
    """tm.token_name names a token; a tick label and a chip's HTML are that name, drawn
    (the ␣ bold), and the tokenizer's error lists the same names."""
    assert [tm.token_name(i) for i in range(len(tm.VOCAB))] == NAMES
    assert [tm.token_name(t) for t in tm.VOCAB] == NAMES == [tm.token_name(t) for t in tw.TOKENS]
    assert [tw.tick_label(t).replace("$\\mathbf{␣}$", "␣") for t in tw.TOKENS] == NAMES
    assert tw.tick_label("␣the") == "$\\mathbf{␣}$the"            # the leading space drawn bold
    assert [html.unescape(re.sub(r"<[^>]+>", "", tw.token_html(t))) for t in tw.TOKENS] == NAMES
    with pytest.raises(ValueError) as err:
        tm.encode("the zebra")
    assert f"It knows only: {', '.join(NAMES)};" in str(err.value)


def test_a_widget_bundle_carries_its_picture_and_hands_it_to_its_canvas():
    root = tw.logit_playground()
    data = root._repr_mimebundle_()
    assert set(data) >= {"image/png", "text/html", "text/plain",
                         "application/vnd.jupyter.widget-view+json"}
    png = base64.b64decode(data["image/png"])
    assert png.startswith(b"\x89PNG") and b"Software" not in png and b"tIME" not in png
    assert root._repr_mimebundle_()["image/png"] == data["image/png"], "same bytes every time"
    (canvas,) = tw.live_canvases(root)
    assert tw.stored_picture(canvas) == "data:image/png;base64," + data["image/png"]
    assert f'src="data:image/png;base64,{data["image/png"]}"' in data["text/html"], \
        "the HTML form shows the same picture"


def test_the_picture_shows_the_moving_bars_and_leaves_the_live_plot_alone():
    root = tw.logit_playground()
    fig = figures(root)[0]
    import io

    from PIL import Image
    with_bars = np.asarray(Image.open(io.BytesIO(tw.picture(fig))))
    bars = [a for a in fig.findobj() if getattr(a, "get_animated", lambda: False)()]
    assert bars, "the live plot's bars are animated (repainted alone)"
    for b in bars:
        b.set_visible(False)
    without = np.asarray(Image.open(io.BytesIO(tw.picture(fig))))
    for b in bars:
        b.set_visible(True)
    assert (with_bars != without).any(), "the picture leaves out the bars"
    assert all(b.get_animated() for b in bars), "the bars must stay animated for blitting"


def test_a_widget_without_a_plot_stores_its_text_as_html():
    root = tw.tokenizer_widget()
    data = root._repr_mimebundle_()
    assert "image/png" not in data
    assert "token-chip" in data["text/html"] and "the cat climbed the" in data["text/html"]
    assert "VBox(" not in data["text/plain"]


def test_a_later_frame_keeps_a_picture_its_page_can_show():
    """Run without a browser (tools/run_notebooks.py), ipympl stores each new frame as the
    canvas's picture without the "data:" prefix; the stored picture must keep it."""
    import ipywidgets as widgets
    from widget_tools import find
    root = tw.logit_playground()
    root._repr_mimebundle_()
    (canvas,) = tw.live_canvases(root)
    find(root, widgets.FloatSlider)[0].value += 1          # the bars move
    canvas.draw()                                          # and a new frame goes out
    assert tw.stored_picture(canvas).startswith("data:image/png;base64,")


def note_shown(html_text):
    """The visible text of the first paragraph of a stored HTML form."""
    first = re.search(r"<p[^>]*>(.*?)</p>", html_text, re.S)
    return html.unescape(first.group(1)) if first else ""


def stored_picture_says_it_is_a_picture_and_how_to_make_it_live(root):
    """JupyterLab never shows text/plain when a picture is there: the line is the first
    thing of the HTML form, which a notebook opened before Run All (and the HTML edition)
    shows; nothing hides it (no display:none, no zero size)."""
    data = root._repr_mimebundle_()
    line = note_shown(data["text/html"])
    raw = re.search(r"<p[^>]*>(.*?)</p>", data["text/html"], re.S).group(1)
    assert "picture" in line and "run the notebook's cells" in line.lower(), line
    opening = data["text/html"][:data["text/html"].index(raw)]
    assert not re.search(r"display:\s*none|visibility:\s*hidden|font-size:\s*0", opening)
    assert "run the notebook's cells" in data["text/plain"]


def test_an_exercises_stored_form_says_to_run_the_cells():
    data = tw.exercise("06.3")._repr_mimebundle_()
    assert "run the notebook's cells" in html.unescape(data["text/html"]) and "06.3" in data["text/plain"]


def test_exercise_boxes_carry_the_course_style():
    for kind in ("number", "choice", "code"):
        key = next(k for k, spec in tw.EXERCISES.items() if spec["kind"] == kind)
        box = tw.exercise(key, (lambda *args: None) if kind == "code" else None)
        assert any(tw.COURSE_CSS in w.value for w in walk(box) if isinstance(w, tw.StyleRule))


def declarations(css, selector):
    """The declarations of the first rule of `css` whose selector list includes `selector`."""
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        if selector in [s.strip() for s in selectors.split(",")]:
            return dict((k.strip(), v.strip()) for k, v in
                        (d.split(":", 1) for d in body.split(";") if ":" in d))
    raise AssertionError(f"no rule for {selector}")


def test_widget_text_is_at_least_14_px_and_grows_with_the_notebooks_text():
    """ipywidgets draws its text at --jp-widgets-font-size (JupyterLab's 13 px UI size). The
    course sets it, on every widget, to the notebook's content size (14 px; 17 px in
    Presentation Mode), never under 0.875rem (14 px at the browser's default), and sizes
    the controls in em, so that they grow with it."""
    rule = declarations(tw.COURSE_CSS, ".course-widget")
    size = rule["--jp-widgets-font-size"]
    assert re.fullmatch(r"max\(0\.875rem, var\(--jp-content-font-size1, 0\.875rem\)\)", size), size
    assert rule["font-size"] == "var(--jp-widgets-font-size)"
    for name in ("--jp-widgets-inline-height", "--jp-widgets-inline-label-width",
                 "--jp-widgets-inline-width"):
        assert rule[name].endswith("em"), (name, rule[name])
    mono = declarations(tw.COURSE_CSS, ".course-widget code")
    assert mono["font-size"] == "1em" and "monospace" in mono["font-family"]
    assert "px" not in "".join(rule.values()), "sizes relative to the text, not in px"


def test_plots_shrink_with_a_narrow_page():
    canvas = declarations(tw.COURSE_CSS, ".course-widget .jupyter-matplotlib-canvas-div > canvas:first-child")
    assert canvas["max-width"].startswith("100%") and canvas["height"].startswith("auto")
    box = declarations(tw.COURSE_CSS, ".course-widget .jupyter-matplotlib-canvas-div")
    assert box["max-width"].startswith("100%") and box["height"].startswith("auto")
    assert declarations(tw.COURSE_CSS, ".course-widget img")["max-width"] == "100%"


SMALL = re.compile(r"font-size:\s*(\d+(?:\.\d+)?)(px|pt)|font-size:\s*0?\.\d+em|<small\b"
                   r"|font-size:\s*(smaller|x-small|small)\b")


def no_text_size_of_its_own_below_the_course_size(name, root):
    """Sizes in px would not follow Presentation Mode, and em below 1 would fall under 14 px."""
    for w in walk(root):
        value = getattr(w, "value", None)
        if isinstance(value, str) and not isinstance(w, tw.StyleRule):
            assert not SMALL.search(value), (name, SMALL.search(value).group(0), value[:200])


def test_token_ids_under_the_chips_are_not_smaller_than_the_text():
    html_text = tw.token_chips([0, 2])
    assert "<small" not in html_text and not SMALL.search(html_text)
    assert "font-family:monospace;" not in html_text.replace(" ", ""), \
        "a lone monospace family makes Chromium shrink the text to 13 px"
