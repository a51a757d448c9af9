"""What every notebook promises, read from the stored .ipynb files (nbval reruns them).

- every figure with 3 decimals that the prose quotes is printed, sign included, by a code
  cell above it in its section, and the sentences in CLAIMS quote their computed value;
- the course map with "you are here", the in/out line, links to the neighbours;
- at least three "Check yourself" exercises, each one line (tw.exercise), and no answer on the page;
- stored as run top to bottom on a fresh kernel, with no error in any output;
- stored as tools/run_notebooks.py writes it: a fresh run gives the same pictures, execution
  counts and metadata, what nbval does not compare (slow where nbval did not run it).
"""
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from run_notebooks import executed, joined_streams  # noqa: E402  (tools/ is not a package)
from nbval_recording import recorder  # noqa: E402
from widget_tools import output_pngs  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NAMES = ["01_tokens", "02_embeddings", "03_qkv", "04_mask_and_heads", "05_block", "06_output",
         "07_generation"]
LABS = ["08_training", "09_gpt2", "10_induction", "11_writes"]      # after the seven steps; the map shows them as labs
THREE_DECIMALS = re.compile(r"(?<![\d.])[-−]?\d+\.\d{3}(?![\d])")


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def markdown(nb):
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def output_text(nb):
    """All text the code cells showed: streams, text/plain, HTML (widgets' text included)."""
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if "text" in out:
                parts.append("".join(out["text"]))
            for mime in ("text/plain", "text/html", "text/markdown"):
                if mime in out.get("data", {}):
                    parts.append("".join(out["data"][mime]))
    return "\n".join(parts).replace("−", "-")


def test_the_steps_notebooks_exist_in_order():
    assert [p.stem for p in NOTEBOOKS if p.stem not in LABS] == NAMES


def figures(text):
    """The 3-decimal figures in a text, each with its sign (− written as -)."""
    return {m.replace("−", "-") for m in THREE_DECIMALS.findall(text)}


def cell_output_text(cell):
    return output_text({"cells": [cell]})


# Sentences whose figure must be one particular value, not just some printed number:
# (the sentence with {} where the figure stands, the expression that computes it).
CLAIMS = {
    "03_qkv": [
        ("has the largest query, {}", "tm.intermediates()['heads'][0]['q'][4, 0]"),
        ("Row 5's output, {}, is almost exactly", "tm.intermediates()['heads'][0]['out'][4, 0]"),
    ],
    "04_mask_and_heads": [
        ("`␣the` gains {} on d2", "tm.intermediates()['attn'][4, 1]"),
        ("puts {} on `␣cat`", "tm.intermediates()['heads'][1]['weights'][2, 1]"),
        ("row 1 keeps only {} of its weight", "open_weights_by_hand()[0][0, 0]"),
        ("follows the louder question, {} on", "tm.softmax(np.where(tm.causal_mask(5), "
         "tm.intermediates()['q'] @ tm.intermediates()['k'].T / 2, -np.inf))[4, 2]"),
    ],
    "05_block": [
        ("y₅ = [{},", "tm.intermediates()['y'][4, 0]"),
        ("`␣roof` leads with {}", "tm.intermediates()['p'][4, tm.VOCAB.index(' roof')]"),
    ],
    "06_output": [
        ("which is {} of the total", "tm.intermediates()['p'][4, tm.VOCAB.index(' roof')]"),
        ("its mean loss, {} nats", "tm.cross_entropy(tm.intermediates()['logits'], TARGETS)"),
        ("add up to {}", "np.exp(tm.intermediates()['logits'][4]).sum()"),
    ],
    "07_generation": [
        ("three tokens hold {} together",
         "np.sort(tm.softmax(tm.forward(tm.encode('the cat climbed'))[-1]))[-3:].sum()"),
        ("␣roof alone already has {}",
         "tm.next_token_probs(tm.intermediates()['logits'][4], 1, top_k=3)[tm.VOCAB.index(' roof')]"),
    ],
}


