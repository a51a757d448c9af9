"""Lab 10: two attention-only blocks learn to copy, and the heads that do it.

The task: rows that hold a block of distinct random tokens, the same block again, and
filler. No id repeats outside the second copy, so the first copy can be bet on only as
"an id not seen yet"; the second can be predicted exactly, by a head that looks back to
the token after the earlier occurrence of the current one: an induction head.
Everything here trains and runs the course's own model: toy_train's train_batches,
backward and adam_step on toy_model's forward, with attention-only blocks (d_mlp = 0).
"""
import numpy as np

from toy_checks import as_count, as_numbers, as_path, check_params, check_seed, is_number, raise_unless
from toy_model import (attention, block, forward, get_weight, layer_norm, linear, log_softmax,
                       replace_weight, unembed)
from toy_train import DATA, init_params, read_sweep, train_batches

COPY_VOCAB = 16   # tokens 0..15: no text, only ids
COPY_N_CTX = 16   # positions a row is read at (a row holds COPY_N_CTX + 1 tokens)
D = 32            # the residual stream's width
LENGTHS = (4, 5, 6, 7, 8)     # the block's length varies, so no fixed distance works
# The live run's recipe (benchmarks/RESULTS.md, "lab 10 recipe"): Adam on batches of BATCH
# rows, a linear warm-up over the first twentieth of the steps to LR, then a cosine down to
# LR / 10 at the last step (toy_train.learning_rate), gradients clipped to CLIP if not None.
# Weights start wider than GPT-2's (INIT_STD, not 0.02): the plateau before the copy is
# found is then far shorter.
STEPS, LR, BATCH, CLIP, INIT_STD = 1500, 1e-2, 32, None, 0.1
COPY_SEED = 0     # the live run's seed: the sweep's first, fixed before any run was seen
FALL_LEVEL = 2.2  # "the fall has begun": the second copy's loss below 2.2 nats, lower than
                  # any one-block run of the sweep ends (data/induction_sweep.json)


# --- The task --------------------------------------------------------------------------

