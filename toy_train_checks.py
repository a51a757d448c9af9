"""The declared checks of toy_train's backward functions and optimisers.

Each `_backward` function of toy_train holds only its maths and names its check here with
`@checked(...)`: a learner's direct call is checked, with one sentence for what does not
fit; a call from toy_train's own code (`backward`, `loss_and_grads`, which check what comes
in once) is not. A check returns the arguments as arrays, as toy_checks' checks do.
"""
import numpy as np

from toy_checks import (BLOCK_SHAPES, MLP_PARTS, as_layer, as_numbers, check_ids, check_n_head,
                        check_params, is_number, raise_unless, shown_value, weight_at)
from toy_model import N_HEAD, PARAMS, cross_entropy, tree_map, walk, weight_name


def positive(x, what):
    """x as a float if it is a positive number, else one sentence naming `what`."""
    if not (is_number(x) and 0 < float(x) < 1e300):          # False for NaN and infinity
        raise ValueError(f"{what} must be a positive number, such as 0.05, not {shown_value(x)}.")
    return float(x)


def same_shape(who, min_dims=1, **arrays):
    """The arrays (as numbers, at least min_dims axes) if they all have the first one's shape."""
    out = [as_numbers(a, f"{who} ({name})", min_dims=min_dims) for name, a in arrays.items()]
    shapes = {name: a.shape for name, a in zip(arrays, out)}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"{who} needs arrays of one shape: " +
                         ", ".join(f"{name} {shape}" for name, shape in shapes.items()) + ".")
    return out


def as_linear(layer, who, d_in, d_out=None):
    """A linear layer's {"w": [d_in, d_out], "b": [d_out]} with d_in rows, or one sentence."""
    layer = as_layer(layer, who)
    w = as_numbers(layer["w"], f"{who} (its w)", min_dims=2)
    b = as_numbers(layer["b"], f"{who} (its b)", min_dims=1)
    raise_unless(w.ndim == 2 and w.shape[0] == d_in and (d_out is None or w.shape[1] == d_out)
                 and b.shape == w.shape[1:], who, f"its w must be [{d_in}, {d_out or 'd_out'}] and b "
                 f"[d_out], not {w.shape} and {b.shape}")
    return {"w": w, "b": b}


def as_block(blk, d, who):
    """A block's weights with consistent shapes for rows of d numbers, or one sentence."""
    raise_unless(isinstance(blk, dict), who, "blk must be one block's weights (tm.PARAMS['blocks'][0])")
    m = np.shape(weight_at(blk, "mlp.c_fc.w") if weight_at(blk, "mlp.c_fc.w") is not None else ())
    sizes = {"d": d, "3d": 3 * d, "m": m[-1] if len(m) == 2 else 0}
    for name, dims in BLOCK_SHAPES.items():
        if "mlp" not in blk and name.startswith(MLP_PARTS):
            continue                                        # an attention-only block
        w, want = weight_at(blk, name), tuple(sizes[k] for k in dims.split())
        raise_unless(w is not None and np.shape(w) == want, who,
                     f"the block's {name} must have shape {want}, not {np.shape(w) if w is not None else 'none'}")
        as_numbers(w, f"{who} ({name})", min_dims=1)
    return blk


def as_mask(mask, who):
    raise_unless(isinstance(mask, (bool, np.bool_)), who, "mask is True or False")
    return bool(mask)


# --- The backward functions' checks, in the order of toy_train ---------------------------------------

def check_transpose(a):
    return (as_numbers(a, "transpose", min_dims=2),), {}


def check_softmax_cross_entropy_backward(logits, targets):
    cross_entropy(logits, targets)                          # checks both, as the loss does
    return (np.asarray(logits), np.asarray(targets)), {}


