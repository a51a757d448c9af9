"""A tiny GPT-2 you can check by hand: 12 tokens, d = 4, one block, two heads.

The code is GPT-2's forward pass, step for step, in small numpy functions; the
weights are small enough to print. The seven notebooks follow it in order:

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
the MLP makes the final adjustments. Everything is an integer except the 20
numbers of the MLP's last layer, which were fitted by tools/fit_toy.py so that the
forward pass reproduces every figure of the course's Output page.

The notebooks' plots, widgets and exercises live in toy_widgets.py; they are reached
through this module (tm.logit_playground()), which itself needs numpy alone.
"""
import json
import os
import re
from pathlib import Path

import numpy as np

# =============================================================================
# Part 1: the model (numpy only)
# =============================================================================

# --- 1. Tokens ---------------------------------------------------------------

VOCAB = ["the", " the", " cat", " dog", " climb", "ed",
         " roof", " wall", " sofa", " floor", ".", "<|endoftext|>"]
EOT = VOCAB.index("<|endoftext|>")   # 11: marks the end of a text
DIMS = ["go on", "surface", "ending", "noun"]   # names of d1..d4, for plots
N_CTX = 8        # the longest context the model accepts (rows of wpe)
N_HEAD = 2


def show(token):
    """A token as the course prints it: the leading space made visible (" the" -> "␣the").
    Takes the token's text or its id."""
    if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
        token = VOCAB[as_ids([token], "show")[0]]
    if not isinstance(token, str):
        raise ValueError(f"show takes a token's text or its id (0 to {len(VOCAB) - 1}), "
                         f"not {type(token).__name__}.")
    return token.replace(" ", "␣")


def _short(text, limit=24):
    """A piece of the learner's text for a message: ␣ for spaces, cut if long."""
    text = show(text)
    return text if len(text) <= limit else text[:limit] + "…"


def encode(text):
    """Text -> token ids, the way GPT-2 splits text (its rules, our tiny vocabulary).

    The text is first cut into words, each keeping its leading space (" cat"), and
    "<|endoftext|>" is kept whole. Each word is then covered left to right by the
    longest vocabulary token that fits: " climbed" -> " climb" + "ed".
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
                where = "" if rest == piece else f" (in {_short(piece)!r})"
                raise ValueError(
                    f"The toy vocabulary has no token for {_short(rest)!r}{where}. "
                    f"It knows only: {', '.join(show(t) for t in VOCAB)}; "
                    "lower case, one space between words, '.' straight after a word.")
            ids.append(VOCAB.index(match))
            rest = rest[len(match):]
    return ids


def decode(ids):
    """Token ids -> text: look each id up and join the strings (spaces are part of tokens)."""
    return "".join(VOCAB[i] for i in as_ids(ids, "decode"))


def as_ids(ids, who, vocab_size=len(VOCAB)):
    """ids as a list of Python ints, or one sentence saying what `who` needs instead."""
    if isinstance(ids, str):
        raise ValueError(f"{who} takes token ids, not text: turn text into ids with encode() first.")
    try:
        arr = np.asarray(ids)
    except ValueError:
        arr = np.asarray([None])
    if arr.ndim != 1 and arr.size > 0:
        raise ValueError(f"{who} takes one list of token ids, not an array of shape {arr.shape}.")
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{who} takes token ids, which are whole numbers from 0 to "
                         f"{vocab_size - 1}; got {_short(str(ids[0]))!r} among them.")
    ids = [int(i) for i in arr]
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise ValueError(f"Token id {bad[0]} does not exist: ids run from 0 to {vocab_size - 1}.")
    return ids


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
# Head 1, "what was climbed?": a token expecting a noun (d4) looks for a word still
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


class Frozen(np.ndarray):
    """A weight of the model: read-only, so that every cell of every notebook sees the same
    model. Anything computed from it is an ordinary array."""

    def __setitem__(self, key, value):
        if not self.flags.writeable:
            raise ValueError("The model's weights are read-only, so that every notebook sees the "
                             "same model: experiment on a copy, params = tm.copy_params() "
                             "(or E = tm.PARAMS['wte'].copy()).")
        super().__setitem__(key, value)

    def __getitem__(self, key):
        part = super().__getitem__(key)
        return part.view(np.ndarray) if isinstance(part, np.ndarray) else part

    def __array_wrap__(self, array, context=None, return_scalar=False):
        array = array.view(np.ndarray)
        return array[()] if return_scalar else array

    def __repr__(self):
        return repr(self.view(np.ndarray))


def freeze(tree):
    """The same nested weights, every array read-only (a Frozen view)."""
    if isinstance(tree, dict):
        return {k: freeze(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [freeze(v) for v in tree]
    arr = np.array(tree, dtype=float).view(Frozen)
    arr.flags.writeable = False
    return arr


def copy_params(params=None):
    """A writable copy of the weights (of PARAMS by default), to change and run."""
    tree = PARAMS if params is None else params
    if isinstance(tree, dict):
        return {k: copy_params(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [copy_params(v) for v in tree]
    return np.array(tree)


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


# --- 3. The pieces of the forward pass ------------------------------------------

def layer_norm(x, g, b, eps=1e-5):
    """GPT-2's LayerNorm, row by row: subtract the mean, divide by the std, then g and b."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)          # population variance, as GPT-2
    return g * (x - mean) / np.sqrt(var + eps) + b


def gelu(x):
    """GPT-2's GELU (the tanh form): like ReLU, but smooth and slightly negative below 0."""
    return 0.5 * x * (1 + np.tanh((2 / np.pi) ** 0.5 * (x + 0.044715 * x * x * x)))


