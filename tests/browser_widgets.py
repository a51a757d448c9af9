"""The widgets' side of the browser tests: an Interaction does one thing to one widget
of the open notebook (press a slider's key, click, type, choose) and names what must
change; perform() does it and says, in one line each, what went wrong.

Each widget of the course carries a CSS class w-<name> on its root box (set with
`box.add_class("w-<name>")`). Actions find their control *inside* the widget's root, so
two widgets with the same kind of control do not get in each other's way.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from browser_harness import (ACTION_TIMEOUT, EVERY_SCREENSHOT, INTERACTION_TIMEOUT, PAGE_TIMEOUT,
                             kernel_errors, wait_in_page)


@dataclass(frozen=True)
class Action:
    """Something a learner does to a widget; `run` gets the widget's root locator."""

    description: str
    run: Callable = field(compare=False)

    def __str__(self) -> str:
        return self.description


def press_slider(key: str = "ArrowRight", times: int = 1, nth: int = 0) -> Action:
    """Press a key on the nth slider of the widget (ArrowRight/ArrowLeft: one step;
    PageUp/PageDown: five steps; Home/End: the ends)."""

    def run(root):
        # ipywidgets 8 draws sliders with noUiSlider: the handle is focusable and
        # takes the arrow keys. A plain range input is the fallback.
        handle = root.locator(".noUi-handle, input[type=range]").nth(nth)
        for _ in range(times):
            handle.press(key)

    return Action(f"press {key}" + (f" x{times}" if times > 1 else "")
                  + (f" on slider {nth}" if nth else ""), run)


def click(label: str) -> Action:
    """Click the button, toggle button, checkbox or radio button named `label`."""

    # The accessible name may carry an icon's glyph (a toggle button that is on shows
    # a check mark drawn with CSS): allow non-word characters around the label.
    name = re.compile(r"^\W*" + re.escape(label) + r"\W*$")

    def run(root):
        roles = [root.get_by_role(role, name=name) for role in ("button", "checkbox", "radio")]
        control = roles[0].or_(roles[1]).or_(roles[2])
        control.first.click()

    return Action(f"click {label!r}", run)


def type_text(text: str, nth: int = 0) -> Action:
    """Replace the text in the nth text box of the widget, then press Enter."""

    def run(root):
        box = root.locator("input[type=text], input[type=number], textarea").nth(nth)
        box.fill(text)
        box.press("Enter")

    return Action(f"type {text!r}", run)


def choose(option: str, nth: int = 0) -> Action:
    """Pick `option` (its visible label) in the nth dropdown of the widget."""

    def run(root):
        root.locator("select").nth(nth).select_option(label=option)

    return Action(f"choose {option!r}", run)


CANVAS_CHANGES = "canvas-changes"  # the pixels of the widget's <canvas> elements (ipympl plots)
TEXT_CHANGES = "text-changes"  # the widget's visible text, slider read-outs excepted
MARKUP_CHANGES = "markup-changes"  # the markup inside the widget's HTML widgets (an SVG drawing)
TEXT_SHOWS = "text-shows"  # nothing needs to change: the text must (come to) hold `contains`

SETTLE_MS = 200  # after a widget showed what it must, it must still show it once the kernel
                 # is idle and has exchanged no message for this long (every echo is in)


def settled(page) -> None:
    """Wait until the kernel of the notebook being visited is idle and quiet: what the
    page shows then is final (a late echo of a control's value would have come by now)."""
    wait_in_page(page, """(ms) => { const h = window.__harness, path = h.visiting;
                                 return h.state(path).kernel === 'idle' && h.quietFor(path) >= ms; }""",
                 SETTLE_MS, INTERACTION_TIMEOUT, "the kernel to answer everything")
                 # (the browser sends a slider's value back rounded to its step a moment later)


def look() -> "Action":
    """Do nothing: read the widget as it is (after Run All, say)."""
    return Action("look", lambda root: None)


def squeeze(text: str) -> str:
    """Text without whitespace: HTML widgets' bold parts come back as separate text
    nodes, joined with spaces, so compare texts without their spacing."""
    return re.sub(r"\s+", "", text)


@dataclass(frozen=True)
class Interaction:
    """Do `action` to the widget with class w-<widget>; then `expect` must happen
    within INTERACTION_TIMEOUT, and the widget's text must contain `contains` if given."""

    widget: str
    action: Action
    expect: str = CANVAS_CHANGES
    contains: str | tuple[str, ...] | None = None   # compared without whitespace

    def __post_init__(self):
        if self.expect not in (CANVAS_CHANGES, TEXT_CHANGES, MARKUP_CHANGES, TEXT_SHOWS):
            raise ValueError("expect must be CANVAS_CHANGES, TEXT_CHANGES, MARKUP_CHANGES or "
                             f"TEXT_SHOWS, not {self.expect!r}")
        if self.expect == TEXT_SHOWS and not self.contains:
            raise ValueError("TEXT_SHOWS needs `contains`: what the widget must show")

    @property
    def wanted(self) -> tuple[str, ...]:
        if self.contains is None:
            return ()
        return (self.contains,) if isinstance(self.contains, str) else tuple(self.contains)

    def missing(self, text: str) -> list[str]:
        """The parts of `contains` that `text` does not show."""
        return [part for part in self.wanted if squeeze(part) not in squeeze(text)]

    def __str__(self) -> str:
        then = self.expect.replace("-", " ")
        if self.contains:
            then += f" and shows {' … '.join(self.wanted)!r}"
        return f"w-{self.widget}: {self.action} -> {then}"


