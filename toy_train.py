"""Lab 08: training the toy by gradient descent, with every gradient computed by hand.

Each function of toy_model's forward pass has a `_backward` function here; `backward` runs
them in reverse to get every weight's gradient, `finite_difference` measures one to
check it, and the optimisers and `train` use them on the course's corpus.
"""
from pathlib import Path

import numpy as np

from toy_checks import (as_count, as_ids, as_numbers, as_path, check_ids, check_params,
                        check_seed, check_targets, checked, is_number, layout_shapes, raise_unless,
                        short_text, shown_value)
from toy_model import (EOT, N_CTX, N_HEAD, PARAMS, VOCAB, attention, block, cross_entropy, decode,
                       encode, forward, get_weight, mlp, multi_head, replace_weight, softmax,
                       tree_from, tree_map)
from toy_train_checks import (check_adam_step, check_attention_backward, check_backward,
                              check_block_backward, check_clip_gradients, check_embed_backward,
                              check_gelu_backward, check_grad_norm, check_layer_norm_backward,
                              check_linear_backward, check_mlp_backward, check_multi_head_backward,
                              check_sgd_step, check_softmax_backward,
                              check_softmax_cross_entropy_backward, check_transpose,
                              check_unembed_backward, leaves, positive)

# Training moves every weight a little in the direction that lowers the loss of toy_model's
# section 4. That direction is the gradient: for each weight, how fast the loss grows when the
# weight grows. It is computed backwards (backpropagation): each forward function of
# toy_model gets a `_backward` function that takes d loss / d (its output), written d<output> and of
# the same shape, and returns d loss / d (its input) and d loss / d (its weights). What
# the backward functions need from the forward pass they take from `trace` (what the forward
# function recorded) or, without it, recompute from their input.
#
# Training grades many texts at once, so this part also takes a batch: ids [B, n] with
# every array one axis longer ([B, n, d]). Shorter texts are padded at the end; a
# target of -1 marks a padded position, which the loss does not grade. Because of the
# causal mask, what comes after a text never changes its rows.

@checked(check_transpose)
def transpose(a):
    """Swap the last two axes: k^T for one text [n, d] or for each text of a batch."""
    return a.swapaxes(-1, -2)


# Each backward function declares its check (in toy_train_checks): a learner's direct call
# is checked, with one sentence for what does not fit; a call from this module's own code
# (backward, loss_and_grads) is not, since that code has checked what came in.

@checked(check_softmax_cross_entropy_backward)
def softmax_cross_entropy_backward(logits, targets):
    """d loss / d logits: (p - onehot(target)) / (number graded), row by row; 0 on padding."""
    graded = targets >= 0
    p = softmax(logits)                                     # [..., n, V]
    onehot = np.arange(p.shape[-1]) == targets[..., None]   # True at the target only
    return (p - onehot) * graded[..., None] / int(graded.sum())   # [..., n, V]


@checked(check_linear_backward)
def linear_backward(dout, x, w):
    """out = x w + b. Returns dx (x's shape), dw [d_in, d_out], db [d_out]; the weights'
    gradients add up over every row of every text."""
    rows_x, rows_dout = x.reshape(-1, x.shape[-1]), dout.reshape(-1, dout.shape[-1])
    return dout @ w.T, rows_x.T @ rows_dout, rows_dout.sum(axis=0)


@checked(check_layer_norm_backward)
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


@checked(check_gelu_backward)
def gelu_backward(dout, x):
    """dout times GELU's slope at x (the tanh form, by the chain rule); x may be one number."""
    c, x2 = float(np.sqrt(2 / np.pi)), x * x                # a Python float keeps float32
    t = np.tanh(c * x * (1 + 0.044715 * x2))
    slope = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x2)
    return dout * slope


@checked(check_mlp_backward)
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


@checked(check_softmax_backward)
def softmax_backward(dout, p):
    """Back through p = softmax(s) by rows: ds = p * (dp - sum(p * dp)). Each p_j moves
    with every score of its row, so each score collects from all of them."""
    return p * (dout - (dout * p).sum(axis=-1, keepdims=True))