def check_linear_backward(dout, x, w):
    x = as_numbers(x, "linear_backward (x)", min_dims=1)
    w = as_numbers(w, "linear_backward (w)", min_dims=2)
    dout = as_numbers(dout, "linear_backward (dout)", min_dims=1)
    raise_unless(w.ndim == 2 and x.shape[-1] == w.shape[0] and dout.shape == x.shape[:-1] + w.shape[1:],
                 "linear_backward", f"for out = x w + b, x [..., d_in], w [d_in, d_out] and dout "
                 f"[..., d_out] must fit, not {x.shape}, {w.shape} and {dout.shape}")
    return (dout, x, w), {}


def check_layer_norm_backward(dout, x, g, eps=1e-5):
    dout, x = same_shape("layer_norm_backward", dout=dout, x=x)
    g = as_numbers(g, "layer_norm_backward (g)")
    raise_unless(g.shape in ((), x.shape[-1:]), "layer_norm_backward", f"g must have one number per "
                 f"column of x ({x.shape[-1]}), not shape {g.shape}")
    raise_unless(is_number(eps) and 0 <= eps < np.inf, "layer_norm_backward", f"eps must be a number, 0 "
                 f"or more (GPT-2's is 1e-5), not {eps!r}")
    return (dout, x, g, eps), {}


def check_gelu_backward(dout, x):
    return tuple(same_shape("gelu_backward", min_dims=0, dout=dout, x=x)), {}


def check_mlp_backward(dout, x, c_fc, c_proj, trace=None):
    dout, x = same_shape("mlp_backward", dout=dout, x=x)
    c_fc = as_linear(c_fc, "mlp_backward (c_fc)", x.shape[-1])
    c_proj = as_linear(c_proj, "mlp_backward (c_proj)", c_fc["w"].shape[1], x.shape[-1])
    return (dout, x, c_fc, c_proj, trace), {}


def check_softmax_backward(dout, p):
    return tuple(same_shape("softmax_backward", dout=dout, p=p)), {}


def check_attention_backward(dout, q, k, v, mask=True, weights=None):
    dout, q, k, v = (as_numbers(a, f"attention_backward ({name})", min_dims=2)
                     for name, a in zip(["dout", "q", "k", "v"], [dout, q, k, v]))
    raise_unless(k.shape == v.shape and q.shape[:-2] == k.shape[:-2] and q.shape[-1] == k.shape[-1]
                 and q.shape[-2] <= k.shape[-2] and dout.shape == q.shape, "attention_backward",
                 f"q [m, d_head], k and v [n, d_head] (m <= n) and dout [m, d_head] must fit, not "
                 f"{q.shape}, {k.shape}, {v.shape} and {dout.shape}")
    mask = as_mask(mask, "attention_backward")
    if weights is not None:
        weights = as_numbers(weights, "attention_backward (weights)", min_dims=2)
        raise_unless(weights.shape == q.shape[:-1] + k.shape[-2:-1], "attention_backward",
                     f"weights must be [m, n] = {q.shape[:-1] + k.shape[-2:-1]}, not {weights.shape}")
    return (dout, q, k, v, mask, weights), {}


def check_multi_head_backward(dout, x, c_attn, c_proj, n_head, mask=True, trace=None):
    dout, x = same_shape("multi_head_backward", dout=dout, x=x)
    d = x.shape[-1]
    c_attn = as_linear(c_attn, "multi_head_backward (c_attn)", d, 3 * d)
    c_proj = as_linear(c_proj, "multi_head_backward (c_proj)", d, d)
    n_head = check_n_head(n_head, d)
    mask = as_mask(mask, "multi_head_backward")
    raise_unless(x.ndim >= 2, "multi_head_backward", "x needs one row per position, [n, d]")
    return (dout, x, c_attn, c_proj, n_head, mask, trace), {}


def check_block_backward(dy, x, blk, n_head, trace=None):
    dy, x = same_shape("block_backward", dy=dy, x=x)
    raise_unless(x.ndim >= 2, "block_backward", "x needs one row per position, [n, d]")
    blk = as_block(blk, x.shape[-1], "block_backward")
    n_head = check_n_head(n_head, x.shape[-1])
    return (dy, x, blk, n_head, trace), {}


def check_unembed_backward(dlogits, f, w_u):
    return check_linear_backward(dlogits, f, w_u)


