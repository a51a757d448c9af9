"""Lab 08: training the toy by gradient descent, with every gradient computed by hand.

Each function of toy_model's forward pass has a `_backward` twin here; `backward` runs
them in reverse to get every weight's gradient, `finite_difference` measures one to
check it, and the optimisers and `train` use them on the course's corpus.
"""
from pathlib import Path

import numpy as np

from toy_model import (EOT, N_CTX, N_HEAD, PARAMS, VOCAB, _ln_params, attention, block,
                       cross_entropy, decode, encode, forward, get_weight, gelu, layer_norm,
                       mlp, multi_head, replace_weight, softmax, tree_map)

# Training moves every weight a little in the direction that lowers the loss of toy_model's
# section 4. That direction is the gradient: for each weight, how fast the loss grows when the
# weight grows. It is computed backwards (backpropagation): each forward function of
# toy_model gets a `_backward` twin that takes d loss / d (its output), written d<output> and of
# the same shape, and returns d loss / d (its input) and d loss / d (its weights). What
# the twins need from the forward pass they take from `trace` (what the forward
# function recorded) or, without it, recompute from their input.
#
# Training grades many texts at once, so this part also takes a batch: ids [B, n] with
# every array one axis longer ([B, n, d]). Shorter texts are padded at the end; a
# target of -1 marks a padded position, which the loss does not grade. Because of the
# causal mask, what comes after a text never changes its rows.

def transpose(a):
    """Swap the last two axes: k^T for one text [n, d] or for each text of a batch."""
    return a.swapaxes(-1, -2)


def softmax_cross_entropy_backward(logits, targets):
    """d loss / d logits: (p - onehot(target)) / (number graded), row by row; 0 on padding."""
    targets = np.asarray(targets)
    graded = targets >= 0
    p = softmax(logits)                                     # [..., n, V]
    onehot = np.arange(p.shape[-1]) == targets[..., None]   # True at the target only
    return (p - onehot) * graded[..., None] / graded.sum()  # [..., n, V]


def linear_backward(dout, x, w):
    """out = x w + b. Returns dx (x's shape), dw [d_in, d_out], db [d_out]; the weights'
    gradients add up over every row of every text."""
    rows_x, rows_dout = x.reshape(-1, x.shape[-1]), dout.reshape(-1, dout.shape[-1])
    return dout @ w.T, rows_x.T @ rows_dout, rows_dout.sum(axis=0)


def layer_norm_backward(dout, x, g, eps=1e-5):
    """out = g * xhat + b, xhat = (x - mean) / std row by row. Returns dx, dg [d], db [d].

    Moving one entry of x also moves its row's mean and std: hence the two averages."""
    std = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    xhat = (x - x.mean(axis=-1, keepdims=True)) / std
    dxhat = dout * g                                        # [..., n, d]
    dx = (dxhat - dxhat.mean(axis=-1, keepdims=True)
          - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)) / std
    d = x.shape[-1]
    return dx, (dout * xhat).reshape(-1, d).sum(axis=0), dout.reshape(-1, d).sum(axis=0)


def gelu_backward(dout, x):
    """dout times GELU's slope at x (the tanh form, by the chain rule)."""
    c, x2 = np.sqrt(2 / np.pi), x * x
    t = np.tanh(c * x * (1 + 0.044715 * x2))
    slope = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x2)
    return dout * slope


def mlp_backward(dout, x, c_fc, c_proj, trace=None):
    """Back through narrow, GELU, widen. Returns dx and the MLP's gradients. (trace: what
    mlp() recorded for this x, if kept; otherwise the forward pass is run again.)"""
    if trace is None:
        trace = {}
        mlp(x, c_fc, c_proj, trace=trace)
    pre = trace["mlp_pre"]                                   # [..., n, d_mlp]
    dact, dw_proj, db_proj = linear_backward(dout, trace["mlp_act"], c_proj["w"])
    dx, dw_fc, db_fc = linear_backward(gelu_backward(dact, pre), x, c_fc["w"])
    return dx, {"c_fc": {"w": dw_fc, "b": db_fc}, "c_proj": {"w": dw_proj, "b": db_proj}}


def softmax_backward(dout, p):
    """Back through a softmax by rows: each p_j moves with every score of its row."""
    return p * (dout - (dout * p).sum(axis=-1, keepdims=True))