def repeat_rows(seed, n_rows, lengths=LENGTHS, filler_first=None, n=COPY_N_CTX, vocab=COPY_VOCAB):
    """Rows of n + 1 distinct-token ids: a block of length l, the block again, and filler
    (distinct from the block and from each other). filler_first: True puts the filler
    before the two copies, False after them, None picks at random per row. Returns (rows
    [n_rows, n + 1], where): where[r] = (l, start of the first copy, start of the second)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))
    n_rows, n = as_count(n_rows, "n_rows", high=100_000), as_count(n, "n", high=1024)
    raise_unless(all(isinstance(l, (int, np.integer)) and 1 <= l and 2 * l <= n + 1 and n + 1 - l <= vocab
                     for l in lengths) and len(lengths) > 0, "repeat_rows",
                 f"each block length l needs 2 l <= n + 1 = {n + 1} and n + 1 - l <= {vocab} distinct tokens")
    rows, where = np.empty((n_rows, n + 1), dtype=np.int64), []
    for r in range(n_rows):
        l = int(rng.choice(lengths))
        tokens = rng.permutation(vocab)[:n + 1 - l]         # the block, then the filler
        block, filler = tokens[:l], tokens[l:]
        first = rng.random() < 0.5 if filler_first is None else bool(filler_first)
        s1 = len(filler) if first else 0
        rows[r] = np.concatenate([filler, block, block] if first else [block, block, filler])
        where.append((l, s1, s1 + l))
    return rows, where


def as_batch(rows):
    """Rows [B, n + 1] -> ids [B, n] (what the model reads) and targets [B, n] (the next ids)."""
    rows = check_rows(rows)
    return rows[:, :-1], rows[:, 1:]


def check_rows(rows, where=None, needs_where=False):
    """rows as an array [B, n + 1] of ids (and where, if given or needed, one (l, s1, s2)
    per row, as repeat_rows gives them), or one sentence."""
    try:
        arr = np.asarray(rows) if isinstance(rows, (list, tuple, np.ndarray)) else np.zeros(0)
    except ValueError:                              # rows of different lengths
        arr = np.zeros(0)
    raise_unless(arr.ndim == 2 and arr.shape[0] > 0 and arr.shape[1] > 1 and arr.dtype.kind in "iu"
                 and arr.min() >= 0, "check_rows", "rows are ids, an array [B, n + 1] of whole numbers "
                 "from 0, as ti.repeat_rows gives them")
    if where is not None or needs_where:
        ok = isinstance(where, (list, tuple)) and len(where) == len(arr) and all(
            isinstance(w, (list, tuple)) and len(w) == 3
            and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in w)
            and 1 <= w[0] and 0 <= w[1] and w[2] == w[1] + w[0] and w[2] + w[0] <= arr.shape[1]
            for w in where)
        raise_unless(ok, "check_rows", "where holds one (l, s1, s2) per row, the block's length and "
                     "where its two copies start, as ti.repeat_rows gives them")
    return arr


def copy_batches(seed, size=BATCH, lengths=LENGTHS, filler_first=None):
    """A function of the step giving a fresh batch each time, for train_batches."""
    rng = np.random.default_rng(check_seed(seed))
    return lambda step: as_batch(repeat_rows(rng, size, lengths, filler_first)[0])


def second_copy_mask(where, n=COPY_N_CTX):
    """Which positions' targets the second copy makes predictable: [B, n] booleans. At
    position i inside the second copy (not its last token), the current token appeared
    once before, and the token after it then is the target."""
    check_rows(np.zeros((len(where) if isinstance(where, (list, tuple)) else 0, n + 1), int), where, True)
    mask = np.zeros((len(where), n), dtype=bool)
    for r, (l, s1, s2) in enumerate(where):
        mask[r, s2:s2 + l - 1] = True
    return mask


def first_copy_mask(where, n=COPY_N_CTX):
    """The targets inside the first copy, after its first token: [B, n] booleans."""
    check_rows(np.zeros((len(where) if isinstance(where, (list, tuple)) else 0, n + 1), int), where, True)
    mask = np.zeros((len(where), n), dtype=bool)
    for r, (l, s1, s2) in enumerate(where):
        mask[r, s1:s1 + l - 1] = True
    return mask


def token_losses(params, n_head, rows):
    """-ln p(next token) at every position: [B, n]."""
    ids, targets = as_batch(rows)
    log_p = log_softmax(forward(ids, params, n_head))       # [B, n, V]
    return -np.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]


def copy_losses(params, n_head, rows, where):
    """(mean loss on the first copy, on the second copy), over all the rows."""
    check_rows(rows, where, needs_where=True)
    losses = token_losses(params, n_head, rows)
    return float(losses[first_copy_mask(where)].mean()), float(losses[second_copy_mask(where)].mean())


# --- Training, with snapshots ------------------------------------------------------------

def new_copy_model(seed, n_layer=2, d=D, std=INIT_STD):
    """Attention-only blocks (no MLP), an output layer of its own, GPT-2's initialisation
    but wider: every matrix from normal(0, std), std = 0.1 rather than GPT-2's 0.02."""
    return init_params(seed, d=d, d_mlp=0, n_layer=n_layer, n_vocab=COPY_VOCAB, n_ctx=COPY_N_CTX, std=std)


