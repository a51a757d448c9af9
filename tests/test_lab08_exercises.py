"""Lab 08's write-it-yourself exercises: answers written as a learner would (not the
course's code) pass, the checker compares with a measurement, the finite difference by
hand gives the checker's answer; and the notebook's statistics functions against references.

(tests/test_exercises.py runs every exercise's worked solution and checks each listed
mistake gets its sentence.)
"""
import json
from pathlib import Path

import numpy as np
import pytest

import toy_model as tm
import toy_train as tt
import toy_widgets as tw

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08_training.ipynb"


# --- 08.3 the loss's backward -------------------------------------------------------------

def loss_backward_row_by_row(logits, targets):
    """A learner's long way: each row's p from exp and its sum, the target's entry less 1, over n."""
    return np.array([[(np.exp(v) / sum(np.exp(z)) - (j == t)) / len(targets) for j, v in enumerate(z)]
                     for z, t in zip(logits, targets)])


def test_loss_backward_written_another_way_passes_and_mistakes_get_their_sentence():
    assert tw.answer_code("08.3", loss_backward_row_by_row) == (True, "Right: your function agrees with "
                                                                "the measurement on all 3 inputs.")
    mine = loss_backward_row_by_row
    for wrong, words in [(lambda z, t: mine(z, t) * len(t), "mean over the rows"), (lambda z, t: -mine(z, t), "uphill"),
                         (lambda z, t: mine(z, t) + np.eye(z.shape[-1])[t] / len(t), "subtract the onehot"),
                         (lambda z, t: mine(z, t)[:, ::-1], "the measurement gives [[")]:
        ok, message = tw.answer_code("08.3", wrong)
        assert ok is False and words in message and "model gives" not in message, message


# --- 08.6 softmax's backward -------------------------------------------------------------

def softmax_backward_by_jacobian(dp, p):
    """A learner's honest long way: build each row's Jacobian p_j (δ_jk − p_k)."""
    flat_p, flat_dp = p.reshape(-1, p.shape[-1]), dp.reshape(-1, p.shape[-1])
    rows = [(np.diag(r) - np.outer(r, r)).T @ d for r, d in zip(flat_p, flat_dp)]
    return np.array(rows).reshape(p.shape)


def test_softmax_backward_written_another_way_passes():
    ok, message = tw.answer_code("08.6", softmax_backward_by_jacobian)
    assert ok is True, message


# --- 08.7 LayerNorm's backward -------------------------------------------------------------

def layer_norm_backward_by_jacobian(dout, x, g):
    """Straight from ∂x̂_i/∂x_j = (δ_ij − 1/d − x̂_i x̂_j / d) / σ, row by row."""
    d = x.shape[-1]
    out = np.empty_like(x)
    for i in np.ndindex(x.shape[:-1]):
        row = x[i]
        sigma = np.sqrt(row.var() + 1e-5)
        xhat = (row - row.mean()) / sigma
        jac = (np.eye(d) - 1 / d - np.outer(xhat, xhat) / d) / sigma
        out[i] = jac.T @ (dout[i] * g)
    return out


def test_layer_norm_backward_written_another_way_passes():
    ok, message = tw.answer_code("08.7", layer_norm_backward_by_jacobian)
    assert ok is True, message


# --- 08.8 one head backwards -------------------------------------------------------------------

def test_attention_backward_from_the_library_passes_and_a_missing_mask_fails():
    ok, message = tw.answer_code("08.8", lambda dout, q, k, v: tt.attention_backward(dout, q, k, v))
    assert ok is True, message
    ok, _ = tw.answer_code("08.8", lambda dout, q, k, v: tt.attention_backward(dout, q, k, v, mask=False))
    assert ok is False


def test_the_reference_is_a_measurement_not_the_courses_backward():
    """Plant a bug in the course's own softmax_backward: the checker must still accept a
    right answer, since it compares with finite differences of the forward pass."""
    import toy_train
    right = toy_train.softmax_backward
    try:
        toy_train.softmax_backward = lambda dout, p: dout * p
        ok, _ = tw.answer_code("08.6", softmax_backward_by_jacobian)
    finally:
        toy_train.softmax_backward = right
    assert ok is True


# --- 08.5 a finite difference by hand ----------------------------------------------------------

