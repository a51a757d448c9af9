"""A tiny GPT-2 you can check by hand: 12 tokens, d = 4, one block, two heads.

The code is GPT-2's forward pass, step for step, in small numpy functions; the
weights are small enough to print. Notebooks 1 to 7 follow it in order:

    1 Tokens       encode, decode            text -> ids
    2 Embeddings   embed                     ids -> x          [n, 4]
    3 Q . K . V    attention (one head)      x -> one head's output
    4 Mask, heads  causal_mask, multi_head   x -> attention output [n, 4]
    5 The block    layer_norm, mlp, block    x -> y            [n, 4]
    6 Output       unembed, softmax, loss    y -> logits, p    [n, 12]
    7 Generation   next_token_probs, sample, generate

What the 4 dimensions mean. The toy's unembedding W_U (given by the course) decides
it: each dimension of the last vector votes for a group of next tokens.

    d1 "go on"    the phrase so far is complete: a verb, "the" or "." comes next
    d2 "surface"  something you can climb onto is in play (roof, wall, "ed", "the")
    d3 "ending"   a word or the text ends next ("ed", <|endoftext|>)
    d4 "noun"     a noun comes next (cat, roof; dog, wall, sofa half as much)

Each token's embedding points at what usually follows it ("␣cat" at d1: a verb
comes next); attention lets "␣the" at the end find "␣climb" and add "surface";
the MLP makes the final adjustments. Every weight is an integer or a half except
the 20 numbers of the MLP's last layer, which were fitted by tools/fit_toy.py so
that the forward pass reproduces every figure of the course's Output page.

The weights' tree helpers (tree_map, get_weight, freeze, ...) live in toy_tree.py and are
reached from here (tm.tree_map). The labs have modules of their own: toy_train.py (lab 08,
the gradients by hand), toy_gpt2.py (lab 09, GPT-2's tokenizer and checkpoints),
toy_induction.py (lab 10) and toy_writes.py (lab 11). The plots, widgets and exercises live
in the package toy_widgets/. A notebook imports each where it lives: `import toy_model as
tm`, `import toy_widgets as tw` (tw.logit_playground()), and a lab its own module (`import
toy_train as tt`, `import toy_gpt2 as tg`, `import toy_induction as ti`, `import toy_writes
as tx`). This module needs numpy alone.
"""
import re

import numpy as np

from toy_checks import (ReadOnlyDict, ReadOnlyList, as_count, as_flag, as_floats, as_ids, as_logits,
                        check_attention, check_block, check_cache, check_cache_batch,
                        check_causal_mask, check_distribution, check_embed, check_finite, check_gelu,
                        check_ids, check_layer_norm, check_linear, check_log_softmax, check_mlp,
                        check_multi_head, check_params, check_sampling, check_seed, check_softmax,
                        check_targets, check_unembed, checked, frozen, is_number, short_text,
                        shown_value)
# The weights' tree helpers live in toy_tree.py; a notebook reaches them here, as tm.tree_map.
from toy_tree import (freeze, get_weight, replace_weight, tree_from, tree_map,  # noqa: F401
                      walk, weight_name, weight_names)

# --- 1. Tokens ---------------------------------------------------------------

VOCAB = ReadOnlyList(["the", " the", " cat", " dog", " climb", "ed",       # read-only, as the
                      " roof", " wall", " sofa", " floor", ".", "<|endoftext|>"])   # weights
EOT = VOCAB.index("<|endoftext|>")   # 11: marks the end of a text
DIMS = ReadOnlyList(["go on", "surface", "ending", "noun"])   # names of d1..d4, for plots
N_CTX = 8        # the longest context the model accepts (rows of wpe)
N_HEAD = 2


def token_name(token):
    """A token as the course names it: the leading space made visible (" the" -> "␣the"),
    and the "." token in quotes, '.', so that it does not read as a sentence's full stop.
    Takes the token's text, its named form or its id."""
    if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
        token = VOCAB[as_ids([token], "token_name")[0]]
    if not isinstance(token, str):
        raise ValueError(f"token_name takes a token's text or its id (0 to {len(VOCAB) - 1}), "
                         f"not {type(token).__name__}.")
    name = token.replace(" ", "␣")
    return "'.'" if name == "." else name


