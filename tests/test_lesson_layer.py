"""The model's functions are the lesson: their bodies hold the maths, their checks are declared.

A learner reads toy_model's layer_norm, attention or block as the maths of GPT-2, so a
body holds no raise and no call of a check; the check is declared above it (@checked),
runs when a learner calls the function directly, and is not run when toy_model's own code
(forward, block, ...) calls it, since that code has checked what comes in. Read-only weights are checked once, when frozen: a forward pass
never scans them again.
"""
import ast
import inspect

import numpy as np
import pytest

import toy_checks
import toy_gpt2 as tg
import toy_model as tm
import toy_train as tt

FUNCTIONS = ["layer_norm", "gelu", "softmax", "log_softmax", "linear", "embed", "causal_mask",
          "attention", "multi_head", "mlp", "block", "unembed"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_model_functions_body_holds_its_maths_and_nothing_else(name):
    fn = getattr(tm, name)
    tree = ast.parse(inspect.getsource(inspect.unwrap(fn)))
    (func,) = tree.body
    checks = [d for d in func.decorator_list if isinstance(d, ast.Call) and d.func.id == "checked"]
    assert checks, f"{name} has no declared check (@checked(...))"
    raises = [n for n in ast.walk(func) if isinstance(n, ast.Raise)]
    assert not raises, f"{name}'s body raises: its check belongs in its declared check"
    called = {n.func.id for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    in_body = {c for c in called if c.startswith(("check_", "as_", "_as_", "as_flag", "as_count"))}
    assert not in_body, f"{name}'s body calls the checks {sorted(in_body)}"


def count_checks(monkeypatch):
    """How many times the checks look at an array of numbers (as_numbers, as_floats)."""
    calls = []
    for name in ("as_numbers", "as_floats"):
        real = getattr(toy_checks, name)
        monkeypatch.setattr(toy_checks, name, lambda *a, real=real, **k: calls.append(a) or real(*a, **k))
    return calls


def test_forward_on_read_only_weights_never_checks_an_array_of_numbers(monkeypatch):
    params = tt.init_params(3, d=8, n_layer=2, n_vocab=20, n_ctx=16)
    frozen = tm.freeze(params)
    tm.forward([1, 2, 3], frozen, 2)                 # the tree is checked once, here
    calls = count_checks(monkeypatch)
    cache = []
    for ids in ([1, 2, 3], np.array([[1, 2], [3, 4]])):
        tm.forward(ids, frozen, 2, trace={})
    tm.forward([4, 5], frozen, 2, cache=cache)
    tm.forward([6], frozen, 2, cache=cache)
    assert calls == []                               # not one scan, of a weight or of anything
    tm.layer_norm(np.ones((2, 8)), frozen["ln_f"]["g"], frozen["ln_f"]["b"])
    assert calls, "a direct call of a model function runs its declared check"


def test_a_direct_call_checks_and_a_call_from_forward_does_not(monkeypatch):
    tm.forward([0, 2, 4], tm.PARAMS)                 # the toy's weights, checked once
    calls = count_checks(monkeypatch)
    tm.forward([0, 2, 4], tm.PARAMS)
    assert calls == []
    with pytest.raises(ValueError, match="layer_norm takes x with rows of d numbers"):
        tm.layer_norm(np.ones((2, 4)), np.ones(3), 0)
    # After a refused call the next forward still runs without checks inside, and the next
    # direct call checks.
    calls.clear()
    tm.forward([0, 2, 4], tm.PARAMS)
    assert calls == []
    with pytest.raises(ValueError, match="linear takes x"):
        tm.linear(np.ones((2, 4)), np.ones((3, 4)), 0)



def test_a_direct_call_of_block_checks_once_and_the_functions_inside_it_not_again(monkeypatch):
    x, blk = np.ones((3, 4)) + np.arange(4), tm.copy_params()["blocks"][0]    # writable: scanned
    calls = count_checks(monkeypatch)
    toy_checks.check_block(x, blk, 2)                # what block's own check looks at
    own = len(calls)
    calls.clear()
    tm.block(x, blk, 2)
    assert own and len(calls) == own, "the layer_norm, multi_head and mlp inside block checked again"


def test_a_call_from_a_learners_own_code_is_checked():
    # A function written in a cell (module __main__) calls the model's functions as a learner does.
    cell = {"__name__": "__main__", "tm": tm, "np": np}
    exec("def mine(x):\n    return tm.layer_norm(x, np.ones(3), 0)", cell)
    with pytest.raises(ValueError, match="layer_norm takes x with rows of d numbers"):
        cell["mine"](np.ones((2, 4)))
    assert toy_checks.MODEL_CODE == ("toy_model", "toy_train")

def test_writable_weights_are_checked_on_every_call():
    params = tm.copy_params()
    params["wte"][0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tm.forward([0, 2], params)


def test_gpt2_small_shapes_are_read_only():
    params = tg.gpt2_small_shapes(n_layer=1, d=16, vocab=50, n_ctx=8)     # float32, tied: test_gpt2_lab.py
    for change in (lambda: params["wte"].__setitem__((0, 0), 1.0),
                   lambda: params.__setitem__("wte", None),
                   lambda: np.asarray(params["wte"]).setflags(write=True)):
        with pytest.raises(ValueError):
            change()


def test_a_loaded_checkpoint_is_read_only_and_checked_once(tmp_path, monkeypatch):
    params = tt.init_params(5, d=8, n_layer=2, n_vocab=20, n_ctx=16)
    tg.save_gpt2(tmp_path / "ckpt", params, 2)
    tg.save_bpe(tmp_path / "ckpt", {chr(97 + i): i for i in range(20)}, [])
    checkpoint = tg.load_gpt2(tmp_path / "ckpt")
    with pytest.raises(ValueError):
        checkpoint["params"]["blocks"][0]["mlp"]["c_fc"]["w"][0, 0] = 1.0
    tm.forward([1, 2], checkpoint["params"], checkpoint["n_head"])
    calls = count_checks(monkeypatch)
    tm.forward([1, 2, 3], checkpoint["params"], checkpoint["n_head"])
    assert calls == []


# --- One layout of the weights --------------------------------------------------------------

# (Its names in Hugging Face's checkpoints: test_gpt2.py, against a writer of their layout.)


def leaves(tree):
    return {name: np.shape(tm.get_weight(tree, name)) for name in tm.weight_names(tree)}


def test_every_maker_of_weights_builds_the_one_layout():
    """The toy, init_params (tied or not, 1-3 blocks, with an MLP or attention-only: no LN2,
    no MLP), gpt2_small_shapes and a loaded checkpoint have exactly the weights layout()
    lists, with layout_shapes()'s shapes."""
    toy = tm.PARAMS
    assert leaves(toy) == toy_checks.layout_shapes(1, 4, 8, 12, 8, tied=False)
    for n_layer in (1, 2, 3):
        for tied, d_mlp in [(False, 16), (True, 16), (False, 0), (True, 0)]:
            made = tt.init_params(1, tied=tied, d=8, d_mlp=d_mlp, n_layer=n_layer, n_vocab=12, n_ctx=6)
            assert leaves(made) == toy_checks.layout_shapes(n_layer, 8, d_mlp, 12, 6, tied=tied)
            assert d_mlp or not any(".ln_2." in n or ".mlp." in n for n in leaves(made))
    small = tg.gpt2_small_shapes(n_layer=2, d=16, vocab=50, n_ctx=8)
    assert set(leaves(small)) - {"w_u"} == set(toy_checks.layout(2))      # w_u: wte^T, a view


def test_tree_from_inverts_the_names():
    tree = tt.init_params(2, n_layer=3)
    rebuilt = tm.tree_from({name: tm.get_weight(tree, name) for name in tm.weight_names(tree)})
    assert type(rebuilt["blocks"]) is list and len(rebuilt["blocks"]) == 3
    assert tm.weight_names(rebuilt) == tm.weight_names(tree)
