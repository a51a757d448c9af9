"""What every notebook promises, read from the stored .ipynb files (nbval reruns them).

- every figure with 3 decimals that the prose quotes is one a code cell printed;
- the course map with "you are here", the in/out line, links to the neighbours;
- at least three "Check yourself" exercises, each with a checker and a collapsed answer;
- stored as run top to bottom on a fresh kernel, with no error in any output;
- stored exactly as tools/run_notebooks.py writes it: a fresh run gives the same bytes,
  widget state and the outputs nbval ignores included (slow: it reruns every notebook).
"""
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from run_notebooks import executed, joined_streams  # noqa: E402  (tools/ is not a package)

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NAMES = ["01_tokens", "02_embeddings", "03_qkv", "04_mask_and_heads", "05_block", "06_output",
         "07_generation"]
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


def test_all_seven_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == NAMES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_quoted_in_prose_is_computed(path):
    nb = load(path)
    shown = output_text(nb)
    quoted = {m.replace("−", "-") for text in markdown(nb) for m in THREE_DECIMALS.findall(text)}
    missing = sorted(q for q in quoted if q not in shown and q.lstrip("-") not in shown)
    assert not missing, f"{path.name}: prose quotes {missing}, which no output shows"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_map_in_out_line_and_links(path):
    nb = load(path)
    first = "".join(markdown(nb)[:3])
    assert "you are here" in first and "**In:**" in first and "**Out:**" in first
    assert all(f"({name}.ipynb)" in first for name in NAMES), "the map links every step"
    last = markdown(nb)[-1]
    i = NAMES.index(path.stem)
    neighbours = ([NAMES[i - 1]] if i > 0 else []) + ([NAMES[i + 1]] if i < 6 else [])
    assert all(f"({n}.ipynb)" in last for n in neighbours), "the last cell links the neighbours"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_check_yourself_exercises_have_checkers_and_hidden_answers(path):
    nb = load(path)
    text = "\n".join(markdown(nb))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "check yourself" in text.lower()
    assert len(re.findall(r"tm\.check_(number|choice)\(", code)) >= 3
    assert text.count("<details>") >= 3 and text.count("<summary>") >= 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_as_run_top_to_bottom_without_errors(path):
    nb = load(path)
    counts = [c["execution_count"] for c in nb["cells"] if c["cell_type"] == "code"]
    assert counts == list(range(1, len(counts) + 1)), "restart the kernel, run all, save"
    errors = [o for c in nb["cells"] for o in c.get("outputs", [])
              if o["output_type"] == "error" or o.get("name") == "stderr"]
    assert not errors, f"stored error output: {errors[0]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_without_timestamps(path):
    timed = [i for i, c in enumerate(load(path)["cells"]) if "execution" in c.get("metadata", {})]
    assert not timed, (f"cells {timed} carry execution timestamps: "
                       "rerun with python tools/run_notebooks.py")


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
@pytest.mark.parametrize("path", [*NOTEBOOKS, Path(__file__).parent / "fixtures" / "widget_demo.ipynb"],
                         ids=lambda p: p.stem)
def test_a_fresh_run_stores_the_same_file(path):
    """nbval compares the outputs it is told to; this compares everything, so a widget's
    stored picture or state that no longer matches the code fails too."""
    fresh = executed(path)
    stored = path.read_text(encoding="utf-8")
    if fresh != stored:
        lines = [(i, a, b) for i, (a, b) in enumerate(zip(stored.splitlines(), fresh.splitlines()))
                 if a != b]
        where = f"line {lines[0][0] + 1}: stored {lines[0][1][:100]!r}, fresh {lines[0][2][:100]!r}" \
            if lines else "the lengths differ"
        pytest.fail(f"{path.name} is not stored as a fresh run writes it ({where}); "
                    "rerun python tools/run_notebooks.py and commit")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_code_cell_loads_the_course_module(path):
    first = next("".join(c["source"]) for c in load(path)["cells"] if c["cell_type"] == "code")
    assert "%matplotlib widget" in first and "import toy_model as tm" in first