def encode(text):
    """Text -> token ids, in two passes.

    The first pass cuts the text into words as GPT-2 does: each word keeps its leading
    space (" cat"), and "<|endoftext|>" is kept whole. The second is the toy's own: each
    word is covered left to right by the longest vocabulary token that fits (" climbed"
    -> " climb" + "ed"), where GPT-2 replays its learned merges (lab 09).
    Raises ValueError naming the first part the vocabulary cannot cover.
    """
    if not isinstance(text, str):
        raise ValueError(f"encode needs a string of text, not {type(text).__name__}.")
    if text == "":
        raise ValueError("The text is empty: type at least one word, for example 'the cat'.")
    ids = []
    for piece in re.findall(r"<\|endoftext\|>| ?[^\s<]+|\s+|<", text):
        if piece == "<|endoftext|>":
            ids.append(EOT)
            continue
        rest = piece
        while rest:
            match = max((t for t in VOCAB[:EOT] if rest.startswith(t)), key=len, default=None)
            if match is None:
                where = "" if rest == piece else f" (in {short_text(piece)!r})"
                raise ValueError(
                    f"The toy vocabulary has no token for {short_text(rest)!r}{where}. "
                    f"It knows only: {', '.join(token_name(t) for t in VOCAB)}; "
                    "lower case, one space between words, '.' straight after a word.")
            ids.append(VOCAB.index(match))
            rest = rest[len(match):]
    return ids


def decode(ids):
    """Token ids -> text: look each id up and join the strings (spaces are part of tokens)."""
    return "".join(VOCAB[i] for i in as_ids(ids, "decode"))


# --- 2. The weights, in GPT-2's layout ----------------------------------------
# Rows of wte follow VOCAB. Each embedding points at what usually comes next.
_wte = np.array([
    #  go on  surface ending  noun
    [0,    0,     0,     1],     # the      -> a noun
    [0,    0,     0,     2],     # ␣the     -> a noun
    [1,   -1,     0,     0],     # ␣cat     -> a verb, and a cat is no surface
    [1,  -0.5,    0,     0],     # ␣dog
    [0,    1,     1,     0],     # ␣climb   -> "ed", and something to climb
    [1,    1,    -1,     0],     # ed       -> "the" (what was climbed)
    [1,    0,     0,    -1],     # ␣roof    -> "."
    [1,    0,     0,   -0.5],    # ␣wall
    [0.5,  0,     0,    -1],     # ␣sofa
    [1,    0,   0.5,    -1],     # ␣floor
    [0,    0,     1,     0],     # .        -> the end
    [-1,   0,     0,     0],     # <|endoftext|>
], dtype=float)

# Position 1 says "start of the text: the noun coming is a subject, not a surface".
_wpe = np.zeros((N_CTX, 4))
_wpe[0] = [0, -1, 0, 0]

# Attention. c_attn.w = [W_Q | W_K | W_V], each 4 x 4. Head 1 owns columns 1-2 of each
# (Python's [:, 0:2]), head 2 columns 3-4 ([:, 2:4]); below, [row, col] counts from 0.
_W_Q, _W_K, _W_V, _W_O = (np.zeros((4, 4)) for _ in range(4))
# Head 1, "was something climbed?": a token expecting a noun (d4) looks for a word still
# being finished (d2 + d3: "␣climb"), and brings back its d3 as "surface" (d2).
_W_Q[3, 0] = 2
_W_K[1, 0] = _W_K[2, 0] = 1
_W_V[2, 0] = 1
_W_O[0, 1] = 2
# Head 2, "who is acting?": a word being finished (d3) looks for an actor (d1, "␣cat")
# and, once the verb has its subject, lowers "go on" (d1).
_W_Q[2, 2] = 2
_W_K[0, 2] = 1
_W_V[0, 2] = 1
_W_O[2, 0] = -1

# MLP: 8 hidden units u1..u8, each asking one question of the normalised vector:
# u1-u4 "is d_k on?" (+x_k), u5-u8 "is d_k off?" (-x_k), before the GELU.
_c_fc = np.hstack([np.eye(4), -np.eye(4)])       # [4, 8]
# Its output layer: the only fitted numbers (see tools/fit_toy.py). Row i is unit u(i+1);
# u1, u3 and u8 write nothing.
FITTED_UNITS = [1, 3, 4, 5, 6]                   # Python rows: u2, u4, u5, u6, u7
_c_proj = np.zeros((8, 4))
_c_proj[FITTED_UNITS] = [
    [-1.1689, 0.3228, -0.9204, 1.1962],    # u2: d2 on
    [-0.2592, 0.3757, -0.1093, -0.4820],   # u4: d4 on
    [0.5195, -0.5317, 0.0725, -0.4552],    # u5: d1 off
    [0.2307, 0.0297, -0.0753, 0.0732],     # u6: d2 off
    [0.0565, -0.6475, 0.3071, -0.5586],    # u7: d3 off
]

