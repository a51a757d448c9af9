"""Checkpoints that cannot be lost and cannot load wrong: save_gpt2 refuses to replace a
checkpoint unless asked, checks everything before writing, and writes beside then renames;
load_gpt2 checks what it reads against config.json and says what is wrong in one sentence.
"""
import json
import os

import numpy as np
import pytest

import toy_model as tm
import toy_gpt2 as tg


@pytest.fixture
def saved(tmp_path):
    folder = tmp_path / "ckpt"
    tg.save_toy_as_gpt2(folder)
    return folder


def files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


# --- Saving ----------------------------------------------------------------------------

def test_saving_over_a_checkpoint_is_refused_unless_asked(saved):
    before = files(saved)
    other = tm.copy_params()
    other["wte"][0, 0] = 7.0
    with pytest.raises(ValueError, match="already holds model.safetensors, config.json.*overwrite=True"):
        tg.save_gpt2(saved, other)
    with pytest.raises(ValueError, match="already holds"):
        tg.save_toy_as_gpt2(saved)
    assert files(saved) == before
    tg.save_gpt2(saved, other, overwrite=True)
    assert tg.load_gpt2(saved)["params"]["wte"][0, 0] == 7.0


def test_a_bad_input_writes_nothing(saved):
    before = files(saved)
    for params, n_head in [(tm.PARAMS, 3), (tm.PARAMS, "2"), ({"wte": np.ones((3, 4))}, 2),
                           (tm.replace_weight(tm.PARAMS, "wte", np.ones((12, 4))) | {"wpe": np.ones((8, 3))}, 2)]:
        with pytest.raises(ValueError):
            tg.save_gpt2(saved, params, n_head, overwrite=True)
        assert files(saved) == before
    with pytest.raises(ValueError, match="overwrite is True or False"):
        tg.save_gpt2(saved, overwrite="yes")
    assert files(saved) == before


def test_a_numpy_integer_head_count_saves_a_loadable_config(tmp_path):
    tg.save_gpt2(tmp_path / "a", n_head=np.int64(2))
    tg.save_bpe(tmp_path / "a", *tg.toy_bpe())
    assert tg.load_gpt2(tmp_path / "a")["n_head"] == 2


def test_a_failed_write_leaves_the_old_files_intact(saved, monkeypatch):
    """The disk fills up while the new files are renamed into place."""
    before = files(saved)
    other = tm.copy_params()
    other["wte"][1, 1] = 9.0

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(ValueError, match="Cannot write into .*No space left on device"):
        tg.save_gpt2(saved, other, overwrite=True)
    assert files(saved) == before                          # nothing replaced, no partial file left


def test_writes_go_beside_then_are_renamed(saved, monkeypatch):
    renamed = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renamed.append((os.path.basename(src), os.path.basename(dst))), real(src, dst)))
    tg.save_gpt2(saved, overwrite=True)
    assert sorted(renamed) == [(".config.json.partial", "config.json"),
                               (".model.safetensors.partial", "model.safetensors")]


def test_a_path_that_is_a_file_gets_one_sentence(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        tg.save_gpt2(path)
    assert path.read_text() == "x"


def test_a_read_only_folder_gets_one_sentence(tmp_path, monkeypatch):
    """Simulated as the system refuses it (root, who runs CI, may write anywhere)."""
    from pathlib import Path
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    with pytest.raises(ValueError, match="Cannot write into .*Permission denied"):
        tg.save_gpt2(tmp_path / "new")


# --- Loading: each way a folder can be wrong, and its sentence --------------------------------

def config_change(change):
    def edit(folder):
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps(change(config)))
    return edit


def weights_change(change):
    def edit(folder):
        from safetensors.numpy import load_file, save_file
        stored = load_file(folder / "model.safetensors")
        change(stored)
        save_file(stored, folder / "model.safetensors")
    return edit


def write(name, content):
    return lambda folder: (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())