def claimed_value(expression):
    import numpy as np
    import toy_model as tm
    import toy_widgets as tw
    targets = tm.encode("the cat climbed the roof")[1:]
    from widget_tools import open_weights_by_hand
    return tw.fmt(eval(expression, {"np": np, "tm": tm, "tw": tw, "TARGETS": targets,
                                    "open_weights_by_hand": open_weights_by_hand}))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_quoted_in_prose_is_computed(path):
    """A figure in the prose must be printed, with its sign, by a code cell above it in the
    same section (a `## ` heading starts one). The sentences in CLAIMS must give their
    figure its computed value (a figure that some other line of the section also prints)."""
    nb = load(path)
    missing, shown = [], set()
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            shown |= figures(cell_output_text(cell))
            continue
        for n, part in enumerate(re.split(r"^(?=## )", source, flags=re.M)):
            if n > 0 or part.startswith("## "):
                shown = set()
            missing += [(i, q) for q in sorted(figures(part) - shown)]
    assert not missing, (f"{path.name}: (cell, figure) quoted in prose that no cell above it "
                         f"in its section prints: {missing}")
    prose = "\n".join(markdown(nb)).replace("−", "-")
    for sentence, expression in CLAIMS.get(path.stem, []):
        pattern = re.escape(sentence).replace(r"\{\}", r"(-?\d+\.\d{3})")
        found = re.findall(pattern, prose)
        assert found, f"{path.name}: the sentence {sentence!r} is gone; update CLAIMS"
        value = claimed_value(expression)
        assert all(f == value for f in found), (
            f"{path.name}: {sentence!r} quotes {found}, but {expression} is {value}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_map_in_out_line_and_links(path):
    nb = load(path)
    first = "".join(markdown(nb)[:3])
    assert "you are here" in first and "**In:**" in first and "**Out:**" in first
    assert all(f"({name}.ipynb)" in first for name in NAMES), "the map links every step"
    last = markdown(nb)[-1]
    order = NAMES + LABS                # a lab links back to the notebook before it
    i = order.index(path.stem)
    neighbours = ([order[i - 1]] if i > 0 else []) + ([order[i + 1]] if i < 6 else [])
    assert all(f"({n}.ipynb)" in last for n in neighbours), "the last cell links the neighbours"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_check_yourself_exercises_are_one_line_each_with_no_answer_on_the_page(path):
    """Exercises live in the module: a notebook shows each with `tw.exercise("NN.k")` (a
    write-it-yourself one passes the learner's function too), numbered in page order, from
    notebook 02 on at least one of them a write-it-yourself; no folded answers or answer
    code on the page."""
    nb = load(path)
    text = "\n".join(markdown(nb))
    number = path.stem[:2]
    calls = [re.fullmatch(r'tw\.exercise\("(\d\d)\.(\d+)"(, \w+)?\)', "".join(c["source"]).strip())
             for c in nb["cells"] if c["cell_type"] == "code" and "tw.exercise(" in "".join(c["source"])]
    assert "check yourself" in text.lower()
    assert len(calls) >= 3 and all(calls), "each exercise cell is the one line tw.exercise(...)"
    assert {m.group(1) for m in calls} == {number}, "a notebook shows its own exercises"
    assert [int(m.group(2)) for m in calls] == list(range(1, len(calls) + 1)), "in page order"
    assert number == "01" or any(m.group(3) for m in calls), "a write-it-yourself exercise"
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "<details>" not in text and not re.search(r"check_(number|choice)\(|answer=", code)


def test_no_notebook_stores_an_error():
    errors = [(p.name, o) for p in NOTEBOOKS for c in load(p)["cells"] for o in c.get("outputs", [])
              if o["output_type"] == "error" or o.get("name") == "stderr"]
    assert not errors, f"stored error output: {errors[:1]}"


PNG = re.compile(r"iVBORw0KGgo[A-Za-z0-9+/=]{100,}")          # a base64 PNG, wherever it is stored


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_picture_is_stored_once_and_the_notebook_is_small(path):
    """An output stores its picture once: as its PNG or inside its HTML, not both, and not
    again in saved widget state; so a notebook stays under 500 kB and opens quickly."""
    text = path.read_text(encoding="utf-8")
    for cell in json.loads(text)["cells"]:
        for output in cell.get("outputs", []):
            pictures = PNG.findall(json.dumps(output))
            assert len(pictures) == len(set(pictures)), f"an output of {cell['source'][:1]} stores a picture twice"
    assert "widget-state+json" not in text and "widget-view+json" not in text, \
        "widget state or views stored: rerun with python tools/run_notebooks.py"
    assert path.stat().st_size <= 500_000, f"{path.stat().st_size:,} bytes"


def test_the_notebooks_together_are_at_most_3_mb():
    assert sum(p.stat().st_size for p in NOTEBOOKS) <= 3_000_000


def test_a_widget_is_stored_as_its_picture_under_the_line_that_says_so():
    """stored_form keeps a widget's HTML form (the note and the picture) and drops what
    repeats it or cannot be shown without a kernel; other outputs are left alone."""
    from run_notebooks import WIDGET_VIEW, stored_form
    widget = {WIDGET_VIEW: {"model_id": "x"}, "image/png": "iVBO", "text/plain": "[w]",
              "text/html": '<div class="course-widget"><p>note</p><img src="data:image/png;base64,iVBO"></div>'}
    assert set(stored_form(widget)) == {"text/html", "text/plain"}
    plot = {"image/png": "iVBO", "text/plain": "<Figure>"}
    assert stored_form(dict(plot)) == plot
    bare = {WIDGET_VIEW: {"model_id": "x"}, "text/plain": "IntSlider(value=0)"}
    assert stored_form(dict(bare)) == {"text/plain": "IntSlider(value=0)"}    # no random model id


def test_printed_text_is_stored_as_one_output_however_the_kernel_cut_it():
    from nbformat.v4 import new_output
    cut = [new_output("stream", name="stdout", text="a = 1\n"), new_output("stream", name="stdout", text="b = 2\n"),
           new_output("stream", name="stderr", text="careful\n"),
           new_output("execute_result", data={"text/plain": "3"}, execution_count=1),
           new_output("stream", name="stdout", text="c\n")]
    joined = joined_streams(cut)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in joined] == [
        ("stream", "stdout", "a = 1\nb = 2\n"), ("stream", "stderr", "careful\n"),
        ("execute_result", None, None), ("stream", "stdout", "c\n")]


