"""The GPT-2 lab's code: checkpoints in and out, the toy's byte-level BPE, float32, the KV cache.

No test downloads anything: the checkpoints are written here, in Hugging Face's naming.
"""
import json
import tracemalloc

import numpy as np
import pytest

import toy_model as tm
import toy_gpt2 as tg
import toy_widgets as tw
import reference as ref
from reference import cast as _cast

TEXT = "the cat climbed the"


# --- The toy, through a GPT-2 folder and back --------------------------------------------

@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory):
    return tg.save_toy_as_gpt2(tmp_path_factory.mktemp("toy_gpt2"))


def test_toy_round_trip_gives_the_toys_logits(toy_folder):
    checkpoint = tg.load_gpt2(toy_folder)
    ids = checkpoint["encode"]("the cat climbed the roof.")
    assert ids == tm.encode("the cat climbed the roof.")
    logits = tm.forward(ids, checkpoint["params"], checkpoint["n_head"])
    assert logits.dtype == np.float32
    assert np.abs(logits - tm.forward(ids)).max() < 1e-5
    assert checkpoint["decode"](ids) == "the cat climbed the roof."


def test_toy_config_says_what_the_toy_is(toy_folder):
    config = json.loads((toy_folder / "config.json").read_text())
    assert {k: config[k] for k in ["vocab_size", "n_positions", "n_embd", "n_layer", "n_head",
                                   "n_inner", "layer_norm_epsilon", "activation_function",
                                   "tie_word_embeddings"]} == {
        "vocab_size": 12, "n_positions": 8, "n_embd": 4, "n_layer": 1, "n_head": 2, "n_inner": 8,
        "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "tie_word_embeddings": False}
    assert config["eos_token_id"] == tm.EOT


def test_transformers_opens_the_toy_and_gets_its_logits(toy_folder):
    """When PyTorch and transformers are installed (they are not course requirements)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.GPT2LMHeadModel.from_pretrained(toy_folder).eval()
    ids = tm.encode("the cat climbed the roof.")
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].numpy()
    assert np.abs(logits - tm.forward(ids)).max() < 1e-5


# --- A checkpoint written here, in Hugging Face's naming ----------------------------------

def write_hf_checkpoint(folder, params, n_head, prefix, lm_head):
    """GPT-2's files as Hugging Face stores them, written without the course's save_gpt2:
    buffers included, lm_head only when asked for."""
    from safetensors.numpy import save_file
    folder.mkdir()
    n_ctx, d = params["wpe"].shape
    t = {"wte.weight": params["wte"], "wpe.weight": params["wpe"],
         "ln_f.weight": params["ln_f"]["g"], "ln_f.bias": params["ln_f"]["b"]}
    for i, blk in enumerate(params["blocks"]):
        h = f"h.{i}."
        t[h + "ln_1.weight"], t[h + "ln_1.bias"] = blk["ln_1"]["g"], blk["ln_1"]["b"]
        t[h + "ln_2.weight"], t[h + "ln_2.bias"] = blk["ln_2"]["g"], blk["ln_2"]["b"]
        for part, lin in [("attn.c_attn", blk["attn"]["c_attn"]), ("attn.c_proj", blk["attn"]["c_proj"]),
                          ("mlp.c_fc", blk["mlp"]["c_fc"]), ("mlp.c_proj", blk["mlp"]["c_proj"])]:
            t[h + part + ".weight"], t[h + part + ".bias"] = lin["w"], lin["b"]
        t[h + "attn.bias"] = np.tril(np.ones((n_ctx, n_ctx)))[None, None]      # buffers, not weights
        t[h + "attn.masked_bias"] = np.array(-1e4)
    t = {prefix + k: v for k, v in t.items()}
    if lm_head is not None:
        t["lm_head.weight"] = lm_head
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in t.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = {"model_type": "gpt2", "vocab_size": len(params["wte"]), "n_positions": n_ctx,
              "n_embd": d, "n_layer": len(params["blocks"]), "n_head": n_head,
              "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    if lm_head is not None:
        config["tie_word_embeddings"] = False
    (folder / "config.json").write_text(json.dumps(config))
    tg.save_bpe(folder, *tg.toy_bpe())
    return folder


def as32(params):
    """The weights as the checkpoint holds them (rounded to float32), in float64."""
    return _cast(_cast(params, np.float32), float)


@pytest.mark.parametrize("prefix", ["transformer.", ""], ids=["transformer.-prefix", "bare-names"])
def test_a_hugging_face_checkpoint_gives_the_reference_logits(tmp_path, prefix):
    """Random weights, gains and biases; 3 blocks of 4 heads; tied (no lm_head)."""
    params = ref.random_model(np.random.default_rng(5), d=8, n_layer=3, n_vocab=12, n_ctx=8, tied=True)
    checkpoint = tg.load_gpt2(write_hf_checkpoint(tmp_path / "ckpt", params, 4, prefix, lm_head=None))
    assert "w_u" not in checkpoint["params"] and checkpoint["n_head"] == 4 and len(checkpoint["params"]["blocks"]) == 3
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    expected = ref.forward(ids, as32(params), 4)
    assert np.abs(tm.forward(ids, checkpoint["params"], checkpoint["n_head"]) - expected).max() < 1e-4


def test_save_gpt2_writes_each_tensor_as_hugging_faces_layout_holds_it(tmp_path):
    """Byte for byte against the test's own writer of Hugging Face's layout: a weight
    written transposed (a square c_proj, say) would still round-trip through the course's
    own save and load, but not match this."""
    from safetensors.numpy import load_file
    rng = np.random.default_rng(8)
    params = ref.random_model(rng, d=8, n_layer=2, n_vocab=12, n_ctx=8, tied=True)
    w_u = rng.normal(0, 1, (8, 12))
    ours = load_file(tg.save_gpt2(tmp_path / "ours", {**params, "w_u": w_u}, 2) / "model.safetensors")
    theirs = load_file(write_hf_checkpoint(tmp_path / "ref", params, 2, "transformer.", w_u.T)
                       / "model.safetensors")
    buffers = {n for n in theirs if n.endswith((".attn.bias", ".attn.masked_bias"))}
    assert set(ours) == set(theirs) - buffers
    for name, tensor in ours.items():
        assert tensor.dtype == theirs[name].dtype and tensor.shape == theirs[name].shape, name
        assert tensor.tobytes() == theirs[name].tobytes(), f"{name} is not stored as Hugging Face stores it"


def test_a_folder_without_the_four_files_gets_one_sentence(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="lacks model.safetensors, vocab.json, merges.txt"):
        tg.load_gpt2(tmp_path)


def test_find_gpt2_reads_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("GPT2_DIR", raising=False)
    assert tg.find_gpt2()[0] is None and "not set" in tg.find_gpt2()[1]
    monkeypatch.setenv("GPT2_DIR", str(tmp_path))
    assert tg.find_gpt2()[0] is None and "lacks config.json" in tg.find_gpt2()[1]
    tg.save_toy_as_gpt2(tmp_path)
    assert tg.find_gpt2()[0] == tmp_path
    monkeypatch.delenv("GPT2_DIR")
    assert tg.find_gpt2(tmp_path)[0] == tmp_path                 # a folder chosen in the notebook
    assert tg.find_gpt2(tmp_path / "nothing")[0] is None


# (GPT-2 small's 124,439,808 parameters: tests/test_gpt2_lab.py, on gpt2_small_shapes.)


# --- float32 end to end, and no copies of the weights ------------------------------------

def arrays(tree, path="trace"):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from arrays(v, f"{path}[{k!r}]")
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from arrays(v, f"{path}[{i}]")
    elif isinstance(tree, np.ndarray) and tree.dtype.kind == "f":
        yield path, tree


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("which", ["toy", "random 3 blocks"])
def test_every_intermediate_keeps_the_weights_dtype(dtype, which):
    """The float32 run of the Output page's figures (test_toy_model) really is float32."""
    if which == "toy":
        params, n_head, ids = _cast(tm.PARAMS, dtype), tm.N_HEAD, tm.encode(TEXT)
    else:
        params = _cast(ref.random_model(np.random.default_rng(3), d=8, n_layer=3, n_vocab=7, n_ctx=6, tied=True), dtype)
        n_head, ids = 4, [3, 1, 4, 1, 5, 6]
    trace = {}
    tm.forward(ids, params, n_head, trace=trace)
    found = dict(arrays(trace))
    assert len(found) > 20
    wrong = {path: a.dtype for path, a in found.items() if a.dtype != dtype}
    assert not wrong, f"upcast or downcast: {wrong}"
    assert tm.softmax(trace["logits"]).dtype == dtype
    assert tm.forward(ids, params, n_head, cache=[]).dtype == dtype


def test_forward_does_not_copy_the_weights():
    """With a large vocabulary the embeddings dominate; a forward pass allocates far less."""
    rng = np.random.default_rng(4)
    params = _cast(ref.random_model(rng, d=64, n_layer=2, n_vocab=50257, n_ctx=64, tied=True, scale=0.02), np.float32)
    params["w_u"] = params["wte"].T
    weight_bytes = sum(a.nbytes for _, a in arrays(params) if a is not params["w_u"])
    tracemalloc.start()
    try:
        tm.forward(list(range(5)), params, 4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.1 * weight_bytes, f"forward allocated {peak} bytes for {weight_bytes} of weights"


# --- The byte-level BPE (against `tokenizers`: tests/test_gpt2_tokenizer.py) -------------

def test_the_byte_table_is_gpt2s():
    table = tg.bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    assert all(c.isprintable() and not c.isspace() for c in table.values())


def test_the_toys_bpe_cuts_toy_texts_like_the_toy():
    """And both decodes invert the encodes, on random texts of the toy's vocabulary."""
    encode, decode = tg.bpe_tokenizer(*tg.toy_bpe())
    rng = np.random.default_rng(13)
    texts = ["edthe", " the sofa.<|endoftext|>the floor"]
    texts += ["".join(tm.VOCAB[i] for i in rng.integers(0, 12, rng.integers(1, 9))) for _ in range(300)]
    for text in texts:
        ids = encode(text)
        assert ids == tm.encode(text) and decode(ids) == tm.decode(ids) == text, repr(text)
    with pytest.raises(ValueError, match="cannot cover '␣jumped'"):
        encode("the cat jumped")


# --- The lab's attention widget -----------------------------------------------------------

def test_the_attention_widget_shows_the_chosen_heads_weights(toy_folder):
    checkpoint = tg.load_gpt2(toy_folder)
    widget = tw.lab_attention(checkpoint)
    sliders, text_box, info, area = widget.children[0].children, widget.children[1], \
        widget.children[3], widget.children[4]
    trace = {}
    tm.forward(tm.encode(TEXT), checkpoint["params"], checkpoint["n_head"], trace=trace)
    for head in (1, 2):
        sliders[1].value = head
        w = trace["blocks"][0]["heads"][head - 1]["weights"][-1]
        j = int(np.argmax(w))
        assert f"({tw.fmt(w[j])}) on {tm.token_name(tm.VOCAB[tm.encode(TEXT)[j]])}" in info.value
        assert np.allclose(widget.figure.axes[0].images[0].get_array()[-1], w)
    text_box.value = "the cat jumped"
    assert "cannot cover" in area.value and "␣jumped" in area.value
    text_box.value = "the dog climbed the wall"
    assert area.value == "" and widget.state.tokens[-1] == "␣wall"


def test_token_texts_show_spaces_and_escape_what_does_not_print(toy_folder):
    checkpoint = tg.load_gpt2(toy_folder)
    assert tg.token_texts(checkpoint, tm.encode(TEXT)) == ["the", "␣cat", "␣climb", "ed", "␣the"]
    assert tg.token_texts({"decode": lambda ids: " a\n\x04"}, [0]) == ["␣a\\n\\x04"]
