"""How fast do the course's widgets react? Measured in the browser, not in Python.

Starts JupyterLab and Debian's Chromium exactly as the browser test does (the launch
code is shared: tests/browser_harness.py) and measures:

  floor  a bare IntSlider that only sets a Label's text: from the key press on the
         slider to the label's new text. Every widget pays at least this round trip
         (browser -> kernel -> browser).
  plot floor  the cheapest live ipympl plot at the size of the course's charts of p: one
         bar, no text, repainted by toy_model.redraw (the self-test notebook's w-one-bar).
         Every live plot pays at least this: the kernel encodes the changed pixels as a
         PNG, and the page loads that image before it can paint it.
  svg    for comparison, the same bar drawn by the browser: the kernel sends a short SVG as
         an HTML widget's value (the self-test notebook's w-svg-bars). Stopped when the
         widget's markup changes. What the course's plots would cost without ipympl.
  plot   a slider that updates an ipympl plot: from the key press to changed pixels
         in the plot's <canvas>. By default the course's w-logit-playground
         (notebooks/06_output.ipynb) and w-temperature (notebooks/07_generation.ipynb);
         a missing notebook falls back to the self-test notebook's bar chart.
  drag   what a teacher sees when dragging a plot's slider: 10 key presses on it as fast
         as the browser sends them, then the time from the last press to the final
         picture (the last paint that changes the plot's pixels), and how many other
         pictures were painted after the last press (frames of values already left
         behind: 0 or 1 is a plot that keeps up, more is a queue replaying stale frames).
         Repeated --drags times per plot, alternating right and left. Target: 150 ms.
  open + run all, for every notebook in notebooks/.

The clock runs inside the page: a keydown listener stamps performance.now(), then the
change is stamped the moment it is made, before the browser paints it: a MutationObserver
for text, and for a plot a hook on the canvases' own drawImage/putImageData that compares
their pixels with those before the press after each call (ipympl paints only through these).
Both clocks stop at the same point (page changed, paint pending), and watching costs
nothing between changes, so the watcher does not slow down what it times.

    python benchmarks/latency.py                       # defaults above
    python benchmarks/latency.py --plot notebooks/06_output.ipynb:logit-playground --presses 40
    python benchmarks/latency.py --only-drag --drags 10  # the drag figures alone

This is a script, not a test: it prints figures and fails only if it cannot measure.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from browser_harness import (  # noqa: E402  (needs the path above)
    REPO_ROOT,
    lab_page,
    lab_home,
    open_here,
    open_notebook,
    run_all,
    running_chromium,
    running_lab,
)
from browser_widgets import widget_root  # noqa: E402

SELF_TEST = "tests/fixtures/widget_demo.ipynb"
DEFAULT_FLOOR = f"{SELF_TEST}:floor"
DEFAULT_PLOT_FLOOR = f"{SELF_TEST}:one-bar"
DEFAULT_SVG = f"{SELF_TEST}:svg-bars"
DEFAULT_PLOTS = ["notebooks/06_output.ipynb:logit-playground",
                 "notebooks/07_generation.ipynb:temperature"]
SETTLE = 0.3  # s between presses, so that a late redraw does not count for the next press
CHANGE_TIMEOUT_MS = 10_000

# Installed in the page once per notebook. arm() returns at once; its promise,
# window.__latency.pending, resolves with the milliseconds from the next keydown to
# the change. Python presses the key in between, then awaits the promise.
_LATENCY_JS = r"""
window.__latency = {
  arm(root, kind, timeoutMs) {
    const read = {canvas: () => this.pixels(root), markup: () => window.__harness.htmlMarkup(root)}[kind]
        || (() => window.__harness.visibleText(root));
    const before = read();
    const same = kind === 'canvas' ? (a, b) => this.samePixels(a, b) : (a, b) => a === b;
    let pressedAt = null;
    document.addEventListener('keydown', () => { pressedAt = performance.now(); },
                              {capture: true, once: true});
    this.pending = new Promise((resolve, reject) => {
      let done = false, observer = null;
      const finish = (value, error) => {
        if (done) return;
        done = true;
        if (observer) observer.disconnect();
        error ? reject(new Error(error)) : resolve(value);
      };
      const check = () => {
        if (pressedAt !== null && !same(before, read())) finish(performance.now() - pressedAt);
      };
      if (kind === 'canvas') {
        // ipympl paints a canvas with drawImage (or putImageData): look at the pixels
        // right after each paint of one of the widget's canvases, and nowhere else, so
        // that watching costs the page nothing between paints.
        const canvases = [...root.querySelectorAll('canvas')];
        const hooked = [];
        for (const canvas of canvases) {
          const ctx = canvas.getContext('2d');
          for (const name of ['drawImage', 'putImageData']) {
            ctx[name] = function (...args) {
              const result = CanvasRenderingContext2D.prototype[name].apply(this, args);
              check();
              return result;
            };
            hooked.push([ctx, name]);
          }
        }
        observer = {disconnect: () => hooked.forEach(([ctx, name]) => delete ctx[name])};
      } else {
        observer = new MutationObserver(check);
        observer.observe(root, {subtree: true, childList: true, characterData: true, attributes: true});
      }
      setTimeout(() => finish(null, `no change within ${timeoutMs} ms`), timeoutMs);
    });
  },

  // The RGBA bytes of every canvas in the widget.
  pixels(root) {
    return [...root.querySelectorAll('canvas')].map(
        c => c.width && c.height
            ? new Uint32Array(c.getContext('2d').getImageData(0, 0, c.width, c.height).data.buffer)
            : new Uint32Array(0));
  },

  samePixels(a, b) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (a[i].length !== b[i].length) return false;
      for (let j = 0; j < a[i].length; j++) if (a[i][j] !== b[i][j]) return false;
    }
    return true;
  },
};
"""


DRAG_PRESSES = 10
DRAG_QUIET = 1.5  # s without a new paint: the drag's final picture has arrived

# Records, during a drag, a copy of a plot's canvas at each paint (drawImage or
# putImageData, the only ways ipympl paints), and the time of each key press. Copying a
# canvas into another is cheap; the pixels are read and compared only after the drag.
_DRAG_JS = r"""
window.__drag = {
  start(root) {
    this.presses = [];
    this.paints = [];
    this.onKey = () => this.presses.push(performance.now());
    document.addEventListener('keydown', this.onKey, {capture: true});
    const canvas = [...root.querySelectorAll('canvas')].find(c => c.width && c.height);
    const ctx = canvas.getContext('2d');
    this.unhook = [];
    for (const name of ['drawImage', 'putImageData']) {
      const paints = this.paints;
      ctx[name] = function (...args) {
        const result = CanvasRenderingContext2D.prototype[name].apply(this, args);
        const copy = document.createElement('canvas');
        copy.width = canvas.width;
        copy.height = canvas.height;
        CanvasRenderingContext2D.prototype.drawImage.call(copy.getContext('2d'), canvas, 0, 0);
        paints.push({t: performance.now(), copy});
        return result;
      };
      this.unhook.push(() => delete ctx[name]);
    }
  },
  lastPaint() { return this.paints.length ? this.paints[this.paints.length - 1].t : -1; },
  stop() {
    document.removeEventListener('keydown', this.onKey, {capture: true});
    this.unhook.forEach(f => f());
    const read = c => new Uint32Array(
        c.getContext('2d').getImageData(0, 0, c.width, c.height).data.buffer);
    const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
    // The pictures shown, in order: a paint that changes nothing is not a new picture.
    const pictures = [];
    for (const p of this.paints) {
      const pixels = read(p.copy);
      if (!pictures.length || !same(pictures[pictures.length - 1].pixels, pixels)) {
        pictures.push({t: p.t, pixels});
      }
    }
    const lastPress = this.presses[this.presses.length - 1];
    const after = pictures.filter(p => p.t > lastPress);
    const final = pictures[pictures.length - 1];
    return {presses: this.presses.length,
            lag: final && final.t > lastPress ? final.t - lastPress : null,
            stale: Math.max(after.length - 1, 0),
            paints: this.paints.length,
            pictures: pictures.length};
  },
};
"""


def time_drags(page, target: Target, drags: int) -> list[dict]:
    """Drag the widget's first slider `drags` times (DRAG_PRESSES key presses each, as
    fast as the browser takes them, alternately right and left); for each drag, the ms
    from the last press to the final picture and the pictures painted in between."""
    root = widget_root(page, target.widget)
    root.scroll_into_view_if_needed()
    page.evaluate(_DRAG_JS)
    handle = root.locator(".noUi-handle, input[type=range]").first
    results = []
    for n in range(drags):
        key = "ArrowRight" if n % 2 == 0 else "ArrowLeft"
        handle.focus()
        root.evaluate("(root) => window.__drag.start(root)")
        for _ in range(DRAG_PRESSES):
            page.keyboard.press(key)
        deadline = time.monotonic() + CHANGE_TIMEOUT_MS / 1000
        while time.monotonic() < deadline:         # until no paint for DRAG_QUIET seconds
            last = page.evaluate("() => window.__drag.lastPaint()")
            time.sleep(DRAG_QUIET)
            if page.evaluate("() => window.__drag.lastPaint()") == last:
                break
        results.append(page.evaluate("() => window.__drag.stop()"))
    return results


def measure(browser, lab, targets: list[Target], timer) -> dict:
    """Open each notebook once, run it, and time each of its targets with timer(page, target)."""
    results = {}
    for notebook in dict.fromkeys(t.notebook for t in targets):
        with lab_page(browser, lab) as page:
            open_notebook(page, lab, notebook)
            run_all(page, notebook)
            for target in (t for t in targets if t.notebook == notebook):
                try:
                    results[label(target)] = timer(page, target)
                except Exception as error:  # say which widget failed, go on with the others
                    print(f"  {label(target)}: not measured: {str(error).splitlines()[0]}")
    return results


def drag_summary(runs: list[dict]) -> str:
    lags = [r["lag"] for r in runs if r["lag"] is not None]
    stale = [r["stale"] for r in runs]
    if not lags:
        return "no final picture after the last press"
    return (f"last press -> final picture: median {statistics.median(lags):6.1f} ms "
            f"(max {max(lags):.1f}, n={len(lags)}); pictures of earlier values after the "
            f"last press: median {statistics.median(stale):g}, max {max(stale)}; "
            f"presses seen {min(r['presses'] for r in runs)}-{max(r['presses'] for r in runs)}")


@dataclass
class Target:
    """A widget to time: w-<widget> in <notebook>, watched as 'text', 'canvas' or 'markup'."""

    role: str  # "floor", "plot floor", "svg" or "plot"
    notebook: str  # relative to the repository root
    widget: str
    kind: str  # what changes: "text", "canvas" (pixels) or "markup" (an HTML widget's)


def parse_target(spec: str, role: str) -> Target:
    notebook, _, widget = spec.partition(":")
    if not widget:
        raise argparse.ArgumentTypeError(f"expected NOTEBOOK:WIDGET, got {spec!r}")
    kind = {"floor": "text", "svg": "markup"}.get(role, "canvas")
    return Target(role, notebook, widget, kind)


def time_key_presses(page, target: Target, presses: int) -> list[float]:
    """Milliseconds from each key press on the widget's first slider to its change.

    Presses alternate right and left, so that the slider never sticks at an end.
    """
    root = widget_root(page, target.widget)
    root.scroll_into_view_if_needed()
    page.evaluate(_LATENCY_JS)
    handle = root.locator(".noUi-handle, input[type=range]").first
    keys = itertools.cycle(["ArrowRight", "ArrowLeft"])
    times = []
    for _ in range(presses):
        root.evaluate("(root, [kind, ms]) => window.__latency.arm(root, kind, ms)",
                      [target.kind, CHANGE_TIMEOUT_MS])
        handle.press(next(keys))
        times.append(page.evaluate("() => window.__latency.pending"))
        time.sleep(SETTLE)
    return times


# Resolves once the notebook at `path`, opened in the lab loaded in the page, is on screen:
# its document read, every cell in the panel, and every picture the first screen holds
# decoded. The kernel may still be starting: it is timed on its own.
_SHOW_JS = """async (path) => {
  const app = window.jupyterapp;
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await panel.context.ready;
  await panel.revealed;
  const cells = () => panel.content.widgets;
  while (cells().length < panel.model.cells.length) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  const box = panel.content.node.getBoundingClientRect();
  const shown = [...panel.node.querySelectorAll('img')].filter((img) => {
    const r = img.getBoundingClientRect();
    return r.top < box.bottom && r.bottom > box.top;
  });
  await Promise.all(shown.map((img) => img.decode().catch(() => null)));
  await new Promise((r) => requestAnimationFrame(r));
}"""


def time_open_and_run_all(browser, lab, notebooks: list[str]) -> dict[str, tuple[float, ...]]:
    """For each notebook, in a fresh page: seconds to start JupyterLab (URL to a restored
    lab), to show the notebook in it (its cells and first screen's pictures drawn), to a
    kernel that answers, and to run all its cells."""
    results = {}
    for notebook in notebooks:
        with lab_page(browser, lab) as page:
            start = time.perf_counter()
            lab_home(page, lab)
            started = time.perf_counter()
            page.evaluate(_SHOW_JS, notebook)
            shown = time.perf_counter()
            open_here(page, notebook)
            ready = time.perf_counter()
            run_all(page, notebook)
            results[notebook] = (started - start, shown - started, ready - shown,
                                 time.perf_counter() - ready)
    return results


def label(target: Target) -> str:
    return f"{target.role:10} {target.notebook} w-{target.widget}"


def machine() -> str:
    model = "unknown CPU"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (f"{model}, {os.cpu_count()} cores; Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


def summary(times: list[float]) -> str:
    return (f"median {statistics.median(times):6.1f} ms  "
            f"(min {min(times):.1f}, max {max(times):.1f}, n={len(times)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floor", default=DEFAULT_FLOOR, metavar="NOTEBOOK:WIDGET",
                        help=f"the bare slider -> label widget (default {DEFAULT_FLOOR})")
    parser.add_argument("--plot-floor", default=DEFAULT_PLOT_FLOOR, metavar="NOTEBOOK:WIDGET",
                        help=f"the cheapest live plot (default {DEFAULT_PLOT_FLOOR})")
    parser.add_argument("--svg", default=DEFAULT_SVG, metavar="NOTEBOOK:WIDGET",
                        help=f"the bar drawn by the browser, for comparison (default {DEFAULT_SVG})")
    parser.add_argument("--plot", action="append", metavar="NOTEBOOK:WIDGET",
                        help="a slider -> ipympl plot widget; repeatable "
                             f"(default {' and '.join(DEFAULT_PLOTS)})")
    parser.add_argument("--presses", type=int, default=20, help="key presses per widget (default 20)")
    parser.add_argument("--no-run-all", action="store_true",
                        help="skip timing open + run all of each notebook")
    parser.add_argument("--drags", type=int, default=5,
                        help=f"drags ({DRAG_PRESSES} fast presses each) per plot (default 5)")
    parser.add_argument("--only-drag", action="store_true",
                        help="measure only the drags of the plots")
    parser.add_argument("--only-open", action="store_true",
                        help="measure only opening and running each notebook")
    args = parser.parse_args()

    plots = args.plot or DEFAULT_PLOTS
    targets = [parse_target(args.floor, "floor"), parse_target(args.plot_floor, "plot floor"),
               parse_target(args.svg, "svg")]
    targets += [parse_target(spec, "plot") for spec in dict.fromkeys(plots)]
    notebooks = [] if args.no_run_all else [
        p.relative_to(REPO_ROOT).as_posix() for p in sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))]

    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    print("machine:", machine())
    with running_lab(REPO_ROOT) as lab, running_chromium() as browser:
        print(f"browser: Chromium {browser.version}\n")
        plot_targets = [t for t in targets if t.role == "plot"]
        latencies = {}
        if args.only_open:
            args.drags = 0
        if args.drags:
            print(f"drag: {DRAG_PRESSES} fast key presses on the slider ({args.drags} drags each):")
            drags = measure(browser, lab, plot_targets,
                            lambda page, target: time_drags(page, target, args.drags))
            for name, runs in drags.items():
                print(f"  {name:60} {drag_summary(runs)}")
            print()
        if args.only_drag:
            return
        if not args.only_open:
            print(f"key press -> change ({args.presses} presses each):")
            latencies = measure(browser, lab, targets,
                                lambda page, target: time_key_presses(page, target, args.presses))
            for name, times in latencies.items():
                print(f"  {name:60} {summary(times)}")
            medians = {label(t): statistics.median(latencies[label(t)])
                       for t in targets if label(t) in latencies}
            floor, plot_floor = (medians.get(label(t)) for t in targets[:2])
            for target in targets[1:]:
                if floor and label(target) in medians:
                    ratios = f"{medians[label(target)] / floor:.1f}x the floor"
                    if plot_floor and target.role == "plot":
                        ratios += f", {medians[label(target)] / plot_floor:.1f}x the plot floor"
                    print(f"  w-{target.widget}: {ratios}")
        if notebooks:
            print("\neach notebook in a fresh page: start JupyterLab, show the notebook in it,"
                  " kernel ready, run all:")
            for notebook, (lab_start, shown, kernel, ran) in time_open_and_run_all(
                    browser, lab, notebooks).items():
                print(f"  {notebook:34} lab {lab_start:4.1f} s   show {shown:4.1f} s   "
                      f"kernel +{kernel:4.1f} s   run all {ran:5.1f} s")
    if not latencies and not args.only_open:
        sys.exit("nothing measured")


if __name__ == "__main__":
    main()