@pytest.mark.slow
@pytest.mark.after_nbval
@pytest.mark.parametrize("path", [*NOTEBOOKS, Path(__file__).parent / "fixtures" / "widget_demo.ipynb"],
                         ids=lambda p: p.stem)
def test_a_fresh_run_stores_the_same_file(path, request):
    """What nbval does not compare: the stored file is what a fresh run stores (pictures,
    a widget's stored picture, execution counts from 1 in order, metadata, no timestamps).
    nbval's own run of the notebook serves where it ran in this worker
    (tests/nbval_recording.py); otherwise the notebook is run here. The texts nbval compares
    are left out here: a changed text is reported by nbval itself."""
    fresh = json.loads(not_compared_by_nbval(recorder(request.config).stored_text(path) or executed(path)))
    stored = json.loads(not_compared_by_nbval(path.read_text(encoding="utf-8")))
    changed = [i for i, (a, b) in enumerate(zip(stored["cells"], fresh["cells"], strict=True)) if a != b]
    assert not changed and stored["metadata"] == fresh["metadata"], (
        f"{path.name}: cells {changed} (or the metadata) differ from a fresh run: a picture, a widget's "
        "stored form or an execution count. If your change meant it, store the fresh run "
        "(python tools/run_notebooks.py) and commit it; if not, the code is wrong.")


NBVAL_SKIPS = ("image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json")   # tests/sanitize.cfg


def not_compared_by_nbval(text):
    """The notebook without what nbval compares (an output's text, every media type but the
    pictures), as two runs on any CPU store it alike. Each output keeps its kind, metadata,
    execution count, media types and pictures (its PNG, or the PNGs inside its HTML). Cells
    tagged "measured" (times taken on the machine that ran it) lose their outputs; cells
    tagged nbval-ignore-output (a live training run, whose last digits another CPU's rounding
    may move, and which nbval does not compare at all; the labs' tests compare their numbers
    with the shipped checkpoints) keep only their form: each output's kind, its media types,
    and its text with every digit read as 0."""
    nb = json.loads(text)
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "measured" in tags:
            cell["outputs"] = []
        elif "nbval-ignore-output" in tags:
            cell["outputs"] = [{"output_type": o["output_type"], "name": o.get("name"),
                                "text": re.sub(r"\d", "0", "".join(o.get("text", ""))),
                                "data": sorted(o.get("data", {}))} for o in cell.get("outputs", [])]
        else:
            cell["outputs"] = [{**{k: v for k, v in o.items() if k not in ("text", "data")},
                                "data": {k: v if k in NBVAL_SKIPS else output_pngs({k: v})
                                         for k, v in o.get("data", {}).items()}}
                               for o in cell.get("outputs", [])]
    return json.dumps(nb, sort_keys=True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_code_cell_loads_the_course_module(path):
    first = next("".join(c["source"]) for c in load(path)["cells"] if c["cell_type"] == "code")
    assert "%matplotlib widget" in first and "import toy_model as tm" in first