def attention_backward(dout, q, k, v, mask=True, weights=None):
    """One head, out = weights v. Returns dq, dk, dv [..., n, d_head]. (weights: the
    head's attention weights, when already computed.)

    A masked weight is exactly 0, and so is its gradient: nothing reaches a later position."""
    if weights is None:
        trace = {}
        attention(q, k, v, mask, trace=trace)
        weights = trace["weights"]                           # [..., n, n]
    dweights, dv = dout @ transpose(v), transpose(weights) @ dout
    dscores = softmax_backward(dweights, weights)           # 0 where masked
    scale = 1 / np.sqrt(q.shape[-1])                        # the 1/sqrt(d_head) of the scores
    return dscores @ k * scale, transpose(dscores) @ q * scale, dv


def multi_head_backward(dout, x, c_attn, c_proj, n_head, mask=True, trace=None):
    """Back through W_O, each head, and the q/k/v projection. Returns dx and the gradients.
    (trace: what multi_head recorded for this x; otherwise the forward pass runs again.)"""
    if trace is None:
        trace = {}
        multi_head(x, c_attn, c_proj, n_head, mask, trace=trace)
    dconcat, dw_o, db_o = linear_backward(dout, trace["concat"], c_proj["w"])
    dheads = np.split(dconcat, n_head, axis=-1)             # n_head x [..., n, d_head]
    per_head = [attention_backward(dh, t["q"], t["k"], t["v"], mask, t["weights"])
                for dh, t in zip(dheads, trace["heads"], strict=True)]
    dq, dk, dv = (np.concatenate(parts, axis=-1) for parts in zip(*per_head))   # [..., n, d]
    dx, dw_qkv, db_qkv = linear_backward(np.concatenate([dq, dk, dv], axis=-1), x, c_attn["w"])
    return dx, {"c_attn": {"w": dw_qkv, "b": db_qkv}, "c_proj": {"w": dw_o, "b": db_o}}


def block_backward(dy, x, blk, n_head, trace=None):
    """Back through y = h + mlp(LN2(h)), h = x + attn(LN1(x)). Returns dx and the gradients.
    (trace: what block recorded for this x; otherwise the forward pass runs again.)

    A residual add hands its gradient to both of its inputs unchanged: dy reaches h
    directly and through the MLP; dh reaches x directly and through attention."""
    if trace is None:
        trace = {}
        block(x, blk, n_head, trace=trace)
    du, g_mlp = mlp_backward(dy, trace["ln2"], **blk["mlp"], trace=trace)
    dh_ln, dg2, db2 = layer_norm_backward(du, trace["h"], blk["ln_2"]["g"])
    dh = dy + dh_ln                                         # [..., n, d]
    da, g_attn = multi_head_backward(dh, trace["ln1"], **blk["attn"], n_head=n_head, trace=trace)
    dx_ln, dg1, db1 = layer_norm_backward(da, x, blk["ln_1"]["g"])
    return dh + dx_ln, {"ln_1": {"g": dg1, "b": db1}, "attn": g_attn,
                        "ln_2": {"g": dg2, "b": db2}, "mlp": g_mlp}


def unembed_backward(dlogits, f, w_u):
    """logits = f W_U. Returns df [..., n, d] and dW_U [d, V]."""
    df, dw_u, _ = linear_backward(dlogits, f, w_u)
    return df, dw_u


def embed_backward(dx, ids, wte, wpe):
    """x = wte[ids] + wpe[:n]: each row's gradient goes to its token's row of wte (a token
    used twice collects both) and to its position's row of wpe."""
    ids = np.asarray(ids)
    d = dx.shape[-1]
    dwte, dwpe = np.zeros(np.shape(wte)), np.zeros(np.shape(wpe))
    np.add.at(dwte, ids.reshape(-1), dx.reshape(-1, d))
    dwpe[:ids.shape[-1]] = dx.reshape(-1, ids.shape[-1], d).sum(axis=0)
    return dwte, dwpe


