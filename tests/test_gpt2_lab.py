"""What lab 09 shows beyond the checkpoint: GPT-2 small's costs on random weights of its
shapes, the attention-off ablation on a loaded model, and the attention widget's limits.
No test times anything: the timing helper is checked for what it returns.
"""
import numpy as np
import pytest

import toy_model as tm
import toy_gpt2 as tg
import toy_widgets as tw


@pytest.fixture(scope="module")
def small():
    return tg.gpt2_small_shapes()


def test_gpt2_small_shapes_are_gpt2_smalls(small):
    assert small["wte"].shape == (50257, 768) and small["wpe"].shape == (1024, 768)
    assert len(small["blocks"]) == 12 and small["wte"].dtype == np.float32
    assert tg.count_params(small) == 124_439_808
    assert "w_u" not in small                                           # tied, as GPT-2
    assert tm.check_params(small, 12) == 12
    assert np.abs(small["blocks"][3]["ln_1"]["g"] - 1).max() < 0.2       # gains near 1
    assert 0.01 < small["blocks"][5]["mlp"]["c_fc"]["w"].std() < 0.03


def test_the_toys_forward_runs_gpt2_smalls_shapes_and_stays_causal(small):
    """The same code on GPT-2 small's shapes: 12 blocks, 12 heads, d = 768, V = 50,257, tied."""
    ids = [464, 3797, 19496, 262]
    logits = tm.forward(ids, small, n_head=12)
    assert logits.shape == (4, 50257) and np.isfinite(logits).all()
    changed = tm.forward(ids[:3] + [1000], small, n_head=12)
    assert np.allclose(logits[:3], changed[:3], atol=1e-9)      # causality
    assert not np.allclose(logits[3], changed[3])


def test_params_by_part_adds_up_and_counts_the_tied_output_layer_once(small):
    parts = tg.params_by_part(small)
    assert sum(parts.values()) == tg.count_params(small)
    d = 768
    assert parts["token embeddings (wte)"] == 50257 * d and parts["positions (wpe)"] == 1024 * d
    assert parts["attention"] == 12 * (d * 3 * d + 3 * d + d * d + d)
    assert parts["MLP"] == 12 * (d * 4 * d + 4 * d + 4 * d * d + d)
    assert parts["LayerNorms"] == (12 * 2 + 1) * 2 * d
    assert parts["output layer's own W_U"] == 0
    toy = tg.params_by_part(tm.PARAMS)                                   # untied: W_U counts
    assert toy["output layer's own W_U"] == 4 * 12 and sum(toy.values()) == tg.count_params(tm.PARAMS)


def test_the_exercises_formula_agrees_with_the_shapes(small):
    from toy_widgets.lab09_gpt2 import _gpt2_size
    assert _gpt2_size(12, 768, 50257, 1024) == tg.count_params(small)


def test_time_generation_runs_the_generation_loop(small):
    seconds, made = tg.time_generation([464, 3797], small, 12, 2, cache=True)
    assert made == 2 and seconds > 0
    toy_seconds, toy_made = tg.time_generation(tm.encode("the cat"), tm.PARAMS, 2, 3, cache=False)
    assert toy_made == 3


def test_attention_off_on_the_loaded_toy_is_notebook_6s_table(tmp_path):
    """The Output page: with attention off, ␣cat 0.455, ␣dog 0.143, ␣roof 0.143."""
    lab = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    ids = lab["encode"]("the cat climbed the")
    p = tm.softmax(tm.forward(ids, tm.switch_off(lab["params"], "attn"), lab["n_head"])[-1])
    top = np.argsort(-p)[:3]
    assert tg.token_texts(lab, top) == ["␣cat", "␣dog", "␣roof"]
    assert [tw.fmt(p[j]) for j in top] == ["0.455", "0.143", "0.143"]


def test_attention_off_changes_every_block_of_a_deeper_model():
    import reference
    params = reference.random_model(3, d=8, n_layer=3, tied=True)
    ids = [1, 2, 3, 4]
    on, off = tm.forward(ids, params, 2), tm.forward(ids, tm.switch_off(params, "attn"), 2)
    assert not np.allclose(on, off)
    silent = tm.copy_params(params)                # attention's output projection zeroed:
    for blk in silent["blocks"]:                   # every block adds nothing from attention
        blk["attn"]["c_proj"]["w"][:] = 0
        blk["attn"]["c_proj"]["b"][:] = 0
    assert np.allclose(off, tm.forward(ids, silent, 2))