@checked(check_attention_backward)
def attention_backward(dout, q, k, v, mask=True, weights=None):
    """One head, out = A v, A = softmax(scores by row). Returns dq, dk, dv [..., n, d_head].
    (weights: the head's attention probabilities A, when already computed.)

    A masked probability is exactly 0, but the loss still has a slope with respect to it
    (dA = dout v^T is not 0 there). What is exactly 0 is the gradient of its *score*:
    softmax's backward multiplies by p = 0. So dq_i collects only from the keys that row i
    may see (j <= i), while key j and value j collect from every later query that sees
    them: dk_j = sum over i >= j of ds_ij q_i / sqrt(d_head), dv_j = sum over i >= j of
    A_ij dout_i. The mask keeps a later token out of an earlier row's output; backwards,
    a later row's gradient does reach an earlier position, through its key and value."""
    if weights is None:
        trace = {}
        attention(q, k, v, mask, trace=trace)
        weights = trace["weights"]                           # [..., n, n]
    dweights, dv = dout @ transpose(v), transpose(weights) @ dout
    dscores = softmax_backward(dweights, weights)           # 0 where masked
    scale = 1 / float(np.sqrt(q.shape[-1]))                 # 1/sqrt(d_head); a float keeps float32
    return dscores @ k * scale, transpose(dscores) @ q * scale, dv


@checked(check_multi_head_backward)
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


@checked(check_block_backward)
def block_backward(dy, x, blk, n_head, trace=None):
    """Back through y = h + mlp(LN2(h)), h = x + attn(LN1(x)). Returns dx and the gradients.
    (trace: what block recorded for this x; otherwise the forward pass runs again.)
    An attention-only block has no MLP: y = h.

    A residual add hands its gradient to both of its inputs unchanged: dy reaches h
    directly and through the MLP; dh reaches x directly and through attention."""
    if trace is None:
        trace = {}
        block(x, blk, n_head, trace=trace)
    grads = {}
    if "mlp" in blk:
        du, grads["mlp"] = mlp_backward(dy, trace["ln2"], **blk["mlp"], trace=trace)
        dh_ln, dg2, db2 = layer_norm_backward(du, trace["h"], blk["ln_2"]["g"])
        grads["ln_2"] = {"g": dg2, "b": db2}
        dh = dy + dh_ln                                     # [..., n, d]
    else:                                                   # y = h: nothing between them
        dh = dy
    da, grads["attn"] = multi_head_backward(dh, trace["ln1"], **blk["attn"], n_head=n_head, trace=trace)
    dx_ln, dg1, db1 = layer_norm_backward(da, x, blk["ln_1"]["g"])
    grads["ln_1"] = {"g": dg1, "b": db1}
    return dh + dx_ln, {part: grads[part] for part in blk}     # in the block's own order


@checked(check_unembed_backward)
def unembed_backward(dlogits, f, w_u):
    """logits = f W_U. Returns df [..., n, d] and dW_U [d, V]."""
    df, dw_u, _ = linear_backward(dlogits, f, w_u)
    return df, dw_u


@checked(check_embed_backward)
def embed_backward(dx, ids, wte, wpe):
    """x = wte[ids] + wpe[:n]: each row's gradient goes to its token's row of wte (a token
    used twice collects both) and to its position's row of wpe."""
    d = dx.shape[-1]
    dwte, dwpe = np.zeros(wte.shape, dx.dtype), np.zeros(wpe.shape, dx.dtype)
    np.add.at(dwte, ids.reshape(-1), dx.reshape(-1, d))
    dwpe[:ids.shape[-1]] = dx.reshape(-1, ids.shape[-1], d).sum(axis=0)
    return dwte, dwpe


@checked(check_backward)
def backward(dlogits, ids, params=PARAMS, n_head=N_HEAD, trace=None):
    """Every weight's gradient, given d loss / d logits: each step of the forward pass
    undone in reverse. The result has exactly params' layout, in the weights' dtype.
    trace: what forward() kept for these ids (if None, the forward pass is run again)."""
    if trace is None:
        trace = {}
        forward(ids, params, n_head, trace=trace)
    xs = [trace["x"]] + [t["y"] for t in trace["blocks"]]  # each block's input, then its output
    tied = "w_u" not in params
    df, dw_u = unembed_backward(dlogits, trace["f"], params["wte"].T if tied else params["w_u"])
    dy, dg_f, db_f = layer_norm_backward(df, trace["y"], params["ln_f"]["g"])
    block_grads = []
    for blk, x, t in reversed(list(zip(params["blocks"], xs, trace["blocks"]))):
        dy, g = block_backward(dy, x, blk, n_head, t)   # now d loss / d (the block's input)
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
    logits = forward(ids, params, n_head, trace=trace)   # [..., n, V]
    loss = cross_entropy(logits, targets)                    # checks the targets too
    dlogits = softmax_cross_entropy_backward(logits, np.asarray(targets))
    return loss, backward(dlogits, np.asarray(ids), params, n_head, trace)


