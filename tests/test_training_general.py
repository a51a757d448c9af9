"""Training beyond the toy: any vocabulary and context, fresh batches, attention-only
blocks, the MLP switched off, float32 kept, and checkpoints of ids alone.

Every gradient is compared with a central difference the test computes itself from
forward and cross_entropy, never with the course's finite_difference."""
import itertools
import json

import numpy as np
import pytest

import toy_gpt2 as tg
import toy_model as tm
import toy_train as tt


def loss_of(params, ids, targets, n_head):
    return tm.cross_entropy(tm.forward(ids, params, n_head), targets)


def numeric_grad(params, name, index, ids, targets, n_head, eps=1e-6):
    """d loss / d (one weight) by a central difference, written here."""
    w = np.array(tm.get_weight(params, name), dtype=np.float64)
    losses = []
    for step in (eps, -eps):
        nudged = w.copy()
        nudged[index] += step
        losses.append(loss_of(tm.replace_weight(params, name, nudged), ids, targets, n_head))
    return (losses[0] - losses[1]) / (2 * eps)


def some_entries(params, rng, per_weight=2):
    """(name, index) for a few random entries of every weight."""
    for name in tm.weight_names(params):
        shape = np.shape(tm.get_weight(params, name))
        for _ in range(per_weight):
            yield name, tuple(int(rng.integers(0, n)) for n in shape)


def a_batch(rng, V, n, B=3):
    ids = rng.integers(0, V, (B, n))
    targets = rng.integers(0, V, (B, n))
    targets[0, -1] = -1                                     # one padded position
    return ids, targets


def test_an_attention_only_block_is_x_plus_attention_and_nothing_else():
    """Written out here: y = x + W_O(heads(LN1(x))), with no second LayerNorm or MLP."""
    params = tt.init_params(2, d=8, d_mlp=0, n_layer=1, n_vocab=20, n_ctx=16)
    x = np.random.default_rng(0).normal(size=(5, 8))
    blk = params["blocks"][0]
    a = tm.layer_norm(x, **blk["ln_1"])
    want = x + tm.multi_head(a, **blk["attn"], n_head=2)
    assert np.allclose(tm.block(x, blk, 2), want)


@pytest.mark.parametrize("n_layer, n_head, tied, d_mlp, mlp_on", [
    (1, 1, False, 0, True), (2, 2, True, 0, True), (2, 4, False, 0, True),
    (2, 2, False, 16, False), (1, 2, True, 16, False), (2, 1, True, 16, True)])
def test_gradients_of_any_model_match_a_central_difference(n_layer, n_head, tied, d_mlp, mlp_on):
    """Vocabulary 20 and context 16 (beyond the toy's 12 and 8), a batch with padding."""
    rng = np.random.default_rng(n_layer * 10 + n_head)
    params = tt.init_params(n_layer, tied=tied, d=8, d_mlp=d_mlp, n_layer=n_layer, n_vocab=20,
                            n_ctx=16, std=0.5)
    params = params if mlp_on else tm.switch_off(params, "mlp")
    ids, targets = a_batch(rng, 20, 11)
    loss, grads = tt.loss_and_grads(ids, targets, params, n_head)
    assert loss == pytest.approx(loss_of(params, ids, targets, n_head))
    for name, index in some_entries(params, rng):
        got = tm.get_weight(grads, name)[index]
        want = numeric_grad(params, name, index, ids, targets, n_head)
        assert got == pytest.approx(want, abs=2e-7, rel=1e-4), (name, index)