def test_the_layer_slider_is_hidden_with_one_block_and_shown_with_more(tmp_path):
    lab = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    layer = tw.lab_attention(lab).children[0].children[0]
    assert layer.description == "layer" and layer.layout.display == "none"
    params = tm.copy_params()
    params["blocks"] = params["blocks"] * 2
    tg.save_gpt2(tmp_path / "two", params)
    tg.save_bpe(tmp_path / "two", *tg.toy_bpe())
    layer = tw.lab_attention(tg.load_gpt2(tmp_path / "two")).children[0].children[0]
    assert layer.layout.display != "none" and layer.max == 2


def test_a_pasted_long_text_is_refused_before_it_is_tokenized(tmp_path):
    lab = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    seen = []
    real = lab["encode"]
    lab = {**lab, "encode": lambda text: seen.append(text) or real(text)}
    widget = tw.lab_attention(lab)
    seen.clear()
    widget.children[1].value = "the cat " * 10_000
    assert not seen and "80,000 characters" in widget.children[4].value
    widget.children[1].value = "the \ud800 cat"
    assert "lone surrogate" in widget.children[4].value


def test_every_printed_output_of_the_lab_names_the_model_that_made_it():
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / "09_gpt2.ipynb"
    models = ["GPT-2's tokenizer", "GPT-2's shapes, random weights", "[the toy", "GPT-2 small",
              "trainer"]
    unnamed = []
    for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", []))
            if text and not any(m in text.splitlines()[0] for m in models):
                unnamed.append((i, text.splitlines()[0]))
    assert not unnamed, f"outputs whose first line names no model: {unnamed}"


@pytest.mark.parametrize("sizes, sentence", [
    (dict(d=10**6), "at most four times GPT-2 small's"), (dict(n_layer=0), "n_layer must be a whole"),
    (dict(vocab=2.5), "vocab must be a whole"), (dict(seed=-1), "seed")])
def test_gpt2_small_shapes_refuses_sizes_it_cannot_build(sizes, sentence):
    with pytest.raises(ValueError, match=sentence):
        tg.gpt2_small_shapes(**sizes)


def test_the_cost_helpers_name_a_bad_input():
    with pytest.raises(ValueError, match="params must be the weights' dict"):
        tg.params_by_part(None)
    with pytest.raises(ValueError, match="count_params takes the weights"):
        tg.count_params(None)
    with pytest.raises(ValueError, match="cache is True or False"):
        tg.time_generation([1, 2], tm.PARAMS, 2, 1, cache="yes")


def test_the_stored_lab_says_only_what_it_shows_and_cites_what_gpt2_does():
    """Stored without the weights, every "[the toy, as GPT-2]" column is the toy again: the
    prose says so, states GPT-2 small's results as what a run with its weights shows, and
    what is published about them with its source, never as if it were on the page."""
    import json
    import re
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / "09_gpt2.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    outputs = "".join("".join(o.get("text", [])) for c in cells for o in c.get("outputs", []))
    assert "[the toy, as GPT-2]" in outputs and "[GPT-2 small]" not in outputs.replace(
        "[GPT-2 small] its four files", "")                          # a run without the weights
    prose = re.sub(r"\s+", " ", "\n".join("".join(c["source"]) for c in cells
                                          if c["cell_type"] == "markdown"))
    for claim in ["with GPT-2 the last two rows are far from 0", "GPT-2 spreads p over",
                  "Heads in GPT-2 are known to specialise", "GPT-2 goes on to 20 here",
                  "With GPT-2 the first two rows say True"]:
        assert claim not in prose, f"stated as if it were on the page: {claim!r}"
    for claim in ["you will see the last two rows leave 0", "is what its training bought",
                  "The tests check", "the tests check this"]:
        assert claim not in prose, f"stated as if it were on the page: {claim!r}"
    # one note, where the part that needs the weights begins, says what the stored run shows
    note = "In the stored run, made without them, the loaded model is the toy itself"
    assert prose.count(note) == 1
    section = next("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
                   and "".join(c["source"]).startswith("## Step 6 again"))
    assert note in re.sub(r"\s+", " ", section)
    assert prose.lower().count("in the stored run") <= 2
    assert "toy again" not in prose and "repeat the toy" not in prose
    for source in ['Wang et al. (2022, "Interpretability in the Wild"',
                   'Xiao et al. (2023, "Efficient Streaming Language Models with Attention Sinks")']:
        assert source in prose
    # the paper counts layers and heads from 0; the widget's sliders from 1
    for layer, head in [(2, 2), (4, 11)]:
        assert f"layer {layer + 1}, head {head + 1}" in prose
    assert "heads 2.2 and 4.11" in prose


