"""Training (toy_model.py, section 6): the hand-written gradient against finite
differences, the loss of the Output page, invariants, the optimisers and train()."""
from pathlib import Path

import numpy as np
import pytest

import toy_model as tm

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = tm.encode("the cat climbed the")
EXAMPLE_TARGETS = EXAMPLE[1:] + [tm.VOCAB.index(" roof")]    # the next tokens; last: ␣roof


def random_params(seed, d=8, n_layer=2, tied=False, n_vocab=12, n_ctx=8, d_mlp=16):
    """Random weights with every part non-trivial: LN gains far from 1, non-zero LN and
    linear biases, so that no term of the gradient can hide behind a 0 or a 1."""
    rng = np.random.default_rng(seed)

    def lin(a, b):
        return {"w": rng.normal(0, 0.5, (a, b)), "b": rng.normal(0, 0.3, b)}

    def norm():
        return {"g": rng.uniform(0.5, 1.5, d), "b": rng.normal(0, 0.3, d)}
    params = {"wte": rng.normal(0, 1, (n_vocab, d)), "wpe": rng.normal(0, 1, (n_ctx, d)),
              "blocks": [{"ln_1": norm(), "attn": {"c_attn": lin(d, 3 * d), "c_proj": lin(d, d)},
                          "ln_2": norm(), "mlp": {"c_fc": lin(d, d_mlp), "c_proj": lin(d_mlp, d)}}
                         for _ in range(n_layer)],
              "ln_f": norm()}
    if not tied:
        params["w_u"] = rng.normal(0, 0.5, (d, n_vocab))
    return params


def read_only(tree):
    """A copy of a weight tree whose arrays cannot be written (as PARAMS may be)."""
    def frozen(a):
        a = np.array(a, dtype=float)
        a.setflags(write=False)
        return a
    return tm.tree_map(frozen, tree)


def numerical_grads(ids, targets, params, n_head):
    return {name: np.array([tm.finite_difference(ids, targets, name, idx, params, n_head)
                            for idx in np.ndindex(tm.get_weight(params, name).shape)]
                           ).reshape(tm.get_weight(params, name).shape)
            for name in tm.weight_names(params)}


def assert_close_to_finite_differences(ids, targets, params, n_head):
    _, grads = tm.loss_and_grads(ids, targets, params, n_head)
    numerical = numerical_grads(ids, targets, params, n_head)
    for name, fd in numerical.items():
        exact = tm.get_weight(grads, name)
        rel = np.linalg.norm(exact - fd) / max(np.linalg.norm(exact) + np.linalg.norm(fd), 1e-30)
        assert rel <= 1e-6, f"{name}: relative error {rel:.1e}"
        # entry by entry too: one wrong entry of a big array must not hide in the norm
        assert np.all(np.abs(exact - fd) <= 1e-6 * (np.abs(exact) + np.abs(fd)) + 1e-9), name


# --- The gradient, every weight, against finite differences ---------------------------

def test_every_gradient_of_the_toy_matches_finite_differences():
    assert_close_to_finite_differences(EXAMPLE, EXAMPLE_TARGETS, tm.PARAMS, tm.N_HEAD)


@pytest.mark.parametrize("n_head", [2, 4])
def test_every_gradient_of_random_two_block_weights_matches(n_head):
    ids = [3, 1, 4, 1, 5, 9, 2]                       # a repeated token: its rows add up
    targets = [1, 4, 1, 5, 9, 2, 6]
    assert_close_to_finite_differences(ids, targets, random_params(n_head), n_head)


def test_tied_weights_get_both_gradients_of_wte():
    """Tied: wte is the embedding and the unembedding; its gradient sums both roles."""
    params = random_params(7, d=4, d_mlp=8, tied=True)
    assert "w_u" not in params
    assert_close_to_finite_differences([0, 5, 5, 7, 2], [5, 5, 7, 2, 11], params, 2)


def test_a_padded_batch_matches_finite_differences():
    ids = [[3, 1, 4, 1, 5], [2, 6, 11, 11, 11]]
    targets = [[1, 4, 1, 5, 9], [6, 10, -1, -1, -1]]   # -1: padding, not graded
    assert_close_to_finite_differences(ids, targets, random_params(3, d=4, n_layer=1, d_mlp=8), 2)


# --- The loss and the batch ---------------------------------------------------------------

def test_the_loss_of_the_example_is_the_output_pages_0979():
    loss, _ = tm.loss_and_grads(EXAMPLE, EXAMPLE_TARGETS)
    assert round(loss, 3) == 0.979
    assert loss == pytest.approx(tm.cross_entropy(tm.forward(EXAMPLE), EXAMPLE_TARGETS), abs=1e-12)