def softmax(z, axis=-1):
    """Scores -> probabilities. Subtracting the max first changes nothing (a constant
    shift cancels) but keeps e^z finite for logits like 1000."""
    z = np.asarray(z)
    z = z if z.dtype.kind == "f" else z.astype(float)   # float32 stays float32
    if not np.all(np.isfinite(z) | (z == -np.inf)):
        raise ValueError("Logits must be finite numbers (NaN or +infinity found); "
                         "any real number is allowed, even ±1000.")
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def linear(x, w, b):
    return x @ w + b                                # [n, d_in] -> [n, d_out]


def embed(ids, wte, wpe):
    """ids -> x: each token's row of wte plus its position's row of wpe."""
    ids = np.asarray(ids)
    return wte[ids] + wpe[:ids.shape[-1]]           # [n] -> [n, d]


def causal_mask(n):
    """True where row i may look at column j: itself and earlier positions only."""
    return np.tril(np.ones((n, n), dtype=bool))     # [n, n]


def attention(q, k, v, mask=True, trace=None):
    """One head: scores = q k^T / sqrt(d_head), softmax by row, weighted sum of v."""
    scores = q @ k.swapaxes(-1, -2) / q.shape[-1] ** 0.5    # [n, n]: q k^T
    if mask:
        scores = np.where(causal_mask(q.shape[-2]), scores, -np.inf)
    weights = softmax(scores)                       # [n, n], rows sum to 1
    out = weights @ v                               # [n, d_head]
    if trace is not None:
        trace.update(q=q, k=k, v=v, scores=scores, weights=weights, out=out)
    return out


def multi_head(x, c_attn, c_proj, n_head, mask=True, trace=None):
    """All heads side by side: project to q, k, v, split into heads, attend, concat, W_O."""
    q, k, v = np.split(linear(x, **c_attn), 3, axis=-1)    # [n, 3d] -> 3 x [n, d]
    qs, ks, vs = (np.split(m, n_head, axis=-1) for m in (q, k, v))   # n_head x [n, d_head]
    heads = [{} for _ in range(n_head)]                     # what each head computed
    concat = np.concatenate([attention(*qkv, mask=mask, trace=t)      # [n, d]
                             for qkv, t in zip(zip(qs, ks, vs), heads, strict=True)], axis=-1)
    out = linear(concat, **c_proj)                          # [n, d]
    if trace is not None:
        trace.update(q=q, k=k, v=v, concat=concat, attn=out, heads=heads)
    return out


def mlp(x, c_fc, c_proj, trace=None):
    """Widen, GELU, narrow back: each hidden unit asks one question of the row."""
    pre = linear(x, **c_fc)                         # [n, d] -> [n, d_mlp]
    act = gelu(pre)
    out = linear(act, **c_proj)                     # [n, d_mlp] -> [n, d]
    if trace is not None:
        trace.update(mlp_pre=pre, mlp_act=act, mlp=out)
    return out


# Each piece takes its weights by their GPT-2 names (layer_norm(x, g, b), linear(x, w, b),
# mlp(x, c_fc, c_proj)); a block takes its whole dict, blk = params["blocks"][i].

def block(x, blk, n_head, attention_on=True, mlp_on=True, mask=True, trace=None):
    """Pre-LN transformer block: h = x + attn(LN1(x)), y = h + mlp(LN2(h))."""
    a = layer_norm(x, **blk["ln_1"])                # [n, d]
    h = x + multi_head(a, **blk["attn"], n_head=n_head, mask=mask, trace=trace) if attention_on else x
    u = layer_norm(h, **blk["ln_2"])
    y = h + mlp(u, **blk["mlp"], trace=trace) if mlp_on else h
    if trace is not None:
        trace.update(ln1=a, h=h, ln2=u, y=y)
    return y                                        # [n, d]


def unembed(f, params, tied=False):
    """f -> logits: one dot product per vocabulary token. Tied: W_U = wte^T."""
    w_u = params["wte"].T if tied or "w_u" not in params else params["w_u"]
    return f @ w_u                                  # [n, d] -> [n, V]


def check_ids(ids, n_ctx=N_CTX, vocab_size=len(VOCAB)):
    """ids the model can run: at least one, at most n_ctx, each an id of the vocabulary."""
    ids = as_ids(ids, "The model", vocab_size)
    if not ids:
        raise ValueError("No tokens: the model needs at least one token to predict the next.")
    if len(ids) > n_ctx:
        raise ValueError(f"The prompt has {len(ids)} tokens but the context holds at most {n_ctx}: "
                         f"shorten it to {n_ctx} tokens or fewer.")
    return ids


def check_n_head(n_head, d):
    if isinstance(n_head, bool) or not isinstance(n_head, (int, np.integer)) or not 0 < n_head <= d \
            or d % n_head:
        raise ValueError(f"n_head must be a whole number that divides d = {d} (each head gets "
                         f"d / n_head dimensions), not {n_head!r}.")
    return int(n_head)


def forward(ids, params=PARAMS, n_head=N_HEAD, attention_on=True, mlp_on=True,
            tied=False, mask=True, trace=None):
    """ids -> logits [n, V]. Pass a dict as trace to get every intermediate by name."""
    ids = check_ids(ids, len(params["wpe"]), len(params["wte"]))
    n_head = check_n_head(n_head, params["wte"].shape[1])
    x = embed(ids, params["wte"], params["wpe"])    # [n, d]
    y = x
    for blk in params["blocks"]:
        t = {} if trace is not None else None
        y = block(y, blk, n_head=n_head, attention_on=attention_on, mlp_on=mlp_on, mask=mask, trace=t)
        if trace is not None:
            trace.setdefault("blocks", []).append(t)
    f = layer_norm(y, **params["ln_f"])            # [n, d]
    logits = unembed(f, params, tied)               # [n, V]
    if trace is not None:
        trace.update(trace["blocks"][-1] if len(params["blocks"]) == 1 else {},
                     ids=ids, x=x, y=y, f=f, logits=logits)
    return logits