def check_batch(ids, targets):
    """ids as an array of targets' shape: [n] for one text or [B, n] for a batch."""
    if isinstance(ids, str):
        raise ValueError("ids are token ids, not text: turn text into ids with encode() first.")
    arr, shape = np.asarray(ids, dtype=object), np.asarray(targets, dtype=object).shape
    ragged = arr.ndim == 1 and any(isinstance(i, (list, tuple, np.ndarray)) for i in arr)
    if arr.shape != shape or arr.ndim not in (1, 2) or ragged:
        raise ValueError(f"ids {arr.shape} and targets {shape} need the same shape: "
                         "[n] for one text or [B, n] for a batch.")
    return np.asarray(ids) if arr.ndim == 2 else list(ids)


def finite_difference(ids, targets, name, index, params=PARAMS, n_head=N_HEAD, eps=1e-5):
    """d loss / d (one weight), measured rather than derived: nudge the entry `index` of
    the weight `name` by +eps and by -eps, and divide the change of the loss by 2 eps.
    A check on loss_and_grads. The curvature cancels between the two sides; what is left
    is eps^2 / 6 times the loss's third derivative, plus round-off in the two losses, about
    1e-16 * |loss| / eps. Both are near 1e-11 at eps = 1e-5, about where their sum is
    smallest (the best eps is near the cube root of 1e-16)."""
    ids = check_batch(ids, targets)
    w = np.asarray(get_weight(params, name), dtype=float)
    index = _entry(index, w.shape, name)
    if not (is_number(eps) and 1e-10 <= eps <= 0.1):
        raise ValueError(f"eps must be a number from 1e-10 to 0.1, not {eps!r}: smaller, and "
                         "round-off (about 1e-16 / eps) swamps the difference; larger, and the "
                         "curvature (about eps^2) does.")
    losses = []
    for step in (eps, -eps):
        nudged = w.copy()                                   # a copy: params stay as they are
        nudged[index] += step
        new = replace_weight(params, name, nudged)
        losses.append(cross_entropy(forward(ids, new, n_head), targets))
    return (losses[0] - losses[1]) / (2 * eps)


def _entry(index, shape, name):
    """index as a tuple naming one entry of an array of `shape`, or one sentence."""
    idx = (index,) if not isinstance(index, (tuple, list)) else tuple(index)
    if len(idx) != len(shape) or not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
                                         and -n <= i < n for i, n in zip(idx, shape)):
        raise ValueError(f"index must name one entry of {name!r}, whose shape is {shape}: "
                         f"{len(shape)} whole number(s) within it, such as {(0,) * len(shape)}, "
                         f"not {index!r}.")
    return tuple(int(i) for i in idx)


# --- Optimisers: new weights from the old ones and the gradient (never in place) ------

@checked(check_sgd_step)
def sgd_step(params, grads, lr):
    """Gradient descent: every weight moves by -lr times its gradient."""
    return tree_map(lambda w, g: w - lr * g, params, grads)


@checked(check_adam_step)
def adam_step(params, grads, state=None, lr=0.01, betas=(0.9, 0.999), eps=1e-8):
    """Adam: each weight keeps a running mean m of its gradient and v of the gradient's
    square, and moves against m, by about lr * m / sqrt(v): while its gradient is steady,
    every weight takes steps of about lr, however small its gradient. v averages over about
    1 / (1 - beta2) steps, so after large gradients the steps stay short for that long.
    Returns (new params, new state); start with state=None."""
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