def train_copying(seed, steps=STEPS, n_layer=2, n_head=1, lr=LR, every=50, callback=None,
          lengths=LENGTHS, filler_first=None, eval_rows=256, warmup=None, decay=True,
          clip=CLIP, batch=BATCH, stream=None):
    """Train a fresh model (seed: its weights and its batches) on fresh batches, with
    lab 8's schedule (a warm-up over `warmup` steps, steps // 20 if None, then with
    decay=True a cosine to lr / 10) and, if clip is given, gradient clipping. stream: a
    function of the step that gives (ids, targets), to train on batches drawn elsewhere
    (ti.copy_batches(seed, batch) if None).
    Every `every` steps, measure both copies' losses on fixed rows (eval_rows of them,
    either placement of the filler) and keep the weights. Returns {"params", "steps",
    "first", "second", "snapshots", "n_head"}. callback(step, first, second), if given,
    is called at each measurement."""
    steps, every = as_count(steps, "steps", high=100_000), as_count(every, "every")
    rows, where = repeat_rows(10_000 + check_seed(seed), eval_rows, lengths, filler_first=None)
    run = {"steps": [], "first": [], "second": [], "snapshots": [], "n_head": n_head}

    def measure(step, params):
        first, second = copy_losses(params, n_head, rows, where)
        for key, value in (("steps", step), ("first", first), ("second", second), ("snapshots", params)):
            run[key].append(value)
        if callback is not None:
            callback(step, first, second)

    record = {}

    def on_step(step, loss):                                # the loss before step `step`
        if step % every == 0 or step == steps:
            measure(step, record["params"])

    warmup = steps // 20 if warmup is None else warmup
    source = copy_batches(seed, batch, lengths, filler_first) if stream is None else stream
    run["params"], _ = train_batches(source, new_copy_model(seed, n_layer), steps, lr, n_head=n_head,
                                     warmup=warmup, decay=decay, clip=clip, callback=on_step,
                                     record=record)
    return run


# --- What each head does -----------------------------------------------------------------

def attention_weights(params, n_head, ids):
    """Every head's attention: weights[layer][head] is [B, n, n] (row i: where position i looks)."""
    trace = {}
    forward(np.asarray(ids), params, n_head, trace=trace)
    return [[h["weights"] for h in blk["heads"]] for blk in trace["blocks"]]


def previous_token_score(weights):
    """How much each position i >= 1 attends to position i - 1, on average (1: all of it)."""
    weights = as_numbers(weights, "previous_token_score", min_dims=2)
    raise_unless(weights.shape[-1] == weights.shape[-2] > 1, "previous_token_score",
                 "weights are a head's attention, [n, n] or [B, n, n], not an array of shape "
                 f"{weights.shape}")
    return float(np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).mean())


def induction_score(weights, where):
    """How much each second-copy position i attends to i - l + 1, the token that came
    after the earlier occurrence of the current one, on average (1: all of it)."""
    weights = as_numbers(weights, "induction_score", min_dims=3)
    check_rows(np.zeros((len(weights), weights.shape[-1] + 1), int), where, needs_where=True)
    picked = [weights[r, i, i - l + 1] for r, (l, s1, s2) in enumerate(where)
              for i in range(s2, s2 + l - 1)]
    return float(np.mean(picked))


def head_scores(params, n_head, rows, where):
    """{"previous": [[score per head] per layer], "induction": [[...] per layer]}."""
    check_rows(rows, where, needs_where=True)
    weights = attention_weights(params, n_head, as_batch(rows)[0])
    return {"previous": [[previous_token_score(w) for w in layer] for layer in weights],
            "induction": [[induction_score(w, where) for w in layer] for layer in weights]}


def ablate(params, layer, head, n_head):
    """The weights with one head switched off: its rows of W_O (attn.c_proj.w) set to 0,
    so that nothing it computes reaches the residual stream."""
    n_head = check_params(params, n_head)
    layer, head = as_count(layer, "layer", low=0), as_count(head, "head", low=0)
    raise_unless(layer < len(params["blocks"]) and head < n_head, "ablate",
                 f"layer counts from 0 to {len(params['blocks']) - 1} and head from 0 to {n_head - 1}")
    name = f"blocks.{layer}.attn.c_proj.w"
    w = np.array(get_weight(params, name))
    size = w.shape[0] // n_head
    w[head * size:(head + 1) * size] = 0
    return replace_weight(params, name, w)