def widget_root(page, name: str):
    """The root element of widget w-<name>; it must be on the page exactly once
    (twice usually means a figure was displayed both by plt and by the widget)."""
    root = page.locator(f".w-{name}")
    count = root.count()
    if count != 1:
        raise AssertionError(f"expected one element with class w-{name} on the page, found {count}")
    return root


def canvas_pixels(root) -> str:
    """The widget's canvases as PNG data URLs, joined: equal text, equal pixels. (Read in
    the page: a Playwright screenshot of each canvas, at every poll, costs ten times more.)"""
    pixels = root.evaluate("(el) => window.__harness.canvasPixels(el)")
    if not pixels:
        raise AssertionError("the widget has no <canvas> (is the notebook using %matplotlib widget?)")
    return pixels


def visible_text(root) -> str:
    return root.evaluate("(el) => window.__harness.visibleText(el)")


def html_markup(root) -> str:
    return root.evaluate("(el) => window.__harness.htmlMarkup(el)")


class InteractionFailed(Exception):
    """Raised by the steps of perform(); its message is one line for the report."""


def perform(page, interaction: Interaction, shots_prefix: Path) -> list[str]:
    """Do one interaction; return what went wrong (empty if all is well).

    A screenshot of the widget afterwards goes to <shots_prefix>.png, if it failed (or
    with COURSE_SCREENSHOTS=1).
    A failure is reported, not raised, so that the notebook's other interactions still run.
    """
    problems = []
    try:
        _perform(page, interaction, shots_prefix)
    except InteractionFailed as failure:
        problems.append(f"{interaction}: {failure}")
    problems += [f"{interaction}: the kernel reported {e}" for e in kernel_errors(page)]
    return problems


def _perform(page, interaction: Interaction, shots_prefix: Path) -> None:
    try:
        # What the last action set off is over (a slider's echoes too), as it is before a
        # person's next action: otherwise a late echo can redraw over what this one shows.
        settled(page)
        root = widget_root(page, interaction.widget)
        root.scroll_into_view_if_needed()
        shots_prefix.parent.mkdir(parents=True, exist_ok=True)
        snapshot = {CANVAS_CHANGES: canvas_pixels, MARKUP_CHANGES: html_markup}.get(
            interaction.expect, visible_text)
        before = snapshot(root)
    except AssertionError as error:
        raise InteractionFailed(str(error)) from None

    try:
        # A control that is not there should fail in seconds, not after the page's 30 s.
        page.set_default_timeout(ACTION_TIMEOUT * 1000)
        interaction.action.run(root)
    except Exception as error:  # Playwright's errors, whose first line says what it waited for
        raise InteractionFailed(f"could not {interaction.action}: {str(error).splitlines()[0]}") from None
    finally:
        page.set_default_timeout(PAGE_TIMEOUT * 1000)

    def changed(text, snap):
        shows = not interaction.missing(text)
        return shows and (interaction.expect == TEXT_SHOWS or snap != before)

    shown = False
    try:
        # Python decides; the page only says when the widget shows something new.
        deadline = time.monotonic() + INTERACTION_TIMEOUT
        text, snap = visible_text(root), snapshot(root)
        while not changed(text, snap):
            text, snap = wait_in_page(
                page, "([el, kind, text, snap]) => window.__harness.changedSince(el, kind, text, snap)",
                [root.element_handle(), interaction.expect, text, snap],
                max(0.0, deadline - time.monotonic()), str(interaction))
        if interaction.wanted:              # and it stays so: no late echo undoes it
            settled(page)
            missing = interaction.missing(visible_text(root))
            if missing:
                raise InteractionFailed(f"showed {missing[0]!r}, then no longer, once the "
                                        f"kernel had answered everything; widget text now: "
                                        f"{visible_text(root)[:400]!r}")
        shown = True
    except TimeoutError:
        text = visible_text(root)
        missing = interaction.missing(text)
        what = f"it does not show {missing[0]!r}" if missing else "nothing changed"
        raise InteractionFailed(f"{what} within {INTERACTION_TIMEOUT} s; "
                                f"widget text now: {text[:400]!r}") from None
    finally:
        if EVERY_SCREENSHOT or not shown:
            root.screenshot(path=f"{shots_prefix}.png")


def safe_name(text: str) -> str:
    """A file-name-friendly version of text."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")