def learning_rate(step, lr, steps, warmup=0, decay=False):
    """The learning rate at `step` (0, 1, ..., steps - 1): a linear warmup from lr / warmup
    to lr over the first `warmup` steps, then lr, or with decay=True a cosine from lr down
    to lr / 10 at the last step (nanoGPT's schedule)."""
    steps, lr = as_count(steps, "steps"), positive(lr, "The learning rate lr")
    step, warmup = as_count(step, "step", low=0), as_count(warmup, "warmup", low=0)
    raise_unless(step < steps and (warmup < steps or not warmup) and isinstance(decay, bool),
                 "learning_rate", f"step counts from 0 to steps - 1 = {steps - 1}, warmup is shorter "
                 f"than the run, and decay is True or False (got step {step}, warmup {warmup})")
    if step < warmup:
        return lr * (step + 1) / warmup
    if not decay:
        return lr
    progress = (step - warmup) / max(1, steps - 1 - warmup)        # 0 -> 1 after the warmup
    return float(lr / 10 + 0.5 * (1 + np.cos(np.pi * progress)) * (lr - lr / 10))   # a float keeps float32 weights float32


@checked(check_grad_norm)
def grad_norm(grads):
    """The length of the whole gradient: the square root of the sum of every entry squared."""
    return float(np.sqrt(sum(float((g ** 2).sum()) for g in leaves(grads).values())))


@checked(check_clip_gradients)
def clip_gradients(grads, max_norm):
    """Gradient clipping: if the whole gradient is longer than max_norm, shrink it to that
    length (every entry by the same factor, so its direction stays). Returns (grads, norm
    before clipping)."""
    norm = grad_norm(grads)
    if norm <= max_norm:
        return grads, norm
    return tree_map(lambda g: g * (max_norm / norm), grads), norm


# --- Training on a corpus --------------------------------------------------------------

def init_params(seed=0, tied=False, d=4, d_mlp=8, n_layer=1, n_vocab=len(VOCAB), n_ctx=N_CTX,
                std=0.02):
    """Random weights in the toy's layout, from a seed, the way GPT-2 starts: every matrix
    and embedding drawn from normal(0, std) (GPT-2: 0.02), the two projections that write
    into the residual stream (attn.c_proj, mlp.c_proj) from normal(0, std / sqrt(2 n_layer)),
    LayerNorm gains 1, all biases 0. tied: no w_u. d_mlp=0: attention-only blocks (no
    ln_2, no MLP)."""
    seed, std = check_seed(seed), positive(std, "std")
    d, d_mlp, n_layer = as_count(d, "d", high=8192), as_count(d_mlp, "d_mlp", low=0, high=65536), as_count(n_layer, "n_layer", high=96)
    n_vocab, n_ctx = as_count(n_vocab, "n_vocab", high=2**20), as_count(n_ctx, "n_ctx", high=65536)
    shapes = layout_shapes(n_layer, d, d_mlp, n_vocab, n_ctx, tied)
    size = sum(int(np.prod(shape)) for shape in shapes.values())
    if size > 2 * 10**8:
        raise ValueError(f"Those sizes make {size:,} weights; init_params builds at most 200,000,000 "
                         "(GPT-2 small has 124,439,808).")
    rng = np.random.default_rng(seed)
    residual = std / np.sqrt(2 * n_layer)        # each block adds two branches to the stream

    def draw(name, shape):                       # in the layout's order, so a seed is one model
        if name.endswith(".g"):
            return np.ones(shape)                # LayerNorm's gains
        if name.endswith(".b"):
            return np.zeros(shape)               # every bias
        return rng.normal(0, residual if name.endswith("c_proj.w") else std, shape)
    return tree_from({name: draw(name, shape) for name, shape in shapes.items()})


def read_corpus(text, n_ctx=N_CTX):
    """One sentence per line -> token sequences, each ending with <|endoftext|> and
    fitting the context (at most n_ctx tokens, <|endoftext|> included)."""
    if not isinstance(text, str):
        raise ValueError(f"read_corpus takes the corpus's text, one sentence per line, not "
                         f"{type(text).__name__}.")
    corpus = [encode(line.strip()) + [EOT] for line in text.splitlines() if line.strip()]
    for seq in corpus:
        if len(seq) > n_ctx:
            raise ValueError(f"{decode(seq)!r} has {len(seq)} tokens; a line may have at most "
                             f"{n_ctx}, <|endoftext|> included.")
    return check_corpus(corpus)