def halve(folder):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])


def transpose_linear(stored):
    """A checkpoint in [outputs, inputs] order would transpose the square weights silently."""
    for name in list(stored):
        if name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            stored[name] = np.ascontiguousarray(stored[name].T)


def cut_c_fc(stored):
    stored["transformer.h.0.mlp.c_fc.weight"] = stored["transformer.h.0.mlp.c_fc.weight"][:, :6]


BROKEN = {
    "empty weights": (write("model.safetensors", b""), "not a readable safetensors file"),
    "text weights": (write("model.safetensors", b"this is text, not weights"), "not a readable safetensors file"),
    "truncated weights": (halve, "not a readable safetensors file"),
    "list": (config_change(lambda c: [c]), "one JSON object"),
    "no n_layer": (config_change(lambda c: {k: v for k, v in c.items() if k != "n_layer"}), "n_layer as a whole number"),
    "no n_head": (config_change(lambda c: {k: v for k, v in c.items() if k != "n_head"}), "n_head as a whole number"),
    "n_layer 0": (config_change(lambda c: c | {"n_layer": 0}), "n_layer as a whole number of at least 1, not 0"),
    "n_layer -1": (config_change(lambda c: c | {"n_layer": -1}), "n_layer as a whole number of at least 1, not -1"),
    "n_layer too many": (config_change(lambda c: c | {"n_layer": 2}), "no weight 'h.1.ln_1.weight'"),
    "n_head": (config_change(lambda c: c | {"n_head": 3}), "does not divide n_embd"),
    "n_embd": (config_change(lambda c: c | {"n_embd": 8}), "shape"),
    "unscaled": (config_change(lambda c: c | {"scale_attn_weights": False}), "square root of d_head"),
    "layer-scaled": (config_change(lambda c: c | {"scale_attn_by_inverse_layer_idx": True}), "layer's number"),
    "relu": (config_change(lambda c: c | {"activation_function": "relu"}), "activation"),
    "epsilon": (config_change(lambda c: c | {"layer_norm_epsilon": 1e-6}), "epsilon"),
    "not json": (write("config.json", "{n_layer: 1"), "config.json is not readable JSON"),
    "wrong shape": (weights_change(cut_c_fc), r"'h.0.mlp.c_fc.weight' has shape \(4, 6\).*\(4, 8\)"),
    "pytorch linear": (weights_change(transpose_linear), r"\[outputs, inputs\]"),
    "duplicate id": (write("vocab.json", json.dumps({"the": 0, " the": 0})), "gives the id 0 to more than one token"),
    "vocab list": (write("vocab.json", json.dumps(["the"])), "map each token's text to its id"),
    "text id": (write("vocab.json", json.dumps({"the": "0"})), "map each token's text to its id"),
    "id too large": (write("vocab.json", json.dumps({"the": 12})), "ids up to 12, but wte has only 12 rows"),
    "merges line": (write("merges.txt", "#version: 0.2\nt h\nthe\n"), "two pieces and a space"),
    "half a tokenizer": (lambda folder: (folder / "merges.txt").unlink(), "merges.txt"),
}


@pytest.mark.parametrize("edit, sentence", BROKEN.values(), ids=BROKEN.keys())
def test_a_folder_that_does_not_fit_gets_one_sentence(saved, edit, sentence):
    edit(saved)
    with pytest.raises(ValueError, match=sentence):
        tg.load_gpt2(saved)


def test_fewer_blocks_in_the_config_than_stored_is_refused(tmp_path):
    params = tm.copy_params()
    params["blocks"] = params["blocks"] * 2
    tg.save_gpt2(tmp_path, params)
    tg.save_bpe(tmp_path, *tg.toy_bpe())
    config_change(lambda c: c | {"n_layer": 1})(tmp_path)
    with pytest.raises(ValueError, match="more blocks than config.json's n_layer = 1"):
        tg.load_gpt2(tmp_path)