def backward(dlogits, ids, params=PARAMS, n_head=N_HEAD, trace=None):
    """Every weight's gradient, given d loss / d logits: each step of the forward pass
    undone in reverse. The result has exactly params' layout. trace: what forward() kept
    for these ids (if None, the forward pass is run again)."""
    if trace is None:
        trace = {}
        forward(ids, params, n_head, trace=trace)
    xs = [trace["x"]] + [t["y"] for t in trace["blocks"]]  # each block's input, then its output
    tied = "w_u" not in params
    df, dw_u = unembed_backward(dlogits, trace["f"], params["wte"].T if tied else params["w_u"])
    dy, dg_f, db_f = layer_norm_backward(df, trace["y"], params["ln_f"]["g"])
    block_grads = []
    for blk, x, t in reversed(list(zip(params["blocks"], xs, trace["blocks"]))):
        dy, g = block_backward(dy, x, blk, n_head, t)       # now d loss / d (the block's input)
        block_grads.insert(0, g)
    dwte, dwpe = embed_backward(dy, ids, params["wte"], params["wpe"])
    grads = {"wte": dwte + dw_u.T if tied else dwte, "wpe": dwpe, "blocks": block_grads,
             "ln_f": {"g": dg_f, "b": db_f}}
    if not tied:
        grads["w_u"] = dw_u
    return grads


def loss_and_grads(ids, targets, params=PARAMS, n_head=N_HEAD):
    """Section 4's loss (the mean of -ln p(target)) and its gradient with respect to every
    weight, in params' layout. ids and targets: [n] for one text, or [B, n] for a batch
    (a target of -1 is not graded)."""
    ids = check_batch(ids, targets)
    trace = {}
    logits = forward(ids, params, n_head, trace=trace)      # [..., n, V]
    loss = cross_entropy(logits, targets)                    # checks the targets too
    dlogits = softmax_cross_entropy_backward(logits, targets)
    return loss, backward(dlogits, ids, params, n_head, trace)


def check_batch(ids, targets):
    """ids as an array of targets' shape: [n] for one text or [B, n] for a batch."""
    if isinstance(ids, str):
        raise ValueError("ids are token ids, not text: turn text into ids with encode() first.")
    arr, shape = np.asarray(ids, dtype=object), np.shape(targets)
    if arr.shape != shape or arr.ndim not in (1, 2):
        raise ValueError(f"ids {arr.shape} and targets {shape} need the same shape: "
                         "[n] for one text or [B, n] for a batch.")
    return np.asarray(ids) if arr.ndim == 2 else list(ids)


def finite_difference(ids, targets, name, index, params=PARAMS, n_head=N_HEAD, eps=1e-5):
    """d loss / d (one weight), measured rather than derived: nudge the weight by +eps and
    by -eps, and divide the change of the loss by 2 eps. A check on loss_and_grads."""
    ids = check_batch(ids, targets)
    w = np.asarray(get_weight(params, name), dtype=float)
    losses = []
    for step in (eps, -eps):
        nudged = w.copy()                                   # a copy: params stay as they are
        nudged[index] += step
        new = replace_weight(params, name, nudged)
        losses.append(cross_entropy(forward(ids, new, n_head), targets))
    return (losses[0] - losses[1]) / (2 * eps)


# --- Optimisers: new weights from the old ones and the gradient (never in place) ------

def sgd_step(params, grads, lr):
    """Gradient descent: every weight moves by -lr times its gradient."""
    return tree_map(lambda w, g: w - lr * g, params, grads)


def adam_step(params, grads, state=None, lr=0.01, betas=(0.9, 0.999), eps=1e-8):
    """Adam, the optimiser GPT-2 was trained with: each weight keeps a running mean m of
    its gradient and v of the gradient's square, and moves by about lr along -m / sqrt(v),
    so every weight takes steps of a similar size. Returns (new params, new state);
    start with state=None."""
    b1, b2 = betas
    if state is None:
        zeros = tree_map(np.zeros_like, params)
        state = {"t": 0, "m": zeros, "v": zeros}
    t = state["t"] + 1
    m = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t       # m and v start at 0: early on, divide them up
    new = tree_map(lambda w, m, v: w - lr * (m / c1) / (np.sqrt(v / c2) + eps),
                   params, m, v)
    return new, {"t": t, "m": m, "v": v}


# --- Training on a corpus --------------------------------------------------------------

