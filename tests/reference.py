"""The suite's one reference GPT-2 and its one random model, written from GPT-2's definition.

Nothing here imports the course's modules: the forward pass goes position by position and
head by head (minGPT's habit of a second, plainer implementation), so a slip in toy_model's
vectorised code (a mask off by one, a position offset, a scale, a variance) shows as a
difference. The random model has nothing at 0 or 1 (gains, biases, every position row),
so that no term can hide behind the toy's zeros.

    forward(ids, params, n_head, mask=True, sees=None, trace=None) -> logits [n, V]
    random_model(seed, d=8, n_layer=2, ...)                        -> a weights' tree
    sampling_filter(z, temperature, top_k=None, top_p=None)        -> the distribution drawn from
"""
import math

import numpy as np

EPS = 1e-5                                   # GPT-2's LayerNorm epsilon


def layer_norm(v, ln):
    """One row: minus its mean, over its population standard deviation, times g, plus b."""
    v = np.asarray(v, dtype=float)
    mu = v.sum() / len(v)
    var = ((v - mu) ** 2).sum() / len(v)
    return np.asarray(ln["g"]) * (v - mu) / math.sqrt(var + EPS) + np.asarray(ln["b"])


def gelu(a):
    """GPT-2's tanh form of GELU."""
    return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


def affine(v, layer):
    return np.asarray(v) @ np.asarray(layer["w"]) + np.asarray(layer["b"])


def forward(ids, params, n_head, mask=True, sees=None, trace=None):
    """GPT-2's logits for one text, one position and one head at a time.

    sees(i): the positions row i attends to (default: 0..i with the mask, all without).
    A block without "mlp" is attention-only; a tree without "w_u" is tied (W_U = wte^T).
    trace, if a dict, receives per block each head's query rows, weights and output ("q",
    "weights", "out": [head][n, ...]), the residual after attention ("h"), the MLP's
    activations ("act") and the output ("y")."""
    ids = [int(t) for t in ids]
    n = len(ids)
    sees = sees or ((lambda i: range(i + 1)) if mask else (lambda i: range(n)))
    wte, wpe = np.asarray(params["wte"]), np.asarray(params["wpe"])
    xs = [wte[t] + wpe[i] for i, t in enumerate(ids)]
    d = len(xs[0])
    dh = d // n_head
    blocks = []
    for blk in params["blocks"]:
        qkv = [affine(layer_norm(x, blk["ln_1"]), blk["attn"]["c_attn"]) for x in xs]
        weights = [np.zeros((n, n)) for _ in range(n_head)]
        outs = [np.zeros((n, dh)) for _ in range(n_head)]
        hs = []
        for i in range(n):
            js = list(sees(i))
            concat = []
            for hd in range(n_head):
                q = qkv[i][hd * dh:(hd + 1) * dh]
                scores = [float(q @ qkv[j][d + hd * dh:d + (hd + 1) * dh]) / math.sqrt(dh) for j in js]
                top = max(scores)
                e = [math.exp(s - top) for s in scores]
                w = [a / sum(e) for a in e]
                for j, wj in zip(js, w):
                    weights[hd][i, j] = wj
                outs[hd][i] = sum(wj * qkv[j][2 * d + hd * dh:2 * d + (hd + 1) * dh] for j, wj in zip(js, w))
                concat.append(outs[hd][i])
            hs.append(xs[i] + affine(np.concatenate(concat), blk["attn"]["c_proj"]))
        acts, ys = [], []
        for h in hs:
            if "mlp" in blk:
                act = gelu(affine(layer_norm(h, blk["ln_2"]), blk["mlp"]["c_fc"]))
                acts.append(act)
                ys.append(h + affine(act, blk["mlp"]["c_proj"]))
            else:
                ys.append(h)
        blocks.append({"q": [np.array([row[hd * dh:(hd + 1) * dh] for row in qkv]) for hd in range(n_head)],
                       "weights": weights, "out": outs, "h": np.array(hs), "act": np.array(acts),
                       "y": np.array(ys)})
        xs = ys
    w_u = np.asarray(params["w_u"]) if "w_u" in params else wte.T
    fs = [layer_norm(x, params["ln_f"]) for x in xs]
    logits = np.array([f @ w_u for f in fs])
    if trace is not None:
        trace.update(blocks=blocks, f=np.array(fs), logits=logits)
    return logits