def test_a_central_difference_by_hand_is_the_right_answer():
    ids = tm.encode("the cat climbed the")
    targets = ids[1:] + [tm.VOCAB.index(" roof")]
    losses = []
    for sign in (1, -1):
        w = np.array(tm.get_weight(tm.PARAMS, "blocks.0.ln_2.g"))
        w[2] += sign * 1e-4
        losses.append(tm.cross_entropy(tm.forward(ids, tm.replace_weight(tm.PARAMS, "blocks.0.ln_2.g", w)), targets))
    measured = (losses[0] - losses[1]) / 2e-4
    box = tw.exercise("08.5")
    assert box.try_answer(f"{measured:.4f}").startswith("Right")
    assert "Divide by 2ε" in box.try_answer(f"{(losses[0] - losses[1]) / 1e-4:.4f}")
    assert "sign" in box.try_answer(f"{-measured:.4f}")
    assert "did not reach the weight" in box.try_answer("0.0000")


# --- 08.2 a wrong token's gradient ----------------------------------------------------------------

def test_a_wrong_tokens_gradient_is_keyed_as_a_nudge_of_its_logit_measures_it():
    """Measured on the example's logits themselves: nudging row 1's ␣dog logit moves the mean
    loss over the 5 rows by p(␣dog) / 5 per unit; a step against it lowers the logit. A step on
    all the weights, built here array by array, raises it instead, as the worked answer says."""
    ids = tm.encode("the cat climbed the")
    targets = ids[1:] + [tm.VOCAB.index(" roof")]
    dog = tm.VOCAB.index(" dog")
    z = tm.forward(ids)

    def mean_loss(logits):
        shifted = logits - logits.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(shifted).sum(axis=1)) - shifted[range(5), targets]))
    nudge = np.zeros_like(z)
    nudge[0, dog] = 1e-6
    measured = (mean_loss(z + nudge) - mean_loss(z - nudge)) / 2e-6
    p_dog = np.exp(z[0, dog]) / np.exp(z[0]).sum()
    assert measured == pytest.approx(p_dog / 5, abs=1e-8) and measured > 0
    box = tw.exercise("08.2")
    assert box.try_answer(f"{measured:.3f}").startswith("Right")
    assert "own loss" in box.try_answer(f"{p_dog:.3f}")
    assert "sign" in box.try_answer(f"{-measured:.3f}")
    assert "target's rule" in box.try_answer(f"{(p_dog - 1) / 5:.3f}")
    _, grads = tt.loss_and_grads(ids, [ids[1], -1, -1, -1, -1])
    params, lr = tm.PARAMS, 1e-6
    for name in tm.weight_names(tm.PARAMS):
        params = tm.replace_weight(params, name, np.array(tm.get_weight(tm.PARAMS, name)) - lr * tm.get_weight(grads, name))
    rise = (tm.forward(ids, params)[0, dog] - z[0, dog]) / lr
    assert rise > 1 and f"moves ␣dog's logit by {rise:+.1f} per unit of learning rate: it rises" in tw.exercises.worked_answer_html("08.2").replace("&#x27;", "'")


def test_counting_every_dog_sentence_for_the_best_prediction_gets_its_hint():
    texts = [tm.decode(seq) for seq in tt.load_corpus()]
    dog = [t for t in texts if t.startswith("the dog")]
    wall = sum(t.startswith("the dog climbed the wall") for t in dog)
    following = sum(t.startswith("the dog climbed the") for t in dog)
    box = tw.exercise("08.4")
    assert box.try_answer(f"{wall}/{following}").startswith("Right")
    assert len(dog) > following and "does not continue" in box.try_answer(f"{wall}/{len(dog)}")


# --- The notebook -----------------------------------------------------------------------------

def notebook():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def prose():
    return "\n".join("".join(c["source"]) for c in notebook()["cells"] if c["cell_type"] == "markdown")


def mcnemar_p(only_a, only_b):
    """Exact McNemar p, written again here: the two-sided binomial test at 1/2 on the discordant
    seeds, summing every outcome no likelier than the one seen."""
    from math import comb
    n = only_a + only_b
    law = [comb(n, k) / 2 ** n for k in range(n + 1)]
    return min(1.0, sum(p for p in law if p <= law[only_a] * (1 + 1e-7)))


