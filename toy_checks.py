"""The course's checks of what comes in: one sentence for every wrong input.

A learner will pass anything to the model's functions: text where ids belong, a list
where an array belongs, NaN, a shape off by one, weights from another model. Each check
below either returns the input in the form the model computes with, or raises
ValueError with one sentence saying what was wrong and what is allowed. toy_model,
toy_train and toy_gpt2 all use them, so the same mistake gets the same sentence
everywhere. The model's weights are read-only (frozen), for the same reason.
"""
import copy
import functools
import inspect
import os
import sys
import weakref
from pathlib import Path

import numpy as np

VOCAB_SIZE = 12          # the toy's; every check takes the size of the model at hand


# A learner will pass anything. Each check below either returns the input in the form
# the model computes with, or raises ValueError with one sentence: what was wrong, and
# what is allowed.

def short_text(text, limit=24):
    """A piece of the learner's text for a message: ␣ for spaces, cut if long."""
    text = str(text).replace(" ", "␣")
    return text if len(text) <= limit else text[:limit] + "…"


def is_number(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def shown_value(x):
    """A learner's value in a message: short, on one line."""
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    text = repr(x)
    return text if len(text) <= 40 and "\n" not in text else f"a {type(x).__name__}"


def as_count(n, what, low=1, high=None):
    """A whole number of at least `low` (an int, not 2.5, True or "3"), at most `high`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < low \
            or high is not None and n > high:
        upto = f" to {high}" if high is not None else " or more"
        raise ValueError(f"{what} must be a whole number, {low}{upto}, not {shown_value(n)}.")
    return int(n)


def as_path(path, who, what="file"):
    """A file's or folder's path (text or a Path) that the file system can hold."""
    what = what if isinstance(what, str) else "file"
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ValueError(f"{who} takes a {what}'s path, such as 'gpt2', not {shown_value(path)}."
                         if what == "folder" else f"{who} takes a {what}'s path, not {shown_value(path)}.")
    try:
        os.fsencode(path)
    except UnicodeError:
        raise ValueError(f"{who}: the {what}'s name holds a character a path cannot hold.") from None
    return Path(path)


def as_flag(value, what):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{what} must be True or False, not {shown_value(value)}.")
    return bool(value)


def as_floats(x, who):
    """x as an array of real numbers (lists welcome; float32 stays float32, other floats
    become float64)."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError, OverflowError):  # ragged: rows of different lengths
        raise ValueError(f"{who} takes an array of numbers with rows of equal length.") from None
    if arr.dtype.kind in "biu" or arr.dtype.kind == "f" and arr.dtype not in _LARGEST:
        return arr.astype(float)
    if arr.dtype.kind != "f":
        raise ValueError(f"{who} takes an array of real numbers, not {_kind(x)}.")
    return arr


def _kind(x):
    return f"{type(x).__name__} of {x.dtype}" if isinstance(x, np.ndarray) else type(x).__name__


# The largest size a number may have as it goes into a piece of the model: small enough
# that no product, square or cube inside the forward pass can overflow to infinity.
_LARGEST = {np.dtype(np.float64): 1e30, np.dtype(np.float32): 1e6}


def as_numbers(x, who, min_dims=0, last=None):
    """x as an array of real numbers of ordinary size, with at least min_dims axes and, if
    given, `last` numbers in each row (its last axis); or one sentence. The model's own
    read-only weights were checked when frozen: only their shape is looked at."""
    trusted = is_frozen(x)
    arr = x if trusted else as_floats(x, who)
    if arr.ndim < min_dims or arr.size == 0:
        need = ("a number or an array of numbers", "a row of numbers",
                "rows of numbers (an array with 2 axes)")[min(min_dims, 2)]
        raise ValueError(f"{who} takes {need}, not {shown_value(x)}.")
    if last is not None and arr.shape[-1] != last:
        raise ValueError(f"{who} needs {last} numbers in each row, not an array of shape {arr.shape}.")
    largest = _LARGEST[arr.dtype]
    if not trusted and not (arr.max() <= largest and arr.min() >= -largest):   # False for NaN
        raise ValueError(f"{who} takes finite numbers of at most {largest:.0e} in size "
                         "(NaN, infinity or a larger number found).")
    return arr


def as_layer(layer, who, keys=("w", "b")):
    """A layer's dict of weights, such as {"w": ..., "b": ...}, or one sentence."""
    if not isinstance(layer, dict) or set(layer) != set(keys):
        raise ValueError(f"{who} takes a layer's weights, a dict with the keys "
                         f"{' and '.join(keys)} (as in tm.PARAMS), not {shown_value(layer)}.")
    return layer


def as_logits(z, who, axis=-1):
    """Logits a softmax can take: real numbers, at least one per row, no NaN, no +infinity,
    and not a whole row of -infinity."""
    z = as_floats(z, who)
    if z.size == 0 or z.ndim == 0:
        raise ValueError(f"{who} takes at least one logit (one number per token), not {z.shape}.")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not -z.ndim <= axis < z.ndim:
        raise ValueError(f"{who}'s axis must name one of the {z.ndim} axes of the logits "
                         f"(-1: along each row), not {shown_value(axis)}.")
    largest = 1e300 if z.dtype == np.float64 else 1e38
    if not np.all((np.abs(z) <= largest) | (z == -np.inf)):
        raise ValueError(f"Logits must be finite numbers (NaN, +infinity or a size beyond "
                         f"{largest:.0e} found); any real number is allowed, even ±1000.")
    if np.any(np.all(z == -np.inf, axis=axis)):
        raise ValueError("Every logit of a row is -infinity: at least one token per row must "
                         "have a finite logit (is a mask hiding every position?).")
    return z


def as_ids(ids, who, vocab_size=VOCAB_SIZE):
    """ids as a list of Python ints, or one sentence saying what `who` needs instead."""
    if isinstance(ids, str):
        raise ValueError(f"{who} takes token ids, not text: turn text into ids with encode() first.")
    if isinstance(ids, (dict, set, bytes)) or not hasattr(ids, "__iter__") \
            or isinstance(ids, np.ndarray) and ids.ndim == 0:
        raise ValueError(f"{who} takes a list of token ids, not {type(ids).__name__}.")
    items = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
    if isinstance(ids, np.ndarray) and ids.ndim > 1 and ids.size:
        raise ValueError(f"{who} takes one list of token ids, not an array of shape {ids.shape}.")
    if any(isinstance(i, (list, tuple, np.ndarray)) for i in items):
        raise ValueError(f"{who} takes one list of token ids, not a list of lists.")
    bad = [i for i in items if isinstance(i, bool) or not isinstance(i, (int, np.integer))]
    if bad:                                         # the first that is not a whole number
        raise ValueError(f"{who} takes token ids, which are whole numbers from 0 to "
                         f"{vocab_size - 1}; got {short_text(str(bad[0]))!r} among them.")
    ids = [int(i) for i in items]
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise ValueError(f"Token id {bad[0]} does not exist: ids run from 0 to {vocab_size - 1}.")
    return ids


def check_ids(ids, n_ctx=8, vocab_size=VOCAB_SIZE):
    """ids the model can run: at least one, at most n_ctx, each an id of the vocabulary.
    One text gives a list; a batch [B, n] (texts of one length) an array."""
    if isinstance(ids, np.ndarray) and ids.ndim == 2 and ids.dtype.kind in "iu":
        # Every row has the first row's length: checking it, and the first row with an id
        # out of range, says what checking each row in turn would say.
        bad = np.flatnonzero(((ids < 0) | (ids >= vocab_size)).any(axis=1))[:1]
        for row in ids[[0, *bad]] if ids.size else [[]]:
            check_ids(row, n_ctx, vocab_size)
        return ids
    ids = as_ids(ids, "The model", vocab_size)
    if not ids:
        raise ValueError("No tokens: the model needs at least one token to predict the next.")
    if len(ids) > n_ctx:
        raise ValueError(f"The prompt has {len(ids)} tokens but the context holds at most {n_ctx}: "
                         f"shorten it to {n_ctx} tokens or fewer.")
    return ids


CACHE_RULE = ("forward's cache is a list that forward fills: pass an empty list [] the first time, "
         "then the same list with the tokens that follow")


def check_cache(cache, params):
    """A KV cache as forward fills it (empty, or one dict of keys and values per block);
    returns how many positions it holds: its keys' length along the positions axis."""
    if not isinstance(cache, (list, type(None))):
        raise ValueError(f"{CACHE_RULE}, not {shown_value(cache)}.")
    if not cache:
        return 0
    blocks = params["blocks"]
    if len(cache) != len(blocks) or not all(
            isinstance(kv, dict) and {"k", "v"} <= kv.keys() and isinstance(kv["k"], np.ndarray)
            and kv["k"].ndim >= 2 and kv["k"].shape[-2] == cache[0]["k"].shape[-2] for kv in cache):
        raise ValueError(f"{CACHE_RULE}; this one does not fit these {len(blocks)} block(s).")
    return cache[0]["k"].shape[-2]                  # k: [n, d] for one text, [B, n, d] for a batch


def check_cache_batch(cache, ids):
    """The new ids continue the texts the cache holds: as many texts, one or a batch."""
    held, new = cache[0]["k"].shape[:-2], np.shape(ids)[:-1]
    if held != new:
        raise ValueError(f"The cache holds {held[0] if held else 1} text(s) but the new ids "
                         f"have {new[0] if new else 1}: continue the same texts, or start a new "
                         "cache, [].")


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
                         f"d / n_head dimensions), not {shown_value(n_head)}.")
    return int(n_head)