def run(text_or_ids="the cat climbed the", **options):
    """Everything the notebooks show, by name: x, q/k/v and weights per head, h, y, f, logits, p.

    options: params, n_head, attention_on, mlp_on, tied, mask (as forward).
    """
    ids = encode(text_or_ids) if isinstance(text_or_ids, str) else list(text_or_ids)
    trace = {}
    forward(ids, trace=trace, **options)
    trace["tokens"] = [show(i) for i in trace["ids"]]
    trace["p"] = softmax(trace["logits"])
    return trace


# --- 4. The loss ---------------------------------------------------------------

def log_softmax(z):
    """ln p, straight from the logits: z - ln(sum e^z), with the max subtracted first
    (the "log-sum-exp" trick). Training code computes the loss this way, never forming p."""
    softmax(z)                                      # the same checks: no NaN, no +infinity
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def cross_entropy(logits, targets):
    """Mean of -ln p(target) over the rows: the number training makes small."""
    logits = np.asarray(logits)
    if logits.ndim != 2:
        raise ValueError("cross_entropy takes one row of logits per position (n x V), not an array "
                         f"of shape {logits.shape}; for one position use logits[None].")
    targets = as_ids(targets, "cross_entropy's targets", logits.shape[1])
    if len(targets) != len(logits):
        raise ValueError(f"cross_entropy needs one target per row of logits: {len(logits)} rows, "
                         f"{len(targets)} targets.")
    log_p = log_softmax(logits)                     # [n, V]
    return float(-log_p[np.arange(len(targets)), targets].mean())


def entropy(p):
    """How spread out a distribution is, in nats: 0 when one token is certain,
    ln 12 = 2.485 when all 12 are equally likely."""
    p = np.asarray(p, dtype=float)
    if p.ndim != 1 or p.size == 0 or np.any(p < 0) or not np.isclose(p.sum(), 1):
        raise ValueError("entropy takes one probability distribution: non-negative numbers "
                         "that add up to 1.")
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


# --- 5. Choosing the next token ------------------------------------------------

def _is_number(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def check_sampling(temperature=1.0, top_k=None, top_p=None):
    """The settings of next_token_probs, or one sentence saying which is wrong and what is allowed."""
    if not _is_number(temperature) or not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"Temperature must be 0 (greedy) or a positive number, not {temperature!r}.")
    if top_k is not None and not (_is_number(top_k) and float(top_k).is_integer() and top_k >= 1):
        raise ValueError(f"top-k must be a whole number of at least 1, not {top_k!r}.")
    if top_p is not None and not (_is_number(top_p) and 0 < top_p <= 1):
        raise ValueError(f"top-p must be above 0 and at most 1, not {top_p!r}.")


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    """The distribution a token is drawn from, in the order Hugging Face's transformers and
    vLLM use: divide the logits by T; keep the k most likely tokens and renormalise; then
    keep the smallest set of those whose p adds up to top_p, and renormalise again.
    temperature 0 means greedy: all the probability on the largest logit."""
    check_sampling(temperature, top_k, top_p)
    z = np.asarray(logits, dtype=float)
    if z.ndim != 1 or z.size == 0:
        raise ValueError("next_token_probs takes one row of logits (V numbers), not an array of "
                         f"shape {z.shape}; for the next token use the last row, logits[-1].")
    if np.all(z == -np.inf):
        raise ValueError("Every logit is -infinity: at least one token must have a finite logit.")
    softmax(z)                                      # rejects NaN and +infinity with its sentence
    if temperature == 0:
        p = np.zeros(len(z))
        p[np.argmax(z)] = 1.0
        return p
    with np.errstate(over="ignore"):                # a tiny T sends the others to -infinity
        p = softmax((z - z.max()) / temperature)    # shift first: the largest stays at 0
    order = np.argsort(-p, kind="stable")           # most likely first
    if top_k is not None:
        p[order[int(top_k):]] = 0.0
        p = p / p.sum()
    if top_p is not None:
        before = np.cumsum(p[order]) - p[order]     # mass of the tokens ranked above
        p[order[before >= top_p]] = 0.0             # keep until the mass reaches top_p
        p = p / p.sum()
    return p


def check_seed(seed):
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 0 <= seed < 2**63):
        raise ValueError(f"The seed must be a whole number from 0 to 2**63 - 1, not {seed!r}.")
    return int(seed)


def sample(p, rng):
    """Draw one token id from p. rng: a numpy Generator (np.random.default_rng(seed)) or a
    seed; seeded, the same draws come out every time."""
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(check_seed(rng))
    p = np.asarray(p, dtype=float)
    if p.ndim != 1 or p.size == 0 or np.any(~(p >= 0)) or not np.isclose(p.sum(), 1):
        raise ValueError("sample takes one probability distribution: non-negative numbers "
                         "that add up to 1.")
    return int(rng.choice(len(p), p=p))


def generate(prompt, temperature=0.0, top_k=None, top_p=None, seed=0, params=PARAMS,
             n_head=N_HEAD, max_new=None):
    """Pick, append, repeat: until <|endoftext|>, the context is full, or max_new new tokens.

    Returns a list of steps, each {"ids": context, "p": distribution, "next": chosen id}.
    Only the last row's logits are used at each step."""
    ids = encode(prompt) if isinstance(prompt, str) else as_ids(prompt, "generate", len(params["wte"]))
    check_ids(ids, len(params["wpe"]), len(params["wte"]))
    check_sampling(temperature, top_k, top_p)
    if max_new is not None and not (isinstance(max_new, (int, np.integer))
                                    and not isinstance(max_new, bool) and max_new >= 0):
        raise ValueError(f"max_new must be a whole number of tokens, 0 or more, not {max_new!r}.")
    rng = np.random.default_rng(check_seed(seed))
    steps = []
    while len(ids) < len(params["wpe"]) and ids[-1] != EOT:
        if max_new is not None and len(steps) >= max_new:
            break
        p = next_token_probs(forward(ids, params, n_head)[-1], temperature, top_k, top_p)
        nxt = int(np.argmax(p)) if temperature == 0 else sample(p, rng)
        steps.append({"ids": list(ids), "p": p, "next": nxt})
        ids.append(nxt)
    return steps


