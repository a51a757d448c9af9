"""The offline HTML edition (tools/export_html.py): pages that open from disk.

Exports every notebook of notebooks/ into a temporary folder, then checks the pages:
every stored picture (each widget's among them) is an <img> in its page, and each
widget's says how to make it live; no script, style or picture that would come from
the network; every link to another notebook leads to its page; and, in Debian's
Chromium with every network request refused, each page loads with no failed request
and shows every stored picture.
"""

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from browser_harness import REPO_ROOT
from browser_visit import NOTE, is_widget_output


NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
# The export is made once for the run (conftest's html_edition), in the browser tests'
# worker: one of these tests opens the pages in their Chromium.
pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture
def pages(html_edition):
    assert [p.stem for p in html_edition] == [n.stem for n in NOTEBOOKS]
    return html_edition


IMG = re.compile(r"<img\b", re.I)


def outputs(notebook: Path) -> list[dict]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [o.get("data", {}) for c in cells for o in c.get("outputs", [])]


def has_picture(data: dict) -> bool:
    """An output shows a picture: a PNG, or HTML with an <img> (which a page shows instead)."""
    return "image/png" in data or bool(IMG.search("".join(data.get("text/html", ""))))


def stored_pictures(notebook: Path) -> int:
    return sum(has_picture(o) for o in outputs(notebook))


def widget_pictures(notebook: Path) -> int:
    return sum(has_picture(o) for o in outputs(notebook) if is_widget_output(o))


def notes(page_text: str) -> int:
    """How many times the page's text says, in one sentence, that what it shows is a
    picture and that running the cells makes it live (browser_visit.NOTE)."""
    text = re.sub(r"<[^>]+>", " ", page_text)
    return sum(all(rule.search(s) for rule in NOTE) for s in re.split(r"[.!;\n]\s", text))


def test_every_stored_picture_is_an_img_in_its_page(pages):
    """Counting <img> takes a second: a page that lost a widget's picture shows at once."""
    wrong = []
    for page, notebook in zip(pages, NOTEBOOKS):
        shown = len(IMG.findall(page.read_text(encoding="utf-8")))
        if shown != stored_pictures(notebook):
            wrong.append(f"{page.name}: {shown} <img>, but the notebook stores "
                         f"{stored_pictures(notebook)} pictures ({widget_pictures(notebook)} "
                         "of them widgets')")
    assert not wrong, "\n".join(wrong)
    assert sum(widget_pictures(n) for n in NOTEBOOKS) > 0, "no notebook stores a widget picture"


def test_each_widget_picture_says_how_to_make_it_live(pages):
    wrong = [f"{page.name}: {notes(page.read_text(encoding='utf-8'))} notes for "
             f"{widget_pictures(notebook)} widget pictures"
             for page, notebook in zip(pages, NOTEBOOKS)
             if notes(page.read_text(encoding="utf-8")) < widget_pictures(notebook)]
    assert not wrong, ("a widget's picture in the HTML edition without a line saying it is a "
                       "picture and to run the cells:\n" + "\n".join(wrong))


def test_nothing_is_loaded_from_the_network(pages):
    for page in pages:
        text = page.read_text(encoding="utf-8")
        remote = re.findall(r'<(?:script|img|link|iframe)[^>]*(?:src|href)="(?:https?:)?//[^"]*"', text)
        remote += re.findall(r'@import\s+url\(\s*["\']?(?:https?:)?//[^)]*\)', text)
        assert not remote, f"{page.name} loads {remote[:3]}"


def test_links_between_notebooks_lead_to_their_pages(pages):
    """A link to a notebook leads to its page; any other relative link still finds its
    file from html/ (a sibling of notebooks/, so `../data/x` means the same there)."""
    names = {n.stem for n in NOTEBOOKS}
    dead = []
    for page in pages:
        for href in re.findall(r'href="([^"#:]+)(?:#[^"]*)?"', page.read_text(encoding="utf-8")):
            if href.endswith(".ipynb"):
                why = "not to its page" if Path(href).stem in names else "no such notebook"
                dead.append(f"{page.name}: {href} ({why})")
            elif href.startswith("../"):
                if not (REPO_ROOT / "html" / unquote(href)).resolve().exists():
                    dead.append(f"{page.name}: {href}")
            elif not (page.parent / unquote(href)).exists():
                dead.append(f"{page.name}: {href}")
    assert not dead, "dead links:\n" + "\n".join(dead)


@pytest.mark.browser
def test_pages_open_offline_with_every_picture(pages, browser):
    problems = []
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    refused = []

    def only_files(route):
        if urlparse(route.request.url).scheme in ("file", "data"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    page = context.new_page()
    failed = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    for path, notebook in zip(pages, NOTEBOOKS):
        refused.clear()
        failed.clear()
        page.goto(path.as_uri(), wait_until="load")
        shown = page.evaluate("""() => {
            const imgs = [...document.querySelectorAll('img')];
            return {pictures: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
                    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length,
                    raw: /VBox\\(children=|HBox\\(children=/.test(document.body.innerText)};
        }""")
        expected = stored_pictures(notebook)
        if refused or failed:
            problems.append(f"{path.name}: requests refused {refused[:3]}, failed {failed[:3]}")
        if shown["broken"] or shown["pictures"] != expected:
            problems.append(f"{path.name}: {expected} stored pictures, shown {shown}")
        if shown["raw"]:
            problems.append(f"{path.name}: shows a widget's raw text")
    context.close()
    assert not problems, "\n".join(problems)