def ablation_losses(params, n_head, rows, where):
    """The second copy's loss with each head switched off in turn: [[loss per head] per layer]."""
    n_head = check_params(params, n_head)
    check_rows(rows, where, needs_where=True)
    return [[copy_losses(ablate(params, layer, head, n_head), n_head, rows, where)[1]
             for head in range(n_head)] for layer in range(len(params["blocks"]))]


def attention_by_offset(weights):
    """Where a head's attention goes, by how far back it looks: share[k] is the attention
    that positions i >= 1 put on position i - k, averaged (share[1] is the previous-token
    score; the shares add up to 1)."""
    weights = as_numbers(weights, "attention_by_offset", min_dims=2)
    raise_unless(weights.shape[-1] == weights.shape[-2] > 1, "attention_by_offset",
                 "weights are a head's attention, [n, n] or [B, n, n], not an array of shape "
                 f"{weights.shape}")
    n = weights.shape[-1]
    per_row = weights.reshape(-1, n, n)[:, 1:]                      # positions 1 .. n - 1
    return np.array([np.diagonal(per_row, offset=-k + 1, axis1=1, axis2=2).sum(-1).mean() / (n - 1)
                     if k <= n - 1 else 0.0 for k in range(n)])


# --- K-, Q- and V-composition: what block 2 reads of block 1's head ------------------------
# Switching block 1's head off (ablate) takes its output out of everything after it at
# once: block 2's queries, keys and values, and the residual stream the unembedding reads.
# composed_forward takes it out of one of block 2's three inputs only; edited_forward
# keeps it everywhere but edits the head's attention weights (one_back: only its weight on
# the position before).

def _head_write(out, blk, head, n_head):
    """What one head writes into the residual stream from its output (its weighted sum of
    values, [..., d_head]): the output times its rows of W_O, [..., d] (the block's bias b_O
    is no head's)."""
    w_o = blk["attn"]["c_proj"]["w"]
    size = w_o.shape[0] // n_head
    return out @ w_o[head * size:(head + 1) * size]


def _second_copy_loss(logits, targets, where):
    """The mean of -ln p(target) over the second copy's predictable positions."""
    losses = -np.take_along_axis(log_softmax(logits), targets[..., None], axis=-1)[..., 0]
    return float(losses[second_copy_mask(where)].mean())


def composed_forward(params, ids, removed=(), n_head=1, head=0):
    """Two attention-only blocks, with block 1's head `head` written out of block 2's
    queries ("q"), keys ("k") or values ("v"), whichever `removed` names; the residual
    stream keeps it. Returns (logits [B, n, V], block 2's attention: one [B, n, n] per
    head). With nothing removed, this is toy_model.forward."""
    n_head = check_params(params, n_head)
    raise_unless(len(params["blocks"]) == 2 and "mlp" not in params["blocks"][0]
                 and isinstance(removed, (tuple, list, set, str)) and set(removed) <= set("qkv"),
                 "composed_forward", "params are two attention-only blocks, and removed names some "
                 "of 'q', 'k' and 'v'")
    first, second = params["blocks"]
    trace = {}
    forward(ids, params, n_head, trace=trace)                   # block 1, through the course's own
    x = trace["blocks"][0]["y"]                                 # the stream after block 1
    without = x - _head_write(trace["blocks"][0]["heads"][head]["out"], first, head, n_head)
    w, b, d = second["attn"]["c_attn"]["w"], second["attn"]["c_attn"]["b"], x.shape[-1]
    q, k, v = (linear(layer_norm(without if part in removed else x, **second["ln_1"]),
                      w[:, i * d:(i + 1) * d], b[i * d:(i + 1) * d]) for i, part in enumerate("qkv"))
    heads = [{} for _ in range(n_head)]
    out = np.concatenate([attention(*qkv, trace=t) for qkv, t in
                          zip(zip(*(np.split(m, n_head, axis=-1) for m in (q, k, v))), heads)], axis=-1)
    y = x + linear(out, **second["attn"]["c_proj"])
    logits = unembed(layer_norm(y, **params["ln_f"]), params)
    return logits, [h["weights"] for h in heads]