def lab_prose():
    import json
    import re
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / "09_gpt2.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells, re.sub(r"\s+", " ", "\n".join("".join(c["source"]) for c in cells
                                                 if c["cell_type"] == "markdown"))


def test_the_lab_says_transformers_can_open_the_folder_and_where_that_is_checked():
    from pathlib import Path
    cells, prose = lab_prose()
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "from_pretrained" not in code and "opens such a folder and computes" not in prose
    assert "`GPT2LMHeadModel.from_pretrained` can open such a folder and compute the toy's logits" in prose
    assert ("it is checked by the course's tests, not on this page: when PyTorch is installed, "
            "`tests/test_gpt2.py` opens the folder with it") in prose
    tests = (Path(__file__).parent / "test_gpt2.py").read_text(encoding="utf-8")
    assert 'importorskip("torch")' in tests and "GPT2LMHeadModel.from_pretrained(toy_folder)" in tests


def test_the_lab_says_gpt2s_checkpoint_is_float32_not_every_one(tmp_path):
    from safetensors.numpy import load_file
    stored = load_file(tg.save_gpt2(tmp_path, tm.PARAMS, n_head=2) / "model.safetensors")
    assert {v.dtype for v in stored.values()} == {np.dtype(np.float32)}
    _, prose = lab_prose()
    assert "since a checkpoint stores float32" not in prose
    assert "GPT-2's checkpoint stores float32 (many newer ones store float16 or bfloat16)" in prose


def test_the_cached_time_per_token_includes_the_prompts_pass():
    """time_generation times the whole generate call, the prompt's pass included, and the lab
    divides it by the new tokens: the prose says what that average holds."""
    import inspect
    body = inspect.getsource(tg.time_generation)
    start, stop = body.index("start = time.perf_counter()"), body.index("time.perf_counter() - start")
    assert "generate(ids" in body[start:stop]
    cells, prose = lab_prose()
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "seconds / made * 1e3" in code and "ms a token" in code
    assert ("so with the cache it includes the prompt's pass over all 32 positions, and the "
            "one-position steps after it cost less than that average") in prose


def stored_outputs():
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / "09_gpt2.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells, ["".join(o.get("text", [])) for c in cells for o in c.get("outputs", [])]


def test_offline_the_toy_shows_once_with_one_line_on_the_loaded_copy_and_tying_is_shown():
    """Stored without GPT-2's weights, the loaded model is the toy: after the one line that
    says how closely it agrees with the course's toy, no table shows a "[the toy, as GPT-2]"
    column beside "[the toy]"; a tied checkpoint's load is shown (tied: without w_u);
    what to look for in GPT-2 small's columns is gathered in one marked note."""
    import re
    cells, outputs = stored_outputs()
    agree = next(i for i, t in enumerate(outputs) if "agrees with [the toy]" in t)
    line = outputs[agree].splitlines()[0]
    assert "same most likely token at every position: True" in line
    assert float(re.search(r"largest difference in p: (\S+)$", line).group(1)) < 1e-6
    for text in outputs[agree + 1:]:
        header = text.splitlines()[0] if text else ""
        assert not ("[the toy]" in header and "[the toy, as GPT-2]" in header), header
    assert "[the toy, as GPT-2], block 1" not in "".join(outputs)
    assert any("[the toy, tied, with masks, as GPT-2] loaded tied, without w_u: True · skipped, "
               "not weights: ['h.0.attn.bias']" in t for t in outputs)
    _, prose = lab_prose()
    assert prose.count("### With GPT-2 small loaded") == 1
    assert prose.count("With GPT-2 small loaded") == 2                  # the heading, and the pointer to it
    assert "With GPT-2 small's weights loaded, look at" not in prose


