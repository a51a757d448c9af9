"""forward's options together, on random models, against the shared reference (tests/reference.py).

Each option alone is easy to get right; what slips is two at once (a batch with a KV
cache took its start position from the batch size). So every combination of the
options forward offers (a batch, a KV cache, a trace, the mask off, attention off, the
MLP off, tied weights) runs on random models of 1 to 3 blocks and 1 to 4 heads whose
biases, gains and position embeddings are all far from 0, and is compared with the
reference's loop: one position at a time, one head at a time, a switch as the reference
writes it (every block's branch silenced). The KV cache and
generation are tested here and nowhere else in the model's tests.
"""
import itertools

import numpy as np
import pytest

import reference as ref
import toy_model as tm

D, V, N_CTX, N = 12, 10, 9, 7            # d = 12 splits into 1, 2, 3 or 4 heads
CHUNKS = (3, 1, 3)                       # a cached run: 3 tokens, then 1, then 3


def random_model(seed, n_layer, tied):
    return ref.random_model(seed, d=D, n_layer=n_layer, n_vocab=V, n_ctx=N_CTX, d_mlp=16, tied=tied)


def visibility(mask, cached):
    """Which positions row i sees. With the mask: 0..i. Without it, in one pass: all of
    them; with a cache, only those run so far (the end of i's own chunk)."""
    ends = list(itertools.accumulate(CHUNKS))
    if mask:
        return lambda i: range(i + 1)
    if cached:
        return lambda i: range(next(e for e in ends if e > i))
    return lambda i: range(N)


OPTIONS = ["batch", "cache", "trace", "mask", "attention_on", "mlp_on", "tied"]
CASES = [dict(zip(OPTIONS, flags)) for flags in itertools.product([False, True], repeat=7)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(k for k, v in c.items() if v) or "none")
def test_every_combination_of_forwards_options_matches_the_reference(case):
    index = CASES.index(case)
    n_layer, n_head = 1 + index % 3, 1 + (index // 3) % 4      # every model shape in turn
    params = random_model(index, n_layer, case["tied"])
    rng = np.random.default_rng(1000 + index)
    texts = rng.integers(0, V, (3 if case["batch"] else 1, N))
    options = dict(n_head=n_head, mask=case["mask"])    # tied: the random model has no w_u
    silent = params                                     # the switches are weight edits: the
    for branch, on in (("attn", case["attention_on"]), ("mlp", case["mlp_on"])):   # reference's its own
        if not on:
            params, silent = tm.switch_off(params, branch), ref.without(silent, branch)
    want = np.array([ref.forward(t, silent, n_head, sees=visibility(case["mask"], case["cache"]))
                     for t in texts])
    ids = texts if case["batch"] else list(texts[0])
    trace = {} if case["trace"] else None
    if case["cache"]:
        cache, parts, start = [], [], 0
        for size in CHUNKS:
            chunk = texts[:, start:start + size] if case["batch"] else ids[start:start + size]
            parts.append(tm.forward(chunk, params, trace=trace, cache=cache, **options))
            start += size
        got = np.concatenate(parts, axis=-2)
        assert [kv["k"].shape[-2] for kv in cache] == [N] * n_layer
    else:
        got = tm.forward(ids, params, trace=trace, **options)
    got = got if case["batch"] else got[None]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    if trace is not None:                                        # the last run's intermediates
        assert len(trace["blocks"]) == n_layer
        np.testing.assert_array_equal(trace["logits"], parts[-1] if case["cache"] else
                                      (got if case["batch"] else got[0]))


def test_the_trace_holds_every_heads_weights_of_every_block():
    params = random_model(2, 2, False)
    ids = [0, 2, 4, 5, 1, 6]
    r, want = tm.intermediates(ids, params=params, n_head=3), {}
    ref.forward(ids, params, 3, trace=want)
    assert np.allclose(r["p"], ref.softmax_rows(want["logits"]), rtol=0, atol=1e-12)
    for got, blk in zip(r["blocks"], want["blocks"], strict=True):
        for hd in range(3):
            assert np.allclose(np.nan_to_num(got["heads"][hd]["weights"]), blk["weights"][hd], atol=1e-10)
        assert np.allclose(got["y"], blk["y"], atol=1e-10)


@pytest.mark.parametrize("n_layer, n_head", [(1, 1), (2, 3), (3, 4)])
def test_generation_with_and_without_the_cache_follows_the_reference(n_layer, n_head):
    """Each step's p is the reference's softmax(z / T) of the context so far, cache or not."""
    params = random_model(7 * n_layer + n_head, n_layer, False)
    for temperature in (0.0, 1.0):
        runs = [tm.generate([1, 2], temperature, seed=3, params=params, n_head=n_head, eot=None,
                            cache=cache) for cache in (False, True)]
        assert [s["next"] for s in runs[0]] == [s["next"] for s in runs[1]]
        assert len(runs[1]) == N_CTX - 2 and runs[1][-1]["ids"][2:] == [s["next"] for s in runs[1][:-1]]
        for step in runs[1]:
            z = ref.forward(step["ids"], params, n_head)[-1]
            np.testing.assert_allclose(step["p"], ref.sampling_filter(z, temperature), rtol=0, atol=1e-10)


def test_a_cache_that_does_not_fit_gets_one_sentence():
    params = random_model(0, 2, False)
    with pytest.raises(ValueError, match="does not fit these 2 block"):
        tm.forward([1], params, 2, cache=[{}, {}])
    cache = []
    tm.forward(np.array([[1, 2], [3, 4]]), params, 2, cache=cache)
    with pytest.raises(ValueError, match="The cache holds 2 text.* new ids have 1"):
        tm.forward([5], params, 2, cache=cache)