def check_embed_backward(dx, ids, wte, wpe):
    wte = as_numbers(wte, "embed_backward (wte)", min_dims=2)
    wpe = as_numbers(wpe, "embed_backward (wpe)", min_dims=2)
    ids = np.asarray(check_ids(ids, len(wpe), len(wte)))
    dx = as_numbers(dx, "embed_backward (dx)", min_dims=2)
    raise_unless(wte.ndim == wpe.ndim == 2 and dx.shape == ids.shape + wte.shape[1:], "embed_backward",
                 f"dx must have one row of d = {wte.shape[-1]} numbers per id, {ids.shape + wte.shape[1:]}, "
                 f"not {dx.shape}")
    return (dx, ids, wte, wpe), {}


def check_backward(dlogits, ids, params=PARAMS, n_head=N_HEAD, trace=None):
    n_head = check_params(params, n_head)
    ids = np.asarray(check_ids(ids, len(params["wpe"]), len(params["wte"])))
    dlogits = as_numbers(dlogits, "backward (dlogits)", min_dims=2)
    V = len(params["wte"])
    raise_unless(dlogits.shape == ids.shape + (V,), "backward", f"dlogits must have one row of V = {V} "
                 f"numbers per id, {ids.shape + (V,)}, not {dlogits.shape}")
    if trace is not None:
        raise_unless(isinstance(trace, dict) and "blocks" in trace, "backward",
                     "trace is what forward(ids, params, trace=trace) filled for these ids")
    return (dlogits, ids, params, n_head, trace), {}


# --- The optimisers' checks ---------------------------------------------------------------

def leaves(tree):
    """{dotted name: array} for every weight of a tree, in the tree's order (one walk)."""
    found = {}
    walk(lambda path, leaf: found.__setitem__(weight_name(path), leaf), tree)
    return found


def check_grads(params, grads):
    """grads must have params' layout, each gradient its weight's shape, and be finite."""
    weights = leaves(params)
    found = leaves(grads) if isinstance(grads, (dict, list)) else {}
    if list(found) != list(weights):
        odd = sorted(set(weights) ^ set(found)) or list(weights)
        raise ValueError(f"The gradients must have the weights' layout (one per weight, as "
                         f"loss_and_grads returns them); {odd[0]!r} is in one but not the other.")
    for name, w in weights.items():
        g = found[name]
        if np.shape(g) != np.shape(w):
            raise ValueError(f"The gradient of {name!r} has shape {np.shape(g)}, but the weight "
                             f"has shape {np.shape(w)}: each gradient has its weight's shape.")
        if not np.all(np.isfinite(g)):
            raise ValueError(f"The gradient of {name!r} is not finite (NaN or infinity): the "
                             "loss has diverged; take a smaller learning rate.")


def gradient_tree(grads, who):
    """grads as a tree of finite arrays (as loss_and_grads returns them), or one sentence."""
    raise_unless(isinstance(grads, (dict, list)) and grads, who, "grads must be a tree of gradients, "
                 "as loss_and_grads returns them")
    found = leaves(grads)
    arrays = {name: as_numbers(g, f"{who} (the gradient {name!r})") for name, g in found.items()}
    if all(arrays[name] is found[name] for name in found):
        return grads                                        # arrays already: the tree itself
    return tree_map(lambda g: as_numbers(g, who), grads)


def check_grad_norm(grads):
    return (gradient_tree(grads, "grad_norm"),), {}


def check_clip_gradients(grads, max_norm):
    return (gradient_tree(grads, "clip_gradients"), positive(max_norm, "max_norm")), {}


def check_sgd_step(params, grads, lr):
    lr = positive(lr, "The learning rate lr")
    check_grads(params, grads)
    return (params, grads, lr), {}


def check_adam_step(params, grads, state=None, lr=0.01, betas=(0.9, 0.999), eps=1e-8):
    lr = positive(lr, "The learning rate lr")
    check_grads(params, grads)
    return (params, grads, state, lr, betas, eps), {}
