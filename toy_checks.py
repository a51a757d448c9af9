"""The course's checks of what comes in: one sentence for every wrong input.

A learner will pass anything to the model's functions: text where ids belong, a list
where an array belongs, NaN, a shape off by one, weights from another model. Each check
below either returns the input in the form the model computes with, or raises
ValueError with one sentence saying what was wrong and what is allowed. toy_model,
toy_train and toy_gpt2 all use them, so the same mistake gets the same sentence
everywhere. The model's weights are read-only (Frozen), for the same reason.
"""
import numpy as np

VOCAB_SIZE = 12          # the toy's; every check takes the size of the model at hand


# A learner will pass anything. Each check below either returns the input in the form
# the model computes with, or raises ValueError with one sentence: what was wrong, and
# what is allowed.

def _short(text, limit=24):
    """A piece of the learner's text for a message: ␣ for spaces, cut if long."""
    text = str(text).replace(" ", "␣")
    return text if len(text) <= limit else text[:limit] + "…"


def _is_number(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _count(n, what, low=1):
    """A whole number of at least `low` (an int, not 2.5, True or "3")."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < low:
        raise ValueError(f"{what} must be a whole number, {low} or more, not {n!r}.")
    return int(n)


def _as_floats(x, who):
    """x as an array of real numbers (lists welcome; float32 stays float32)."""
    try:
        arr = np.asarray(x)
    except ValueError:                              # ragged: rows of different lengths
        raise ValueError(f"{who} takes an array of numbers with rows of equal length.") from None
    if arr.dtype.kind in "biu":
        return arr.astype(float)
    if arr.dtype.kind != "f":
        raise ValueError(f"{who} takes an array of real numbers, not {_kind(x)}.")
    return arr


def _kind(x):
    arr = np.asarray(x, dtype=object) if not isinstance(x, np.ndarray) else x
    return f"{type(x).__name__} of {arr.dtype}" if isinstance(x, np.ndarray) else type(x).__name__


def _as_logits(z, who):
    """Logits a softmax can take: real numbers, at least one per row, no NaN, no +infinity,
    and not a whole row of -infinity."""
    z = _as_floats(z, who)
    if z.size == 0 or z.ndim == 0:
        raise ValueError(f"{who} takes at least one logit (one number per token), not {z.shape}.")
    if not np.all(np.isfinite(z) | (z == -np.inf)):
        raise ValueError("Logits must be finite numbers (NaN or +infinity found); "
                         "any real number is allowed, even ±1000.")
    if np.any(np.all(z == -np.inf, axis=-1)):
        raise ValueError("Every logit of a row is -infinity: at least one token per row must "
                         "have a finite logit (is a mask hiding every position?).")
    return z


def as_ids(ids, who, vocab_size=VOCAB_SIZE):
    """ids as a list of Python ints, or one sentence saying what `who` needs instead."""
    if isinstance(ids, str):
        raise ValueError(f"{who} takes token ids, not text: turn text into ids with encode() first.")
    if ids is None or isinstance(ids, (dict, set)) or np.ndim(ids) == 0 and not hasattr(ids, "__len__"):
        raise ValueError(f"{who} takes a list of token ids, not {type(ids).__name__}.")
    try:
        arr = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids)
    except (ValueError, TypeError):
        arr = np.asarray([None])
    if arr.ndim != 1 and arr.size > 0:
        raise ValueError(f"{who} takes one list of token ids, not an array of shape {arr.shape}.")
    if arr.size and arr.dtype.kind not in "iu":
        bad = next((i for i in arr.tolist() if isinstance(i, bool) or not isinstance(i, int)), arr[0])
        raise ValueError(f"{who} takes token ids, which are whole numbers from 0 to "
                         f"{vocab_size - 1}; got {_short(str(bad))!r} among them.")
    ids = [int(i) for i in arr]
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise ValueError(f"Token id {bad[0]} does not exist: ids run from 0 to {vocab_size - 1}.")
    return ids


def check_ids(ids, n_ctx=8, vocab_size=VOCAB_SIZE):
    """ids the model can run: at least one, at most n_ctx, each an id of the vocabulary.
    One text gives a list; a batch [B, n] (texts of one length) an array."""
    if isinstance(ids, np.ndarray) and ids.ndim == 2 and ids.dtype.kind in "iu":
        for row in ids if ids.size else [[]]:
            check_ids(row, n_ctx, vocab_size)
        return ids
    ids = as_ids(ids, "The model", vocab_size)
    if not ids:
        raise ValueError("No tokens: the model needs at least one token to predict the next.")
    if len(ids) > n_ctx:
        raise ValueError(f"The prompt has {len(ids)} tokens but the context holds at most {n_ctx}: "
                         f"shorten it to {n_ctx} tokens or fewer.")
    return ids


def check_targets(targets, shape, vocab_size):
    """Targets for rows of logits of `shape` [..., n]: token ids, or -1 for a position that
    is not graded, with at least one graded."""
    try:
        targets = np.asarray(targets)
    except ValueError:
        targets = np.asarray([None])
    if targets.shape != tuple(shape):
        raise ValueError(f"cross_entropy needs one target per row of logits: {shape} rows, "
                         f"targets of shape {targets.shape}.")
    if targets.dtype.kind not in "iu" or not ((targets >= -1) & (targets < vocab_size)).all():
        raise ValueError(f"Targets are token ids: ids run from 0 to {vocab_size - 1} "
                         "(or -1 for a position that is not graded).")
    if (targets < 0).all():
        raise ValueError("Every target is -1: at least one graded target is needed.")
    return targets


def check_n_head(n_head, d):
    if isinstance(n_head, bool) or not isinstance(n_head, (int, np.integer)) or not 0 < n_head <= d \
            or d % n_head:
        raise ValueError(f"n_head must be a whole number that divides d = {d} (each head gets "
                         f"d / n_head dimensions), not {n_head!r}.")
    return int(n_head)


def _at(tree, name):
    """The leaf at a dotted path, or None when the tree has no such leaf."""
    for key in name.split("."):
        if isinstance(tree, dict) and key in tree:
            tree = tree[key]
        elif isinstance(tree, list) and key.isdigit() and int(key) < len(tree):
            tree = tree[int(key)]
        else:
            return None
    return tree


BLOCK_SHAPES = {"ln_1.g": "d", "ln_1.b": "d", "attn.c_attn.w": "d 3d", "attn.c_attn.b": "3d",
                "attn.c_proj.w": "d d", "attn.c_proj.b": "d", "ln_2.g": "d", "ln_2.b": "d",
                "mlp.c_fc.w": "d m", "mlp.c_fc.b": "m", "mlp.c_proj.w": "m d", "mlp.c_proj.b": "d"}


def check_params(params, n_head, tied=False):
    """The weights' tree is GPT-2's layout with consistent shapes; returns n_head as an int."""
    if not isinstance(params, dict) or not {"wte", "wpe", "blocks", "ln_f"} <= params.keys():
        raise ValueError("params must be the weights' dict, with wte, wpe, blocks and ln_f "
                         "(as tm.PARAMS or tm.copy_params()).")
    blocks = params["blocks"]
    if not isinstance(blocks, list) or not blocks:
        raise ValueError("params['blocks'] must be a list of at least one block.")
    V, d = np.shape(params["wte"]) if np.ndim(params["wte"]) == 2 else (0, 0)
    sizes = {"d": d, "3d": 3 * d, "V": V, "n": len(params["wpe"]),
             "m": (np.shape(_at(blocks[0], "mlp.c_fc.w")) or (0,))[-1]}
    want = {"wte": "V d", "wpe": "n d", "ln_f.g": "d", "ln_f.b": "d",
            **({"w_u": "d V"} if "w_u" in params and not tied else {}),
            **{f"blocks.{i}.{name}": dims for i in range(len(blocks))
               for name, dims in BLOCK_SHAPES.items()}}
    for name, dims in want.items():
        w, shape = _at(params, name), tuple(sizes[s] for s in dims.split())
        if w is None:
            raise ValueError(f"params has no weight {name!r}: it must have GPT-2's layout "
                             "(as tm.PARAMS or tm.copy_params()).")
        if np.shape(w) != shape or d == 0 or np.asarray(w).dtype.kind != "f":
            raise ValueError(f"The weight {name!r} has shape {np.shape(w)}, but the others need "
                             f"{shape} (d = {d}, V = {V}), in floats.")
    return check_n_head(n_head, d)


def check_sampling(temperature=1.0, top_k=None, top_p=None):
    """The settings of next_token_probs, or one sentence saying which is wrong and what is allowed."""
    if not _is_number(temperature) or not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"Temperature must be 0 (greedy) or a positive number, not {temperature!r}.")
    if top_k is not None and not (_is_number(top_k) and float(top_k).is_integer() and top_k >= 1):
        raise ValueError(f"top-k must be a whole number of at least 1, not {top_k!r}.")
    if top_p is not None and not (_is_number(top_p) and 0 < top_p <= 1):
        raise ValueError(f"top-p must be above 0 and at most 1, not {top_p!r}.")


def check_seed(seed):
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 0 <= seed < 2**63):
        raise ValueError(f"The seed must be a whole number from 0 to 2**63 - 1, not {seed!r}.")
    return int(seed)


def check_distribution(p, who):
    """One probability distribution: non-negative numbers that add up to 1 (float32's
    rounding allowed)."""
    try:
        p = np.asarray(p, dtype=float)
    except (ValueError, TypeError):
        p = np.asarray([np.nan])
    if p.ndim != 1 or p.size == 0 or np.any(~(p >= 0)) or not np.isclose(p.sum(), 1, atol=1e-5):
        raise ValueError(f"{who} takes one probability distribution: non-negative numbers "
                         "that add up to 1.")
    return p


class Frozen(np.ndarray):
    """A weight of the model: read-only, so that every cell of every notebook sees the same
    model. Anything computed from it is an ordinary array."""

    def __setitem__(self, key, value):
        if not self.flags.writeable:
            raise ValueError(READ_ONLY)
        super().__setitem__(key, value)

    def __getitem__(self, key):
        part = super().__getitem__(key)
        return part.view(np.ndarray) if isinstance(part, np.ndarray) else part

    def __array_wrap__(self, array, context=None, return_scalar=False):
        array = array.view(np.ndarray)
        return array[()] if return_scalar else array

    def __repr__(self):
        return repr(self.view(np.ndarray))


READ_ONLY = ("The model's weights are read-only, so that every notebook sees the same model: "
             "experiment on a copy, params = tm.copy_params() (or E = tm.PARAMS['wte'].copy()).")


def frozen(leaf):
    arr = np.array(leaf, dtype=float).view(Frozen)
    arr.flags.writeable = False
    return arr