def check_corpus(corpus):
    """A corpus as read_corpus gives it: a non-empty list of token sequences (lists of ids),
    each of at least 2 tokens (one to read, one to predict)."""
    if isinstance(corpus, str) or not isinstance(corpus, (list, tuple)) or not corpus:
        raise ValueError("A corpus is a non-empty list of token sequences: read text with "
                         "tt.read_corpus(text) or tt.load_corpus().")
    for seq in corpus:
        if isinstance(seq, str):
            raise ValueError(f"The corpus holds text ({short_text(seq)!r}) where token ids belong: "
                             "read text with tt.read_corpus(text) or tt.load_corpus().")
        ids = check_ids(seq, N_CTX, len(VOCAB)) if np.ndim(seq) == 1 else None
        if ids is None or len(ids) < 2:
            raise ValueError("Each text of a corpus is a list of at least 2 token ids (one to "
                             f"read, one to predict), not {short_text(seq)!r}.")
    return [list(map(int, seq)) for seq in corpus]


def load_corpus(path=None):
    """The course's corpus, data/corpus.txt next to this file (or the file at path)."""
    path = as_path(DATA / "corpus.txt" if path is None else path, "load_corpus")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise ValueError(f"{str(path)!r} is not a text file that can be read: a corpus is a "
                         "text file, one sentence per line.") from None
    return read_corpus(text)


def load_heldout():
    """Sentences kept out of training (data/heldout.txt), to measure what a model learnt
    beyond the texts it was trained on."""
    return load_corpus(DATA / "heldout.txt")


DATA = Path(__file__).with_name("data")


def load_sweep(path=None):
    """The precomputed seed sweep (data/seed_sweep.json, written by tools/seed_sweep.py):
    {"lr", "steps", "seeds", "recipes", "runs": [{"seed", "arm", "recipe", "history",
    "p_roof_cat", "p_roof_dog", "heldout"}, ...]}."""
    path = as_path(DATA / "seed_sweep.json" if path is None else path, "load_sweep")
    sweep = read_sweep(path, "seed sweep", "tools/seed_sweep.py --out <file>")
    if not isinstance(sweep, dict) or not {"steps", "seeds", "recipes", "runs"} <= sweep.keys():
        raise ValueError(f"{str(path)!r} is not a seed sweep: it lacks steps, seeds, recipes or "
                         "runs (write one with python tools/seed_sweep.py --out <file>).")
    return sweep


def read_sweep(path, what, tool):
    """A stored sweep's JSON (each lab's load_sweep), or one sentence naming the tool that
    writes one."""
    import json
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        raise ValueError(f"{str(path)!r} is not a {what} that can be read: write one with "
                         f"python {tool}.") from None


def next_token_counts(corpus, prefix):
    """How often each token follows `prefix` (ids, read from the start of a text) in the
    corpus: an array [V] of counts."""
    corpus = check_corpus(corpus)
    prefix = check_ids(prefix, N_CTX, len(VOCAB)) if not isinstance(prefix, str) else \
        as_ids(prefix, "next_token_counts")                 # text: one sentence
    counts = np.zeros(len(VOCAB), dtype=int)
    for seq in corpus:
        if len(seq) > len(prefix) and seq[:len(prefix)] == prefix:
            counts[seq[len(prefix)]] += 1
    return counts


def best_possible_loss(corpus):
    """The lowest mean loss any model can reach on the corpus: at every position, predict
    the corpus's own frequencies of what follows that exact beginning of a text."""
    corpus = check_corpus(corpus)
    losses = []
    for seq in corpus:
        for i in range(1, len(seq)):
            counts = next_token_counts(corpus, seq[:i])         # what follows seq[:i]
            losses.append(-np.log(counts[seq[i]] / counts.sum()))
    return float(np.mean(losses))


def corpus_batch(corpus):
    """Token sequences -> ids [B, n] and targets [B, n]: each text predicts its own next
    tokens; shorter texts are padded with <|endoftext|> and the padding is not graded."""
    corpus = check_corpus(corpus)
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
          n_head=N_HEAD, warmup=0, decay=False, clip=None, callback=None, heldout=None,
          early_stopping=False, record=None):
    """Gradient descent on the corpus's mean loss, every text graded at every step.
    Starts from init_params(seed, tied) unless params are given. Returns (the trained
    params, the loss history: steps + 1 values, before each step and at the end).
    heldout: texts never trained on (load_heldout()), measured after every step.
    The other options are train_batches' (below)."""
    raise_unless(isinstance(tied, bool), "train", "tied is True or False")
    batch = corpus_batch(corpus)
    held = None if heldout is None else corpus_batch(heldout)
    params = init_params(seed, tied) if params is None else params
    return train_batches(lambda step: batch, params, steps, lr, optimizer, n_head, warmup, decay,
                         clip, callback, held, early_stopping, record)