def softmax_rows(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_model(seed=0, d=8, n_layer=2, n_vocab=12, n_ctx=8, d_mlp=None, tied=False, mlp=True,
                 scale=0.5):
    """GPT-2's layout with every entry drawn at random: gains in [0.5, 1.5], non-zero
    biases, every position row different. seed: a number or a numpy Generator."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    d_mlp = 4 * d if d_mlp is None else d_mlp

    def lin(a, b):
        return {"w": rng.normal(0, scale, (a, b)), "b": rng.normal(0, 0.6 * scale, b)}

    def norm():
        return {"g": rng.uniform(0.5, 1.5, d), "b": rng.normal(0, 0.3, d)}

    def block():
        blk = {"ln_1": norm(), "attn": {"c_attn": lin(d, 3 * d), "c_proj": lin(d, d)}}
        if mlp:
            blk.update(ln_2=norm(), mlp={"c_fc": lin(d, d_mlp), "c_proj": lin(d_mlp, d)})
        return blk
    params = {"wte": rng.normal(0, 1, (n_vocab, d)), "wpe": rng.normal(0, 1, (n_ctx, d)),
              "blocks": [block() for _ in range(n_layer)], "ln_f": norm()}
    if not tied:
        params["w_u"] = rng.normal(0, scale, (d, n_vocab))
    return params


def sampling_filter(z, temperature, top_k=None, top_p=None):
    """Hugging Face's order, written again: T (0: all on the largest logit), then top-k,
    then top-p on the renormalised top-k distribution (a token stays while the mass ranked
    strictly above it is below top_p)."""
    z = [float(a) for a in z]
    if temperature == 0:
        best = max(range(len(z)), key=lambda j: (z[j], -j))
        return np.eye(len(z))[best]
    z = [a / temperature for a in z]
    ranked = sorted(range(len(z)), key=lambda j: -z[j])
    kept = ranked[:top_k] if top_k else ranked
    top = max(z[j] for j in kept)
    total = sum(math.exp(z[j] - top) for j in kept)
    probs = {j: math.exp(z[j] - top) / total for j in kept}
    if top_p is not None:
        mass, nucleus = 0.0, []
        for j in kept:
            if mass >= top_p:
                break
            nucleus.append(j)
            mass += probs[j]
        total = sum(probs[j] for j in nucleus)
        probs = {j: probs[j] / total for j in nucleus}
    return np.array([probs.get(j, 0.0) for j in range(len(z))])


def sampled_steps(logits_of, ids, temperatures, seed, eot=None, n_ctx=None):
    """The sampling loop written plainly: one Generator seeded once; at each step the
    softmax of the last row's z / T at that step's temperature (greedy at T = 0, which draws
    nothing), then rng.choice; no step after eot or at a full context of n_ctx ids.
    logits_of(ids) gives the logits. Returns [(the ids before the step, p, the id drawn)]."""
    rng, ids, steps = np.random.default_rng(seed), list(ids), []
    for T in temperatures:
        if ids[-1] == eot or len(ids) == n_ctx:
            break
        z = logits_of(ids)[-1]
        e = np.exp((z - z.max()) / T) if T else (z == z.max()).astype(float)
        p = e / e.sum()
        steps.append((ids, p, int(np.argmax(p)) if T == 0 else int(rng.choice(len(p), p=p))))
        ids = ids + [steps[-1][2]]
    return steps


def cast(tree, dtype):
    """A weights' tree (dicts and lists of arrays) with every array in dtype."""
    if isinstance(tree, dict):
        return {k: cast(v, dtype) for k, v in tree.items()}
    if isinstance(tree, list):
        return [cast(v, dtype) for v in tree]
    return np.asarray(tree, dtype=dtype)


def without(params, branch=None, heads=(), n_head=1):
    """A copy of the weights with every block's `branch` ("attn" or "mlp") adding nothing
    (its output projection zeroed), and/or the (layer, head) pairs of `heads` silenced (their
    rows of W_O zeroed): the switches and ablations, written here from their definition."""
    out = cast(params, float)
    for layer, blk in enumerate(out["blocks"]):
        if branch is not None:
            blk[branch]["c_proj"] = {k: np.zeros_like(v) for k, v in blk[branch]["c_proj"].items()}
        size = len(blk["attn"]["c_proj"]["w"]) // n_head
        for L, h in heads:
            if L == layer:
                blk["attn"]["c_proj"]["w"][h * size:(h + 1) * size] = 0
    return out
