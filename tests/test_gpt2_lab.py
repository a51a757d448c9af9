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
    checkpoint = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    ids = checkpoint["encode"]("the cat climbed the")
    p = tm.softmax(tm.forward(ids, tm.switch_off(checkpoint["params"], "attn"), checkpoint["n_head"])[-1])
    top = np.argsort(-p)[:3]
    assert tg.token_texts(checkpoint, top) == ["␣cat", "␣dog", "␣roof"]
    assert [tw.fmt(p[j]) for j in top] == ["0.455", "0.143", "0.143"]


def test_the_layer_slider_is_hidden_with_one_block_and_shown_with_more(tmp_path):
    checkpoint = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    layer = tw.lab_attention(checkpoint).children[0].children[0]
    assert layer.description == "layer" and layer.layout.display == "none"
    params = tm.copy_params()
    params["blocks"] = params["blocks"] * 2
    tg.save_gpt2(tmp_path / "two", params)
    tg.save_bpe(tmp_path / "two", *tg.toy_bpe())
    layer = tw.lab_attention(tg.load_gpt2(tmp_path / "two")).children[0].children[0]
    assert layer.layout.display != "none" and layer.max == 2


def test_a_pasted_long_text_is_refused_before_it_is_tokenized(tmp_path):
    checkpoint = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    seen = []
    real = checkpoint["encode"]
    checkpoint = {**checkpoint, "encode": lambda text: seen.append(text) or real(text)}
    widget = tw.lab_attention(checkpoint)
    seen.clear()
    widget.children[1].value = "the cat " * 10_000
    assert not seen and "80,000 characters" in widget.children[4].value
    widget.children[1].value = "the \ud800 cat"
    assert "lone surrogate" in widget.children[4].value


def lab_prose():
    import json
    import re
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / "09_gpt2.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells, re.sub(r"\s+", " ", "\n".join("".join(c["source"]) for c in cells
                                                 if c["cell_type"] == "markdown"))


def test_the_cached_time_per_token_includes_the_prompts_pass():
    """time_generation times the whole generate call, the prompt's pass included, and the lab
    divides it by the new tokens: the prose says what that average holds, and quotes no
    measured time (a machine decides its digits)."""
    import inspect
    import re
    body = inspect.getsource(tg.time_generation)
    start, stop = body.index("start = time.perf_counter()"), body.index("time.perf_counter() - start")
    assert "generate(ids" in body[start:stop]
    cells, prose = lab_prose()
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "seconds / made * 1e3" in code and "ms a token" in code
    assert "so with the cache it includes the prompt's pass over all 32 positions" in prose
    assert "on a busy machine one row's time need not match the sum of others" in prose   # noisy
    part_b = prose.split("### B What GPT-2 small costs")[1].split("### C")[0]
    assert "1e3:,.0f} ms" in code and not re.search(r"\d ?(ms|seconds?)\b", part_b)


def stored_outputs():
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / "09_gpt2.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells, ["".join(o.get("text", [])) for c in cells for o in c.get("outputs", [])]


def test_the_attention_map_names_the_model_it_shows(tmp_path):
    checkpoint = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    widget = tw.lab_attention(checkpoint, label="[the toy, as GPT-2]")
    assert widget.figure.axes[0].get_title().splitlines() == [
        "[the toy, as GPT-2]", "layer 1, head 1: attention weights"]
    widget.children[0].children[1].value = 2
    assert widget.figure.axes[0].get_title().splitlines()[0] == "[the toy, as GPT-2]"
    with pytest.raises(ValueError, match="label is a string naming the model"):
        tw.lab_attention(checkpoint, label=3)
    cells, _ = stored_outputs()
    calls = ["".join(c["source"]) for c in cells
             if c["cell_type"] == "code" and "lab_attention(" in "".join(c["source"])]
    assert calls and all("label=LAB" in call for call in calls)


def test_token_texts_takes_a_decode_function_as_well_as_a_loaded_model(tmp_path):
    checkpoint = tg.load_gpt2(tg.save_toy_as_gpt2(tmp_path / "toy"))
    ids = checkpoint["encode"]("the cat climbed the")
    assert tg.token_texts(checkpoint["decode"], ids) == tg.token_texts(checkpoint, ids) == [
        "the", "␣cat", "␣climb", "ed", "␣the"]
    with pytest.raises(ValueError, match="or a decode function"):
        tg.token_texts("decode", ids)


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
    checkpoint = tg.load_gpt2(folder)
    assert checkpoint["skipped"] == ["h.0.attn.bias"] and "w_u" not in checkpoint["params"]
    ids = tm.encode("the cat climbed the")
    expected = tm.forward(ids, tm.tie(tm.PARAMS))
    assert np.abs(tm.forward(ids, checkpoint["params"], checkpoint["n_head"]) - expected).max() < 1e-5
    assert tg.load_gpt2(tg.save_gpt2(tmp_path / "plain"))["skipped"] == []
    with pytest.raises(ValueError, match="masks is True or False"):
        tg.save_gpt2(tmp_path / "bad", masks="yes")


def test_offline_the_predictions_come_from_the_copy_read_back_from_gpt2s_format():
    """Without GPT-2's weights, every table of what the loaded model predicts shows the toy
    read back from GPT-2's files, headed so, and the check against the course's own toy
    prints a bound, not float32 rounding digits a CPU decides."""
    import re
    cells, _ = stored_outputs()
    code = [c for c in cells if c["cell_type"] == "code"]
    text = "".join("".join(o.get("text", "")) for c in code for o in c.get("outputs", []))
    tables = ["".join(o.get("text", "")) for c in code for o in c.get("outputs", [])
              if re.search(r"^beside\(|where_last_looks\(t", "".join(c["source"]), re.M)]
    assert len(tables) == 7         # ln_f, top ten, loss, attention off, where it looks, generation, tying
    assert all("[the toy, as GPT-2]" in t and "[the toy] " not in t for t in tables)
    assert ("[the toy, as GPT-2] against [the toy]: the same most likely token at every position: "
            "True; every p within 10⁻⁶ of the toy's: True\n") in text
    assert not re.search(r"\de-\d", "".join(text))