# --- 6. Learning: the loss's gradient, by hand (lab 08) -----------------------------
# Training moves every weight a little in the direction that lowers the loss of section
# 4. That direction is the gradient: for each weight, how fast the loss grows when the
# weight grows. It is computed backwards (backpropagation): each forward function above
# gets a `_backward` twin that takes d loss / d (its output), written d<output> and of
# the same shape, and returns d loss / d (its input) and d loss / d (its weights). What
# the twins need from the forward pass they take from `seen` (the trace that the forward
# function filled) or, without it, recompute from their input.
#
# Training grades many texts at once, so this part also takes a batch: ids [B, n] with
# every array one axis longer ([B, n, d]). Shorter texts are padded at the end; a
# target of -1 marks a padded position, which the loss does not grade. Because of the
# causal mask, what comes after a text never changes its rows.

def transpose(a):
    """Swap the last two axes: k^T for one text [n, d] or for each text of a batch."""
    return a.swapaxes(-1, -2)


def graded_loss(logits, targets):
    """The mean of -ln p(target) over the graded positions (targets >= 0): section 4's
    cross_entropy, for one text or a batch [B, n]."""
    targets = np.asarray(targets)
    graded = targets >= 0
    p = softmax(logits)                                     # [..., n, V]
    p_target = np.take_along_axis(p, np.where(graded, targets, 0)[..., None], axis=-1)[..., 0]
    return float(-np.log(p_target[graded]).mean())


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


def mlp_backward(dout, x, c_fc, c_proj, seen=None):
    """Back through narrow, GELU, widen. Returns dx and the MLP's gradients. (seen: the
    trace mlp() filled for this x, if kept; otherwise the forward pass is run again.)"""
    if seen is None:
        seen = {}
        mlp(x, c_fc, c_proj, trace=seen)
    pre = seen["mlp_pre"]                                   # [..., n, d_mlp]
    dact, dw_proj, db_proj = linear_backward(dout, seen["mlp_act"], c_proj["w"])
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
        seen = {}
        attention(q, k, v, mask, trace=seen)
        weights = seen["weights"]                           # [..., n, n]
    dweights, dv = dout @ transpose(v), transpose(weights) @ dout
    dscores = softmax_backward(dweights, weights)           # 0 where masked
    scale = 1 / np.sqrt(q.shape[-1])                        # the 1/sqrt(d_head) of the scores
    return dscores @ k * scale, transpose(dscores) @ q * scale, dv


def multi_head_backward(dout, x, c_attn, c_proj, n_head, mask=True, seen=None):
    """Back through W_O, each head, and the q/k/v projection. Returns dx and the gradients.
    (seen: the trace multi_head filled for this x; otherwise the forward pass runs again.)"""
    if seen is None:
        seen = {}
        multi_head(x, c_attn, c_proj, n_head, mask, trace=seen)
    dconcat, dw_o, db_o = linear_backward(dout, seen["concat"], c_proj["w"])
    dheads = np.split(dconcat, n_head, axis=-1)             # n_head x [..., n, d_head]
    per_head = [attention_backward(dh, t["q"], t["k"], t["v"], mask, t["weights"])
                for dh, t in zip(dheads, seen["heads"], strict=True)]
    dq, dk, dv = (np.concatenate(parts, axis=-1) for parts in zip(*per_head))   # [..., n, d]
    dx, dw_qkv, db_qkv = linear_backward(np.concatenate([dq, dk, dv], axis=-1), x, c_attn["w"])
    return dx, {"c_attn": {"w": dw_qkv, "b": db_qkv}, "c_proj": {"w": dw_o, "b": db_o}}


def block_backward(dy, x, blk, n_head, seen=None):
    """Back through y = h + mlp(LN2(h)), h = x + attn(LN1(x)). Returns dx and the gradients.
    (seen: the trace block filled for this x; otherwise the forward pass runs again.)

    A residual add hands its gradient to both of its inputs unchanged: dy reaches h
    directly and through the MLP; dh reaches x directly and through attention."""
    if seen is None:
        seen = {}
        block(x, blk, n_head, trace=seen)
    du, g_mlp = mlp_backward(dy, seen["ln2"], **blk["mlp"], seen=seen)
    dh_ln, dg2, db2 = layer_norm_backward(du, seen["h"], blk["ln_2"]["g"])
    dh = dy + dh_ln                                         # [..., n, d]
    da, g_attn = multi_head_backward(dh, seen["ln1"], **blk["attn"], n_head=n_head, seen=seen)
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
    dwte, dwpe = np.zeros_like(wte), np.zeros_like(wpe)
    np.add.at(dwte, ids.reshape(-1), dx.reshape(-1, d))
    dwpe[:ids.shape[-1]] = dx.reshape(-1, ids.shape[-1], d).sum(axis=0)
    return dwte, dwpe


def block_inputs(ids, params, n_head, seen=None):
    """The forward pass for one text [n] or a batch [B, n], keeping what the backward pass
    starts from: [x, the input of each later block, the last block's y]. seen: a list
    that receives each block's intermediates."""
    xs = [embed(ids, params["wte"], params["wpe"])]        # [..., n, d]
    for blk in params["blocks"]:
        kept = {}
        xs.append(block(xs[-1], blk, n_head, trace=kept))
        if seen is not None:
            seen.append(kept)
    return xs


def logits_of(y, params):
    """The last block's output -> logits: final norm, then the unembedding (tied when
    params has no "w_u"), for one text or a batch."""
    return unembed(layer_norm(y, **params["ln_f"]), params)     # [..., n, V]