def test_last_rows_logit_gradient_is_p_minus_onehot():
    logits = tm.forward(EXAMPLE)
    dz = tm.softmax_cross_entropy_backward(logits, EXAMPLE_TARGETS)
    p = tm.softmax(logits)[-1]
    roof = tm.VOCAB.index(" roof")
    assert np.allclose(dz[-1] * len(EXAMPLE), p - (np.arange(12) == roof))
    assert dz[-1, roof] < 0 and (np.delete(dz[-1], roof) > 0).all()


@pytest.mark.parametrize("params, n_head", [(tm.PARAMS, 2), (random_params(1), 4)],
                         ids=["toy", "random 2 blocks"])
def test_the_batched_forward_is_the_forward(params, n_head):
    for text in ["the cat climbed the", "the dog climbed the wall.<|endoftext|>", "the"]:
        ids = tm.encode(text)
        batched = tm.forward(np.array([ids, ids]), params, n_head=n_head)      # [2, n, V]
        assert np.allclose(batched, tm.forward(ids, params, n_head=n_head), atol=1e-12)


def test_a_batch_is_the_token_weighted_mean_of_its_texts():
    corpus = [tm.encode("the cat climbed the roof.") + [tm.EOT], tm.encode("the dog climbed.") + [tm.EOT]]
    ids, targets = tm.corpus_batch(corpus)
    params = random_params(2, d=4, n_layer=1)
    loss, grads = tm.loss_and_grads(ids, targets, params)
    single = [tm.loss_and_grads(seq[:-1], seq[1:], params) for seq in corpus]
    counts = np.array([len(seq) - 1 for seq in corpus])
    share = counts / counts.sum()
    assert loss == pytest.approx(sum(s * l for s, (l, _) in zip(share, single)), abs=1e-12)
    mean = tm.tree_map(lambda a, b: share[0] * a + share[1] * b, single[0][1], single[1][1])
    for name in tm.weight_names(params):
        assert np.allclose(tm.get_weight(grads, name), tm.get_weight(mean, name), atol=1e-12), name


# --- Invariants ---------------------------------------------------------------------------

@pytest.mark.parametrize("params, n_head", [(tm.PARAMS, 2), (random_params(4), 4)],
                         ids=["toy", "random 2 blocks"])
def test_a_small_gradient_step_lowers_the_loss(params, n_head):
    ids, targets = [0, 2, 4, 5, 1, 6], [2, 4, 5, 1, 6, 10]
    loss, grads = tm.loss_and_grads(ids, targets, params, n_head)
    new_loss, _ = tm.loss_and_grads(ids, targets, tm.sgd_step(params, grads, 1e-3), n_head)
    assert new_loss < loss
    squared = sum(float((tm.get_weight(grads, n) ** 2).sum()) for n in tm.weight_names(grads))
    assert loss - new_loss == pytest.approx(1e-3 * squared, rel=0.05)   # first order: lr |g|^2


@pytest.mark.parametrize("params, n_head", [(tm.PARAMS, 2), (random_params(5), 4)],
                         ids=["toy", "random 2 blocks"])
@pytest.mark.parametrize("i", range(6))
def test_the_loss_at_a_position_ignores_every_later_position(params, n_head, i):
    """The causal mask at work: grade position i alone; the embeddings (wpe rows, and the
    wte rows of tokens used only later) of every position j > i get exactly 0."""
    ids = [0, 2, 4, 5, 1, 6]                            # six different tokens
    targets = [-1] * 6
    targets[i] = 3
    _, grads = tm.loss_and_grads(ids, targets, params, n_head)
    assert np.all(grads["wpe"][i + 1:] == 0)
    assert np.all(grads["wpe"][:i + 1] != 0)           # the earlier ones do matter
    later = ids[i + 1:]
    untied_wte = grads["wte"] if "w_u" in params else None
    if untied_wte is not None:
        assert np.all(untied_wte[later] == 0)
        assert np.all(untied_wte[ids[:i + 1]] != 0)


def test_grads_have_exactly_the_layout_of_params():
    for params in [tm.PARAMS, random_params(6), random_params(6, tied=True)]:
        _, grads = tm.loss_and_grads([1, 2, 3], [2, 3, 4], params, 2)
        assert tm.weight_names(grads) == tm.weight_names(params)
        for name in tm.weight_names(params):
            assert tm.get_weight(grads, name).shape == np.shape(tm.get_weight(params, name)), name
        assert isinstance(grads["blocks"], list)


# --- Optimisers and training ----------------------------------------------------------------

def test_nothing_writes_into_the_weights():
    """The optimisers return new weights: read-only weights stay as they were."""
    frozen = read_only(tm.PARAMS)
    before = tm.tree_map(np.copy, frozen)
    loss, grads = tm.loss_and_grads(EXAMPLE, EXAMPLE_TARGETS, frozen)
    stepped = tm.sgd_step(frozen, grads, 0.1)
    adam, _ = tm.adam_step(frozen, grads, None, 1e-3)
    corpus = tm.read_corpus("the cat climbed the roof.")
    tm.train(corpus, params=frozen, steps=3)
    for name in tm.weight_names(frozen):
        assert np.array_equal(tm.get_weight(frozen, name), tm.get_weight(before, name))
        assert not np.array_equal(tm.get_weight(stepped, name), tm.get_weight(frozen, name)) \
            or not tm.get_weight(grads, name).any()
    assert tm.loss_and_grads(EXAMPLE, EXAMPLE_TARGETS, adam)[0] < loss


