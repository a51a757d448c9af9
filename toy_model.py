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
import re

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

# Attention. c_attn.w = [W_Q | W_K | W_V], each 4 x 4; columns 0-1 are head 1, 2-3 head 2.
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

# MLP: 8 hidden units, each asking one question of the normalised vector:
# units 0-3 "is d_k on?" (+x_k), units 4-7 "is d_k off?" (-x_k), before the GELU.
_c_fc = np.hstack([np.eye(4), -np.eye(4)])       # [4, 8]
# Its output layer: the only fitted numbers (see tools/fit_toy.py). Rows are units;
# units 0, 2 and 7 write nothing.
FITTED_UNITS = [1, 3, 4, 5, 6]
_c_proj = np.zeros((8, 4))
_c_proj[FITTED_UNITS] = [
    [-1.1689, 0.3228, -0.9204, 1.1962],    # unit 1: d2 on
    [-0.2592, 0.3757, -0.1093, -0.4820],   # unit 3: d4 on
    [0.5195, -0.5317, 0.0725, -0.4552],    # unit 4: d1 off
    [0.2307, 0.0297, -0.0753, 0.0732],     # unit 5: d2 off
    [0.0565, -0.6475, 0.3071, -0.5586],    # unit 6: d3 off
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
    return 0.5 * x * (1 + np.tanh((2 / np.pi) ** 0.5 * (x + 0.044715 * x ** 3)))


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
    return wte[ids] + wpe[:len(ids)]                # [n] -> [n, d]


def causal_mask(n):
    """True where row i may look at column j: itself and earlier positions only."""
    return np.tril(np.ones((n, n), dtype=bool))     # [n, n]


def attention(q, k, v, mask=True, trace=None):
    """One head: scores = q k^T / sqrt(d_head), softmax by row, weighted sum of v."""
    scores = q @ k.T / q.shape[-1] ** 0.5           # [n, n]
    if mask:
        scores = np.where(causal_mask(len(q)), scores, -np.inf)
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
    concat = np.hstack([attention(*qkv, mask=mask, trace=t)
                        for qkv, t in zip(zip(qs, ks, vs, strict=True), heads, strict=True)])
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


# --- 7. GPT-2 small: its tokenizer and its checkpoint (lab 09) ----------------------


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