def composition_losses(params, rows, where, n_head=1):
    """Block 1's head written out of block 2's queries, keys or values in turn (and none):
    {removed: (the second copy's loss, block 2's first head's induction score)}."""
    check_rows(rows, where, needs_where=True)
    ids, targets = as_batch(rows)
    out = {}
    for removed in ("", "q", "k", "v"):
        logits, weights = composed_forward(params, ids, removed, n_head)
        out[removed or "none"] = (_second_copy_loss(logits, targets, where), induction_score(weights[0], where))
    return out


def edited_forward(params, ids, edit, n_head=1, head=0):
    """Two attention-only blocks, with block 1's head `head` weighing its values by
    edit(its attention weights [B, n, n]) instead of by the weights themselves; the rest runs
    as toy_model.forward does. Returns (logits [B, n, V], block 2's attention: one [B, n, n]
    per head). With edit returning its input, this is toy_model.forward."""
    n_head = check_params(params, n_head)
    raise_unless(len(params["blocks"]) == 2 and "mlp" not in params["blocks"][0] and callable(edit),
                 "edited_forward", "params are two attention-only blocks, and edit is a function "
                 "of block 1's head's attention weights")
    head = as_count(head, "head", low=0)
    raise_unless(head < n_head, "edited_forward", f"head counts from 0 to {n_head - 1}")
    first, second = params["blocks"]
    trace = {}
    forward(ids, params, n_head, trace=trace)
    t = trace["blocks"][0]
    weights = t["heads"][head]["weights"]
    new = edit(weights)
    raise_unless(np.shape(new) == weights.shape, "edited_forward",
                 f"edit returns weights of the shape it is given, {weights.shape}")
    edited = np.asarray(new) @ t["heads"][head]["v"]                             # [B, n, d_head]
    # the stream after block 1, with the head's write replaced by the edited one
    x = t["y"] + _head_write(edited - t["heads"][head]["out"], first, head, n_head)
    second_trace = {}
    y = block(x, second, n_head, trace=second_trace)
    logits = unembed(layer_norm(y, **params["ln_f"]), params)
    return logits, [h["weights"] for h in second_trace["heads"]]


def one_back(weights):
    """Only each position's weight on the position just before it; every other weight 0."""
    weights = as_numbers(weights, "one_back", min_dims=2)
    raise_unless(weights.shape[-1] == weights.shape[-2] > 1, "one_back",
                 "weights are a head's attention, [n, n] or [B, n, n], not an array of shape "
                 f"{weights.shape}")
    return np.tril(weights, -1) - np.tril(weights, -2)


def one_back_losses(params, rows, where, n_head=1):
    """Block 1's head keeping only its weight one back ("only"), or all its weights but that
    one ("without"), neither scaled up again: {which: (the second copy's loss, block 2's
    first head's induction score)}."""
    check_rows(rows, where, needs_where=True)
    ids, targets = as_batch(rows)
    out = {}
    for which, edit in [("only", one_back), ("without", lambda w: w - one_back(w))]:
        logits, weights = edited_forward(params, ids, edit, n_head)
        out[which] = (_second_copy_loss(logits, targets, where), induction_score(weights[0], where))
    return out


# --- The copying half: block 2's head's OV circuit -------------------------------------------