def test_the_stored_shapes_table_shows_gpt2_smalls_shapes_in_a_column_of_their_own():
    """Shapes need no weights: the stored run, made without GPT-2's, still shows GPT-2 small's
    shapes (4 tokens of GPT-2's tokenizer; d = 768, 12 heads of 64, an MLP of 3,072, 50,257
    tokens), in a column that says they come from random weights."""
    cells, outputs = stored_outputs()
    table = next(t for t in outputs if "q of one head" in t)
    header, *lines = table.splitlines()
    assert header.split("  ")[-1].strip() == "[GPT-2's shapes, random weights]"
    last = {line[:25].strip(): line.split("  ")[-1].strip() for line in lines if "×" in line}
    assert last == {"2  x = wte[ids] + wpe": "4 × 768", "3  q of one head": "4 × 64",
                    "4  weights of one head": "4 × 4", "4  heads side by side": "4 × 768",
                    "5  the MLP's hidden units": "4 × 3072", "5  y after the last block": "4 × 768",
                    "6  f = ln_f(y)": "4 × 768", "6  logits": "4 × 50257"}
    assert any("".join(c["source"]).count("## Steps 2 to 6: the same shapes, larger")
               for c in cells)                                   # the rows run to step 6


def test_the_attention_map_names_the_model_it_shows(tmp_path):
    lab = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    widget = tw.lab_attention(lab, label="[the toy, as GPT-2]")
    assert widget.figure.axes[0].get_title().splitlines() == [
        "[the toy, as GPT-2]", "layer 1, head 1: attention weights"]
    widget.children[0].children[1].value = 2
    assert widget.figure.axes[0].get_title().splitlines()[0] == "[the toy, as GPT-2]"
    with pytest.raises(ValueError, match="label is a string naming the model"):
        tw.lab_attention(lab, label=3)
    cells, _ = stored_outputs()
    calls = ["".join(c["source"]) for c in cells
             if c["cell_type"] == "code" and "lab_attention(" in "".join(c["source"])]
    assert calls and all("label=LAB" in call for call in calls)


def test_token_texts_takes_a_decode_function_as_well_as_a_loaded_model(tmp_path):
    lab = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    ids = lab["encode"]("the cat climbed the")
    assert tg.token_texts(lab["decode"], ids) == tg.token_texts(lab, ids) == [
        "the", "␣cat", "␣climb", "ed", "␣the"]
    with pytest.raises(ValueError, match="or a decode function"):
        tg.token_texts("decode", ids)


def test_the_stored_timings_show_what_the_prose_says_of_them():
    """The times vary from machine to machine: only the relations the prose states are
    checked, loosely. One position takes less than 4, 32 far less than 8 times 4, and the
    cached row is about one 32-position pass plus two one-position passes."""
    import re
    cells, _ = stored_outputs()
    cell = next(c for c in cells if "measured" in c.get("metadata", {}).get("tags", []))
    table = "".join("".join(o.get("text", [])) for o in cell["outputs"])
    ms = {label.strip(): int(t.replace(",", ""))
          for label, t in re.findall(r"^(.*?)\s{2,}([\d,]+) ms", table, flags=re.M)}
    one, four, many = (ms[f"one forward pass, {n}"] for n in
                       ["1 position", "4 positions", "32 positions"])
    cached = ms["3 new tokens after 32, with the KV cache"]
    assert one < four < many < 8 * four / 2
    assert 0.6 < cached / (many + 2 * one) < 1.5
    _, prose = lab_prose()
    assert "one position, the size of a cached step, takes less still" in prose
    assert ("the cached row is about one 32-position pass (the prompt) plus two one-position "
            "passes (the two steps after it)") in prose
    assert "the step costs about one read of the weights" not in prose