def weight_at(tree, name):
    """The leaf at a dotted path, or None when the tree has no such leaf."""
    for key in name.split("."):
        if isinstance(tree, dict) and key in tree:
            tree = tree[key]
        elif isinstance(tree, list) and key.isdigit() and str(int(key)) == key and int(key) < len(tree):
            tree = tree[int(key)]
        else:
            return None
    return tree


def _layout(tree):
    if isinstance(tree, dict):
        return "the keys " + ", ".join(map(str, tree)) if tree else "an empty dict"
    if isinstance(tree, list):
        return f"a list of {len(tree)}"
    return f"an array of shape {np.shape(tree)}" if isinstance(tree, np.ndarray) else type(tree).__name__


def mismatch_sentence(path, first, other):
    """The sentence for two trees of weights (weights and gradients, say) of different layouts."""
    where = ".".join(map(str, path)) or "the top"
    return (f"The trees of weights differ at {where}: one has {_layout(first)}, the other "
            f"{_layout(other)}; both need the same keys and the same number of blocks.")


# GPT-2's layout of the weights, written once: each weight's dotted path and its shape in
# named sizes, d (the width), m (the MLP's width), V (the vocabulary) and n (the context).
# Making, checking, loading and saving weights all read it from here.
BLOCK_SHAPES = {"ln_1.g": "d", "ln_1.b": "d", "attn.c_attn.w": "d 3d", "attn.c_attn.b": "3d",
                "attn.c_proj.w": "d d", "attn.c_proj.b": "d", "ln_2.g": "d", "ln_2.b": "d",
                "mlp.c_fc.w": "d m", "mlp.c_fc.b": "m", "mlp.c_proj.w": "m d", "mlp.c_proj.b": "d"}


