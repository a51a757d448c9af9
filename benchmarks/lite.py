"""How fast is the browser edition? The offline build, served on 127.0.0.1 to Debian's
Chromium with every other host refused, as tests/test_lite.py runs it (the launch code is
shared: tests/lite_harness.py). Measures:

  build    tools/build_lite.py --offline, from nothing to the written site (downloads
           already in the cache);
  kernel   from opening a notebook's URL in a fresh browser context to a live kernel: one
           that has run a cell and finds ipympl and toy_model installed;
  run all  Run All of that notebook, until every cell has run (or an error stopped it),
           with any problem Run All left (errors, widgets that did not render);
and the requests refused (there must be none).

    python benchmarks/lite.py                                  # every notebook of notebooks/
    python benchmarks/lite.py notebooks/06_output.ipynb --repeat 3
    python benchmarks/lite.py --cdn notebooks/01_tokens.ipynb  # the site as published

With --cdn the site is built as it is published, loading Pyodide's packages from Pyodide's
CDN; the CDN cannot be reached here, so its requests are answered from the offline build's
copy of the same files (tests/lite_harness.Offline), and counted.

Each notebook opens in a fresh browser context (an empty cache): the kernel figure is
a learner's first visit. This is a script, not a test: it prints figures and fails only
if it cannot measure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tools")]

from browser_harness import notebook_problems, run_all  # noqa: E402
from build_lite import CDN, build  # noqa: E402
from lite_harness import TEST_SETTINGS, Offline, open_lite, serving  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="paths like notebooks/06_output.ipynb "
                                                     "(default: all of notebooks/)")
    parser.add_argument("--repeat", type=int, default=1, help="visits per notebook")
    parser.add_argument("--cdn", action="store_true",
                        help="the site as published (Pyodide's packages from its CDN), the CDN "
                             "answered from the offline build's copy of the same files")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or [f"notebooks/{p.name}" for p in sorted((ROOT / "notebooks").glob("*.ipynb"))]

    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        site = build(Path(tmp) / "lite", offline=True, extra_settings=TEST_SETTINGS)
        print(f"build --offline: {time.monotonic() - start:.1f} s")
        cdn = None
        if args.cdn:
            cdn = (CDN, site / "pyodide")
            start = time.monotonic()
            site = build(Path(tmp) / "lite-cdn", offline=False, extra_settings=TEST_SETTINGS)
            print(f"build (CDN mode): {time.monotonic() - start:.1f} s")
        with serving(site) as url, sync_playwright() as playwright:
            offline = Offline(playwright, cdn)
            try:
                for path in notebooks:
                    kernels, runs = [], []
                    for _ in range(args.repeat):
                        page = offline.page()
                        try:
                            kernels.append(open_lite(page, url, path))
                            start = time.monotonic()
                            run_all(page, path, timeout=300)
                            runs.append(time.monotonic() - start)
                            problems = notebook_problems(page, path)
                        finally:
                            page.context.close()
                    print(f"{path}: kernel {statistics.median(kernels):.1f} s, run all "
                          f"{statistics.median(runs):.1f} s (median of {args.repeat})"
                          + (f"; {len(problems)} problems: " + " | ".join(p[:160] for p in problems)
                             if problems else ""))
            finally:
                offline.close()
            if args.cdn:
                print(f"requests answered as the CDN: {len(offline.from_cdn)}, of which not "
                      f"on it: {sum(not (cdn[1] / u.rsplit('/', 1)[-1]).is_file() for u in offline.from_cdn)}")
            print(f"requests refused: {len(offline.refused)}"
                  + (f" ({offline.refused[:3]})" if offline.refused else ""))


if __name__ == "__main__":
    main()