def init_params(seed=0, tied=False, d=4, d_mlp=8, n_layer=1, n_vocab=len(VOCAB), n_ctx=N_CTX,
                scale=0.5):
    """Random weights in the toy's layout, from a seed: every matrix and embedding drawn
    from normal(0, scale), LayerNorm gains 1, all biases 0. tied: no w_u."""
    rng = np.random.default_rng(seed)

    def lin(d_in, d_out):
        return {"w": rng.normal(0, scale, (d_in, d_out)), "b": np.zeros(d_out)}
    params = {"wte": rng.normal(0, scale, (n_vocab, d)), "wpe": rng.normal(0, scale, (n_ctx, d)),
              "blocks": [{"ln_1": _ln_params(d),
                          "attn": {"c_attn": lin(d, 3 * d), "c_proj": lin(d, d)},
                          "ln_2": _ln_params(d),
                          "mlp": {"c_fc": lin(d, d_mlp), "c_proj": lin(d_mlp, d)}}
                         for _ in range(n_layer)],
              "ln_f": _ln_params(d)}
    if not tied:
        params["w_u"] = rng.normal(0, scale, (d, n_vocab))
    return params


def read_corpus(text, n_ctx=N_CTX):
    """One sentence per line -> token sequences, each ending with <|endoftext|> and
    fitting the context (at most n_ctx tokens, <|endoftext|> included)."""
    corpus = [encode(line.strip()) + [EOT] for line in text.splitlines() if line.strip()]
    for seq in corpus:
        if len(seq) > n_ctx:
            raise ValueError(f"{decode(seq)!r} has {len(seq)} tokens; a line may have at most "
                             f"{n_ctx}, <|endoftext|> included.")
    return corpus


def load_corpus(path=None):
    """The course's corpus, data/corpus.txt next to this file (or the file at path)."""
    path = Path(__file__).with_name("data") / "corpus.txt" if path is None else path
    return read_corpus(Path(path).read_text(encoding="utf-8"))


def next_token_counts(corpus, prefix):
    """How often each token follows `prefix` (ids, read from the start of a text) in the
    corpus: an array [V] of counts."""
    prefix = list(prefix)
    counts = np.zeros(len(VOCAB), dtype=int)
    for seq in corpus:
        if len(seq) > len(prefix) and list(seq[:len(prefix)]) == prefix:
            counts[seq[len(prefix)]] += 1
    return counts


def best_possible_loss(corpus):
    """The lowest mean loss any model can reach on the corpus: at every position, predict
    the corpus's own frequencies of what follows that exact beginning of a text."""
    losses = []
    for seq in corpus:
        for i in range(1, len(seq)):
            counts = next_token_counts(corpus, seq[:i])         # what follows seq[:i]
            losses.append(-np.log(counts[seq[i]] / counts.sum()))
    return float(np.mean(losses))


def corpus_batch(corpus):
    """Token sequences -> ids [B, n] and targets [B, n]: each text predicts its own next
    tokens; shorter texts are padded with <|endoftext|> and the padding is not graded."""
    n = max(len(seq) for seq in corpus) - 1
    ids = np.full((len(corpus), n), EOT)
    targets = np.full((len(corpus), n), -1)
    for i, seq in enumerate(corpus):
        ids[i, :len(seq) - 1], targets[i, :len(seq) - 1] = seq[:-1], seq[1:]
    return ids, targets


def corpus_loss(corpus, params=PARAMS, n_head=N_HEAD):
    """The mean loss over every predicted token of the corpus."""
    ids, targets = corpus_batch(corpus)
    return cross_entropy(forward(ids, params, n_head), targets)


def train(corpus, params=None, steps=200, lr=0.05, optimizer="adam", seed=0, tied=False,
          n_head=N_HEAD, callback=None):
    """Gradient descent on the corpus's mean loss, every text graded at every step.
    Starts from init_params(seed, tied) unless params are given. Returns (the trained
    params, the loss history: steps + 1 values, before each step and at the end).
    callback(step, loss), if given, is called after each step."""
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', not {optimizer!r}.")
    params = init_params(seed, tied) if params is None else params
    ids, targets = corpus_batch(corpus)
    state, history = None, []
    for step in range(steps):
        loss, grads = loss_and_grads(ids, targets, params, n_head)
        history.append(loss)
        if optimizer == "adam":
            params, state = adam_step(params, grads, state, lr)
        else:
            params = sgd_step(params, grads, lr)
        if callback is not None:
            callback(step + 1, loss)
    history.append(corpus_loss(corpus, params, n_head))
    return params, history
