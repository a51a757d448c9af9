"""Write the course's notebooks as HTML pages that open offline, in any browser.

    python tools/export_html.py                      # every notebook in notebooks/ -> html/
    python tools/export_html.py --out /tmp/course notebooks/06_output.ipynb

Each notebook becomes one page, with its stored outputs: every widget shows the picture
of its first state that the notebook stores with it (or, for a widget without a plot,
its text), links between notebooks lead to the pages, and index.html lists them all.
A reader of a page has no kernel to ask an exercise's checker, so under each exercise
the page folds its worked answer (a closed <details>, the checker's own text); every
page links back to the index.
Nothing is loaded from the network: no require.js, no MathJax, no widget scripts from
a CDN (the course writes no formulas that need MathJax); the styles and the pictures are
inside each page. The pages show the notebooks as stored: run tools/run_notebooks.py
first if they are out of date. html/ is not committed (.gitignore).
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

import jinja2
import nbformat
from nbconvert import HTMLExporter

REPO_ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
EXERCISE_CELL = re.compile(r'\s*tw\.exercise\("(\d\d\.\d+)"(?:,\s*\w+)?\)\s*')   # the one-line call

# JupyterLab's look (nbconvert's "lab" template) without the scripts it loads from CDNs.
OFFLINE_TEMPLATE = """\
{%- extends 'index.html.j2' -%}
{% block html_head_js_requirejs %}{% endblock html_head_js_requirejs %}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{% block html_head_js_mathjax %}{% endblock html_head_js_mathjax %}
{% block html_head_js_mermaidjs %}{% endblock html_head_js_mermaidjs %}
{% block extra_css %}
<style>
  /* a reading edition: the page, not the kernel's prompts; pictures fit the page */
  .jp-OutputArea-output img { max-width: 100%; height: auto; }
  body.jp-Notebook { max-width: 1100px; margin: 0 auto; }
  nav.course-index { margin: 0.6em 0; font-size: 15px; }
  details.worked-answer { border-left: 3px solid #0072B2; margin: 0.4em 0 1em; padding: 0.2em 0.8em; }
  details.worked-answer > summary { cursor: pointer; font-weight: bold; color: #0072B2; }
</style>
{% endblock extra_css %}
{% block body_header %}
{{ super() }}
<nav class="course-index"><a href="index.html">← All notebooks</a></nav>
{% endblock body_header %}
{% block body_footer %}
<nav class="course-index"><a href="index.html">← All notebooks</a></nav>
{{ super() }}
{% endblock body_footer %}
"""


def exporter() -> HTMLExporter:
    return HTMLExporter(
        template_name="lab",
        extra_loaders=[jinja2.DictLoader({"offline.html.j2": OFFLINE_TEMPLATE})],
        template_file="offline.html.j2",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )


def without_live_widgets(notebook):
    """The notebook with each widget output reduced to its stored picture or text (the
    widget view would need widget scripts from the network, and a kernel to move)."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
    notebook.metadata.pop("widgets", None)
    return notebook


def worked_answer(key: str) -> str:
    """Exercise `key`'s worked answer, folded: a <details> closed until the reader opens
    it, holding the HTML the checker's "Show the answer" button shows."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from toy_widgets.exercises import worked_answer_html
    label = "Show a solution" if key_kind(key) == "code" else "Show the answer"
    return (f'<details class="worked-answer" data-exercise="{html.escape(key)}">'
            f"<summary>{label} ({html.escape(key)})</summary>{worked_answer_html(key)}</details>")


def key_kind(key: str) -> str:
    from toy_widgets.exercises import EXERCISES
    return EXERCISES[key]["kind"]


def with_worked_answers(notebook):
    """The notebook with each exercise cell (`tw.exercise("03.1")`) followed by its
    worked answer, folded (an output of its own, after the exercise's)."""
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        match = EXERCISE_CELL.fullmatch(cell.source)
        if match:
            cell.outputs.append(nbformat.v4.new_output(
                "display_data", data={"text/html": worked_answer(match.group(1))}))
    return notebook


def linked_pages(page: str, names: set[str]) -> str:
    """Links to notebooks that have a page (`02_embeddings.ipynb#x`) lead to the page."""
    def to_page(match):
        target, anchor = match.group(2), match.group(3) or ""
        return f'{match.group(1)}{target}.html{anchor}"' if target in names else match.group(0)
    return re.sub(r'(href=")([^"/#:]+)\.ipynb(#[^"]*)?"', to_page, page)


def title(notebook, fallback: str) -> str:
    """The notebook's first heading, as plain text."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#+\s+(.+)$", cell.source, flags=re.MULTILINE)
            if match:
                return re.sub(r"[*_`]", "", match.group(1)).strip()
    return fallback


LAB = re.compile(r"^Lab\s*[:·—-]\s*")                # "Lab: Training", "Lab · GPT-2"


def index_title(text: str) -> str:
    """A page's title as the index lists it: a lab's without its "Lab:" or "Lab ·" (the
    index lists the labs under their own heading)."""
    return LAB.sub("", text.strip())


def index_page(entries: list[tuple[str, str]]) -> str:
    """The list of pages. The steps' titles carry their own numbers ("1 Tokens ..."), so
    the list adds none of its own; the labs follow the seven steps, as in the map."""
    def items(rows):
        return "\n".join(f'    <li><a href="{html.escape(name)}.html">{html.escape(index_title(text))}</a></li>'
                          for name, text in rows)
    labs = [(name, text) for name, text in entries if LAB.match(text.strip())]
    steps = [entry for entry in entries if entry not in labs]
    lab_list = f"""  <h2>Labs</h2>
  <ul class="pages">
{items(labs)}
  </ul>
""" if labs else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>From text to the next token</title>
<style>body {{ font-family: sans-serif; max-width: 40em; margin: 2em auto; line-height: 1.5; }}
ul.pages {{ list-style: none; padding-left: 0; }}</style>
</head>
<body>
  <h1>From text to the next token</h1>
  <p>The course's notebooks as pages, with their stored outputs: each widget shows its
  first state as a picture. To move the sliders, open the notebooks in JupyterLab.
  Under each exercise its worked answer is folded: try the exercise first, then open it.</p>
  <h2>The seven steps</h2>
  <ul class="pages">
{items(steps)}
  </ul>
{lab_list}</body>
</html>
"""


def export(paths: list[Path], out: Path) -> list[Path]:
    """Write one page per notebook, and index.html, into `out`; return the pages."""
    out.mkdir(parents=True, exist_ok=True)
    names = {p.stem for p in paths}
    html_exporter = exporter()
    written, entries = [], []
    for path in paths:
        notebook = with_worked_answers(without_live_widgets(nbformat.read(path, as_version=4)))
        page, _ = html_exporter.from_notebook_node(notebook, resources={"metadata": {"name": path.stem}})
        target = out / f"{path.stem}.html"
        target.write_text(linked_pages(page, names), encoding="utf-8")
        written.append(target)
        entries.append((path.stem, title(notebook, path.stem)))
    (out / "index.html").write_text(index_page(entries), encoding="utf-8")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to export (default: every notebook in notebooks/)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "html",
                        help="the folder to write the pages into (default: html/)")
    args = parser.parse_args()
    missing = [str(p) for p in args.notebooks if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    paths = args.notebooks or sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
    for page in export(paths, args.out):
        print(page)
    print(args.out / "index.html")


if __name__ == "__main__":
    main()