MLP_PARTS = ("ln_2", "mlp")     # what an attention-only block lacks


def layout(n_layer, tied=True, mlp=True):
    """Every weight's dotted path -> its shape in named sizes ("V d"), in GPT-2's order;
    untied models add w_u, the output layer's own [d, V]; mlp=False: attention-only
    blocks, h = x + attn(LN1(x)) and nothing after it."""
    block = {name: dims for name, dims in BLOCK_SHAPES.items()
             if mlp or not name.startswith(MLP_PARTS)}
    return {"wte": "V d", "wpe": "n d",
            **{f"blocks.{i}.{name}": dims for i in range(n_layer) for name, dims in block.items()},
            "ln_f.g": "d", "ln_f.b": "d", **({} if tied else {"w_u": "d V"})}


def layout_shapes(n_layer, d, m, V, n, tied=True):
    """Every weight's dotted path -> its shape, for these sizes; m = 0: no MLP."""
    sizes = {"d": d, "3d": 3 * d, "m": m, "V": V, "n": n}
    return {name: tuple(sizes[s] for s in dims.split())
            for name, dims in layout(n_layer, tied, mlp=m > 0).items()}


def _shape(w):
    return w.shape if isinstance(w, np.ndarray) else ()


@functools.lru_cache(maxsize=64)
def _paths(n_layer, d, m, V, n, tied):
    """layout_shapes as (name, its keys from the root, shape): what check_params walks."""
    return tuple((name, tuple(int(k) if k.isdigit() else k for k in name.split(".")), shape)
                 for name, shape in layout_shapes(n_layer, d, m, V, n, tied).items())