# The unembedding, given by the course: column j favours token j.
_w_u = np.array([
    # the ␣the ␣cat ␣dog ␣climb  ed  ␣roof ␣wall ␣sofa ␣floor  .  eot
    [0,   1, -0.5, -0.5,   1, -0.5, -0.5,   0,    0,    0,    1, -0.5],   # d1 go on
    [0,   1,   -1, -0.5, -0.5,   1,    1,   1,  0.5,  0.5,    0,    0],   # d2 surface
    [0,  -1,    0,    0, -0.5,   1,    0,   0,    0, -0.5,    0,    1],   # d3 ending
    [0, -0.5,   1,  0.5,   0,    0,    1, 0.5,  0.5,    0,   -1,    0],   # d4 noun
])


def _ln_params(d):
    return {"g": np.ones(d), "b": np.zeros(d)}


# The toy's weights as one tree, named as GPT-2 names them, read-only (freeze: toy_tree.py).
PARAMS = freeze({
    "wte": _wte,                                   # [V, d]     token embeddings
    "wpe": _wpe,                                   # [n_ctx, d] position embeddings
    "blocks": [{
        "ln_1": _ln_params(4),
        "attn": {"c_attn": {"w": np.hstack([_W_Q, _W_K, _W_V]), "b": np.zeros(12)},   # [d, 3d]
                 "c_proj": {"w": _W_O, "b": np.zeros(4)}},                           # [d, d]
        "ln_2": _ln_params(4),
        "mlp": {"c_fc": {"w": _c_fc, "b": np.zeros(8)},                              # [d, 2d]
                "c_proj": {"w": _c_proj, "b": np.zeros(4)}},                         # [2d, d]
    }],
    "ln_f": _ln_params(4),
    "w_u": _w_u,                                   # [d, V]     the toy's own unembedding
})


# --- 3. The functions of the forward pass ---------------------------------------
# Each function holds its maths. Its check, for a learner who calls it directly with
# anything, is declared above it (@checked, see toy_checks); when this module's own code
# calls it (forward, block, ...), the check is not run again.

@checked(check_layer_norm)
def layer_norm(x, g, b, eps=1e-5):
    """GPT-2's LayerNorm, row by row: subtract the mean, divide by the std, then g and b."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)          # population variance, as GPT-2
    return g * (x - mean) / np.sqrt(var + eps) + b


@checked(check_gelu)
def gelu(x):
    """GPT-2's GELU (the tanh form): like ReLU, but smooth, and slightly negative below 0.
    x * x * x is x³, written so because numpy's x ** 3 takes six times as long."""
    return 0.5 * x * (1 + np.tanh((2 / np.pi) ** 0.5 * (x + 0.044715 * x * x * x)))


@checked(check_softmax)
def softmax(z, axis=-1):
    """Scores -> probabilities. Subtracting the max first changes nothing (a constant
    shift cancels) but keeps e^z finite for logits like 1000."""
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@checked(check_linear)
def linear(x, w, b):
    """Each row times w, plus b: the layer every projection of GPT-2 is made of."""
    return x @ w + b                                # [n, d_in] -> [n, d_out]


@checked(check_embed)
def embed(ids, wte, wpe, start=0):
    """ids -> x: each token's row of wte plus its position's row of wpe (positions count
    from `start`, the number of tokens already in a KV cache)."""
    return wte[ids] + wpe[start:start + ids.shape[-1]]     # [n] -> [n, d]


@checked(check_causal_mask)
def causal_mask(n):
    """True where row i may look at column j: itself and earlier positions only."""
    return np.tri(n, dtype=bool)                    # [n, n]: ones on and below the diagonal


@checked(check_attention)
def attention(q, k, v, mask=True, trace=None):
    """One head: scores = q k^T / sqrt(d_head), softmax by row, weighted sum of v.
    q may have fewer rows than k and v: they are then the newest positions."""
    scores = q @ k.swapaxes(-1, -2) / q.shape[-1] ** 0.5    # [m, n]: q k^T
    if mask:                                        # the new rows are the mask's last rows
        scores = np.where(causal_mask(k.shape[-2])[k.shape[-2] - q.shape[-2]:], scores, -np.inf)
    weights = softmax(scores)                       # [m, n], rows sum to 1
    out = weights @ v                               # [m, d_head]
    if trace is not None:
        trace.update(q=q, k=k, v=v, scores=scores, weights=weights, out=out)
    return out


