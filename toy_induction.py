"""Lab 10: two attention-only blocks learn to copy, and the heads that do it.

The task: rows that hold a block of distinct random tokens, the same block again, and
filler. The first copy cannot be predicted; the second can, by a head that looks back
to the token after the earlier occurrence of the current one: an induction head.
Everything here trains and runs the course's own model: toy_train's train_batches,
backward and adam_step on toy_model's forward, with attention-only blocks (d_mlp = 0).
"""
import json
from pathlib import Path

import numpy as np

from toy_checks import as_count, as_numbers, as_path, check_params, check_seed
from toy_model import forward, get_weight, log_softmax, replace_weight
from toy_train import init_params, train_batches
from toy_train_checks import fits

V = 16            # tokens 0..15: no text, only ids
N_CTX = 16        # positions a row is read at (a row holds N_CTX + 1 tokens)
D = 32            # the residual stream's width
LENGTHS = (4, 5, 6, 7, 8)     # the block's length varies, so no fixed distance works
STEPS, LR, BATCH = 800, 1e-2, 32      # the live run: 800 Adam steps, batches of 32 rows
LIVE_SEED = 0     # the live run's seed: the sweep's first, whose drop came soonest (data/induction_sweep.json)
DATA = Path(__file__).with_name("data")


# --- The task --------------------------------------------------------------------------

def repeat_rows(seed, n_rows, lengths=LENGTHS, filler_first=None, n=N_CTX, vocab=V):
    """Rows of n + 1 distinct-token ids: a block of length l, the block again, and filler
    (distinct from the block and from each other). filler_first: True puts the filler
    before the two copies, False after them, None picks at random per row. Returns (rows
    [n_rows, n + 1], where): where[r] = (l, start of the first copy, start of the second)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))
    n_rows, n = as_count(n_rows, "n_rows", high=100_000), as_count(n, "n", high=1024)
    fits(all(isinstance(l, (int, np.integer)) and 1 <= l and 2 * l <= n + 1 and n + 1 - l <= vocab
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
    arr = np.asarray(rows) if isinstance(rows, (list, tuple, np.ndarray)) else np.zeros(0)
    fits(arr.ndim == 2 and arr.shape[0] > 0 and arr.shape[1] > 1 and arr.dtype.kind in "iu"
         and arr.min() >= 0, "check_rows", "rows are ids, an array [B, n + 1] of whole numbers "
         "from 0, as ti.repeat_rows gives them")
    if where is not None or needs_where:
        ok = isinstance(where, (list, tuple)) and len(where) == len(arr) and all(
            isinstance(w, (list, tuple)) and len(w) == 3
            and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in w)
            and 1 <= w[0] and 0 <= w[1] and w[2] == w[1] + w[0] and w[2] + w[0] <= arr.shape[1]
            for w in where)
        fits(ok, "check_rows", "where holds one (l, s1, s2) per row, the block's length and "
             "where its two copies start, as ti.repeat_rows gives them")
    return arr


def batches(seed, size=BATCH, lengths=LENGTHS, filler_first=None):
    """A function of the step giving a fresh batch each time, for train_batches."""
    rng = np.random.default_rng(check_seed(seed))
    return lambda step: as_batch(repeat_rows(rng, size, lengths, filler_first)[0])


def second_copy(where, n=N_CTX):
    """Which positions' targets the second copy makes predictable: [B, n] booleans. At
    position i inside the second copy (not its last token), the current token appeared
    once before, and the token after it then is the target."""
    check_rows(np.zeros((len(where) if isinstance(where, (list, tuple)) else 0, n + 1), int), where, True)
    mask = np.zeros((len(where), n), dtype=bool)
    for r, (l, s1, s2) in enumerate(where):
        mask[r, s2:s2 + l - 1] = True
    return mask


def first_copy(where, n=N_CTX):
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
    return float(losses[first_copy(where)].mean()), float(losses[second_copy(where)].mean())


# --- Training, with snapshots ------------------------------------------------------------

def new_model(seed, n_layer=2, d=D):
    """Attention-only blocks (no MLP), GPT-2's initialisation, an output layer of its own."""
    return init_params(seed, d=d, d_mlp=0, n_layer=n_layer, n_vocab=V, n_ctx=N_CTX)


def train(seed, steps=STEPS, n_layer=2, n_head=1, lr=LR, every=50, callback=None,
          lengths=LENGTHS, filler_first=None, eval_rows=256):
    """Train a fresh model (seed: its weights and its batches) on fresh batches. Every
    `every` steps, measure both copies' losses on fixed rows with the filler first, and
    keep the weights. Returns {"params", "steps", "first", "second", "snapshots"}.
    callback(step, first, second), if given, is called at each measurement."""
    steps, every = as_count(steps, "steps", high=100_000), as_count(every, "every")
    rows, where = repeat_rows(10_000 + check_seed(seed), eval_rows, lengths, filler_first=True)
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

    run["params"], _ = train_batches(batches(seed, lengths=lengths, filler_first=filler_first),
                                     new_model(seed, n_layer),
                                     steps, lr, n_head=n_head, callback=on_step, record=record)
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
    fits(weights.shape[-1] == weights.shape[-2] > 1, "previous_token_score",
         f"weights are a head's attention, [n, n] or [B, n, n], not an array of shape {weights.shape}")
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
    fits(layer < len(params["blocks"]) and head < n_head, "ablate",
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


def drop_step(steps, losses, level=0.1):
    """The first measured step at which the loss is below level, or None."""
    steps, losses = as_numbers(steps, "drop_step (steps)", 1), as_numbers(losses, "drop_step (losses)", 1)
    fits(steps.shape == losses.shape and steps.ndim == 1 and isinstance(level, (int, float)),
         "drop_step", "steps and losses are two lists of one length, as ti.train's run holds them")
    return next((int(s) for s, loss in zip(steps, losses) if loss < level), None)


def load_trained():
    """The live run's final weights, shipped with the course (data/induction_model/, a GPT-2
    checkpoint of ids alone, float32), for a machine too slow to train them live."""
    from toy_gpt2 import load_gpt2
    return load_gpt2(DATA / "induction_model")["params"]


def load_sweep(path=None):
    """The stored sweep (data/induction_sweep.json, written by tools/induction_sweep.py)."""
    path = as_path(DATA / "induction_sweep.json" if path is None else path, "load_sweep")
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        raise ValueError(f"{str(path)!r} is not a sweep that can be read: write one with "
                         "python tools/induction_sweep.py.") from None
