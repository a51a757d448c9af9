"""The ipympl internals the widget kit relies on are still there.

toy_widgets/kit.py uses a few of ipympl's private attributes, each named once in
kit.IPYMPL_PRIVATE; an ipympl upgrade that renames or drops one fails here, with a
message naming it, before it breaks a plot in a classroom. Likewise matplotlib's
renderers' `mathtext_parser`, which the course's renderers share (draw.share_mathtext):
without it nothing breaks, but every widget builds a sixth slower.
"""
import re
from pathlib import Path

import ipympl
import matplotlib.pyplot as plt
import pytest

from toy_widgets import kit

PACKAGE = Path(kit.__file__).parent


def has(obj, dotted):
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


@pytest.mark.parametrize("name", sorted(kit.IPYMPL_PRIVATE))
def test_the_installed_ipympl_has_each_private_attribute_the_kit_uses(name):
    fig, _ = kit.live_figure("check", 2, 1)
    try:
        assert has(fig.canvas, name), (
            f"ipympl {ipympl.__version__} has no {name!r} on its canvas; toy_widgets/kit.py uses "
            f"it to {kit.IPYMPL_PRIVATE[name]}. Pin the ipympl that has it (constraints.txt) or "
            f"change kit.py's accessor for it.")
    finally:
        plt.close(fig)


def test_the_attributes_still_mean_what_the_kit_takes_them_to_mean():
    fig, _ = kit.live_figure("check", 2, 1)
    canvas = fig.canvas
    try:
        assert not kit.page_has_shown(canvas), "a new canvas stores its frames (no page yet)"
        kit.canvas_ready(canvas)
        assert kit.page_has_shown(canvas), "the page's hello stops the storing"
        kit.store_picture(canvas, "AAAA")
        assert kit.stored_picture(canvas) == "data:image/png;base64,AAAA"
        kit.send_whole_frame(canvas)
        assert canvas._force_full
    finally:
        plt.close(fig)


PRIVATE_USE = re.compile(r"\.(" + "|".join(re.escape(n.split(".")[-1]) for n in kit.IPYMPL_PRIVATE) + r")\b")


def test_only_the_kit_touches_them_and_names_each_once():
    """Every other module of the package goes through kit's functions; in kit.py each
    attribute is written in one accessor (besides its entry in IPYMPL_PRIVATE)."""
    for path in sorted(PACKAGE.glob("*.py")):
        uses = PRIVATE_USE.findall(path.read_text())
        if path.name != "kit.py":
            assert not uses, f"{path.name} uses ipympl's private {sorted(set(uses))}: go through kit.py"
    source = (PACKAGE / "kit.py").read_text()
    for name in kit.IPYMPL_PRIVATE:
        attribute = name.split(".")[-1]
        uses = re.findall(r"\." + re.escape(attribute) + r"\b", source)
        assert 1 <= len(uses) <= 2, f"kit.py uses .{attribute} {len(uses)} times: keep it in one accessor"


def test_the_course_s_renderers_share_one_mathtext_parser():
    from matplotlib.backends.backend_agg import RendererAgg
    from toy_widgets import draw
    fig, _ = kit.live_figure("check", 2, 1)
    try:
        assert isinstance(getattr(RendererAgg(10, 10, 72), "mathtext_parser", None),
                          draw.MathTextParser), (
            "matplotlib's RendererAgg has no mathtext_parser any more: draw.share_mathtext "
            "shares nothing (each figure parses its bold ␣ labels again)")
        assert fig.canvas.get_renderer().mathtext_parser is draw._MATHTEXT
    finally:
        plt.close(fig)
