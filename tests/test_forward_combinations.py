"""forward's options together, on random models, against a reference written here.

Each option alone is easy to get right; what slips is two at once (a batch with a KV
cache took its start position from the batch size). So every combination of the
options forward offers (a batch, a KV cache, a trace, the mask off, attention off, the
MLP off, tied weights) runs on random models of 1 to 3 blocks and 1 to 4 heads whose
biases, gains and position embeddings are all far from 0, and is compared with the
test's own loop: one position at a time, one head at a time, no shared code with the
model but numpy's arithmetic.
"""
import itertools
import math

import numpy as np
import pytest

import toy_model as tm
import toy_train as tt

D, V, N_CTX, N = 12, 10, 9, 7            # d = 12 splits into 1, 2, 3 or 4 heads
CHUNKS = (3, 1, 3)                       # a cached run: 3 tokens, then 1, then 3


def random_model(seed, n_layer, tied):
    """Weights of GPT-2's layout where nothing is 0 or 1: every entry drawn at random."""
    rng = np.random.default_rng(seed)
    params = tt.init_params(seed, tied=tied, d=D, d_mlp=16, n_layer=n_layer, n_vocab=V,
                            n_ctx=N_CTX, std=0.5)
    return tm.tree_map(lambda w: w + rng.normal(0, 0.5, w.shape), params)


def reference_logits(ids, params, n_head, sees, attention_on=True, mlp_on=True, tied=False):
    """The forward pass position by position. sees(i): the positions row i attends to."""
    def ln(v, g, b):
        mu = v.mean()
        return g * (v - mu) / math.sqrt(((v - mu) ** 2).mean() + 1e-5) + b

    def gelu(a):
        return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))

    n, dh = len(ids), D // n_head
    xs = [np.asarray(params["wte"][t]) + params["wpe"][i] for i, t in enumerate(ids)]
    for p in params["blocks"]:
        c_attn, c_proj = p["attn"]["c_attn"], p["attn"]["c_proj"]
        qkv = [ln(x, **p["ln_1"]) @ c_attn["w"] + c_attn["b"] for x in xs]
        out = []
        for i in range(n):
            h = xs[i]
            if attention_on:
                heads = []
                for hd in range(n_head):
                    q = qkv[i][hd * dh:(hd + 1) * dh]
                    js = sees(i)
                    scores = [q @ qkv[j][D + hd * dh:D + (hd + 1) * dh] / math.sqrt(dh) for j in js]
                    w = np.exp(np.array(scores) - max(scores))
                    w /= w.sum()
                    heads.append(sum(wj * qkv[j][2 * D + hd * dh:2 * D + (hd + 1) * dh]
                                     for wj, j in zip(w, js)))
                h = h + np.concatenate(heads) @ c_proj["w"] + c_proj["b"]
            if mlp_on:
                fc, proj = p["mlp"]["c_fc"], p["mlp"]["c_proj"]
                h = h + gelu(ln(h, **p["ln_2"]) @ fc["w"] + fc["b"]) @ proj["w"] + proj["b"]
            out.append(h)
        xs = out
    w_u = np.asarray(params["wte"]).T if tied or "w_u" not in params else params["w_u"]
    return np.array([ln(x, **params["ln_f"]) @ w_u for x in xs])


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
    if not case["attention_on"]:                        # the switches are weight edits
        params = tm.switch_off(params, "attn")
    if not case["mlp_on"]:
        params = tm.switch_off(params, "mlp")
    want = np.array([reference_logits(list(t), params, n_head, visibility(case["mask"], case["cache"]),
                                      case["attention_on"], case["mlp_on"], case["tied"])
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


@pytest.mark.parametrize("n_layer, n_head", [(1, 1), (2, 3), (3, 4)])
def test_generation_with_the_cache_follows_generation_without_it_on_random_models(n_layer, n_head):
    params = random_model(7 * n_layer + n_head, n_layer, False)
    for temperature in (0.0, 1.0):
        runs = [tm.generate([1, 2], temperature, seed=3, params=params, n_head=n_head, eot=None,
                            cache=cache) for cache in (False, True)]
        assert [s["next"] for s in runs[0]] == [s["next"] for s in runs[1]]
        assert max(np.abs(a["p"] - b["p"]).max() for a, b in zip(*runs, strict=True)) < 1e-12


def test_a_cache_that_does_not_fit_gets_one_sentence():
    params = random_model(0, 2, False)
    with pytest.raises(ValueError, match="does not fit these 2 block"):
        tm.forward([1], params, 2, cache=[{}, {}])
    cache = []
    tm.forward(np.array([[1, 2], [3, 4]]), params, 2, cache=cache)
    with pytest.raises(ValueError, match="The cache holds 2 text.* new ids have 1"):
        tm.forward([5], params, 2, cache=cache)