def _leaf(tree, keys):
    """The leaf at these keys (dict keys and list indices), or None."""
    try:
        for key in keys:
            tree = tree[key]
    except (KeyError, IndexError, TypeError):
        return None
    return tree


def check_params(params, n_head):
    """The weights' tree is GPT-2's layout with consistent shapes, in float64 or float32;
    returns n_head as an int. A model without w_u is tied: its output layer is wte^T.
    Only shapes and dtypes are looked at, on every call: the values are looked at when a
    result is not finite (check_finite), so any dict of weights runs at the same speed."""
    if not isinstance(params, dict) or not {"wte", "wpe", "blocks", "ln_f"} <= params.keys():
        raise ValueError("params must be the weights' dict, with wte, wpe, blocks and ln_f "
                         "(as tm.PARAMS or tm.copy_params()).")
    blocks = params["blocks"]
    if not isinstance(blocks, list) or not blocks:
        raise ValueError("params['blocks'] must be a list of at least one block.")
    V, d = _shape(params["wte"]) if len(_shape(params["wte"])) == 2 else (0, 0)
    parts = [sorted(blk) if isinstance(blk, dict) else None for blk in blocks]
    if any(p != parts[0] for p in parts):
        raise ValueError(f"Every block needs the same parts; block 0 has {parts[0]}, another "
                         f"{next(p for p in parts if p != parts[0])}.")
    m = (_shape(weight_at(blocks[0], "mlp.c_fc.w")) or (0,))[-1] if "mlp" in blocks[0] else 0
    n = (_shape(params["wpe"]) or (0,))[0]
    for name, keys, shape in _paths(len(blocks), d, m, V, n, "w_u" not in params):
        w = _leaf(params, keys)
        if w is None or isinstance(w, (dict, list)):
            raise ValueError(f"params has no weight {name!r}: it must have GPT-2's layout "
                             "(as tm.PARAMS or tm.copy_params()).")
        if _shape(w) != shape or 0 in shape or w.dtype not in _LARGEST:
            raise ValueError(f"The weight {name!r} has shape {_shape(w)}, but the others need "
                             f"{shape} (d = {d}, V = {V}), in floats (float64 or float32).")
    return check_n_head(n_head, d)


def check_finite(result, params, who):
    """result (logits, a loss) as it is when every number in it is finite; otherwise one
    sentence naming the first weight that holds NaN, infinity or a number too large to
    compute with, or saying that the numbers grew too large on the way."""
    if np.isfinite(result).all():
        return result
    blocks = params["blocks"]                       # checked by check_params before
    for name in layout(len(blocks), tied="w_u" not in params, mlp="mlp" in blocks[0]):
        w = weight_at(params, name)
        largest = _LARGEST[w.dtype]
        if not (w.max() <= largest and w.min() >= -largest):      # False for NaN
            raise ValueError(f"{who}: the weight {name!r} holds NaN, infinity or a number larger "
                             f"than {largest:.0e}, so the result is not a number.")
    raise ValueError(f"{who}: the numbers grew past what {result.dtype} can hold on the way "
                     "(the weights are finite, but too large together): scale them down.")