@checked(check_multi_head)
def multi_head(x, c_attn, c_proj, n_head, mask=True, trace=None, cache=None):
    """All heads side by side: project to q, k, v, split each into heads, attend, concat, W_O.
    cache: a dict that keeps the keys and values of earlier positions; the new ones join it."""
    q, k, v = np.split(linear(x, **c_attn), 3, axis=-1)    # [n, 3d] -> 3 x [n, d]
    if cache is not None:
        k = cache["k"] = np.concatenate([cache["k"], k], axis=-2) if "k" in cache else k
        v = cache["v"] = np.concatenate([cache["v"], v], axis=-2) if "v" in cache else v
    # Head i owns columns i * d_head to (i + 1) * d_head: cut every row into n_head pieces
    # ([n, d] -> [n, n_head, d_head]) and put the heads first, to attend all at once.
    qs, ks, vs = (m.reshape(*m.shape[:-1], n_head, -1).swapaxes(-2, -3) for m in (q, k, v))
    every = {}                                              # every head's intermediates, stacked
    out = attention(qs, ks, vs, mask=mask, trace=every)     # [n_head, n, d_head]
    concat = out.swapaxes(-2, -3).reshape(q.shape)          # [n, d]: head 1's columns, then head 2's
    attn = linear(concat, **c_proj)                         # [n, d]
    if trace is not None:
        heads = [{name: value[..., i, :, :] for name, value in every.items()} for i in range(n_head)]
        trace.update(q=q, k=k, v=v, concat=concat, attn=attn, heads=heads)
    return attn


@checked(check_mlp)
def mlp(x, c_fc, c_proj, trace=None):
    """Widen, GELU, narrow back: each hidden unit asks one question of the row."""
    pre = linear(x, **c_fc)                         # [n, d] -> [n, d_mlp]
    act = gelu(pre)
    out = linear(act, **c_proj)                     # [n, d_mlp] -> [n, d]
    if trace is not None:
        trace.update(mlp_pre=pre, mlp_act=act, mlp=out)
    return out


# Each function takes its weights by their GPT-2 names (layer_norm(x, g, b), linear(x, w, b),
# mlp(x, c_fc, c_proj)); a block takes its whole dict, blk = params["blocks"][i].

@checked(check_block)
def block(x, blk, n_head, mask=True, trace=None, cache=None):
    """Pre-LN transformer block: h = x + attn(LN1(x)), y = h + mlp(LN2(h)).
    (An attention-only block has no ln_2 and no mlp: y = h.)"""
    a = layer_norm(x, **blk["ln_1"])                # [n, d]
    h = x + multi_head(a, **blk["attn"], n_head=n_head, mask=mask, trace=trace, cache=cache)
    u = layer_norm(h, **blk["ln_2"]) if "mlp" in blk else None     # what the MLP reads
    y = h + mlp(u, **blk["mlp"], trace=trace) if "mlp" in blk else h
    if trace is not None:
        trace.update(ln1=a, h=h, ln2=u, y=y)
    return y                                        # [n, d]


@checked(check_unembed)
def unembed(f, params):
    """f -> logits: one dot product per vocabulary token. A model without w_u is tied: its
    output layer is the token embeddings' table turned on its side, W_U = wte^T."""
    w_u = params["w_u"] if "w_u" in params else params["wte"].T
    return f @ w_u                                  # [n, d] -> [n, V]