def ov_copying(params, rows, where, layer=1, head=0, n_head=1):
    """Does the head raise the logit of the token it attends to? At each second-copy
    position i, take the source j the head attends to most and what the head wrote into the
    stream at i from j (its weight on j times j's value times its rows of W_O), and compute
    the logits at i twice, from the final stream as it is and with that write taken out
    (the final LayerNorm and the unembedding run on both): each token's logit rise is the
    difference. Returns {"margin": the mean over positions of the source token's rise minus
    the mean rise of the other tokens, "top": the share of positions where the source
    token's rise is the largest, "weight": the mean attention on that source}."""
    n_head = check_params(params, n_head)
    check_rows(rows, where, needs_where=True)
    ids = as_batch(rows)[0]
    trace = {}
    forward(ids, params, n_head, trace=trace)
    blk, t = params["blocks"][layer], trace["blocks"][layer]
    weights, values = t["heads"][head]["weights"], t["heads"][head]["v"]       # [B, n, n], [B, n, d_head]
    r, i = np.nonzero(second_copy_mask(where))                                  # every second-copy position
    j = weights[r, i].argmax(-1)                                                # the source each looks at most
    held = weights[r, i, j]
    write = _head_write(held[:, None] * values[r, j], blk, head, n_head)      # [m, d]: from j into i
    final = trace["y"][r, i]                                                    # [m, d]: the final stream at i
    rise = (unembed(layer_norm(final, **params["ln_f"]), params)
            - unembed(layer_norm(final - write, **params["ln_f"]), params))     # [m, V]
    source = ids[r, j]
    own = rise[np.arange(len(r)), source]
    others = np.where(np.arange(rise.shape[1]) == source[:, None], -np.inf, rise)
    rest_mean = (rise.sum(-1) - own) / (rise.shape[1] - 1)
    return {"margin": float(np.mean(own - rest_mean)), "top": float(np.mean(own > others.max(-1))),
            "weight": float(np.mean(held))}


# --- What one block can do: bet by position ----------------------------------------------

def position_model(scale=20.0, lengths=LENGTHS, n=COPY_N_CTX, vocab=COPY_VOCAB):
    """A one-block, one-head, attention-only model built by hand (d = 3 vocab, so that
    the current id, the position and the ids read have a place each): every position i
    attends evenly to positions i - l + 1 for the block lengths l (3 to 7 back), by
    position alone, copies their ids into a place of their own, and the unembedding bets
    on those ids, `scale` setting how sharply. It never compares ids. Returns its params."""
    raise_unless(_lengths_fit(lengths, n, vocab) and isinstance(n, int) and n <= vocab and is_number(scale)
                 and scale > 0, "position_model", "lengths holds block lengths as repeat_rows takes them, "
                 "n <= vocab (a place per position) and scale is a positive number")
    near = sorted({int(l) - 1 for l in lengths})                # how far back the next id sits
    d = 3 * vocab
    params = init_params(0, d=d, d_mlp=0, n_layer=1, n_vocab=vocab, n_ctx=n)   # the layout
    wte, wpe = np.zeros((vocab, d)), np.zeros((n, d))
    wte[np.arange(vocab), np.arange(vocab)] = 1.0               # the current id: places 0 .. V-1
    wpe[np.arange(n), vocab + np.arange(n)] = 1.0                # the position: V .. 2V-1
    # Every x holds two 1s and d - 2 zeros: LN1 of it is one affine map, undone by g and b.
    mean, std = 2 / d, np.sqrt(2 / d - (2 / d) ** 2 + 1e-5)
    blk = params["blocks"][0]
    blk["ln_1"] = {"g": np.full(d, std), "b": np.full(d, mean)}
    big = 30.0                                                  # the score of a wanted key
    w = np.zeros((d, 3 * d))
    for i in range(n):
        w[vocab + i, i] = big * np.sqrt(d)                      # query: my position (q k / sqrt d)
        for k in near:
            if i + k < n:
                w[vocab + i, d + i + k] = 1.0                   # key at i: wanted by i + k
    w[np.arange(vocab), 2 * d + 2 * vocab + np.arange(vocab)] = 1.0     # value: the id read
    blk["attn"]["c_attn"] = {"w": w, "b": np.zeros(3 * d)}
    blk["attn"]["c_proj"] = {"w": np.eye(d), "b": np.zeros(d)}
    w_u = np.zeros((d, vocab))
    w_u[2 * vocab + np.arange(vocab), np.arange(vocab)] = scale
    return {**params, "wte": wte, "wpe": wpe, "w_u": w_u,
            "ln_f": {"g": np.ones(d), "b": np.zeros(d)}}