def test_with_the_mlp_switched_off_the_model_is_the_attention_only_one():
    """switch_off zeroes the MLP's c_proj: the loss and every gradient outside the MLP are
    the attention-only model's; the MLP's first layer and LN2 get none; c_proj gets the
    gradient that would switch the branch back on."""
    rng = np.random.default_rng(4)
    off = tm.switch_off(tt.init_params(3, d=8, d_mlp=16, n_layer=2, n_vocab=20, n_ctx=16, std=0.5), "mlp")
    bare = tm.tree_from({n: tm.get_weight(off, n) for n in tm.weight_names(off)
                         if ".ln_2." not in n and ".mlp." not in n})
    ids, targets = a_batch(rng, 20, 9)
    loss_off, g_off = tt.loss_and_grads(ids, targets, off, 2)
    loss_bare, g_bare = tt.loss_and_grads(ids, targets, bare, 2)
    assert abs(loss_off - loss_bare) < 1e-12
    for name in tm.weight_names(off):
        g = tm.get_weight(g_off, name)
        if ".mlp.c_proj." in name:
            assert g.any(), name
        elif ".ln_2." in name or ".mlp." in name:
            assert not g.any(), name
        else:
            assert np.allclose(g, tm.get_weight(g_bare, name), atol=1e-12), name


@pytest.mark.parametrize("d_mlp, tied, batch", list(itertools.product([0, 16], [False, True], [False, True])))
def test_float32_weights_give_float32_gradients_all_the_way(d_mlp, tied, batch):
    """No step of the backward pass turns float32 into float64 (nothing casts at the end)."""
    params = tm.tree_map(lambda w: np.asarray(w, np.float32),
                         tt.init_params(5, tied=tied, d=8, d_mlp=d_mlp, n_layer=2, n_vocab=20, n_ctx=16))
    rng = np.random.default_rng(5)
    ids, targets = a_batch(rng, 20, 7) if batch else (list(rng.integers(0, 20, 7)), list(rng.integers(0, 20, 7)))
    trace = {}
    logits = tm.forward(ids, params, 2, trace=trace)
    assert logits.dtype == np.float32
    dlogits = tt.softmax_cross_entropy_backward(logits, targets)
    assert dlogits.dtype == np.float32
    grads = tt.backward(dlogits, ids, params, 2, trace)
    stepped, (adam, _) = tt.sgd_step(params, grads, 0.1), tt.adam_step(params, grads, None, 0.1)
    for tree in (grads, stepped, adam):                    # and the optimisers keep float32
        assert {tm.get_weight(tree, n).dtype for n in tm.weight_names(tree)} == {np.dtype(np.float32)}


def test_ids_are_checked_against_the_models_own_vocabulary_and_context():
    params = tt.init_params(0, d=8, d_mlp=0, n_layer=1, n_vocab=20, n_ctx=16)
    ids = np.arange(15)[None] % 20 + 5                      # ids up to 19, 15 positions
    tt.loss_and_grads(ids, ids, params, 2)                  # beyond the toy's 12 and 8: fine
    with pytest.raises(ValueError, match="20"):
        tt.loss_and_grads(ids + 1, ids, params, 2)          # id 20 in a vocabulary of 20
    with pytest.raises(ValueError) as err:
        tt.train_batches(lambda step: (np.zeros((2, 17), int), np.zeros((2, 17), int)), params, 3)
    assert "16" in str(err.value) and "\n" not in str(err.value)


def copy_batches(seed, V=8, half=4, B=16):
    """Fresh rows of `half` random tokens then the same tokens again: the second half can
    be predicted from the first."""
    rng = np.random.default_rng(seed)

    def batch(step):
        first = rng.integers(0, V, (B, half))
        row = np.concatenate([first, first], axis=1)
        targets = row[:, 1:].copy()
        targets[:, :half - 1] = -1                          # grade the copy only
        return row[:, :-1], targets
    return batch


def test_train_batches_draws_a_fresh_batch_every_step_and_learns_to_copy():
    seen = []
    batches = copy_batches(0)

    def spy(step):
        seen.append(step)
        return batches(step)
    params = tt.init_params(0, d=16, d_mlp=0, n_layer=2, n_vocab=8, n_ctx=8)
    trained, history = tt.train_batches(spy, params, steps=300, lr=0.01, n_head=1)
    assert seen == list(range(301)) and len(history) == 301
    assert history[0] > 0.9 * np.log(8)                     # a fresh model guesses
    held = copy_batches(99)(0)
    assert loss_of(trained, *held, 1) < 0.5 * loss_of(params, *held, 1)