def check_sampling(temperature=1.0, top_k=None, top_p=None):
    """The settings of next_token_probs, or one sentence saying which is wrong and what is allowed."""
    if not is_number(temperature) or not np.isfinite(temperature) or temperature < 0:
        raise ValueError("Temperature must be 0 (greedy) or a positive number, "
                         f"not {shown_value(temperature)}.")
    if top_k is not None and not (is_number(top_k) and float(top_k).is_integer() and top_k >= 1):
        raise ValueError(f"top-k must be a whole number of at least 1, not {shown_value(top_k)}.")
    if top_p is not None and not (is_number(top_p) and 0 < top_p <= 1):
        raise ValueError(f"top-p must be above 0 and at most 1, not {shown_value(top_p)}.")


def check_seed(seed):
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 0 <= seed < 2**63):
        raise ValueError(f"The seed must be a whole number from 0 to 2**63 - 1, not {shown_value(seed)}.")
    return int(seed)


def check_distribution(p, who):
    """One probability distribution: non-negative numbers that add up to 1 (float32's
    rounding allowed)."""
    try:
        p = as_floats(p, who).astype(float)
    except ValueError:
        p = np.asarray([np.nan])
    if p.ndim != 1 or p.size == 0 or np.any(~(p >= 0)) or not np.isclose(p.sum(), 1, atol=1e-5):
        raise ValueError(f"{who} takes one probability distribution: non-negative numbers "
                         "that add up to 1.")
    return p


# --- The model's weights are read-only ---------------------------------------------
# Every notebook, widget and exercise computes with the one tm.PARAMS, so nothing a learner
# writes may change it: the dicts and lists of the tree refuse every change, and each array
# lies over memory that cannot be made writable (an immutable `bytes` object, for which
# numpy refuses the WRITEABLE flag). A copy, tm.copy_params(), changes freely.

READ_ONLY_SENTENCE = ("The model's weights are read-only, so that every notebook sees the same model: "
             "experiment on a copy, params = tm.copy_params() (or E = tm.PARAMS['wte'].copy()).")


def _refuse(*_args, **_kwargs):
    raise ValueError(READ_ONLY_SENTENCE)


class ReadOnlyDict(dict):
    """A dict of the weights' tree: it reads as a dict and refuses every change.
    copy.deepcopy() or tm.copy_params() give an ordinary, writable copy."""
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = clear = setdefault = _refuse

    def __copy__(self):
        return dict(self)

    def __deepcopy__(self, memo):
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self):
        return dict, (dict(self),)


class ReadOnlyList(list):
    """A list of the weights' tree (or the vocabulary): it reads as a list and refuses every change."""
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __copy__(self):
        return list(self)

    def __deepcopy__(self, memo):
        return [copy.deepcopy(value, memo) for value in self]

    def __reduce__(self):
        return list, (list(self),)


# Each weight lies over an immutable `bytes` object: numpy itself refuses every write into
# it (W[0, 0] = 5, W += 1, W.fill(0)) and refuses to switch its WRITEABLE flag back on, in
# numpy's words ("assignment destination is read-only"). Its numbers are checked once, when
# it is frozen; a weight or a view of it (W[0], W.T) is then trusted as it is. What numpy
# still allows (setting W.shape or W.dtype in place) changes no number, and check_params
# notices it: it looks at each weight's shape and dtype on every call.

_FROZEN = weakref.WeakValueDictionary()       # id -> the flat array over a weight's bytes


