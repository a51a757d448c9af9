"""Lab 08's write-it-yourself exercises and its notebook: answers written as a learner
would (not the course's code) pass, typical mistakes get their sentence, the finite
difference by hand gives the checker's answer, the prose quotes what the code computes,
and the stored live curve is the finished run, not empty axes.

(tests/test_exercises.py runs every exercise's worked solution and listed mistakes too.)
"""
import base64
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

import toy_model as tm
import toy_train as tt
import toy_widgets as tw

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08_training.ipynb"


# --- 08.5 softmax's backward -------------------------------------------------------------

def softmax_backward_by_jacobian(dp, p):
    """A learner's honest long way: build each row's Jacobian p_j (δ_jk − p_k)."""
    flat_p, flat_dp = p.reshape(-1, p.shape[-1]), dp.reshape(-1, p.shape[-1])
    rows = [(np.diag(r) - np.outer(r, r)).T @ d for r, d in zip(flat_p, flat_dp)]
    return np.array(rows).reshape(p.shape)


def test_softmax_backward_written_another_way_passes():
    ok, message = tw.answer_code("08.5", softmax_backward_by_jacobian)
    assert ok is True, message


@pytest.mark.parametrize("wrong, words", [
    (lambda dp, p: dp * p, "subtract the row's sum"),
    (lambda dp, p: dp * p * (1 - p), "only the diagonal"),
    (lambda dp, p: p * (dp - (dp * p).sum(axis=0, keepdims=True)), "along each row"),
    (lambda dp, p: p * (dp - (dp * p).sum()), "Not yet, on scores of shape (4, 4)"),   # a sum over everything
])
def test_softmax_backward_mistakes_get_their_sentence(wrong, words):
    ok, message = tw.answer_code("08.5", wrong)
    assert ok is False and words in message


# --- 08.6 LayerNorm's backward -------------------------------------------------------------

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
    ok, message = tw.answer_code("08.6", layer_norm_backward_by_jacobian)
    assert ok is True, message


@pytest.mark.parametrize("wrong, words", [
    (lambda dout, x, g: dout * g / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5), "moves its row's mean and std"),
    (lambda dout, x, g: tt.layer_norm_backward(dout, x, g, eps=0.0)[0], "1e-5"),
    (lambda dout, x, g: tt.layer_norm_backward(dout, x, np.ones_like(g))[0], "dx̂ = dout · g"),
    (lambda dout, x, g: tt.layer_norm_backward(dout, x, g), "parts of different shapes"),  # (dx, dg, db)
])
def test_layer_norm_backward_mistakes_get_their_sentence(wrong, words):
    ok, message = tw.answer_code("08.6", wrong)
    assert ok is False and words in message, message


# --- 08.7 one head backwards -------------------------------------------------------------------

def test_attention_backward_from_the_library_passes_and_a_missing_mask_fails():
    ok, message = tw.answer_code("08.7", lambda dout, q, k, v: tt.attention_backward(dout, q, k, v))
    assert ok is True, message
    ok, _ = tw.answer_code("08.7", lambda dout, q, k, v: tt.attention_backward(dout, q, k, v, mask=False))
    assert ok is False


def test_the_reference_is_a_measurement_not_the_courses_backward():
    """Plant a bug in the course's own softmax_backward: the checker must still accept a
    right answer, since it compares with finite differences of the forward pass."""
    import toy_train
    right = toy_train.softmax_backward
    try:
        toy_train.softmax_backward = lambda dout, p: dout * p
        ok, _ = tw.answer_code("08.5", softmax_backward_by_jacobian)
    finally:
        toy_train.softmax_backward = right
    assert ok is True


# --- 08.8 a finite difference by hand ----------------------------------------------------------

def test_a_central_difference_by_hand_is_the_right_answer():
    ids = tm.encode("the cat climbed the")
    targets = ids[1:] + [tm.VOCAB.index(" roof")]
    losses = []
    for sign in (1, -1):
        w = np.array(tm.get_weight(tm.PARAMS, "blocks.0.ln_2.g"))
        w[1] += sign * 1e-4
        losses.append(tm.cross_entropy(tm.forward(ids, tm.replace_weight(tm.PARAMS, "blocks.0.ln_2.g", w)), targets))
    measured = (losses[0] - losses[1]) / 2e-4
    box = tw.exercise("08.8")
    assert box.try_answer(f"{measured:.4f}").startswith("Right")
    assert "Divide by 2ε" in box.try_answer(f"{(losses[0] - losses[1]) / 1e-4:.4f}")
    assert "sign" in box.try_answer(f"{-measured:.4f}")
    assert "did not reach the weight" in box.try_answer("0.0000")


# --- The notebook -----------------------------------------------------------------------------

def notebook():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def outputs_of(cell):
    return "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                   for o in cell.get("outputs", []))


def test_the_stored_training_curve_is_the_finished_run():
    """The live curve's stored picture shows the whole run: many pixels of the line's blue."""
    from matplotlib.image import imread
    cell = next(c for c in notebook()["cells"] if "tw.train_live(" in "".join(c["source"]))
    (out,) = [o for o in cell["outputs"] if "image/png" in o.get("data", {})]
    image = imread(io.BytesIO(base64.b64decode(out["data"]["image/png"])))[..., :3]
    blue = np.all(np.abs(image - np.array([0x00, 0x72, 0xB2]) / 255) < 0.08, axis=-1)
    assert blue.sum() > 600, f"only {blue.sum()} pixels of the curve's blue: empty axes?"