def backward(dlogits, ids, params=PARAMS, n_head=N_HEAD, xs=None, seen=None):
    """Every weight's gradient, given d loss / d logits: each step of the forward pass
    undone in reverse. The result has exactly params' layout. xs, seen: block_inputs'
    result and record, if the forward pass was already run."""
    if xs is None:
        seen = []
        xs = block_inputs(ids, params, n_head, seen)
    tied = "w_u" not in params
    f = layer_norm(xs[-1], **params["ln_f"])
    df, dw_u = unembed_backward(dlogits, f, params["wte"].T if tied else params["w_u"])
    dy, dg_f, db_f = layer_norm_backward(df, xs[-1], params["ln_f"]["g"])
    block_grads = []
    for blk, x, kept in reversed(list(zip(params["blocks"], xs, seen))):
        dy, g = block_backward(dy, x, blk, n_head, kept)    # now d loss / d (the block's input)
        block_grads.insert(0, g)
    dwte, dwpe = embed_backward(dy, ids, params["wte"], params["wpe"])
    grads = {"wte": dwte + dw_u.T if tied else dwte, "wpe": dwpe, "blocks": block_grads,
             "ln_f": {"g": dg_f, "b": db_f}}
    if not tied:
        grads["w_u"] = dw_u
    return grads


def check_batch(ids, targets, params):
    """ids and targets as arrays of the same shape, every text checked as forward checks it."""
    ids, targets = np.asarray(ids), np.asarray(targets)
    if ids.shape != targets.shape or ids.ndim not in (1, 2):
        raise ValueError(f"ids {ids.shape} and targets {targets.shape} need the same shape: "
                         "[n] for one text or [B, n] for a batch.")
    n_ctx, n_vocab = len(params["wpe"]), len(params["wte"])
    if (ids.dtype.kind not in "iu" or ids.size == 0 or ids.shape[-1] > n_ctx
            or ids.min() < 0 or ids.max() >= n_vocab):                 # then find the sentence:
        for row in ids.reshape(-1, ids.shape[-1]) if ids.size else [[]]:
            check_ids(row, n_ctx, n_vocab)                             # as forward checks a text
    if (targets.dtype.kind not in "iu" or not ((targets >= -1) & (targets < n_vocab)).all()
            or (targets < 0).all()):
        raise ValueError("Targets must be token ids (or -1 for a position not graded), "
                         "with at least one graded.")
    return ids, targets


def loss_and_grads(ids, targets, params=PARAMS, n_head=N_HEAD):
    """Section 4's loss (the mean of -ln p(target)) and its gradient with respect to every
    weight, in params' layout. ids and targets: [n] for one text, or [B, n] for a batch
    (a target of -1 is not graded)."""
    ids, targets = check_batch(ids, targets, params)
    seen = []
    xs = block_inputs(ids, params, n_head, seen)
    logits = logits_of(xs[-1], params)                      # [..., n, V]
    dlogits = softmax_cross_entropy_backward(logits, targets)
    return graded_loss(logits, targets), backward(dlogits, ids, params, n_head, xs, seen)


# Weights are a nested dict; these helpers walk it, so that the optimisers stay short.

def tree_map(fn, *trees):
    """Apply fn leaf by leaf to trees of the same layout; returns a new tree."""
    if isinstance(trees[0], dict):
        return {key: tree_map(fn, *(t[key] for t in trees)) for key in trees[0]}
    if isinstance(trees[0], list):
        return [tree_map(fn, *leaves) for leaves in zip(*trees)]
    return fn(*trees)


def weight_names(tree, prefix=""):
    """Every weight's name as a dotted path: "wte", "blocks.0.attn.c_attn.w", ..."""
    if isinstance(tree, dict):
        return [n for key, sub in tree.items() for n in weight_names(sub, f"{prefix}{key}.")]
    if isinstance(tree, list):
        return [n for i, sub in enumerate(tree) for n in weight_names(sub, f"{prefix}{i}.")]
    return [prefix[:-1]]


def get_weight(tree, name):
    """The array at a dotted path, such as "blocks.0.mlp.c_fc.w"."""
    root = tree
    try:
        for key in name.split("."):
            tree = tree[int(key)] if isinstance(tree, list) else tree[key]
    except (KeyError, IndexError, ValueError, TypeError):
        tree = None
    if not isinstance(tree, np.ndarray):
        raise ValueError(f"No weight is named {name!r}; the names are: "
                         f"{', '.join(weight_names(root))}.")
    return tree


def replace_weight(tree, name, value):
    """A new tree with the array at `name` replaced; the old tree is left as it was."""
    key, _, rest = name.partition(".")
    if isinstance(tree, list):
        new = list(tree)
        new[int(key)] = replace_weight(tree[int(key)], rest, value) if rest else value
        return new
    return {**tree, key: replace_weight(tree[key], rest, value) if rest else value}


def finite_difference(ids, targets, name, index, params=PARAMS, n_head=N_HEAD, eps=1e-5):
    """d loss / d (one weight), measured rather than derived: nudge the weight by +eps and
    by -eps, and divide the change of the loss by 2 eps. A check on loss_and_grads."""
    ids, targets = check_batch(ids, targets, params)
    w = np.asarray(get_weight(params, name), dtype=float)
    losses = []
    for step in (eps, -eps):
        nudged = w.copy()                                   # a copy: params stay as they are
        nudged[index] += step
        new = replace_weight(params, name, nudged)
        losses.append(graded_loss(logits_of(block_inputs(ids, new, n_head)[-1], new), targets))
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
    import pathlib
    path = pathlib.Path(__file__).with_name("data") / "corpus.txt" if path is None else path
    return read_corpus(pathlib.Path(path).read_text(encoding="utf-8"))


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
    return graded_loss(logits_of(block_inputs(ids, params, n_head)[-1], params), targets)


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