def frozen(leaf):
    """A weight as a read-only array of floats (float32 stays float32) over memory that
    cannot be made writable. Its numbers are checked here, once."""
    arr = as_numbers(leaf, "freeze")
    flat = np.frombuffer(np.ascontiguousarray(arr).tobytes(), dtype=arr.dtype)
    _FROZEN[id(flat)] = flat
    return flat.reshape(arr.shape)


def is_frozen(x):
    """x is a frozen weight or a view of one, in its own dtype: checked, and unchangeable."""
    base = getattr(x, "base", None)
    return base is not None and _FROZEN.get(id(base)) is base and x.dtype == base.dtype


# --- Checks declared on the model's functions ------------------------------------------
# The model's functions (layer_norm, linear, attention, block, ...) hold their maths and
# nothing else. A learner may still call one directly with anything, so each is declared
# @checked(its check below). Whether the check runs depends on who calls, and on nothing
# else: a call from a notebook, a widget, a test or a lab's module is checked; a call from
# the model's own code (toy_model.py and toy_train.py) is not, because that code has
# checked what comes in where a learner enters it (forward, loss_and_grads, a function
# called directly), and what it passes on are its own results.

MODEL_CODE = ("toy_model", "toy_train")      # the modules whose calls are not checked again


def checked(check):
    """Declare a model function's check: check(*args, **kwargs) -> (args, kwargs), the
    arguments in the form the function computes with, or the course's sentence. A call
    with a wrong number of arguments gets the function's own name and parameters."""
    def add_check(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def checked_call(*args, **kwargs):
            if sys._getframe(1).f_globals.get("__name__") in MODEL_CODE:   # the model's own call
                return fn(*args, **kwargs)
            try:
                signature.bind(*args, **kwargs)
            except TypeError as err:
                raise TypeError(f"{fn.__name__}{signature}: {err}.") from None
            args, kwargs = check(*args, **kwargs)
            return fn(*args, **kwargs)
        return checked_call
    return add_check


def raise_unless(ok, who, what):
    """Raise ValueError with one sentence, "who: what.", unless ok is true."""
    if not ok:
        raise ValueError(f"{who}: {what}.")


def _linear_layer(layer, who, d_in, d_out=None):
    """A layer's {"w": [d_in, d_out], "b": [d_out] or one number} as arrays, or one sentence."""
    as_layer(layer, who)
    w, b = as_numbers(layer["w"], who), as_numbers(layer["b"], who)
    if w.ndim != 2 or w.shape[0] != d_in or d_out is not None and w.shape[1] != d_out \
            or b.shape not in ((), w.shape[1:]):
        raise ValueError(f"{who} takes w [d_in, d_out] and b [d_out] for rows of d_in = {d_in} "
                         f"numbers; got w {w.shape}, b {b.shape}.")
    return {"w": w, "b": b if b.ndim else float(b)}


def check_layer_norm(x, g, b, eps=1e-5):
    x = as_numbers(x, "layer_norm", min_dims=1)
    g, b = (as_numbers(w, "layer_norm's g and b") for w in (g, b))   # one number: a float, weak
    g, b = (w if w.ndim else float(w) for w in (g, b))                 # (float32 x stays float32)
    if {np.shape(g), np.shape(b)} - {(), x.shape[-1:]} or not (is_number(eps) and 0 < eps < 1):
        raise ValueError(f"layer_norm takes x with rows of d numbers, g and b of d numbers each "
                         f"(or one), and a small eps > 0; got x {x.shape}, g {np.shape(g)}, "
                         f"b {np.shape(b)}.")
    return (x, g, b, eps), {}


def check_gelu(x):
    return (as_numbers(x, "gelu"),), {}


def check_softmax(z, axis=-1):
    return (as_logits(z, "softmax", axis), axis), {}


def check_log_softmax(z):
    return (as_logits(z, "log_softmax"),), {}


def check_linear(x, w, b):
    x, w, b = as_numbers(x, "linear", min_dims=1), as_numbers(w, "linear"), as_numbers(b, "linear")
    if w.ndim != 2 or w.shape[0] != x.shape[-1] or b.shape not in ((), w.shape[1:]):
        raise ValueError(f"linear takes x [n, d_in], w [d_in, d_out] and b [d_out]; got x "
                         f"{x.shape}, w {w.shape}, b {b.shape}.")
    return (x, w, b if b.ndim else float(b)), {}


def check_embed(ids, wte, wpe, start=0):
    wte, wpe = as_numbers(wte, "embed", min_dims=2), as_numbers(wpe, "embed", min_dims=2)
    start = as_count(start, "embed's start", low=0)
    batch = isinstance(ids, np.ndarray) and ids.ndim == 2          # [B, n], for training
    ids = np.asarray(ids if batch else as_ids(ids, "embed", len(wte)))
    if wte.ndim != 2 or wpe.ndim != 2 or wte.shape[1] != wpe.shape[1] or ids.dtype.kind not in "iu" \
            or not ((0 <= ids) & (ids < len(wte))).all() or start + ids.shape[-1] > len(wpe):
        raise ValueError(f"embed takes ids (0 to V - 1, at most n_ctx - start of them), wte [V, d] "
                         f"and wpe [n_ctx, d]; got ids {ids.shape}, wte {wte.shape}, wpe {wpe.shape}.")
    return (ids, wte, wpe, start), {}


def check_causal_mask(n):
    return (as_count(n, "causal_mask", high=2**13),), {}       # an n x n table: 64 MB at most


def _dict_or_none(value, what):
    if isinstance(value, (dict, type(None))):
        return value
    raise ValueError(f"{what} must be a dict (or None), not {shown_value(value)}.")


def check_attention(q, k, v, mask=True, trace=None):
    q, k, v = (as_numbers(a, "attention", min_dims=2) for a in (q, k, v))
    if q.shape[-1] != k.shape[-1] or k.shape[:-1] != v.shape[:-1] or q.shape[:-2] != k.shape[:-2] \
            or as_flag(mask, "mask") and q.shape[-2] > k.shape[-2]:
        raise ValueError(f"attention takes q [m, d_head], k [n, d_head] and v [n, d_v] (m <= n "
                         f"with the mask); got q {q.shape}, k {k.shape}, v {v.shape}.")
    return (q, k, v, bool(mask), _dict_or_none(trace, "attention's trace")), {}


def check_multi_head(x, c_attn, c_proj, n_head, mask=True, trace=None, cache=None):
    x = as_numbers(x, "multi_head", min_dims=2)
    c_attn = _linear_layer(c_attn, "multi_head's c_attn", x.shape[-1])
    if c_attn["w"].shape[1] % 3:
        raise ValueError(f"multi_head's c_attn makes q, k and v side by side: its w needs a "
                         f"number of columns that 3 divides, not {c_attn['w'].shape[1]}.")
    d = c_attn["w"].shape[1] // 3                   # the width of q, k and v (GPT-2: x's)
    c_proj = _linear_layer(c_proj, "multi_head's c_proj", d)
    n_head = check_n_head(n_head, d)
    as_flag(mask, "mask"), _dict_or_none(trace, "multi_head's trace"), _dict_or_none(cache, "its cache")
    if cache and not (isinstance(cache.get("k"), np.ndarray) and isinstance(cache.get("v"), np.ndarray)
                      and cache["k"].shape == cache["v"].shape and cache["k"].shape[:-2] == x.shape[:-2]
                      and cache["k"].shape[-1] == d):
        raise ValueError("multi_head's cache holds the keys and values of earlier positions, "
                         "{'k': [n, d], 'v': [n, d]}, as multi_head fills it (start with {}).")
    return (x, c_attn, c_proj, n_head, bool(mask), trace, cache), {}


def check_mlp(x, c_fc, c_proj, trace=None):
    x = as_numbers(x, "mlp", min_dims=1)
    c_fc = _linear_layer(c_fc, "mlp's c_fc", x.shape[-1])
    c_proj = _linear_layer(c_proj, "mlp's c_proj", c_fc["w"].shape[1], x.shape[-1])
    return (x, c_fc, c_proj, _dict_or_none(trace, "mlp's trace")), {}


def check_block(x, blk, n_head, mask=True, trace=None, cache=None):
    if not isinstance(blk, dict) or set(blk) not in ({"ln_1", "attn", "ln_2", "mlp"}, {"ln_1", "attn"}):
        raise ValueError(f"block takes one block's weights, a dict with ln_1, attn, ln_2 and mlp "
                         f"(as params['blocks'][0]), or ln_1 and attn only, not {shown_value(blk)}.")
    x = as_numbers(x, "block", min_dims=2)
    for part, keys in [("ln_1", ("g", "b")), ("attn", ("c_attn", "c_proj")), ("ln_2", ("g", "b")),
                       ("mlp", ("c_fc", "c_proj"))][:len(blk)]:
        as_layer(blk[part], f"block's {part}", keys)
        if part.startswith("ln"):
            check_layer_norm(x, **blk[part])
    (_, c_attn, c_proj, n_head, mask, trace, cache), _ = check_multi_head(
        x, **blk["attn"], n_head=n_head, mask=mask, trace=trace, cache=cache)
    if "mlp" in blk:
        check_mlp(x, **blk["mlp"])
    return (x, blk, n_head, mask, trace, cache), {}


def check_unembed(f, params):
    if not isinstance(params, dict) or "wte" not in params:
        raise ValueError(f"unembed takes the weights' dict (with wte, and w_u unless tied), "
                         f"not {shown_value(params)}.")
    w_u = params["w_u"] if "w_u" in params else params["wte"].T
    f, w_u = as_numbers(f, "unembed", min_dims=1), as_numbers(w_u, "unembed")
    if w_u.ndim != 2 or w_u.shape[0] != f.shape[-1]:
        raise ValueError(f"unembed takes f [n, d] and W_U [d, V]; got f {f.shape}, W_U {w_u.shape}.")
    return (f, {"wte": w_u.T, "w_u": w_u}), {}


def check_gpt2_config(config):
    """A GPT-2 config.json's sizes (n_layer, n_head, n_embd, n_inner: the MLP's width,
    vocab_size, n_positions), read and checked: one sentence for what load_gpt2 cannot run."""
    if not isinstance(config, dict):
        raise ValueError("config.json must hold one JSON object ({...}) of GPT-2's settings.")
    sizes = {}
    for key in ("n_layer", "n_head", "n_embd", "vocab_size", "n_positions"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"config.json must give {key} as a whole number of at least 1, "
                             f"not {value!r}.")
        sizes[key] = value
    if sizes["n_embd"] % sizes["n_head"]:
        raise ValueError(f"config.json's n_head ({sizes['n_head']}) does not divide n_embd "
                         f"({sizes['n_embd']}).")
    inner = config.get("n_inner")                           # 0: attention-only blocks
    if inner is not None and (isinstance(inner, bool) or not isinstance(inner, int) or inner < 0):
        raise ValueError(f"config.json's n_inner is the MLP's width (0: none), not {inner!r}.")
    sizes["n_inner"] = 4 * sizes["n_embd"] if inner is None else inner
    checks = [(config.get("activation_function", "gelu_new") in ("gelu_new", "gelu_pytorch_tanh"),
               "its MLP uses another activation than GELU's tanh form"),
              (config.get("layer_norm_epsilon", 1e-5) == 1e-5,
               "its LayerNorm uses another epsilon than GPT-2's 1e-5"),
              (config.get("scale_attn_weights", True) is True,
               "its attention does not divide the scores by the square root of d_head"),
              (not config.get("scale_attn_by_inverse_layer_idx", False),
               "its attention divides the scores by the layer's number too")]
    for ok, what in checks:
        if not ok:
            raise ValueError(f"This checkpoint is not computed as GPT-2 is: {what}.")
    return sizes