def prose():
    return "\n".join("".join(c["source"]) for c in notebook()["cells"] if c["cell_type"] == "markdown")


def test_prose_numbers_of_the_lab_are_the_computed_ones():
    text = prose()
    corpus = tt.load_corpus()
    cat = tt.next_token_counts(corpus, tm.encode("the cat climbed the"))
    roof = tm.VOCAB.index(" roof")
    assert f"␣roof {cat[roof]} times out of {cat.sum()}" in text
    assert f"p(␣roof) = {cat[roof]}/{cat.sum()}" in text
    assert f"on {len(corpus)} sentences" in text
    n = sum(tm.get_weight(tm.PARAMS, w).size for w in tm.weight_names(tm.PARAMS))
    assert f"all {n} numbers as one vector" in text


# --- The sweep's conclusions, recomputed from data/seed_sweep.json --------------------------

def sweep_facts():
    sweep = tt.load_sweep()
    corpus = tt.load_corpus()
    cat, dog = (tt.next_token_counts(corpus, tm.encode(t)) for t in ["the cat climbed the", "the dog climbed the"])

    def total(counts):
        share = counts / counts.sum()
        return -(counts[counts > 0] * np.log(share[counts > 0])).sum()
    floor = tt.best_possible_loss(corpus)
    blind = floor + (total(cat + dog) - total(cat) - total(dog)) / sum(len(s) - 1 for s in corpus)
    learnt = (floor + blind) / 2

    def pick(recipe, arm):
        return [r for r in sweep["runs"] if r["recipe"] == recipe and r["arm"] == arm]

    def jumps(runs):
        return sum(max(np.diff(r["history"])) > 0.5 for r in runs)

    def steps_of_jumps(runs):
        return [i + 1 for r in runs for i in np.flatnonzero(np.diff(r["history"]) > 0.5)]

    def learnt_by(runs, step):
        return sum(r["history"][step] < learnt for r in runs)
    return sweep, pick, jumps, steps_of_jumps, learnt_by


def test_what_the_schedule_and_clipping_buy_is_what_the_sweep_shows():
    sweep, pick, jumps, steps_of_jumps, _ = sweep_facts()
    text, n = prose(), len(sweep["seeds"])
    const, decay, clip, both = sweep["recipes"]
    assert n == 16 and "over 16 seeds" in text
    # decay: the last jump comes earlier than without it
    last = {r: max(steps_of_jumps(pick(r, "own W_U") + pick(r, "tied"))) for r in sweep["recipes"]}
    assert max(last[decay], last[both]) < min(last[const], last[clip])
    # clipping: no untied jump, every untied run at the floor; the tied runs still jump
    assert f"({jumps(pick(clip, 'own W_U'))} of {n}, against {jumps(pick(const, 'own W_U'))} of {n} with a constant rate)" in text
    assert max(r["history"][-1] for r in pick(clip, "own W_U")) < 0.29
    assert f"It did not stop the tied runs' jumps ({jumps(pick(clip, 'tied'))} of {n})" in text
    # warmup: untied jumps, most in the first 200 steps
    early = steps_of_jumps(pick(decay, "own W_U"))
    assert f"with warmup and decay, {jumps(pick(decay, 'own W_U'))} of {n} jumped" in text
    assert sum(s < 200 for s in early) > len(early) / 2
    # together: the fewest tied jumps, every untied run at the floor
    assert jumps(pick(both, "tied")) == min(jumps(pick(r, "tied")) for r in sweep["recipes"])
    assert f"the fewest jumps in the tied runs ({jumps(pick(both, 'tied'))} of {n})" in text
    assert max(r["history"][-1] for r in pick(both, "own W_U")) < 0.29


def test_the_tying_conclusions_are_what_the_sweep_shows():
    sweep, pick, jumps, _, learnt_by = sweep_facts()
    text, n = prose(), len(sweep["seeds"])
    recipes = sweep["recipes"]
    for recipe in recipes:                 # 1. some tied run reaches the floor in every recipe
        best_tied = min(r["history"][-1] for r in pick(recipe, "tied"))
        best_own = min(r["history"][-1] for r in pick(recipe, "own W_U"))
        assert best_tied - best_own < 0.005, recipe
    tied_200 = [learnt_by(pick(r, "tied"), 200) for r in recipes]
    own_200 = [learnt_by(pick(r, "own W_U"), 200) for r in recipes]
    tied_end = [learnt_by(pick(r, "tied"), -1) for r in recipes]
    own_end = [learnt_by(pick(r, "own W_U"), -1) for r in recipes]
    assert (f"By step 200, at most {max(tied_200)} of {n} tied runs had learnt the subject in any "
            f"recipe, against {min(own_200)} to {max(own_200)} of {n} untied ones; by step "
            f"{sweep['steps']}, {min(tied_end)} to {max(tied_end)} of {n} tied runs against "
            f"{min(own_end)} to {max(own_end)} of {n} untied") in text
    const, decay, clip, both = recipes
    assert tied_end[2] == max(tied_end)
    assert f"Clipping without decay let the most tied runs through ({tied_end[2]} of {n})" in text
    assert tied_end[1] == tied_end[3] and f"with decay, only {tied_end[1]} of {n} left it" in text
    assert max(jumps(pick(r, "tied")) for r in (decay, both)) < min(jumps(pick(r, "tied")) for r in (const, clip))
    assert max(tied_end[1], tied_end[3]) <= min(tied_end[0], tied_end[2])