# --- 7. GPT-2 small: its tokenizer and its checkpoint (lab 09) ----------------------
# The functions above run GPT-2 small (12 blocks, 12 heads, d = 768, 50,257 tokens) as
# they are, once its weights sit in the PARAMS layout and its text is cut into its own
# tokens. Both come as four files, the way Hugging Face publishes openai-community/gpt2:
#   config.json        the sizes: n_layer, n_head, n_embd, vocab_size, n_positions, ...
#   model.safetensors  every weight by name: wte.weight, h.0.attn.c_attn.weight, ...
#   vocab.json         token text -> id
#   merges.txt         the tokenizer's merges, in the order they were learned
# safetensors and huggingface_hub are imported inside the functions that use them.

GPT2_FILES = ["config.json", "model.safetensors", "vocab.json", "merges.txt"]
GPT2_REPO = "openai-community/gpt2"
ENDOFTEXT = "<|endoftext|>"

# The tokenizer is a byte-level BPE. Text becomes UTF-8 bytes, each byte is written as one
# printable character (a space is "Ġ"), and the characters are glued into tokens by
# replaying the merges in the order they were learned. Notebook 1's "longest token that
# fits" is the same idea with a rule instead of a list.


def bytes_to_unicode():
    """GPT-2's byte -> character table. The 188 bytes that print as themselves (! to ~,
    ¡ to ¬, ® to ÿ) keep their character; the other 68 (space, newline, control bytes ...)
    take chr(256), chr(257), ... in order: the space (byte 32) becomes "Ġ" = chr(288)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    table, moved = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + moved)
            moved += 1
    return table


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}

# GPT-2 cuts text into words before BPE with this pattern: an apostrophe ending ('s 't 're
# 've 'm 'll 'd), else letters, digits or other symbols each with at most one space in
# front, else a run of spaces (leaving the last space to the word that follows). GPT-2
# writes "letter" and "number" as \p{L} and \p{N}, which Python's re lacks; so the pattern
# runs on a stand-in of the text, the same length, where every non-ASCII character is
# replaced by an ASCII one of its kind (see _stand_in), and the words are cut from the text
# at the places it matched.
_WORDS = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+"
                    r"|\s+(?!\S)|\s+", re.ASCII)


def _stand_in(c):
    """An ASCII character of the same kind as c: a letter "a", a number "0", other "!", and
    a space "\\t" (a space, but not the plain " " the pattern allows in front of a word)."""
    if c.isascii():
        return c
    return "a" if c.isalpha() else "0" if c.isnumeric() else "\t" if c.isspace() else "!"


def pre_split(text):
    """Text -> the words BPE works on, spaces kept in front:
    "the cat's 2 hats" -> ["the", " cat", "'s", " 2", " hats"]."""
    shadow = "".join(_stand_in(c) for c in text)
    return [text[m.start():m.end()] for m in _WORDS.finditer(shadow)]


def bpe(word, ranks, steps=None):
    """One word, written in the byte characters, -> its tokens. Start from single characters;
    merge the neighbouring pair learned first (the lowest rank in merges.txt); repeat until
    no neighbouring pair is in the list. steps: a list that receives every stage."""
    parts = list(word)
    while len(parts) > 1:
        rank, i = min((ranks.get(pair, float("inf")), i)
                      for i, pair in enumerate(zip(parts, parts[1:])))
        if rank == float("inf"):
            break
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
        if steps is not None:
            steps.append(list(parts))
    return parts


def bpe_tokenizer(vocab, merges):
    """encode(text) -> ids and decode(ids) -> text for a byte-level BPE.
    vocab: token (in byte characters) -> id; merges: the pairs in the order learned."""
    ranks = {tuple(pair): rank for rank, pair in enumerate(merges)}
    tokens = {i: t for t, i in vocab.items()}

    def encode(text):
        if not isinstance(text, str):
            raise ValueError(f"encode needs a string of text, not {type(text).__name__}.")
        ids = []
        for piece in re.split(f"({re.escape(ENDOFTEXT)})", text):
            if piece == ENDOFTEXT and piece in vocab:
                ids.append(vocab[piece])                # the special token, kept whole
                continue
            for word in pre_split(piece):
                chars = "".join(BYTE_TO_CHAR[b] for b in word.encode("utf-8"))
                parts = bpe(chars, ranks)
                unknown = [show(as_text(t)) for t in parts if t not in vocab]
                if unknown:
                    raise ValueError(
                        f"This vocabulary cannot cover {show(word)!r}: its merges leave "
                        f"{' '.join(show(as_text(t)) for t in parts)}, and {unknown[0]!r} "
                        f"is not one of its {len(vocab)} tokens.")
                ids += [vocab[t] for t in parts]
        return ids

    def decode(ids):
        ids = [int(i) for i in ids]
        bad = [i for i in ids if i not in tokens]
        if bad:
            raise ValueError(f"Token id {bad[0]} does not exist: "
                             f"ids run from 0 to {len(vocab) - 1}.")
        return as_text("".join(tokens[i] for i in ids))

    return encode, decode


def as_text(chars):
    """Byte characters -> text: back to bytes, read as UTF-8 (a character cut in the middle
    of its bytes shows as �)."""
    return bytes(CHAR_TO_BYTE[c] for c in chars).decode("utf-8", errors="replace")


def read_bpe(folder):
    """vocab.json and merges.txt -> (vocab, merges)."""
    folder = Path(folder)
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    lines = (folder / "merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    return vocab, merges


def save_bpe(folder, vocab, merges):
    """Write vocab.json and merges.txt in GPT-2's format."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")


def toy_bpe(vocab=VOCAB):
    """The toy's tokens as a byte-level BPE: vocab.json with the ids of VOCAB, and for each
    token in turn the merges that glue its characters, appended after those before it.
    It cuts the toy's texts as encode does: " climbed" -> " climb" + "ed"."""
    table = {"".join(BYTE_TO_CHAR[b] for b in token.encode("utf-8")): i
             for i, token in enumerate(vocab)}
    merges = []
    for token in table:
        if token == ENDOFTEXT:
            continue
        while len(parts := bpe(token, {pair: r for r, pair in enumerate(merges)})) > 1:
            merges.append((parts[0], parts[1]))
    return table, merges