def forward(ids, params=PARAMS, n_head=N_HEAD, mask=True, trace=None, cache=None):
    """ids -> logits [n, V]. Pass a dict as trace to get every intermediate by name.

    ids: one text [n], or a batch of texts of one length [B, n] (for training). cache: a
    list (empty at first) that keeps every block's keys and values; with it, ids are the
    tokens that follow those already run, and only their rows are computed (a KV cache)."""
    n_head = check_params(params, n_head)
    as_flag(mask, "mask")
    if not isinstance(trace, (dict, type(None))):
        raise ValueError(f"forward's trace must be a dict (or None), not {shown_value(trace)}.")
    start = check_cache(cache, params)              # positions already in the cache
    ids = check_ids(ids, len(params["wpe"]) - start, len(params["wte"]))
    if cache:
        check_cache_batch(cache, ids)
    if cache is not None and not cache:
        cache.extend({} for _ in params["blocks"])
    x = embed(np.asarray(ids), params["wte"], params["wpe"], start)    # [n, d]
    y, traces = x, [{} for _ in params["blocks"]]    # what each block computed
    for i, blk in enumerate(params["blocks"]):
        y = block(y, blk, n_head=n_head, mask=mask,
                  trace=None if trace is None else traces[i],
                  cache=None if cache is None else cache[i])
    f = layer_norm(y, **params["ln_f"])            # [n, d]
    logits = unembed(f, params)                     # [n, V]
    check_finite(logits, params, "forward")         # else: the weight that holds NaN, named
    if trace is not None:                           # a trace used before is written anew
        trace.clear()
        trace.update(traces[-1] if len(traces) == 1 else {}, blocks=traces,
                     ids=ids, x=x, y=y, f=f, logits=logits)
    return logits


def intermediates(text="the cat climbed the", **options):
    """Everything the notebooks show, by name: x, q/k/v and weights per head, h, y, f, logits, p.

    text: a string or token ids. options: params, n_head, mask (as forward)."""
    ids = encode(text) if isinstance(text, str) else as_ids(text, "intermediates")
    unknown = set(options) - {"params", "n_head", "mask"}
    if unknown:
        raise ValueError(f"intermediates takes the options params, n_head and mask, not "
                         f"{', '.join(sorted(unknown))}: a switch is an edit of the weights, such "
                         "as params=tm.switch_off(tm.PARAMS, 'attn') or params=tm.tie(tm.PARAMS).")
    trace = {}
    forward(ids, trace=trace, **options)
    trace["tokens"] = [token_name(i) for i in trace["ids"]]
    trace["p"] = softmax(trace["logits"])
    return trace


# Copies and edits of the weights: the widgets' switches are edits, each a new tree
# beside the old one.

def copy_params(params=None):
    """A writable copy of the weights (of PARAMS by default), to change and run."""
    params = PARAMS if params is None else params
    check_params(params, 1)
    return tree_map(np.array, params)


def tie(params):
    """The same weights with the output layer tied to the token embeddings: without w_u,
    so that unembed uses wte^T (GPT-2's own choice). Nothing is copied."""
    check_params(params, 1)
    kept = {key: value for key, value in params.items() if key != "w_u"}
    return ReadOnlyDict(kept) if isinstance(params, ReadOnlyDict) else kept


def switch_off(params, branch):
    """The same weights with every block's attention branch ("attn") or MLP branch ("mlp")
    switched off: its output projection c_proj zeroed, so the branch adds 0 to the stream
    (h = x, or y = h). The other weights are the same arrays."""
    check_params(params, 1)
    if branch not in ("attn", "mlp") or branch not in params["blocks"][0]:
        raise ValueError(f"switch_off takes 'attn' or 'mlp' (a branch these blocks have), "
                         f"not {shown_value(branch)}.")
    read_only = isinstance(params, ReadOnlyDict)

    def edit(path, leaf):
        if path[0] == "blocks" and path[2:4] == (branch, "c_proj"):
            return frozen(np.zeros_like(leaf)) if read_only else np.zeros_like(leaf)
        return leaf
    return walk(edit, params, kinds=(ReadOnlyDict, ReadOnlyList) if read_only else (dict, list))


# --- 4. The loss ---------------------------------------------------------------

@checked(check_log_softmax)
def log_softmax(z):
    """ln p, straight from the logits: z - ln(sum e^z), with the max subtracted first
    (the "log-sum-exp" trick). Finite for any finite logits, even ±1000."""
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def cross_entropy(logits, targets):
    """Mean of -ln p(target) over the rows: the number training makes small.

    logits [n, V] for one text, or [B, n, V] for a batch; targets [n] or [B, n], where a
    target of -1 marks a position that is not graded (padding)."""
    logits = as_floats(logits, "cross_entropy")
    if logits.ndim < 2:
        raise ValueError("cross_entropy takes one row of logits per position (n x V), not an array "
                         f"of shape {logits.shape}; for one position use logits[None].")
    logits = as_logits(logits, "cross_entropy")
    targets = check_targets(targets, logits.shape[:-1], logits.shape[-1])
    graded = targets >= 0
    log_p = log_softmax(logits)                     # [..., n, V]
    picked = np.take_along_axis(log_p, np.where(graded, targets, 0)[..., None], axis=-1)[..., 0]
    return float(-picked[graded].mean()) + 0.0      # + 0.0: a perfect score prints 0, not -0