def train_batches(batches, params, steps=200, lr=0.05, optimizer="adam", n_head=N_HEAD,
                  warmup=0, decay=False, clip=None, callback=None, heldout=None,
                  early_stopping=False, record=None):
    """Gradient descent on batches of token ids: batches(step) gives the step's (ids,
    targets), [B, n] each (the same batch every time, or a fresh one). Returns (the
    trained params, the loss history: steps + 1 values, before each step and at the end).

    The learning rate at each step is learning_rate(step, lr, steps, warmup, decay);
    clip: if given, the gradient is shortened to at most that length (clip_gradients)
    before each step. callback(step, loss), if given, is called with the loss after each
    number of steps, from 0 (the loss before training) to steps (history[step] = loss).
    Stops with a ValueError naming the learning rate if the loss diverges.

    heldout: (ids, targets) never trained on; their loss is measured after every number
    of steps, as the training loss is. early_stopping=True (with heldout): return the
    weights of the step whose held-out loss was lowest, not the last ones (the lowest single
    value: on a small, noisy held-out set it favours a dip, which is why lab 08's sweep
    scores early stopping on a rolling median of the curve instead). record: a dict
    filled as the run goes: "params" (the weights whose loss the callback was just given),
    "heldout" (the held-out losses, steps + 1 values), "grad_norm" (the gradient's length
    before each step, before clipping), and at the end "best_step" and "best_params" (the
    lowest held-out loss's step and weights)."""
    raise_unless(callable(batches), "train_batches", "batches is a function of the step that gives "
                 "(ids, targets)")
    if not isinstance(optimizer, str) or optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', not {shown_value(optimizer)}.")
    steps = as_count(steps, "steps")
    lr = positive(lr, "The learning rate lr")
    warmup = as_count(warmup, "warmup", low=0)
    if warmup >= steps and warmup:
        raise ValueError(f"warmup ({warmup} steps) must be shorter than the run ({steps} steps).")
    if clip is not None:
        clip = positive(clip, "clip (the longest gradient allowed)")
    if not isinstance(decay, bool):
        raise ValueError("decay is True or False.")
    if not isinstance(early_stopping, bool) or (early_stopping and heldout is None):
        raise ValueError("early_stopping is True or False, and needs heldout texts to watch.")
    if record is not None and not isinstance(record, dict):
        raise ValueError(f"record must be a dict for train to fill, not {shown_value(record)}.")
    n_head = check_params(params, n_head)
    held = None if heldout is None else _step_batch(heldout, params, "heldout")
    state, history, held_history, norms, best = None, [], [], [], (np.inf, 0, params)
    if record is not None:                                  # filled as the run goes
        record.update({"grad_norm": norms} | ({"heldout": held_history} if held is not None else {}))
    for step in range(steps + 1):
        ids, targets = _step_batch(batches(step), params, f"batches({step})")
        # Weights that overflow give a loss or a gradient that is not finite, which
        # _check_diverged reports.
        with np.errstate(over="ignore", invalid="ignore"):
            loss, grads = loss_and_grads(ids, targets, params, n_head)
            if held is not None:
                held_history.append(cross_entropy(forward(held[0], params, n_head), held[1]))
            norm = grad_norm(grads)
        history.append(loss)
        _check_diverged(history, norm, lr, len(params["wte"]))
        if held is not None and held_history[-1] < best[0]:
            best = (held_history[-1], step, params)
        if record is not None:
            record["params"] = params                       # the weights this loss is of
        if callback is not None:
            callback(step, loss)
        if step == steps:
            if record is not None and held is not None:
                record["best_step"], record["best_params"] = best[1], best[2]
            return (best[2] if early_stopping else params), history
        norms.append(norm)
        if clip is not None:
            grads, _ = clip_gradients(grads, clip)
        rate = learning_rate(step, lr, steps, warmup, decay)
        if optimizer == "adam":
            params, state = adam_step(params, grads, state, rate)
        else:
            params = sgd_step(params, grads, rate)


