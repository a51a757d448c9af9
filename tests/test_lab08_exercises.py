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


# --- 08.6 softmax's backward -------------------------------------------------------------

def softmax_backward_by_jacobian(dp, p):
    """A learner's honest long way: build each row's Jacobian p_j (δ_jk − p_k)."""
    flat_p, flat_dp = p.reshape(-1, p.shape[-1]), dp.reshape(-1, p.shape[-1])
    rows = [(np.diag(r) - np.outer(r, r)).T @ d for r, d in zip(flat_p, flat_dp)]
    return np.array(rows).reshape(p.shape)


def test_softmax_backward_written_another_way_passes():
    ok, message = tw.answer_code("08.6", softmax_backward_by_jacobian)
    assert ok is True, message


@pytest.mark.parametrize("wrong, words", [
    (lambda dp, p: dp * p, "subtract the row's sum"),
    (lambda dp, p: dp * p * (1 - p), "only the diagonal"),
    (lambda dp, p: p * (dp - (dp * p).sum(axis=0, keepdims=True)), "along each row"),
    (lambda dp, p: p * (dp - (dp * p).sum()), "Not yet, on scores of shape (4, 4)"),   # a sum over everything
])
def test_softmax_backward_mistakes_get_their_sentence(wrong, words):
    ok, message = tw.answer_code("08.6", wrong)
    assert ok is False and words in message


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


@pytest.mark.parametrize("wrong, words", [
    (lambda dout, x, g: dout * g / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5), "moves its row's mean and std"),
    (lambda dout, x, g: tt.layer_norm_backward(dout, x, g, eps=0.0)[0], "1e-5"),
    (lambda dout, x, g: tt.layer_norm_backward(dout, x, np.ones_like(g))[0], "dx̂ = dout · g"),
    (lambda dout, x, g: tt.layer_norm_backward(dout, x, g), "parts of different shapes"),  # (dx, dg, db)
])
def test_layer_norm_backward_mistakes_get_their_sentence(wrong, words):
    ok, message = tw.answer_code("08.7", wrong)
    assert ok is False and words in message, message


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
    pictures = [o["data"]["image/png"] if "image/png" in o.get("data", {}) else
                re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", "".join(o["data"]["text/html"])).group(1)
                for o in cell["outputs"] if "image/png" in o.get("data", {})
                or "data:image/png" in "".join(o.get("data", {}).get("text/html", ""))]
    (png,) = pictures
    image = imread(io.BytesIO(base64.b64decode(png)))[..., :3]
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
    assert f"From {len(corpus)} sentences in which no cat climbs a floor" in text
    n = sum(tm.get_weight(tm.PARAMS, w).size for w in tm.weight_names(tm.PARAMS))
    assert f"all {n} numbers as one vector" in text


# --- The sweep's conclusions, recomputed from data/seed_sweep.json --------------------------

def log_comb(n, k):
    from math import lgamma
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)


def fisher(x, n, y, m):
    """Two-sided Fisher p, written again here from the hypergeometric law."""
    from math import exp
    law = {k: exp(log_comb(n, k) + log_comb(m, x + y - k) - log_comb(n + m, x + y))
           for k in range(max(0, x + y - m), min(x + y, n) + 1)}
    return sum(p for p in law.values() if p <= law[x] * (1 + 1e-7))


def levels():
    """The floor and the subject-blind level on the corpus, and the blind level held out,
    from the corpus's counts (pooled over cats and dogs at the place)."""
    corpus = tt.load_corpus()
    cat, dog = (tt.next_token_counts(corpus, tm.encode(t)) for t in ["the cat climbed the", "the dog climbed the"])

    def total(counts):
        share = counts / counts.sum()
        return -(counts[counts > 0] * np.log(share[counts > 0])).sum()
    n = sum(len(s) - 1 for s in corpus)
    floor = tt.best_possible_loss(corpus)
    blind = floor + (total(cat + dog) - total(cat) - total(dog)) / n
    both, v = cat + dog, tm.VOCAB.index
    subject = tt.next_token_counts(corpus, [v("the")])                   # ␣cat 8, ␣dog 7
    after_ed = [tt.next_token_counts(corpus, tm.encode(t)[:4]) for t in ["the cat climbed the", "the dog climbed the"]]
    # held out, 7 predictions each: the only uncertain ones are the animal, what follows
    # "climbed" and (pooled, blind to the animal) the place
    nats = [-np.log(subject[v(" cat")] / subject.sum()), -np.log(after_ed[0][v(" the")] / after_ed[0].sum()),
            -np.log(both[v(" floor")] / both.sum()),
            -np.log(subject[v(" dog")] / subject.sum()), -np.log(after_ed[1][v(" the")] / after_ed[1].sum()),
            -np.log(both[v(" roof")] / both.sum())]
    return floor, blind, sum(nats) / 14