def test_a_large_vocabulary_trains_and_a_diverging_run_stops_with_the_sentence():
    """A model of 200 tokens starts near ln 200 = 5.3, twice the toy's ln 12."""
    params = tt.init_params(0, d=8, d_mlp=0, n_layer=1, n_vocab=200, n_ctx=8)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 200, (4, 8))
    _, history = tt.train_batches(lambda step: (ids, ids), params, steps=3, lr=1e-3)
    assert history[0] == pytest.approx(np.log(200), abs=0.2)
    with pytest.raises(ValueError, match="diverged"):
        tt.train_batches(lambda step: (ids, ids), tt.init_params(0, d=8, d_mlp=0, n_vocab=200, std=3.0),
                         steps=60, lr=200.0, optimizer="sgd")


def test_train_on_the_corpus_is_train_batches_with_one_batch():
    corpus = tt.load_corpus()
    ids, targets = tt.corpus_batch(corpus)
    _, a = tt.train(corpus, steps=20, seed=2)
    _, b = tt.train_batches(lambda step: (ids, targets), tt.init_params(2), steps=20)
    assert a == b


@pytest.mark.parametrize("d_mlp, tied", [(0, False), (0, True), (16, False)])
def test_a_checkpoint_of_ids_alone_round_trips_bit_for_bit(tmp_path, d_mlp, tied):
    params = tm.tree_map(lambda w: np.asarray(w, np.float32),
                         tt.init_params(7, tied=tied, d=8, d_mlp=d_mlp, n_layer=2, n_vocab=16, n_ctx=16))
    tg.save_gpt2(tmp_path, params, n_head=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    assert json.loads((tmp_path / "config.json").read_text())["n_inner"] == d_mlp
    checkpoint = tg.load_gpt2(tmp_path)
    assert checkpoint["encode"] is None and checkpoint["decode"] is None and checkpoint["n_head"] == 2
    assert tm.weight_names(checkpoint["params"]) == tm.weight_names(params)     # tied: no w_u, as saved
    for name in tm.weight_names(params):
        assert np.array_equal(tm.get_weight(checkpoint["params"], name), tm.get_weight(params, name)), name
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    assert np.array_equal(tm.forward(ids, checkpoint["params"], 2), tm.forward(ids, params, 2))


@pytest.mark.parametrize("tied", [True, False])
def test_a_saved_and_loaded_model_has_the_same_loss_gradients_and_training(tmp_path, tied):
    """A tied model is one without w_u, before and after a checkpoint: the loaded model's
    gradients are the in-memory model's, and training it keeps it tied."""
    params = tm.tree_map(lambda w: np.asarray(w, np.float32),
                         tt.init_params(3, tied=tied, d=8, d_mlp=16, n_layer=2, n_vocab=16, n_ctx=16))
    loaded = tg.load_gpt2(tg.save_gpt2(tmp_path, params, n_head=2))["params"]
    assert ("w_u" in loaded) == (not tied)
    ids, targets = [3, 1, 4, 1, 5, 9, 2], [1, 4, 1, 5, 9, 2, 6]
    loss, grads = tt.loss_and_grads(ids, targets, params, 2)
    loss_l, grads_l = tt.loss_and_grads(ids, targets, loaded, 2)
    assert loss_l == loss and tm.weight_names(grads_l) == tm.weight_names(grads)
    for name in tm.weight_names(grads):
        assert np.array_equal(tm.get_weight(grads_l, name), tm.get_weight(grads, name)), name
    trained, _ = tt.train_batches(lambda step: (np.array([ids]), np.array([targets])),
                                  tm.copy_params(loaded), steps=3, n_head=2)
    assert ("w_u" in trained) == (not tied)