def test_the_lab_gives_the_documented_reason_for_a_leading_endoftext():
    _, prose = lab_prose()
    assert "GPT-2 was trained on documents separated by that token" not in prose
    assert "TransformerLens does by default (its setting `default_prepend_bos`)" in prose
    assert "here the loss starts at the second token" in prose


def test_the_stored_cases_show_the_tokens_the_prose_names():
    """␣2019 is one token, ␣1000000 is ␣100 + 0000, and no merge joins two spaces."""
    _, outputs = stored_outputs()
    table = next(t for t in outputs if "a rare word" in t)
    rows = {line.split("  ")[0].strip(): line.split("  ")[-1].strip() for line in table.splitlines()}
    assert rows["a year"] == "Ġ2019" and rows["a million"] == "Ġ100 0000"
    assert rows["leading spaces"] == "Ġ Ġ Ġthe"
    assert table.rstrip().endswith("a merge of Ġ with Ġ among the 50,000: False")
    _, prose = lab_prose()
    assert "␣2019 is one, while ␣1000000 becomes ␣100 + 0000" in prose
    # none of the three Japanese characters is a token; 語 (èªŀ) is cut into èª and ŀ
    _, _, vocab, _ = tg.gpt2_tokenizer()
    assert not any(tg.byte_chars(c) in vocab for c in "日本語") and tg.byte_chars("語") == "èªŀ"
    assert rows["Japanese"].endswith("èª ŀ")
    assert "has no token for 日, 本 or 語: each is cut between its bytes (語, `èªŀ` in byte " \
           "characters, into `èª` and `ŀ`)" in prose
    assert "so most of them cost two tokens or more" not in prose


def test_with_the_weights_the_loss_table_leaves_the_third_exercises_answer_unprinted():
    """Run with GPT-2 small's weights, the loss table would print ln 50,257 for the loaded
    model above the exercise that asks for it: it names the exercise instead."""
    import contextlib
    import io
    cells, _ = stored_outputs()
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    names = {"np": np, "tm": tm, "tw": tw, "RUN": "GPT-2 small", "LAB": "[GPT-2 small]"}
    exec(next(c for c in code if "def beside(" in c).split("\nif OFFLINE:")[0], names)
    assert names["OFFLINE"] is False
    ids = [464, 3797, 19952, 262, 9753]
    names.update(SENTENCE="the cat climbed the roof", s_ids=ids,
                 s_logits=np.random.default_rng(0).normal(size=(len(ids), 50257)),
                 params={"wte": np.zeros((50257, 1))})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(next(c for c in code if "uniform guess, ln V" in c), names)
    assert "[GPT-2 small]" in out.getvalue() and "exercise 3" in out.getvalue()
    assert tw.fmt(np.log(50257)) not in out.getvalue()
    from toy_widgets.exercises import EXERCISES                 # the figure 09.3 asks for
    assert tw.fmt(EXERCISES["09.3"]["answer"]()) == tw.fmt(np.log(50257))


def test_the_lab_says_which_cells_to_run_once_the_weights_are_there():
    _, prose = lab_prose()
    assert ("Then run the next cell and every cell below it (Run ▸ Run Selected Cell and All "
            "Below)") in prose
    assert "set `DOWNLOAD` back to False" in prose and "`GPT2_DIR` (set before Jupyter starts)" in prose