def _lengths_fit(lengths, n, vocab):
    """Block lengths repeat_rows can draw: each l with 2 l <= n + 1 and n + 1 - l <= vocab."""
    return (isinstance(lengths, (list, tuple)) and len(lengths) > 0
            and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in (n, vocab, *lengths))
            and all(1 <= l and 2 * l <= n + 1 and n + 1 - l <= vocab for l in lengths))


def best_first_copy_loss(filler_first=None, lengths=LENGTHS, n=COPY_N_CTX, vocab=COPY_VOCAB):
    """The lowest mean loss any model can have on the first copy, on rows drawn as
    repeat_rows draws them (filler_first: True or False, rows of that kind; None, both
    kinds at random). Before the second copy every id read is new, so at a first-copy
    target, having read m distinct ids, the next id is any of the vocab - m not read yet,
    all alike, whatever else the model sees: the best bet is even over them (nothing on
    a repeat), and costs ln(vocab - m). Pooled over the targets, as copy_losses pools them."""
    raise_unless((filler_first is None or isinstance(filler_first, (bool, np.bool_)))
                 and _lengths_fit(lengths, n, vocab), "best_first_copy_loss",
                 "filler_first is True, False or None, and lengths holds block lengths l with "
                 "2 l <= n + 1 and n + 1 - l <= vocab, as repeat_rows takes them")
    sides = (True, False) if filler_first is None else (bool(filler_first),)
    losses = [np.log(vocab - m) for l in lengths for first in sides
              for s1 in [n + 1 - 2 * l if first else 0]
              for m in range(s1 + 1, s1 + l)]                  # the target at m, m ids read
    return float(np.mean(losses))


def mcnemar_exact(a, b):
    """McNemar's exact test for paired outcomes (lab 8): a[i] and b[i] are True or False
    for the same seed (the same first weights and batches) under two settings. Only the
    seeds where they differ count: with no difference between the settings, each would go
    either way like a fair coin. Returns (seeds where only a, where only b, two-sided p)."""
    from math import comb
    a, b = (np.asarray(x) for x in (a, b))
    raise_unless(a.shape == b.shape and a.ndim == 1 and a.dtype == bool and b.dtype == bool and len(a) > 0,
                 "mcnemar_exact", "a and b are two lists of True and False of one length, one per seed")
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    m = only_a + only_b
    p = min(1.0, 2 * sum(comb(m, k) for k in range(min(only_a, only_b) + 1)) / 2 ** m)
    return only_a, only_b, float(p)


def drop_step(steps, losses, level=0.1):
    """The first measured step at which the loss is below level, or None."""
    steps, losses = as_numbers(steps, "drop_step (steps)", 1), as_numbers(losses, "drop_step (losses)", 1)
    raise_unless(steps.shape == losses.shape and steps.ndim == 1 and isinstance(level, (int, float)),
                 "drop_step", "steps and losses are two lists of one length, as ti.train_copying's "
                 "run holds them")
    return next((int(s) for s, loss in zip(steps, losses) if loss < level), None)


def load_copy_model():
    """The live run's final weights, shipped with the course (data/induction_model/, a GPT-2
    checkpoint of ids alone, float32), for a machine too slow to train them live."""
    from toy_gpt2 import load_gpt2
    return load_gpt2(DATA / "induction_model")["params"]


def load_copy_sweep(path=None):
    """The stored sweep (data/induction_sweep.json, written by tools/induction_sweep.py)."""
    path = as_path(DATA / "induction_sweep.json" if path is None else path, "load_copy_sweep")
    return read_sweep(path, "sweep", "tools/induction_sweep.py")
