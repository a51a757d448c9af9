"""The HTML edition's worked answers and its index (tools/export_html.py).

A reader of the HTML edition has no kernel to ask an exercise's checker, so each exercise
cell of each page is followed by its worked answer, folded in a <details> that is closed
until the reader opens it. Checked here on every notebook of notebooks/:
- every exercise the notebook shows (`tw.exercise("NN.k")`) has exactly one folded answer,
  in the notebook's order, and no <details> on any page is open by default;
- the answer is the checker's own: the same HTML the exercise's "Show the answer" button
  puts on screen, and, read as text, the registry's worked answer (toy_widgets/exercises.py);
- the index numbers each step once, lists the labs one way, and every page links back to it.
"""
import html
import json
import re
import sys
from pathlib import Path

import ipywidgets as widgets
import numpy as np
import pytest
from widget_tools import find

import toy_model as tm
import toy_widgets as tw

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))
from export_html import export  # noqa: E402  (tools/ is not a package)


NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CALL = re.compile(r'tw\.exercise\("(\d\d\.\d+)"')
FOLDED = re.compile(r'<details(?P<attrs>[^>]*)>\s*<summary>(?P<summary>.*?)</summary>(?P<body>.*?)</details>',
                    re.S)


# The export is made once for the run (conftest's html_edition), in the worker of the
# browser tests, where test_export_html opens the pages.
pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def pages(html_edition):
    assert [p.stem for p in html_edition] == [n.stem for n in NOTEBOOKS]
    return {p.stem: p.read_text(encoding="utf-8") for p in html_edition} | {
        "index": (html_edition[0].parent / "index.html").read_text(encoding="utf-8")}


def shown_keys(notebook: Path) -> list[str]:
    """The exercises a notebook shows, in order (one `tw.exercise(...)` line each)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [m.group(1) for c in cells if c["cell_type"] == "code"
            for m in [CALL.match("".join(c["source"]).strip())] if m]


def not_written(*args):
    raise NotImplementedError


def checker_answer(key: str) -> str:
    """What the exercise's own "Show the answer" button puts on screen: the one text of
    the box that the button fills (empty until then)."""
    code = tw.EXERCISES[key]["kind"] == "code"
    box = tw.exercise(key, not_written) if code else tw.exercise(key)
    texts = find(box, widgets.HTML)
    before = [t.value for t in texts]
    box.show_answer()
    filled = [t.value for t, old in zip(texts, before, strict=True) if t.value != old]
    assert len(filled) == 1 and before[texts.index(next(t for t in texts if t.value == filled[0]))] == "", (
        f"{key}: the button fills one empty text with the answer")
    return filled[0]


def as_text(fragment: str) -> str:
    """An HTML fragment read as plain text, whitespace collapsed."""
    text = re.sub(r"<[^>]+>", "", re.sub(r"</p>", " ", fragment))      # paragraphs end with a space
    return " ".join(html.unescape(text).split())


def registry_text(key: str) -> str:
    """The registry's worked answer as plain text: computed now, `code` marks dropped."""
    solution = tw.EXERCISES[key]["solution"]
    text = solution() if callable(solution) else solution
    return " ".join((text if tw.EXERCISES[key]["kind"] == "code" else text.replace("`", "")).split())


def folded(page: str) -> list[re.Match]:
    return [m for m in FOLDED.finditer(page) if 'class="worked-answer"' in m.group("attrs")]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_exercise_has_one_folded_answer_in_order(pages, notebook):
    keys = shown_keys(notebook)
    found = [re.search(r'data-exercise="([^"]+)"', m.group("attrs")).group(1)
             for m in folded(pages[notebook.stem])]
    assert found == keys


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_answer_is_closed_until_opened(pages, notebook):
    tags = re.findall(r"<details\b[^>]*>", pages[notebook.stem])
    assert len(tags) >= len(shown_keys(notebook)) > 0
    opened = [t for t in tags if re.search(r"\bopen\b", t)]
    assert not opened, f"{notebook.stem}: open by default: {opened[:2]}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_answer_is_the_checkers_worked_answer(pages, notebook):
    answers = {re.search(r'data-exercise="([^"]+)"', m.group("attrs")).group(1): m
               for m in folded(pages[notebook.stem])}
    for key in shown_keys(notebook):
        m = answers[key]
        # the same HTML as the checker's (the page may spell a quote &#x27; or ')
        assert html.unescape(m.group("body")) == html.unescape(checker_answer(key)), key
        assert as_text(m.group("body")) == registry_text(key), key
        assert key in m.group("summary") and "Show" in m.group("summary")


def test_the_answers_are_only_in_the_html_edition():
    """The stored notebooks keep hiding them (the export adds them to its copy only)."""
    for notebook in NOTEBOOKS:
        assert "worked-answer" not in notebook.read_text(encoding="utf-8"), notebook.stem


def test_index_numbers_each_step_once_and_lists_the_labs_one_way(pages):
    index = pages["index"]
    assert "<ol" not in index, "the titles carry their own numbers"
    entries = re.findall(r'<li><a href="([^"]+)\.html">([^<]+)</a></li>', index)
    assert [name for name, _ in entries] == [n.stem for n in NOTEBOOKS]
    titles = [html.unescape(t) for _, t in entries]
    steps = [t for name, t in entries if name[:2] <= "07"]
    assert all(re.match(rf"{i} \D", t) for i, t in enumerate(steps, start=1)), steps
    assert not any(re.match(r"\d+\.?\s+\d", t) for t in titles), "a number twice"
    labs = [t for name, t in entries if name[:2] > "07"]
    assert labs and not any(re.match(r"Lab\s*[:·]", t) for t in labs), labs
    assert index.index("<h2>Labs</h2>") > index.index(steps[-1])


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_page_links_back_to_the_index(pages, notebook):
    links = re.findall(r'<nav class="course-index"><a href="index.html">[^<]+</a></nav>', pages[notebook.stem])
    assert len(links) == 2, "a link at the top and one at the bottom"


def test_a_page_keeps_its_answers_when_exported_alone(tmp_path):
    (page,) = export([REPO_ROOT / "notebooks" / "04_mask_and_heads.ipynb"], tmp_path)
    text = page.read_text(encoding="utf-8")
    assert len(folded(text)) == len(shown_keys(REPO_ROOT / "notebooks" / "04_mask_and_heads.ipynb"))
    assert np.all([m.group("body") for m in folded(text)])