def sweep_facts():
    sweep = tt.load_sweep()
    floor, blind, _ = levels()
    learnt = (floor + blind) / 2

    def pick(recipe, arm):
        return [r for r in sweep["runs"] if r["recipe"] == recipe and r["arm"] == arm]
    return sweep, pick, learnt


def test_the_heldout_levels_are_the_pooled_shares():
    floor, blind, held_blind = levels()
    text = prose()
    assert f"{held_blind:.3f}" == "0.338"
    assert "within 0.002 nats of the subject-blind level's held-out value, 0.338, in every recipe but clipping at 0.05" in text
    sweep, pick, _ = sweep_facts()
    for recipe in sweep["recipes"]:
        tied = np.median([r["heldout"] for r in pick(recipe, "tied")])
        assert (abs(tied - held_blind) < 0.002) == (recipe != "clipping"), recipe


def test_training_and_heldout_losses_disagree_as_the_lab_says():
    sweep, pick, learnt = sweep_facts()
    text = prose()
    own = [r for r in sweep["runs"] if r["arm"] == "own W_U"]
    assert sum(r["history"][-1] < learnt for r in own) >= 0.9 * len(own)         # "nearly all"
    for recipe in sweep["recipes"]:                                              # "above 1 nat"
        assert np.median([r["heldout"] for r in pick(recipe, "own W_U")]) > 1
    final = np.array([r["history"][-1] for r in sweep["runs"]])
    held = np.array([r["heldout"] for r in sweep["runs"]])
    r = ((final - final.mean()) * (held - held.mean())).sum() / np.sqrt(
        ((final - final.mean()) ** 2).sum() * ((held - held.mean()) ** 2).sum())
    assert r < -0.7 and "strongly negative" in text


def test_the_labs_recipe_is_the_lowest_early_stopped_heldout_loss():
    sweep, pick, _ = sweep_facts()
    medians = {(recipe, arm): np.median([min(r["heldout_history"]) for r in pick(recipe, arm)])
               for recipe in sweep["recipes"] for arm in ("own W_U", "tied")}
    assert min(medians, key=medians.get) == ("clipping", "tied")
    spread = max(medians.values()) - min(medians.values())
    assert f"within {spread:.3f} nats of every other" in prose()
    code = "\n".join("".join(c["source"]) for c in notebook()["cells"] if c["cell_type"] == "code")
    assert "settings = dict(lr=0.05, clip=1.0, tied=True)" in code
    assert "tw.train_live(corpus, steps=600, seed=2, heldout=heldout, levels=levels, **settings)" in code
    assert "clipping with a constant rate and tied weights" in prose()
    lowest = {key: [min(r["heldout_history"]) for r in pick(*key)] for key in medians}
    best = lowest.pop(("clipping", "tied"))
    ahead = sum(tt.bootstrap_interval(values, best)[1] > 0 for values in lowest.values())
    assert f"more than luck over {ahead} of the other {len(lowest)}" in prose()
    assert f"may be luck over the other {len(lowest) - ahead}" in prose()
    for recipe in sweep["recipes"]:         # "their final held-out loss was lower in every recipe"
        own, tied = ([r["heldout"] for r in pick(recipe, arm)] for arm in ("own W_U", "tied"))
        assert tt.bootstrap_interval(own, tied)[1] > 0, recipe


def test_the_measures_of_chance_the_lab_quotes():
    sweep, pick, learnt = sweep_facts()
    text = prose()

    def jumped(runs):
        return sum(max(np.diff(r["history"])) > 0.5 for r in runs)

    def learns(runs, step=-1):
        return sum(r["history"][step] < learnt for r in runs)
    const, decay, clip, both, slow = sweep["recipes"]
    assert fisher(jumped(pick(const, "tied")), 16, jumped(pick(both, "tied")), 16) < 0.001
    assert fisher(jumped(pick(const, "own W_U")), 16, jumped(pick(clip, "own W_U")), 16) > 0.2
    assert fisher(jumped(pick(const, "own W_U")), 16, jumped(pick(decay, "own W_U")), 16) > 0.2
    assert "(0 jumps with clipping, 2 with a constant rate, 6 with warmup and decay)" in text
    assert [jumped(pick(r, "own W_U")) for r in (clip, const, decay)] == [0, 2, 6]
    p = fisher(learns(pick(clip, "tied")), 16, learns(pick(both, "tied")), 16)
    assert f"(p = {p:.3f}, the weakest result so far)" in text and p < 0.05
    low, full, three = (learns(pick(r, "tied")) for r in (slow, clip, both))
    p_three, p_full = fisher(low, 16, three, 16), fisher(low, 16, full, 16)
    assert three < low < full and low - three < full - low                      # "nearer to all three"
    assert f"({low} of 16 tied runs learnt the subject, against {three} and {full})" in text
    assert f"(p = {p_three:.1f} and {p_full:.2f})" in text and min(p_three, p_full) > 0.05
    clipped = [r for r in sweep["runs"] if r["recipe"] in (clip, both, slow)]
    share = 100 * sum(r["clipped"] for r in clipped) / (sweep["steps"] * len(clipped))
    assert f"only {share:.1f}% of the steps" in text
    own = [r for r in sweep["runs"] if r["arm"] == "own W_U"]
    tied = [r for r in sweep["runs"] if r["arm"] == "tied"]
    assert fisher(learns(own, 200), len(own), learns(tied, 200), len(tied)) < 1e-6
    assert fisher(learns(own), len(own), learns(tied), len(tied)) < 1e-6
    lowest = [np.median([min(r["heldout_history"]) for r in arm]) for arm in (own, tied)]
    assert 0.001 < lowest[0] - lowest[1] < 0.01 and "a few thousandths of a nat" in text