def entropy(p):
    """How spread out a distribution is, in nats: 0 when one token is certain,
    ln 12 = 2.485 when all 12 are equally likely."""
    p = check_distribution(p, "entropy")
    p = p[p > 0]
    return float(-(p * np.log(p)).sum()) + 0.0


# --- 5. Choosing the next token ------------------------------------------------

def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    """The distribution a token is drawn from, in the order Hugging Face's transformers and
    vLLM use: divide the logits by T; keep the k most likely tokens and renormalise; then
    keep the smallest set of those whose p adds up to top_p, and renormalise again.
    temperature 0 means greedy: all the probability on the largest logit."""
    check_sampling(temperature, top_k, top_p)
    z = as_floats(logits, "next_token_probs")
    if z.ndim != 1 or z.size == 0:
        raise ValueError("next_token_probs takes one row of logits (V numbers), not an array of "
                         f"shape {z.shape}; for the next token use the last row, logits[-1].")
    z = as_logits(z, "next_token_probs").astype(float)
    if temperature == 0:
        p = np.zeros(len(z))
        p[np.argmax(z)] = 1.0
        return p
    with np.errstate(over="ignore"):                # a tiny T sends the others to -infinity
        p = softmax(np.maximum((z - z.max()) / temperature, -1e300))   # the largest stays at 0
    order = np.argsort(-p, kind="stable")           # most likely first
    if top_k is not None:
        p[order[int(top_k):]] = 0.0
        p = p / p.sum()
    if top_p is not None:
        before = np.cumsum(p[order]) - p[order]     # mass of the tokens ranked above
        p[order[before >= top_p]] = 0.0             # keep until the mass reaches top_p
        p = p / p.sum()
    return p


def _rng(seed):
    """`seed` itself if it is a numpy Generator (its draws go on where they were), else a new
    Generator seeded with it: seeded, the same draws come out every time."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))


def sample(p, rng):
    """Draw one token id from p. rng: a numpy Generator (np.random.default_rng(seed)) or a
    seed; seeded, the same draws come out every time."""
    rng = _rng(rng)
    p = check_distribution(p, "sample")
    return int(rng.choice(len(p), p=p / p.sum()))   # float32 rows may miss 1 by a rounding


def generate(prompt, temperature=0.0, top_k=None, top_p=None, seed=0, params=PARAMS,
             n_head=N_HEAD, max_new=None, eot=EOT, cache=False):
    """Pick, append, repeat: until eot (<|endoftext|>), the context is full, or max_new new
    tokens. Only the last row's logits are used at each step.

    prompt: text or token ids. seed: a whole number, or a numpy Generator to go on drawing
    from; the notebook's stepper passes its own and asks for one step at a time (max_new=1),
    at the temperature set then. cache=True keeps every block's keys and values (a KV
    cache), so each step runs only the token just chosen; the numbers are the same either way.
    Returns a list of steps, each {"ids": context, "p": distribution, "next": chosen id}."""
    check_params(params, n_head)
    ids = encode(prompt) if isinstance(prompt, str) else as_ids(prompt, "generate", len(params["wte"]))
    check_ids(ids, len(params["wpe"]), len(params["wte"]))
    if not (eot is None or is_number(eot)) or not isinstance(cache, (bool, np.bool_)):
        raise ValueError("generate's eot must be a token id (or None) and its cache True or False.")
    check_sampling(temperature, top_k, top_p)
    max_new = len(params["wpe"]) if max_new is None else as_count(max_new, "max_new", low=0)
    rng = _rng(seed)
    kv = [] if cache else None
    steps = []
    while len(ids) < len(params["wpe"]) and ids[-1] != eot and len(steps) < max_new:
        new = ids[len(ids) - 1:] if kv else ids                   # with a cache: the newest only
        p = next_token_probs(forward(new, params, n_head, cache=kv)[-1], temperature, top_k, top_p)
        nxt = int(np.argmax(p)) if temperature == 0 else sample(p, rng)
        steps.append({"ids": list(ids), "p": p, "next": nxt})
        ids.append(nxt)
    return steps