def test_running_the_loading_cell_again_leaves_no_folder_behind(tmp_path, monkeypatch):
    """Without GPT-2's files the cell saves the toy into a temporary folder; a second run
    removes the first run's folder (and the kernel's exit removes the last)."""
    import tempfile
    monkeypatch.delenv("GPT2_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cells, _ = stored_outputs()
    source = next("".join(c["source"]) for c in cells
                  if c["cell_type"] == "code" and "tg.find_gpt2(" in "".join(c["source"]))
    names = {"tg": tg, "tempfile": tempfile, "GPT2_FOLDER": ""}
    exec(source, names)
    first = names["folder"]
    assert (first / "model.safetensors").is_file()
    exec(source, names)
    assert not first.exists() and (names["folder"] / "model.safetensors").is_file()
    assert list(tmp_path.iterdir()) == [names["folder"]]


def test_what_the_lab_says_of_the_tests_and_benchmarks_is_where_it_says():
    """The prose names a file for each claim about the course's tests or measurements; the
    file is there and holds what the claim says."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    _, prose = lab_prose()
    named = set(re.findall(r"`((?:tests|benchmarks)/[\w./]+)`", prose))
    assert named == {"tests/test_gpt2_tokenizer.py", "tests/test_gpt2.py", "benchmarks/gpt2.py"}
    assert all((root / name).is_file() for name in named)
    assert ("`tests/test_gpt2_tokenizer.py` compares the course's BPE with Hugging Face's "
            "`tokenizers` on every text this lab tokenizes") in prose
    tokenizer_tests = (root / "tests" / "test_gpt2_tokenizer.py").read_text(encoding="utf-8")
    assert "def test_every_text_of_the_lab_gives_tokenizers_ids(" in tokenizer_tests
    assert "browser edition" not in prose              # the page speaks to the one who runs it


def test_the_leading_endoftext_is_discussed_where_attention_sinks_are():
    import re
    cells, _ = lab_prose()
    text = [re.sub(r"\s+", " ", "".join(c["source"])) for c in cells if c["cell_type"] == "markdown"]
    where = [t for t in text if "default_prepend_bos" in t]
    assert len(where) == 1 and "## Attention, layer by layer" in where[0]
    assert where[0].index("*attention sink*") < where[0].index("default_prepend_bos")


def test_the_stored_cache_check_runs_gpt2_smalls_shapes_too(small):
    """Offline, the cache is checked at GPT-2 small's scale on random weights: the same tokens
    with and without it, and the positions counted as the prose's formula says."""
    _, outputs = stored_outputs()
    text = next(t for t in outputs if "with and without the cache" in t)
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("[GPT-2's shapes, random weights]"))
    assert lines[k].endswith("the same 5 tokens with and without the cache: True")
    n = len(tg.gpt2_tokenizer()[0]("the cat climbed the"))
    assert lines[k + 1].split(":")[1].strip() == str(sum(n + j for j in range(5)))
    assert lines[k + 2].split(":")[1].strip() == str(n + 5 - 1)
    ids = tg.gpt2_tokenizer()[0]("the cat climbed the")
    runs = [[s["next"] for s in tm.generate(ids, params=small, n_head=12, max_new=2, eot=50256,
                                            cache=cache)] for cache in (True, False)]
    assert runs[0] == runs[1] and len(runs[0]) == 2


def test_a_checkpoint_saved_with_masks_loads_them_as_skipped_and_runs_the_same(tmp_path):
    """masks=True writes each block's attn.bias as Hugging Face's GPT-2 files hold it, a lower
    triangle of ones [1, 1, n_ctx, n_ctx]; load_gpt2 names them as skipped, reads the same
    weights, and a tied toy comes back tied (without w_u)."""
    from safetensors.numpy import load_file
    tied = tm.tie(tm.copy_params())
    folder = tg.save_gpt2(tmp_path, tied, masks=True)
    stored = load_file(folder / "model.safetensors")
    n_ctx = len(tm.PARAMS["wpe"])
    mask = stored["transformer.h.0.attn.bias"]
    assert mask.shape == (1, 1, n_ctx, n_ctx)
    assert all(mask[0, 0, i, j] == (1.0 if j <= i else 0.0) for i in range(n_ctx) for j in range(n_ctx))
    assert "lm_head.weight" not in stored
    lab = tg.load_gpt2(folder)
    assert lab["skipped"] == ["h.0.attn.bias"] and "w_u" not in lab["params"]
    ids = tm.encode("the cat climbed the")
    expected = tm.forward(ids, tm.tie(tm.PARAMS))
    assert np.abs(tm.forward(ids, lab["params"], lab["n_head"]) - expected).max() < 1e-5
    assert tg.load_gpt2(tg.save_gpt2(tmp_path / "plain"))["skipped"] == []
    with pytest.raises(ValueError, match="masks is True or False"):
        tg.save_gpt2(tmp_path / "bad", masks="yes")