def paired_interval(a_runs, b_runs, value, n=10_000, seed=0):
    """Paired bootstrap, written again here: runs grouped by seed, the seeds drawn again with
    replacement, one draw for both groups; median of a minus median of b, and the middle 95%."""
    seeds = sorted({r["seed"] for r in a_runs})
    rows = [[[value(r) for r in runs if r["seed"] == s] for s in seeds] for runs in (a_runs, b_runs)]
    a, b = (np.array(x, dtype=float) for x in rows)
    draws = np.random.default_rng(seed).integers(0, len(seeds), (n, len(seeds)))
    diffs = middle(a[draws].reshape(n, -1)) - middle(b[draws].reshape(n, -1))
    return float(np.median(a) - np.median(b)), *np.quantile(diffs, [0.025, 0.975])


def middle(rows):
    """Each row's median, from the row sorted: its middle value, or the mean of its two."""
    s = np.sort(rows, axis=1)
    return (s[:, (s.shape[1] - 1) // 2] + s[:, s.shape[1] // 2]) / 2


def test_the_central_differences_error_falls_as_eps_squared_then_rises():
    ids = tm.encode("the cat climbed the")
    targets = ids[1:] + [tm.VOCAB.index(" roof")]
    exact = tm.get_weight(tt.loss_and_grads(ids, targets)[1], "blocks.0.mlp.c_fc.w")[3, 1]
    errors = [abs(tt.finite_difference(ids, targets, "blocks.0.mlp.c_fc.w", (3, 1), eps=10.0 ** -k) - exact)
              for k in range(1, 11)]
    for big, small in zip(errors[:3], errors[1:4]):                     # "a hundredfold for each tenfold"
        assert 50 < big / small < 200
    assert int(np.argmin(errors)) + 1 in (5, 6) and errors[-1] > 100 * min(errors)   # round-off takes over
    assert errors[4] < 1e-10                                            # section 5: "below 1e-10"
    loss = tt.loss_and_grads(ids, targets)[0]
    noise = [1e-16 * loss / 10.0 ** -k for k in range(1, 11)]          # the table's "rounding's size"
    assert all(e > 100 * n for e, n in zip(errors[:4], noise[:4]))      # digits shown: far above rounding
    assert all(e < 10 * n for e, n in zip(errors[4:], noise[4:]))       # "below ten times the rounding"
    assert "a hundredfold for each tenfold smaller ε" in prose() and "as large as the rounding" in prose()


def notebook_function(name):
    """A function the notebook defines in a code cell, run on its own with numpy and math."""
    import ast
    from math import comb
    (source,) = ["".join(c["source"]) for c in notebook()["cells"]
                 if c["cell_type"] == "code" and f"def {name}(" in "".join(c["source"])]
    (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name]
    space = {"np": np, "comb": comb}
    exec(compile(ast.Module([node], []), name, "exec"), space)
    return space[name]


def test_mcnemar_and_the_paired_bootstrap_of_the_notebook():
    sign_test, mcnemar, paired_bootstrap = (notebook_function(name) for name in ("sign_test", "mcnemar", "paired_bootstrap"))
    mcnemar.__globals__["sign_test"] = sign_test
    # five seeds: only a passed in seeds 1, 2, 4; only b in none; seed 3 both, seed 5 neither
    a = [{"seed": s, "ok": s in (1, 2, 3, 4)} for s in (5, 4, 3, 2, 1)]
    b = [{"seed": s, "ok": s == 3} for s in (1, 2, 3, 4, 5)]
    assert mcnemar(a, b, lambda r: r["ok"]) == (3, 0, pytest.approx(mcnemar_p(3, 0))) and mcnemar_p(3, 0) == 0.25
    assert mcnemar(b, b, lambda r: r["ok"]) == (0, 0, 1.0) and mcnemar_p(2, 9) == pytest.approx(2 * 67 / 2048)
    sweep = tt.load_sweep()

    def pick(recipe, arm):
        return [r for r in sweep["runs"] if r["recipe"] == recipe and r["arm"] == arm]
    value = lambda r: min(r["heldout_history"])
    for x, y in [(("constant lr", "tied"), ("clipping", "tied")), (("clipping", "own W_U"), ("clipping", "tied"))]:
        table = [np.array([[value(r)] for s in sweep["seeds"] for r in pick(*key) if r["seed"] == s]) for key in (x, y)]
        assert paired_bootstrap(*table) == pytest.approx(paired_interval(pick(*x), pick(*y), value), abs=1e-12)
    same = paired_interval(pick("clipping", "tied"), pick("clipping", "tied"), value)
    assert same == pytest.approx((0.0, 0.0, 0.0))            # paired: a group against itself has no luck
