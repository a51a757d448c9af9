"""Plots readable on a 1366 x 768 projector, and each widget's stored picture.

- every text drawn in a widget's plot (titles, labels, tick labels, legends, the numbers
  in a heat map) is at least 14 px tall, and no plot is wider than the notebook's
  output area at 1366 x 768 with the file browser open (934 px);
- the ␣ of a leading space and the "." token have a tick-label form that shows;
- a widget's display bundle carries a PNG of its plot as it stands, the same bytes
  every time, which its canvas also shows until the kernel draws.
"""
import base64

import numpy as np
import pytest
from matplotlib.text import Text
from widget_tools import walk

import toy_widgets as tw

BUILDERS = ["embedding_scatter", "query_picker", "mask_and_heads", "block_branches",
            "logit_playground", "logit_shift", "attention_switch", "tying_switch",
            "temperature_explorer", "generation_stepper"]
MIN_PX = 14
OUTPUT_AREA_PX = 934


def figures(root):
    return [w.figure for w in walk(root) if hasattr(w, "_data_url") and hasattr(w, "figure")]


@pytest.mark.parametrize("name", BUILDERS)
def test_plot_text_is_at_least_14_px_and_the_plot_fits(name):
    if not hasattr(tw, name):
        pytest.skip(f"no widget {name} (any more)")
    root = getattr(tw, name)()
    figs = figures(root)
    assert figs, f"{name} has no plot"
    for fig in figs:
        tw.picture(fig)                         # draws it: every tick label exists now
        small = sorted({(t.get_text(), round(t.get_fontsize() * fig.dpi / 72, 1))
                        for t in fig.findobj(Text)
                        if t.get_visible() and t.get_text().strip()
                        and t.get_fontsize() * fig.dpi / 72 < MIN_PX})
        assert not small, f"{name}: text under {MIN_PX} px: {small[:5]}"
        assert fig.bbox.width <= OUTPUT_AREA_PX, f"{name}: {fig.bbox.width:.0f} px wide"


def test_tick_labels_show_the_leading_space_and_the_dot():
    assert tw.tick_label("the") == "the"
    assert tw.tick_label("␣the") != "␣the" and tw.tick_label("␣the").endswith("the")
    assert "␣" in tw.tick_label("␣the")
    assert tw.tick_label(".") not in (".", "")


def test_a_widget_bundle_carries_its_picture_and_hands_it_to_its_canvas():
    root = tw.logit_playground()
    data = root._repr_mimebundle_()
    assert set(data) >= {"image/png", "text/plain", "application/vnd.jupyter.widget-view+json"}
    png = base64.b64decode(data["image/png"])
    assert png.startswith(b"\x89PNG") and b"Software" not in png and b"tIME" not in png
    assert root._repr_mimebundle_()["image/png"] == data["image/png"], "same bytes every time"
    (canvas,) = [w for w in walk(root) if hasattr(w, "_data_url")]
    assert canvas._data_url == "data:image/png;base64," + data["image/png"]


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
    (canvas,) = [w for w in walk(root) if hasattr(w, "_data_url")]
    find(root, widgets.FloatSlider)[0].value += 1          # the bars move
    canvas.draw()                                          # and a new frame goes out
    assert canvas._data_url.startswith("data:image/png;base64,")
