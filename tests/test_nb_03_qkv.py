"""Notebook 03 (Q · K · V): the query picker, without a browser, and the notebook's numbers."""

import re

import ipywidgets as widgets
import numpy as np
import pytest

import toy_model as tm
import toy_widgets as tw
from test_nb01_04_content import cells, source
from widget_tools import find, shown



WEIGHTS = tm.intermediates("the cat climbed the")["heads"][0]["weights"]


@pytest.fixture
def picker():
    root = tw.query_picker()
    pick = find(root, widgets.ToggleButtons)[0]
    pos = find(root, widgets.IntText)[0]
    html_parts = find(root, widgets.HTML)
    info, area = html_parts[0], html_parts[-1]
    return root, pick, pos, info, area, root.chart


def check_row(root, i):
    """The chart shows row i (1 to 5) of head 1's weights, its largest weight(s) marked."""
    w = WEIGHTS[i - 1]
    assert np.allclose(shown(root.chart), w)
    assert root.chart.highlight == list(np.flatnonzero(np.isclose(w, w.max())))
    assert root.chart.title.startswith(f"head 1, query {i} ")


def test_head_weights_are_head_1s_columns_of_c_attn():
    w = tm.PARAMS["blocks"][0]["attn"]["c_attn"]["w"]
    W_Q, W_K, W_V = tw.head_weights(0)
    assert np.array_equal(np.hstack([W_Q, W_K, W_V]), w[:, [0, 1, 4, 5, 8, 9]])
    r = tm.intermediates("the cat climbed the")
    assert np.allclose(r["ln1"] @ W_Q, r["heads"][0]["q"])


def test_picker_starts_on_the_last_token_and_names_climb(picker):
    root, pick, pos, info, area, bars = picker
    assert "w-query-picker" in root._dom_classes
    assert pick.value == 5 and pos.value == 5
    check_row(root, 5)
    out, w = tm.intermediates("the cat climbed the")["heads"][0]["out"][4], WEIGHTS[4]
    assert info.value == (f"query 5 (␣the): output = [{tw.fmt(out[0])}, {tw.fmt(out[1])}]; it "
                          f"attends most to ␣climb (position 3, weight {tw.fmt(w[2])}).")
    assert w.argmax() == 2


def test_clicking_a_query_moves_the_bars_and_the_text(picker):
    root, pick, pos, info, area, bars = picker
    text = info.value
    pick.value = 4
    check_row(root, 4)
    assert info.value != text and "query 4 (ed)" in info.value
    assert pos.value == 4                       # the two controls agree
    pick.value = 2
    check_row(root, 2)
    assert root.chart.highlight == [0, 1]
    assert "shared by the and ␣cat" in info.value   # a tie is named as a tie
    pos.value = 3
    check_row(root, 3)
    assert pick.value == 3


def test_typed_position_out_of_range_gives_one_sentence_then_clears(picker):
    root, pick, pos, info, area, bars = picker
    for bad in (0, 6, -1):
        pos.value = bad
        assert "Positions run from 1 to 5" in area.value
        assert area.value.count(".") >= 1 and pick.value == 5      # nothing else moved
        assert pos.value == 5                  # the box goes back to the query the plot shows
    pos.value = 3
    assert area.value == ""
    assert pick.value == 3 and "query 3 (␣climb)" in info.value
    check_row(root, 3)
    pick.value = None                          # set from code: refused, put back
    assert "Pick one of the query options" in area.value
    assert pick.value == 3 and pos.value == 3
    check_row(root, 3)


@pytest.mark.parametrize("head", [2, -1, 1.0, "1"])
def test_a_head_that_does_not_exist_gets_one_sentence(head):
    with pytest.raises(ValueError, match="head must be a whole number from 0 to 1"):
        tw.head_weights(head)
    with pytest.raises(ValueError, match="head must be a whole number from 0 to 1"):
        tw.query_picker(head=head)


def test_head_2_shows_its_own_weights():
    root = tw.query_picker(head=1)
    w = tm.intermediates("the cat climbed the")["heads"][1]["weights"][4]
    assert np.allclose(shown(root.chart), w)
    assert root.chart.title.startswith("head 2, query 5 ")


def test_names_the_prose_relies_on_keep_their_values_through_the_notebook():
    """Run the stored notebook's code cells in order in one namespace, as a learner's kernel
    does, up to the markdown cell that asks for `scores[3]`: a later cell that reuses the
    name `scores` (or `w`, head 1's c_attn.w) for something else breaks that prose."""
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / "03_qkv.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    names = {}
    for cell in notebook["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and "`scores[3]`" in text:
            break
        if cell["cell_type"] == "code":
            code = "\n".join(line for line in text.splitlines() if not line.startswith("%"))
            exec(compile(code, path.name, "exec"), names)
    else:
        pytest.fail("no markdown cell asks for `scores[3]`")
    w = tm.PARAMS["blocks"][0]["attn"]["c_attn"]["w"]
    assert np.array_equal(names["w"], w), "`w` is no longer c_attn.w"
    ln1 = tm.intermediates("the cat climbed the")["ln1"]
    q, k = ln1 @ w[:, 0:2], ln1 @ w[:, 4:6]               # head 1's queries and keys
    ed = q[3] @ k.T / np.sqrt(2)                          # the row of ed, by hand
    ed[4:] = -np.inf                                      # ed (row 4) cannot see row 5
    assert np.array_equal(names["scores"].shape, (5, 5)), "`scores` is no longer head 1's table"
    assert np.allclose(names["scores"][3], ed), "`scores[3]` is no longer the row of ed"


def test_03_dot_product_is_defined_where_first_used_and_d3_keeps_its_meaning():
    prose = [source(c) for c in cells("03_qkv") if c["cell_type"] == "markdown"][1:]   # after the map
    first = " ".join(next(p for p in prose if re.search(r"\bdot products?\b", p)).split())
    assert "**dot product** (multiply the two vectors entry by entry and add the products)" in first
    w_k = " ".join(next(p for p in prose if "W_K reads" in p).split())
    assert '"an ending comes next"' in w_k             # notebook 2's "ending", not a new meaning


def test_03_exercise_texts_set_tokens_as_code_and_hints_as_plain_text():
    """Questions and worked answers render `code`; hints are shown as they are."""
    for key in ("03.1", "03.2", "03.3"):
        spec = tw.EXERCISES[key]
        question = tw.exercises._now(spec["question"])
        assert "␣" not in re.sub(r"`[^`]*`", "", question), key
        assert key == "03.2" or "`ed`" in question, key
        solution = tw.exercises._now(spec["solution"])
        assert "␣" not in re.sub(r"`[^`]*`", "", solution), key
        assert key == "03.2" or "`the`" in solution, key
        hints = tw.exercises._now(spec["hints"])
        texts = hints.values() if isinstance(hints, dict) else [h for _, h in hints]
        assert not [h for h in texts if "`" in h], key