def test_sgd_moves_each_weight_by_minus_lr_times_its_gradient():
    _, grads = tm.loss_and_grads(EXAMPLE, EXAMPLE_TARGETS)
    new = tm.sgd_step(tm.PARAMS, grads, 0.5)
    assert np.allclose(new["w_u"], tm.PARAMS["w_u"] - 0.5 * grads["w_u"])


def test_adams_first_step_moves_every_weight_by_lr_against_its_gradient():
    _, grads = tm.loss_and_grads(EXAMPLE, EXAMPLE_TARGETS)
    new, state = tm.adam_step(tm.PARAMS, grads, None, lr=0.01)
    assert state["t"] == 1
    for name in tm.weight_names(grads):
        g, moved = tm.get_weight(grads, name), tm.get_weight(new, name) - tm.get_weight(tm.PARAMS, name)
        big = np.abs(g) > 1e-6                         # where eps is negligible
        assert np.allclose(moved[big], -0.01 * np.sign(g[big]), rtol=1e-3), name


def test_train_is_deterministic_for_a_seed_and_lowers_the_loss():
    corpus = tm.read_corpus((ROOT / "data" / "corpus.txt").read_text(encoding="utf-8"))
    a, history_a = tm.train(corpus, steps=25, seed=3)
    b, history_b = tm.train(corpus, steps=25, seed=3)
    _, history_c = tm.train(corpus, steps=25, seed=4)
    assert history_a == history_b and len(history_a) == 26
    assert all(np.array_equal(tm.get_weight(a, n), tm.get_weight(b, n)) for n in tm.weight_names(a))
    assert history_a != history_c
    assert history_a[-1] < history_a[0]
    assert history_a[-1] == pytest.approx(tm.corpus_loss(corpus, a), abs=1e-12)
    tied, _ = tm.train(corpus, steps=2, seed=3, tied=True)
    assert "w_u" not in tied


def test_random_initialisation_is_seeded_and_has_the_toys_layout():
    a, b = tm.init_params(0), tm.init_params(0)
    assert tm.weight_names(a) == tm.weight_names(tm.PARAMS)
    assert all(np.array_equal(tm.get_weight(a, n), tm.get_weight(b, n)) for n in tm.weight_names(a))
    assert all(tm.get_weight(a, n).shape == tm.get_weight(tm.PARAMS, n).shape for n in tm.weight_names(a))
    assert not np.array_equal(tm.init_params(1)["wte"], a["wte"])


def test_the_live_curve_shows_the_run_it_trains():
    corpus = tm.load_corpus()
    _, history = tm.train_live(corpus, steps=30, every=10, seed=1)
    assert history == tm.train(corpus, steps=30, seed=1)[1]
    root = tm.train_live.panel
    steps, losses = root.line.get_data()
    assert list(steps) == list(range(31)) and list(losses) == history
    assert f"loss {tm.fmt(history[0])} → {tm.fmt(history[-1])} nats" in root.progress.value


# --- The corpus and bad input ----------------------------------------------------------------

def test_the_corpus_fits_the_vocabulary_and_the_context():
    text = (ROOT / "data" / "corpus.txt").read_text(encoding="utf-8")
    corpus = tm.read_corpus(text)
    assert len(corpus) == len([line for line in text.splitlines() if line.strip()]) >= 10
    assert all(seq[-1] == tm.EOT and len(seq) <= tm.N_CTX for seq in corpus)
    assert {tm.decode(seq[:-1]) for seq in corpus} >= {"the cat climbed the roof.", "the dog climbed the sofa."}


@pytest.mark.parametrize("call, words", [
    (lambda: tm.read_corpus("the cat climbed the roof. the dog climbed the"), "at most 8"),
    (lambda: tm.get_weight(tm.PARAMS, "blocks.0.attn.w_q"), "No weight is named"),
    (lambda: tm.loss_and_grads([1, 2, 3], [2, 3]), "same shape"),
    (lambda: tm.loss_and_grads([1, 2, 3], [-1, -1, -1]), "at least one graded"),
    (lambda: tm.loss_and_grads([1, 2, 30], [2, 3, 4]), "does not exist"),
    (lambda: tm.train([[0, 2, 11]], steps=1, optimizer="rmsprop"), "'adam' or 'sgd'"),
])
def test_bad_input_gets_a_clear_message(call, words):
    with pytest.raises(ValueError, match=words):
        call()