def test_the_labs_run_parts_from_its_heldout_curve_where_the_prose_says():
    corpus, heldout = tt.load_corpus(), tt.load_heldout()
    floor, blind, _ = levels()
    record = {}
    _, history = tt.train(corpus, steps=600, seed=2, lr=0.05, clip=1.0, tied=True, heldout=heldout, record=record)
    left = int(np.argmax(np.array(history) < blind - 0.01))
    best = int(np.argmin(record["heldout"]))
    assert 80 <= left - best <= 120 and "about a hundred steps before" in prose()
    assert record["heldout"][-1] > 1 and history[-1] < floor + 0.002


# --- The primer, the finite differences and the counts the prose quotes -------------------------

def printed(source_start):
    """What the code cell whose source starts with `source_start` printed."""
    (cell,) = [c for c in notebook()["cells"] if "".join(c["source"]).startswith(source_start)]
    return outputs_of(cell)


def test_the_primers_slopes_are_what_the_rules_give():
    out = printed("def L(w):")
    w, eps = 1.0, 1e-3
    measured = ((2 * (w + eps) - 3) ** 2 - (2 * w - 3) ** 2) / eps        # -3.996, by hand
    assert f"{measured:.3f}" in out and "-4.000" in out
    assert "slope is −4" in prose()
    out = printed("def L2(w):")
    assert "[-2.000, -4.000]" in out and "after the step w - 0.1 · gradient: 0.000" in out
    out = printed("a, b = np.array([1, 2, 3])")
    z = np.array([1.0, 2.0, 0.5])
    assert out.count(f"{np.exp(2.0) / np.exp(z).sum():.3f}") == 2      # measured and softmax agree
    assert "[ 4 10 18]" in out and "sum over k of a_k: 6" in out


def test_the_central_differences_error_falls_as_eps_squared_then_rises():
    ids = tm.encode("the cat climbed the")
    targets = ids[1:] + [tm.VOCAB.index(" roof")]
    exact = tm.get_weight(tt.loss_and_grads(ids, targets)[1], "blocks.0.mlp.c_fc.w")[3, 1]
    errors = [abs(tt.finite_difference(ids, targets, "blocks.0.mlp.c_fc.w", (3, 1), eps=10.0 ** -k) - exact)
              for k in range(1, 11)]
    for big, small in zip(errors[:3], errors[1:4]):                     # "a hundredfold for each tenfold"
        assert 50 < big / small < 200
    assert int(np.argmin(errors)) + 1 in (5, 6) and errors[-1] > 100 * min(errors)   # round-off takes over
    assert errors[4] < 1e-10                                            # "10 decimal places or more"
    assert "a hundredfold for each tenfold smaller ε" in prose()


def test_the_counts_the_prose_quotes():
    text, sweep = prose(), tt.load_sweep()
    heldout = tt.load_heldout()
    assert sum(len(s) - 1 for s in heldout) == 14 and "a small test, 14 predictions" in text
    n = len(sweep["runs"])
    assert n == len(sweep["seeds"]) * len(sweep["recipes"]) * 2 == 160
    assert f"a sweep of {n} training runs" in text and f"a sweep of {n} runs" in text
    assert f"trained the toy {n} times" in text and f"Across all {n} runs" in text
    assert "16 seeds, each under five recipes" in text and len(sweep["recipes"]) == 5
    own = next(r for r in sweep["runs"] if (r["seed"], r["arm"], r["recipe"]) == (2, "own W_U", "clipping"))
    tied = next(r for r in sweep["runs"] if (r["seed"], r["arm"], r["recipe"]) == (2, "tied", "clipping"))
    floor, blind, _ = levels()
    first = [int(np.argmax(np.array(r["history"]) < (floor + blind) / 2)) for r in (own, tied)]
    assert first[1] - first[0] >= 200 and "learnt the subject hundreds of steps sooner" in text
    decayed = np.mean([tt.learning_rate(s, 0.05, 600, warmup=30, decay=True) for s in range(600)])
    assert f"{100 * decayed / 0.05:.0f}%" == "55%"
