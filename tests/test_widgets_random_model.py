"""The model's functions on a model whose zeros hide nothing.

The toy's position rows are zero after the first, its biases 0 and its gains 1, so a
position off by one, a bias added twice or a gain left out passes every test on the toy.
Here a random model (non-zero biases and gains, every position row different, two
blocks, two heads) runs through what the widgets and exercises call: run's trace, the
switches (attention off, MLP off, tied), generation with and without the KV cache, and
embed with a start position. Each is compared with a loop-by-loop reference written here.
"""
import math

import numpy as np
import pytest

import toy_model as tm

V, N_CTX, D, HEADS = 12, 8, 4, 2


def random_model(seed):
    rng = np.random.default_rng(seed)

    def lin(a, b):
        return {"w": rng.normal(0, 0.7, (a, b)), "b": rng.normal(0, 0.5, b)}

    def norm():
        return {"g": 1 + rng.normal(0, 0.3, D), "b": rng.normal(0, 0.3, D)}
    return {"wte": rng.normal(0, 1, (V, D)), "wpe": rng.normal(0, 1, (N_CTX, D)),
            "blocks": [{"ln_1": norm(), "attn": {"c_attn": lin(D, 3 * D), "c_proj": lin(D, D)},
                        "ln_2": norm(), "mlp": {"c_fc": lin(D, 4 * D), "c_proj": lin(4 * D, D)}}
                       for _ in range(2)],
            "ln_f": norm(), "w_u": rng.normal(0, 1, (D, V))}


# --- the reference: plain Python loops, one number at a time ---------------------------

def ln(v, g, b):
    mu = sum(v) / len(v)
    var = sum((a - mu) ** 2 for a in v) / len(v)
    return [gi * (a - mu) / math.sqrt(var + 1e-5) + bi for a, gi, bi in zip(v, g, b)]


def affine(v, layer):
    w, b = layer["w"], layer["b"]
    return [sum(v[i] * w[i][j] for i in range(len(v))) + b[j] for j in range(len(b))]


def gelu(a):
    return 0.5 * a * (1 + math.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


def reference(ids, P, attention_on=True, mlp_on=True, tied=False):
    """Logits (one list per position) and, per block, each head's attention weights."""
    xs = [[P["wte"][t][j] + P["wpe"][pos][j] for j in range(D)] for pos, t in enumerate(ids)]
    dh = D // HEADS
    weights = []
    for blk in P["blocks"]:
        qkv = [affine(ln(x, blk["ln_1"]["g"], blk["ln_1"]["b"]), blk["attn"]["c_attn"]) for x in xs]
        hs, block_w = [], [[[0.0] * len(ids) for _ in ids] for _ in range(HEADS)]
        for i, x in enumerate(xs):
            concat = []
            for hd in range(HEADS):
                q = qkv[i][hd * dh:(hd + 1) * dh]
                scores = [sum(q[k] * qkv[j][D + hd * dh + k] for k in range(dh)) / math.sqrt(dh)
                          for j in range(i + 1)]
                top = max(scores)
                e = [math.exp(s - top) for s in scores]
                w = [a / sum(e) for a in e]
                block_w[hd][i][:i + 1] = w
                concat += [sum(w[j] * qkv[j][2 * D + hd * dh + k] for j in range(i + 1)) for k in range(dh)]
            out = affine(concat, blk["attn"]["c_proj"])
            hs.append([x[k] + out[k] for k in range(D)] if attention_on else list(x))
        weights.append(block_w)
        ys = []
        for h in hs:
            if mlp_on:
                u = [gelu(a) for a in affine(ln(h, blk["ln_2"]["g"], blk["ln_2"]["b"]), blk["mlp"]["c_fc"])]
                m = affine(u, blk["mlp"]["c_proj"])
                ys.append([h[k] + m[k] for k in range(D)])
            else:
                ys.append(h)
        xs = ys
    logits = []
    for y in xs:
        f = ln(y, P["ln_f"]["g"], P["ln_f"]["b"])
        w_u = [[P["wte"][t][k] for t in range(V)] for k in range(D)] if tied else P["w_u"]
        logits.append([sum(f[k] * w_u[k][t] for k in range(D)) for t in range(V)])
    return logits, weights


IDS = [0, 2, 4, 5, 1, 6]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_trace_run_shows_matches_the_loops_on_a_random_two_block_model(seed):
    P = random_model(seed)
    r = tm.intermediates(IDS, params=P, n_head=HEADS)
    logits, weights = reference(IDS, P)
    assert np.allclose(r["logits"], logits, atol=1e-10)
    assert np.allclose(r["p"], tm.softmax(np.array(logits)), atol=1e-12)
    assert np.allclose(r["x"], np.array(P["wte"])[IDS] + np.array(P["wpe"])[:len(IDS)])
    for b, blk in enumerate(r["blocks"]):
        for hd in range(HEADS):
            assert np.allclose(np.nan_to_num(blk["heads"][hd]["weights"]), weights[b][hd], atol=1e-10)


@pytest.mark.parametrize("option", [{"attention_on": False}, {"mlp_on": False}, {"tied": True},
                                    {"attention_on": False, "mlp_on": False},
                                    {"attention_on": False, "tied": True}])
def test_the_widgets_switches_match_the_loops_on_a_random_model(option):
    P = random_model(2)
    logits, _ = reference(IDS, P, **option)
    model = tm.tie(P) if option.get("tied") else P                  # the switches are weight edits
    model = tm.switch_off(model, "attn") if option.get("attention_on") is False else model
    model = tm.switch_off(model, "mlp") if option.get("mlp_on") is False else model
    assert np.allclose(tm.forward(IDS, model, HEADS), logits, atol=1e-10), option


@pytest.mark.parametrize("start", [0, 1, 3])
def test_embed_adds_the_row_of_each_tokens_own_position(start):
    P = random_model(3)
    ids = [5, 1, 7]
    x = tm.embed(ids, P["wte"], P["wpe"], start)
    for i, t in enumerate(ids):
        assert np.allclose(x[i], [P["wte"][t][j] + P["wpe"][start + i][j] for j in range(D)])


def greedy_by_loops(prompt, P):
    ids = list(prompt)
    while len(ids) < N_CTX:                            # eot=None: only a full context stops
        last = reference(ids, P)[0][-1]
        ids.append(max(range(V), key=lambda t: last[t]))
    return ids[len(prompt):]


@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize("seed", [4, 5, 6])
def test_generation_with_and_without_the_cache_matches_the_loops(seed, cache):
    """The KV cache runs each new token at its own position: off by one, it still passes
    on the toy (all its position rows after the first are zero), and fails here."""
    P = random_model(seed)
    steps = tm.generate([3, 0], temperature=0, params=P, n_head=HEADS, eot=None, cache=cache)
    assert [s["next"] for s in steps] == greedy_by_loops([3, 0], P)
    drawn = tm.generate([3, 0], temperature=1.0, seed=seed, params=P, n_head=HEADS, eot=None,
                        cache=cache)                  # at T = 1 each step's p is softmax(z)
    for s in drawn:
        last = reference(s["ids"], P)[0][-1]
        assert np.allclose(s["p"], tm.softmax(np.array(last)), atol=1e-10)