# The checkpoint. Hugging Face's names, and how they map onto PARAMS:
#   [transformer.]wte.weight, wpe.weight            wte [V, d], wpe [n_ctx, d]
#   [transformer.]h.{i}.ln_1.weight / .bias         blocks[i]["ln_1"]["g"] / ["b"]
#   [transformer.]h.{i}.attn.c_attn.weight / .bias  blocks[i]["attn"]["c_attn"]["w"] / ["b"]
#   ... attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj the same way, then ln_f
#   lm_head.weight [V, d]                           w_u = its transpose; absent: tied, wte^T
# GPT-2's linear layers ("Conv1D") store w as [d_in, d_out], as the course does, so no
# weight is transposed. The buffers attn.bias and attn.masked_bias (a stored causal mask)
# are not weights and are skipped.

def _layers(n_layer):
    """(name in the checkpoint, path in PARAMS) for every weight but wte, wpe and lm_head."""
    pairs = [(f"h.{i}.{part}.{kind}", ("blocks", i, *part.split("."), key))
             for i in range(n_layer)
             for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj")
             for kind, key in (("weight", "g" if part.startswith("ln") else "w"), ("bias", "b"))]
    return pairs + [("ln_f.weight", ("ln_f", "g")), ("ln_f.bias", ("ln_f", "b"))]


def load_gpt2(folder):
    """Read a GPT-2 checkpoint folder (the four files of GPT2_FILES) into the course's layout.

    Returns a dict: params (PARAMS' layout, float32; w_u is wte^T itself when the checkpoint
    has no lm_head), n_head, encode, decode, config, tied, eot (the id of <|endoftext|>),
    vocab and merges. Then forward(ids, lab["params"], lab["n_head"]) runs the model."""
    from safetensors.numpy import load_file
    folder = Path(folder)
    missing = [name for name in GPT2_FILES if not (folder / name).is_file()]
    if missing:
        raise ValueError(f"The folder {folder.name!r} lacks {', '.join(missing)}: a GPT-2 "
                         f"checkpoint is the four files {', '.join(GPT2_FILES)}.")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError("This checkpoint's MLP uses another activation than GELU's tanh form.")
    if config.get("layer_norm_epsilon", 1e-5) != 1e-5:
        raise ValueError("This checkpoint's LayerNorm uses another epsilon than GPT-2's 1e-5.")
    stored = {name.removeprefix("transformer."): w
              for name, w in load_file(folder / "model.safetensors").items()}

    def weight(name):
        if name not in stored:
            raise ValueError(f"model.safetensors has no weight {name!r}: not a GPT-2 checkpoint.")
        return np.asarray(stored[name], dtype=np.float32)     # no copy if already float32

    blocks = [{"ln_1": {}, "attn": {"c_attn": {}, "c_proj": {}}, "ln_2": {},
               "mlp": {"c_fc": {}, "c_proj": {}}} for _ in range(config["n_layer"])]
    params = {"wte": weight("wte.weight"), "wpe": weight("wpe.weight"), "blocks": blocks,
              "ln_f": {}}
    for name, path in _layers(config["n_layer"]):
        *where, key = path
        node = params
        for step in where:
            node = node[step]
        node[key] = weight(name)
    tied = config.get("tie_word_embeddings", True) or "lm_head.weight" not in stored
    params["w_u"] = (params["wte"] if tied else weight("lm_head.weight")).T    # [d, V], a view
    vocab, merges = read_bpe(folder)
    if len(vocab) > len(params["wte"]):
        raise ValueError(f"vocab.json has {len(vocab)} tokens, "
                         f"but wte has only {len(params['wte'])} rows.")
    encode, decode = bpe_tokenizer(vocab, merges)
    return {"params": params, "n_head": config["n_head"], "encode": encode, "decode": decode,
            "config": config, "tied": tied, "eot": vocab.get(ENDOFTEXT), "vocab": vocab,
            "merges": merges}