def _step_batch(batch, params, what):
    """(ids [B, n], targets [B, n]) that fit the model's vocabulary and context, or one sentence."""
    if not (isinstance(batch, tuple) and len(batch) == 2):
        raise ValueError(f"train_batches: {what} must give a pair (ids, targets), not "
                         f"{shown_value(batch)}.")
    ids = check_batch(*batch)
    check_ids(ids, len(params["wpe"]), len(params["wte"]))
    check_targets(batch[1], np.shape(ids), len(params["wte"]))
    return np.asarray(ids), np.asarray(batch[1])


def _check_diverged(history, norm, lr, V):
    """Divergence: the loss or the gradient's length (norm) is not finite, or the loss is
    ten times where it started (and above ln V)."""
    loss = history[-1]
    if np.isfinite(loss) and np.isfinite(norm) and loss <= 10 * max(history[0], np.log(V)):
        return
    raise ValueError(f"Training diverged at step {len(history) - 1}: the loss went from "
                     f"{history[0]:.3f} to {loss:.4g} nats. The learning rate lr = {lr:g} is "
                     "too large for these steps: try a smaller one (a tenth), or clip the "
                     "gradients (clip=1.0).")


# --- Chance: is a difference between two sets of runs more than luck? ------------------
# Fisher's exact test for counts ("4 of 16 against 11 of 16"), a bootstrap for losses.

def fisher_exact(hits_a, n_a, hits_b, n_b):
    """Fisher's exact test (two-sided) for hits_a of n_a against hits_b of n_b.

    With the same chance of a hit in both, the hits would be spread over all the runs at
    random (the hypergeometric law). p adds up the probability of every split no likelier
    than the one seen: a small p says such a lopsided split is rare without a difference."""
    from math import exp, lgamma
    for k, n in ((hits_a, n_a), (hits_b, n_b)):
        raise_unless(isinstance(k, (int, np.integer)) and isinstance(n, (int, np.integer))
                     and 0 <= k <= n and 0 < n <= 10_000, "fisher_exact", f"hits and runs are whole "
                     f"numbers with 0 <= hits <= runs <= 10,000, not {shown_value(k)} of {shown_value(n)}")
    def log_ways(n, k):                                     # ln of "n choose k"
        return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
    hits, low = hits_a + hits_b, max(0, hits_a + hits_b - n_b)
    law = [exp(log_ways(n_a, x) + log_ways(n_b, hits - x) - log_ways(n_a + n_b, hits))
           for x in range(low, min(hits, n_a) + 1)]        # x of the hits in the first set
    return float(min(1.0, sum(c for c in law if c <= law[hits_a - low] * (1 + 1e-7))))


def bootstrap_interval(a, b, statistic="median", n=10_000, seed=0, level=0.95):
    """(statistic(a) - statistic(b), low, high), statistic "median" or "mean": draw each set
    again with replacement, n times, and keep the middle `level` of the differences. An
    interval without 0 says the difference is larger than the luck of the seeds gives."""
    a = as_numbers(a, "bootstrap_interval (a)")
    b = as_numbers(b, "bootstrap_interval (b)")
    raise_unless(a.ndim == b.ndim == 1 and len(a) > 1 and len(b) > 1, "bootstrap_interval",
                 "a and b are lists of at least 2 numbers each")
    raise_unless(isinstance(statistic, str) and statistic in ("median", "mean"), "bootstrap_interval",
                 f"statistic is 'median' or 'mean', not {shown_value(statistic)}")
    n, seed = as_count(n, "n", high=10**6), check_seed(seed)
    raise_unless(is_number(level) and 0 < level < 1, "bootstrap_interval",
                 f"level is a share between 0 and 1, such as 0.95, not {shown_value(level)}")
    stat = np.median if statistic == "median" else np.mean
    rng = np.random.default_rng(seed)
    draws = (stat(a[rng.integers(0, len(a), (n, len(a)))], axis=1)
             - stat(b[rng.integers(0, len(b), (n, len(b)))], axis=1))
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return float(stat(a) - stat(b)), float(low), float(high)
