"""The weights as a tree: dicts and lists with arrays at the leaves.

A model's weights are nested as GPT-2 names them: params["blocks"][0]["attn"]["c_attn"]["w"],
or as one dotted name, "blocks.0.attn.c_attn.w". One walker goes over such a tree; freezing,
copying, naming, replacing and the optimisers all use it. toy_model's PARAMS is made read-only
here (freeze), and a notebook reaches these through toy_model: tm.tree_map, tm.get_weight, ...
This module needs numpy alone.
"""
import numpy as np

from toy_checks import (ReadOnlyDict, ReadOnlyList, as_numbers, frozen, mismatch_sentence,
                        shown_value, weight_at)


def walk(fn, *trees, path=(), kinds=(dict, list)):
    """A new tree of the same layout, each leaf fn(path, *leaves): path is the leaf's keys
    from the root, such as ("blocks", 0, "ln_1", "g"). Every dict and list is new, of the
    types `kinds` (read-only ones for the model's own weights)."""
    if not path and (not callable(fn) or not trees):
        raise ValueError(f"walk and tree_map take a function to apply to each weight (such as "
                         f"np.copy), then the tree(s) of weights, not {shown_value(fn)}.")
    first = trees[0]
    if isinstance(first, dict):
        for other in trees[1:]:
            if not isinstance(other, dict) or other.keys() != first.keys():
                raise ValueError(mismatch_sentence(path, first, other))
        return kinds[0]({key: walk(fn, *(t[key] for t in trees), path=path + (key,), kinds=kinds)
                         for key in first})
    if isinstance(first, list):
        for other in trees[1:]:
            if not isinstance(other, list) or len(other) != len(first):
                raise ValueError(mismatch_sentence(path, first, other))
        return kinds[1](walk(fn, *leaves, path=path + (i,), kinds=kinds)
                        for i, leaves in enumerate(zip(*trees)))
    return fn(path, *trees)


def tree_map(fn, *trees):
    """fn applied leaf by leaf to trees of the same layout: tree_map(np.copy, params)."""
    if not callable(fn):
        walk(fn)                                    # walk's sentence: a function is needed
    return walk(lambda _path, *leaves: fn(*leaves), *trees)


def weight_name(path):
    if not isinstance(path, (tuple, list)) or not all(isinstance(k, (str, int)) for k in path):
        raise ValueError(f"weight_name takes a weight's path, such as ('blocks', 0, 'ln_1', 'g'), "
                         f"not {shown_value(path)}.")
    return ".".join(map(str, path))


def weight_names(tree):
    """Every weight's name as a dotted path: "wte", "blocks.0.attn.c_attn.w", ..."""
    names = []
    _check_tree(tree, "weight_names")
    walk(lambda path, _leaf: names.append(weight_name(path)), tree)
    return names


def get_weight(tree, name):
    """The array at a dotted path, such as "blocks.0.mlp.c_fc.w"."""
    _check_tree(tree, "get_weight")
    if not isinstance(name, str):
        raise ValueError(f"get_weight takes a weight's name, such as 'blocks.0.mlp.c_fc.w', "
                         f"not {shown_value(name)}.")
    leaf = weight_at(tree, name)
    if leaf is None or isinstance(leaf, (dict, list)):      # no such path, or not a leaf
        raise ValueError(f"No weight is named {name!r}; the names are: "
                         f"{', '.join(weight_names(tree))}.")
    return leaf


def tree_from(named):
    """The tree of weights from {dotted name: array} ("wte", "blocks.0.ln_1.g", ...):
    a dict at each name, a list where the keys are the blocks' numbers 0, 1, ..."""
    tree = {}
    for name, leaf in named.items():
        *where, last = name.split(".")
        node = tree
        for key in where:
            node = node.setdefault(key, {})
        node[last] = leaf

    def lists(node):
        if not isinstance(node, dict):
            return node
        node = {key: lists(value) for key, value in node.items()}
        return [node[str(i)] for i in range(len(node))] if set(node) == set(map(str, range(len(node)))) \
            else node
    return lists(tree)


def replace_weight(tree, name, value):
    """A new tree with the array at `name` replaced; the old tree is left as it was."""
    old = np.shape(get_weight(tree, name))
    value = as_numbers(value, "replace_weight").astype(float)
    if value.shape != old:
        raise ValueError(f"The weight {name!r} has shape {old}; its replacement has {value.shape}.")
    return walk(lambda path, leaf: value if weight_name(path) == name else leaf, tree)


def freeze(tree):
    """The same nested weights, read-only at every level: each dict and list refuses changes,
    each array a copy over memory that numpy will not write into (see toy_checks.frozen)."""
    _check_tree(tree, "freeze")
    return walk(lambda _path, leaf: frozen(leaf), tree, kinds=(ReadOnlyDict, ReadOnlyList))


def _check_tree(tree, who):
    if not isinstance(tree, (dict, list)):
        raise ValueError(f"{who} takes a tree of weights (a dict such as tm.PARAMS), "
                         f"not {shown_value(tree)}.")