def save_gpt2(folder, params=PARAMS, n_head=N_HEAD):
    """Write params as a GPT-2 checkpoint: config.json and model.safetensors, with Hugging
    Face's names, so GPT-2 tools open it (transformers' GPT2LMHeadModel.from_pretrained).
    An untied w_u is stored as lm_head.weight. Returns the folder."""
    from safetensors.numpy import save_file
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab_size, d = np.shape(params["wte"])
    tied = "w_u" not in params or np.array_equal(params["w_u"], np.transpose(params["wte"]))
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": vocab_size, "n_positions": len(params["wpe"]), "n_embd": d,
        "n_layer": len(params["blocks"]), "n_head": n_head,
        "n_inner": np.shape(params["blocks"][0]["mlp"]["c_fc"]["w"])[1],   # the MLP's width
        "activation_function": "gelu_new",            # GELU's tanh form
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": bool(tied),
        "bos_token_id": vocab_size - 1, "eos_token_id": vocab_size - 1,   # <|endoftext|>: last id
    }
    tensors = {"wte.weight": params["wte"], "wpe.weight": params["wpe"]}
    for name, path in _layers(len(params["blocks"])):
        node = params
        for step in path:
            node = node[step]
        tensors[name] = node
    tensors = {f"transformer.{name}": w for name, w in tensors.items()}
    if not tied:
        tensors["lm_head.weight"] = np.transpose(params["w_u"])              # [V, d]
    save_file({name: np.ascontiguousarray(w, dtype=np.float32) for name, w in tensors.items()},
              folder / "model.safetensors", metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return folder


def save_toy_as_gpt2(folder):
    """The toy as a GPT-2 folder: its weights (save_gpt2) and its tokens as a BPE (toy_bpe)."""
    save_gpt2(folder)
    save_bpe(folder, *toy_bpe())
    return Path(folder)


def find_gpt2(variable="GPT2_DIR"):
    """(folder, sentence): the folder named by the environment variable GPT2_DIR when it
    holds GPT-2's four files, else None; the sentence says what was found."""
    name = os.environ.get(variable, "")
    if not name:
        return None, (f"No GPT-2 weights here ({variable} is not set): this run uses the toy, "
                      "saved in GPT-2's format.")
    missing = [f for f in GPT2_FILES if not (Path(name) / f).is_file()]
    if missing:
        return None, (f"{variable} names a folder without {', '.join(missing)}: this run uses "
                      "the toy, saved in GPT-2's format.")
    return Path(name), f"GPT-2 weights found in {variable}: this run uses GPT-2 small."


def download_gpt2(folder="gpt2", repo=GPT2_REPO):
    """Fetch GPT-2 small's four files (about 550 MB) from the Hugging Face Hub into folder.
    Needs internet; returns the folder, or None after one sentence saying what to do."""
    folder = Path(folder)
    try:
        from huggingface_hub import hf_hub_download
        for name in GPT2_FILES:
            hf_hub_download(repo, name, local_dir=folder)
    except Exception as err:      # no package, no network, the Hub unreachable
        print(f"Could not download {repo} ({type(err).__name__}): without internet, copy its "
              f"{', '.join(GPT2_FILES)} from a machine that has them into {folder} by hand, "
              f"then set GPT2_DIR to that folder.")
        return None
    return folder


def count_params(params):
    """How many numbers the weights hold (w_u only when it is not wte^T itself)."""
    if isinstance(params, dict):
        w_u = params.get("w_u")
        shared = w_u is not None and "wte" in params and np.shares_memory(w_u, params["wte"])
        return sum(count_params(v) for k, v in params.items() if not (k == "w_u" and shared))
    if isinstance(params, list):
        return sum(count_params(v) for v in params)
    return int(np.size(params))


def token_texts(lab, ids):
    """Each id's token as the course prints it: "␣" for a space, and an escape such as
    "\\n" for a character that does not print."""
    def printable(c):
        return c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
    return ["".join(map(printable, show(lab["decode"]([i])))) for i in ids]


# Generation with a KV cache. With the causal mask, a new token changes nothing computed
# for the positions before it (notebook 7). So keep every block's keys and values, and run
# only the new positions: each step of generation then reads each weight once for one
# row, instead of once for the whole context.

def attend_new(q, k, v, n_head):
    """Causal attention of the m newest positions (q: [m, d]) over all n positions (k, v:
    [n, d]), every head at once: the numbers attention() gives head by head."""
    m, n = len(q), len(k)
    qh, kh, vh = (t.reshape(len(t), n_head, -1).transpose(1, 0, 2) for t in (q, k, v))
    scores = qh @ kh.transpose(0, 2, 1) / qh.shape[-1] ** 0.5      # [n_head, m, n]
    visible = np.tri(m, n, n - m, dtype=bool)       # new row i sees positions up to n - m + i
    weights = softmax(np.where(visible, scores, -np.inf))
    return (weights @ vh).transpose(1, 0, 2).reshape(m, -1)       # heads side by side: [m, d]


def forward_cached(ids, cache, params=PARAMS, n_head=N_HEAD):
    """The logits [m, V] of the tokens ids that follow those already in cache: the last m
    rows of forward() on the whole text, computed for the new positions only. cache is a
    list (empty at the start) that keeps each block's keys and values; it grows in place."""
    start = len(cache[0]["k"]) if cache else 0
    ids = check_ids(ids, len(params["wpe"]) - start, len(params["wte"]))
    x = params["wte"][ids] + params["wpe"][start:start + len(ids)]      # [m, d]
    if not cache:
        cache.extend({"k": x[:0], "v": x[:0]} for _ in params["blocks"])
    for blk, kv in zip(params["blocks"], cache):
        a = layer_norm(x, **blk["ln_1"])
        q, k, v = np.split(linear(a, **blk["attn"]["c_attn"]), 3, axis=-1)     # 3 x [m, d]
        kv["k"] = np.concatenate([kv["k"], k])      # [start + m, d]
        kv["v"] = np.concatenate([kv["v"], v])
        x = x + linear(attend_new(q, kv["k"], kv["v"], n_head), **blk["attn"]["c_proj"])
        x = x + mlp(layer_norm(x, **blk["ln_2"]), **blk["mlp"])
    return unembed(layer_norm(x, **params["ln_f"]), params)          # [m, V]


def generate_fast(ids, params=PARAMS, n_head=N_HEAD, max_new=20, temperature=0.0, top_k=None,
                  top_p=None, seed=0, eot=None, cache=True):
    """Notebook 7's loop with a KV cache: the prompt runs once, then each step runs only the
    token just chosen. Same settings as generate(); stops at eot, a full context or max_new.
    Returns the new ids. cache=False reruns the whole context every step, as generate() does."""
    ids = check_ids(ids, len(params["wpe"]), len(params["wte"]))
    next_token_probs(np.zeros(1), temperature, top_k, top_p)      # check the settings first
    rng = np.random.default_rng(seed)
    kv, new = [], []
    while len(new) < max_new and len(ids) + len(new) < len(params["wpe"]):
        if cache:
            logits = forward_cached(new[-1:] or ids, kv, params, n_head)   # new rows only
        else:
            logits = forward(ids + new, params, n_head)                    # the whole context
        p = next_token_probs(logits[-1], temperature, top_k, top_p)
        nxt = int(np.argmax(p)) if temperature == 0 else sample(p, rng)
        new.append(nxt)
        if nxt == eot:
            break
    return new


# --- The notebooks' plots and widgets --------------------------------------------
# They live in toy_widgets.py (matplotlib, ipywidgets), so that the model above imports
# with numpy alone. A notebook still writes `tm.logit_playground()`: the first name this
# module lacks loads toy_widgets and is looked up there.

def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    import toy_widgets
    try:
        return getattr(toy_widgets, name)
    except AttributeError:
        raise AttributeError(f"module 'toy_model' has no attribute {name!r}") from None
