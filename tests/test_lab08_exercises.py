"""Lab 08's write-it-yourself exercises and its notebook: answers written as a learner
would (not the course's code) pass, typical mistakes get their sentence, the finite
difference by hand gives the checker's answer, the prose quotes what the code computes,
and the stored live curve is the finished run, not empty axes.

(tests/test_exercises.py runs every exercise's worked solution and listed mistakes too.)
"""
import base64
import io
import inspect
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
    tied = sum(tm.get_weight(tt.init_params(2, tied=True), w).size for w in tm.weight_names(tt.init_params(2, tied=True)))
    assert tm.PARAMS["w_u"].size == n - tied == 48 and "W_U is 48 of the toy's weights" in text
    assert f"all the weights as one vector: {n} numbers for the toy, {n - tied} fewer when W_U is tied" in text
    pooled = cat + tt.next_token_counts(corpus, tm.encode("the dog climbed the"))
    assert f"the blind predictor gives ␣roof the pooled share {pooled[roof]}/{pooled.sum()}, where" in text
    assert tt.next_token_counts(corpus, tm.encode("the dog climbed the"))[roof] == 0
    ids = tm.encode("the cat climbed the")
    _, grads = tt.loss_and_grads(ids, ids[1:] + [roof])
    climb = tm.VOCAB.index(" climb")
    assert ids.count(climb) == 1 and ids.index(climb) == 2                       # once, at position 3
    assert np.array_equal(grads["wte"][climb], grads["wpe"][2])
    assert "␣climb occurs once, at position 3" in text


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


def mcnemar_p(only_a, only_b):
    """Exact McNemar p, written again here: the two-sided binomial test at 1/2 on the discordant
    seeds, summing every outcome no likelier than the one seen."""
    from math import comb
    n = only_a + only_b
    law = [comb(n, k) / 2 ** n for k in range(n + 1)]
    return min(1.0, sum(p for p in law if p <= law[only_a] * (1 + 1e-7)))


def discordant(a, b, test):
    """Seeds where only a's run passed the test, and where only b's did; a and b are runs of one arm."""
    by_seed = [{r["seed"]: bool(test(r)) for r in group} for group in (a, b)]
    assert sorted(by_seed[0]) == sorted(by_seed[1])
    return (sum(by_seed[0][s] and not by_seed[1][s] for s in by_seed[0]),
            sum(by_seed[1][s] and not by_seed[0][s] for s in by_seed[0]))


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


def learnt_at(run, step, learnt):
    """Whether a run had learnt the subject by `step`: the middle of its 20 training losses up to it below the line."""
    window = sorted(run["history"][step - 19:step + 1])
    return (window[9] + window[10]) / 2 < learnt


def rolling_median_low(curve, width=21):
    """The lowest of the medians of every `width` consecutive values: the windows as rows."""
    curve = np.asarray(curve, dtype=float)
    starts = np.arange(len(curve) - width + 1)
    return middle(curve[starts[:, None] + np.arange(width)]).min()


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
    assert sum(learnt_at(r, 600, learnt) for r in own) >= 0.9 * len(own)         # "nearly all"
    for recipe in sweep["recipes"]:                                              # "above 1 nat"
        assert np.median([r["heldout"] for r in pick(recipe, "own W_U")]) > 1
    yes = [r["heldout"] for r in sweep["runs"] if learnt_at(r, 600, learnt)]
    no = [r["heldout"] for r in sweep["runs"] if not learnt_at(r, 600, learnt)]
    assert (len(yes), len(no)) == (105, 55) and min(yes) > 0.85 and max(no) < 0.61          # a gap between two clusters
    assert "the ones that learnt the subject end with a held-out loss above 0.85, the others below 0.61" in text
    assert "correlation" not in text


def test_early_stopping_is_scored_on_the_rolling_median_and_picks_no_best_recipe():
    sweep, pick, learnt = sweep_facts()
    text = prose()
    smooth = lambda r: rolling_median_low(r["heldout_history"])
    raw = lambda r: min(r["heldout_history"])
    medians = {(recipe, arm): np.median([smooth(r) for r in pick(recipe, arm)])
               for recipe in sweep["recipes"] for arm in ("own W_U", "tied")}
    best = min(medians, key=medians.get)
    assert best == ("constant lr", "tied")
    low, high, spread = min(medians.values()), max(medians.values()), max(medians.values()) - min(medians.values())
    assert f"between {low:.3f} and {high:.3f}, all within {spread:.3f} nats of each other" in text
    assert (f"{low:.3f}", f"{high:.3f}", f"{spread:.3f}") == ("0.337", "0.340", "0.004")
    assert abs(np.median(list(medians.values())) - 0.338) < 0.002 and "around the subject-blind level's 0.338" in text
    others = [key for key in medians if key != best]
    intervals = {key: paired_interval(pick(*key), pick(*best), smooth) for key in others}
    d, lo, hi = intervals[("clipping", "tied")]
    assert lo < 0 < hi and "level with clipping and tied weights, section 7's recipe (its paired interval holds 0)" in text
    assert "above it by more than the luck of the seeds" not in text and "ahead by more than luck" not in "".join(
        outputs_of(c) for c in notebook()["cells"] if c["cell_type"] == "code")
    assert "not corrected for the 9 comparisons" in text and "so they rank nothing" in text
    assert max(d for d, _, _ in intervals.values()) < 0.005 and "The others lie a few thousandths of a nat above it" in text
    assert "a median picked as the lowest of 10 after seeing them is favoured by luck" in text
    assert "The sweep does not pick a best recipe" in text and "more than luck over 6 of the other 9" not in text
    jumped = lambda r: max(np.diff(r["history"])) > 0.5
    split = [[np.median([value(r) for r in sweep["runs"] if jumped(r) == j]) for j in (True, False)] for value in (raw, smooth)]
    assert f"{split[0][0]:.3f}" == "0.327" and f"{split[0][1]:.3f}" == "0.332" and f"{split[1][0]:.3f}" == f"{split[1][1]:.3f}" == "0.338"
    assert "they favour the runs that jumped (median 0.327 against 0.332 for the others, where the rolling median gives 0.338 to both)" in text
    assert "every recipe scores, in median over 16 seeds, within a few thousandths of a nat of the others on the held-out sentences" in text
    assert "The sweep runs section 7's recipe and four others on 16 seeds" in text and len(sweep["recipes"]) == 5
    assert "The schedule is left out here; Going further B measures what it changes" in text
    final_tied = {recipe: np.median([r["heldout"] for r in pick(recipe, "tied")]) for recipe in sweep["recipes"]}
    assert max(final_tied, key=final_tied.get) == "clipping"          # the worst tied recipe at the end
    jumped_first = [r for r in pick("clipping", "tied") if max(np.diff(r["history"])) > 0.5
                    and learnt_at(r, 600, learnt)
                    and int(np.argmax(np.diff(r["history"]) > 0.5)) < next(
                        s for s in range(19, 601) if learnt_at(r, s, learnt))]
    assert 2 in {r["seed"] for r in jumped_first} and len(jumped_first) == 6
    assert "6 of the 16 tied runs of its recipe jumped and then learnt the subject, as seed 2 did" in text
    assert "one of the lowest of the ten" not in text and "which did as well as any" not in text
    code = "\n".join("".join(c["source"]) for c in notebook()["cells"] if c["cell_type"] == "code")
    assert "settings = dict(lr=0.05, clip=1.0, tied=True)" in code
    assert "tw.train_live(corpus, steps=600, seed=2, heldout=heldout, levels=levels, **settings)" in code
    assert "The run below uses clipping, a constant rate and tied weights" in text
    assert "It is shown because within 600 steps it does all that this section watches" in text
    for recipe in sweep["recipes"]:         # "their final held-out loss was lower in every recipe"
        assert paired_interval(pick(recipe, "own W_U"), pick(recipe, "tied"), lambda r: r["heldout"])[1] > 0, recipe


def test_the_measures_of_chance_the_lab_quotes():
    sweep, pick, learnt = sweep_facts()
    text = prose()

    def jumped(runs):
        return sum(max(np.diff(r["history"])) > 0.5 for r in runs)

    def learns(runs, step=600):
        return sum(learnt_at(r, step, learnt) for r in runs)
    const, decay, clip, both, slow = sweep["recipes"]
    jump = lambda r: max(np.diff(r["history"])) > 0.5
    learn = lambda r: learnt_at(r, 600, learnt)
    only = discordant(pick(const, "tied"), pick(both, "tied"), jump)
    assert only == (11, 0) and f"{mcnemar_p(*only):.2g}" == "0.00098"                 # 2 / 2**11
    assert mcnemar_p(*discordant(pick(const, "own W_U"), pick(clip, "own W_U"), jump)) > 0.2
    assert mcnemar_p(*discordant(pick(const, "own W_U"), pick(decay, "own W_U"), jump)) > 0.2
    assert [jumped(pick(r, "own W_U")) for r in (clip, const, decay)] == [0, 2, 6]
    only = discordant(pick(clip, "tied"), pick(both, "tied"), learn)
    p = mcnemar_p(*only)
    assert only == (9, 2) and f"{p:.2g}" == "0.065" and p > 0.05
    assert f"{learns(pick(clip, 'tied'))} against {learns(pick(both, 'tied'))} runs, " \
           f"{only[0]} seeds where only clipping's run learnt it against {only[1]} the other way " \
           f"(p = {p:.2g}, not significant even before correction" in text
    low, full, three = (learns(pick(r, "tied")) for r in (slow, clip, both))
    to_three, to_full = discordant(pick(slow, "tied"), pick(both, "tied"), learn), discordant(pick(slow, "tied"), pick(clip, "tied"), learn)
    p_three, p_full = mcnemar_p(*to_three), mcnemar_p(*to_full)
    assert three < low < full and low - three < full - low                      # "nearer to all three"
    assert f"({low} of 16 tied runs learnt the subject, against {three} and {full})" in text
    assert (f"({to_three[0]} seeds against {to_three[1]}, p = {p_three:.2g}; "
            f"{to_full[0]} against {to_full[1]}, p = {p_full:.2g})") in text and min(p_three, p_full) > 0.05
    clipped = [r for r in sweep["runs"] if r["recipe"] in (clip, both, slow)]
    share = 100 * sum(r["clipped"] for r in clipped) / (sweep["steps"] * len(clipped))
    assert f"only {share:.1f}% of the steps" in text
    own = [r for r in sweep["runs"] if r["arm"] == "own W_U"]
    tied = [r for r in sweep["runs"] if r["arm"] == "tied"]
    assert fisher(learns(own, 200), len(own), learns(tied, 200), len(tied)) < 1e-6
    assert fisher(learns(own), len(own), learns(tied), len(tied)) < 1e-6
    lowest = [np.median([rolling_median_low(r["heldout_history"]) for r in arm]) for arm in (own, tied)]
    assert 0 < lowest[0] - lowest[1] < 0.001 and "under a thousandth of a nat" in text


def test_the_labs_run_parts_from_its_heldout_curve_where_the_prose_says():
    corpus, heldout = tt.load_corpus(), tt.load_heldout()
    floor, blind, _ = levels()
    record = {}
    _, history = tt.train(corpus, steps=600, seed=2, lr=0.05, clip=1.0, tied=True, heldout=heldout, record=record)
    left = int(np.argmax(np.array(history) < blind - 0.01))
    best = int(np.argmin(record["heldout"]))
    spike = int(np.argmax(np.diff(history))) + 1                 # the step that overshoots
    flat = record["heldout"][100:301]
    text = prose()
    assert (spike, best, left) == (309, 330, 434)
    assert (f"the training loss jumped from {history[305]:.3f} to {history[spike]:.3f} within four steps "
            f"(steps 306 to {spike})") in text and "rang for" not in text
    assert history[305] < history[306] and history[304] > history[305]          # the rise starts at step 306
    assert "The lowest point, at step 330 (the left-hand marker), lies in the oscillation after the spike" in text
    smooth = np.median(np.lib.stride_tricks.sliding_window_view(record["heldout"], 21), axis=1)
    assert f"{record['heldout'][best]:.3f}" == "0.327" and f"{smooth.min():.3f}" == f"{levels()[2]:.3f}" == "0.338"
    assert "this run's lowest point is 0.338, no lower than the subject-blind value" in text
    assert spike < best < spike + 30 and min(flat) - 0.01 < record["heldout"][best] < min(flat)   # partly noise
    assert f"between {min(flat):.3f} and {max(flat):.3f}" == "between 0.331 and 0.346"
    assert "it lies between 0.331 and 0.346" in text
    assert "The two curves part at about step 434" in text and "about a hundred steps before" not in text
    assert record["heldout"][-1] > 1 and history[-1] < floor + 0.002
    grad = record["grad_norm"]
    assert f"{np.median(grad[99:300]):.3f}" == "0.011" and "the gradient was about 0.011 long" in text
    assert f"from a gradient {grad[305]:.3f} long, which clipping leaves alone" in text
    assert (f"over the next three steps the gradient was {grad[306]:.3f}, {grad[307]:.3f} and {grad[308]:.3f} long, "
            "clipping cut each to 1") in text and grad[305] < 1 < min(grad[306:309])
    assert "Adam moves each weight by about lr · m / √v" in text and "Going further B replays those steps" in text
    # the held-out set's two deciding predictions: the end's and the early-stopped model's losses
    # differ, prediction by prediction, only at the place after the animal
    place, frame = [], []
    for seq in heldout:
        nats = [[-np.log(tm.softmax(tm.forward(seq[:-1], params))[i, seq[i + 1]]) for i in range(len(seq) - 1)]
                for params in (record["params"], record["best_params"])]
        gaps = np.abs(np.subtract(*nats))
        place.append(gaps[4])                                    # the place, after 'the X climbed the'
        frame.extend(np.delete(gaps, 4))
    assert sum(frame) < 0.05 * sum(place) and min(place) > 4, (frame, place)
    n = sum(len(seq) - 1 for seq in heldout)
    assert (n, len(place)) == (14, 2) and "14 predictions, and in practice 2 of them decide" in text
    assert "of which 2 tell the models apart" in text


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
    assert "exactly on the minimum, L = 0, by luck of the numbers" in prose()
    w = 2.0                                             # the two paths of u(w) v(w) = (2w - 3) w², by hand
    assert f"u'v + uv': {2 * w ** 2:.3f} + {(2 * w - 3) * 2 * w:.3f} = {2 * w ** 2 + (2 * w - 3) * 2 * w:.3f}" in printed("def L3(w):")
    assert "when w reaches L along several, their small\nchanges add, so their slopes add" in prose()
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
    loss = tt.loss_and_grads(ids, targets)[0]
    noise = [1e-16 * loss / 10.0 ** -k for k in range(1, 11)]          # the table's "rounding's size"
    assert all(e > 100 * n for e, n in zip(errors[:4], noise[:4]))      # digits shown: far above rounding
    assert all(e < 10 * n for e, n in zip(errors[4:], noise[4:]))       # "below ten times the rounding"
    assert "a hundredfold for each tenfold smaller ε" in prose() and "as large as the rounding" in prose()


def test_the_counts_the_prose_quotes():
    text, sweep = prose(), tt.load_sweep()
    heldout = tt.load_heldout()
    assert sum(len(s) - 1 for s in heldout) == 14 and "a small test, 14 predictions" in text
    n = len(sweep["runs"])
    assert n == len(sweep["seeds"]) * len(sweep["recipes"]) * 2 == 160
    assert f"a sweep of {n} training runs" in text
    assert f"trained the toy {n} times" in text
    assert "16 seeds, each under five recipes" in text and len(sweep["recipes"]) == 5
    own = next(r for r in sweep["runs"] if (r["seed"], r["arm"], r["recipe"]) == (2, "own W_U", "clipping"))
    tied = next(r for r in sweep["runs"] if (r["seed"], r["arm"], r["recipe"]) == (2, "tied", "clipping"))
    floor, blind, _ = levels()
    first = [next(s for s in range(19, 601) if learnt_at(r, s, (floor + blind) / 2)) for r in (own, tied)]
    assert first[1] - first[0] >= 200 and "learnt the subject hundreds of steps sooner" in text
    decayed = np.mean([tt.learning_rate(s, 0.05, 600, warmup=30, decay=True) for s in range(600)])
    assert f"{100 * decayed / 0.05:.0f}%" == "55%"


# --- Many comparisons, seeds as the unit, and what tying changes ------------------------------

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
    sweep, pick, _ = sweep_facts()
    value = lambda r: min(r["heldout_history"])
    for x, y in [(("constant lr", "tied"), ("clipping", "tied")), (("clipping", "own W_U"), ("clipping", "tied"))]:
        table = [np.array([[value(r)] for s in sweep["seeds"] for r in pick(*key) if r["seed"] == s]) for key in (x, y)]
        assert paired_bootstrap(*table) == pytest.approx(paired_interval(pick(*x), pick(*y), value), abs=1e-12)
    same = paired_interval(pick("clipping", "tied"), pick("clipping", "tied"), value)
    assert same == pytest.approx((0.0, 0.0, 0.0))            # paired: a group against itself has no luck


def test_seeds_are_the_unit_of_the_sign_test():
    sweep, _, learnt = sweep_facts()
    text = prose()
    sign_test = notebook_function("sign_test")
    assert sign_test(3, 0) == pytest.approx(2 / 8) and sign_test(2, 2) == 1.0
    assert sign_test(1, 4) == pytest.approx(2 * 6 / 32)                   # 4 or 5 of 5, either way
    for step, words in [(600, "in 15 of the 16 seeds, with 1 level and none the other way (sign test p = {})"),
                        (200, None)]:
        ahead = behind = 0
        for seed in sweep["seeds"]:
            own, tied = (sum(learnt_at(r, step, learnt) for r in sweep["runs"] if r["seed"] == seed and r["arm"] == arm)
                         for arm in ("own W_U", "tied"))
            ahead, behind = ahead + (own > tied), behind + (own < tied)
        n = ahead + behind
        p = 2 * sum(__import__("math").comb(n, k) for k in range(max(ahead, behind), n + 1)) / 2 ** n
        if words:
            assert (ahead, behind) == (15, 0) and p == pytest.approx(2 * 0.5 ** 15)
            assert words.format(f"{p:.2g}") in text and f"{p:.2g}" == "6.1e-05"
        else:
            assert p < 0.01 and "neither gap is the luck of a few seeds" in text
    assert "the Fisher p-values are tiny" not in text


def test_what_tying_changes_is_quoted_as_computed():
    sweep, _, learnt = sweep_facts()
    text = prose()
    own, tied = ([r for r in sweep["runs"] if r["arm"] == arm] for arm in ("own W_U", "tied"))
    early = [sum(learnt_at(r, 200, learnt) for r in arm) for arm in (own, tied)]
    late = [sum(learnt_at(r, 600, learnt) for r in arm) for arm in (own, tied)]
    assert early == [38, 5] and late == [76, 29]
    assert "by step 200, 38 of the 80 own-W_U runs had learnt it against 5 of the 80 tied runs, and by step 600, 76 against 29" in text
    medians = [np.median([r["heldout"] for r in arm if learnt_at(r, 600, learnt)]) for arm in (own, tied)]
    assert f"(medians {medians[0]:.2f} with its own W_U, {medians[1]:.2f} tied)" in text
    d, low, high = paired_interval(own, tied, lambda r: rolling_median_low(r["heldout_history"]))
    assert f"under a thousandth of a nat, {d:.4f} [{low:.4f}, {high:.4f}] (a paired bootstrap" in text
    assert low > 0 and "practically level" in text and "more than the luck of the seeds but tiny" in text and "nearly meet" not in text
    n_own = sum(tm.get_weight(tt.init_params(2), w).size for w in tm.weight_names(tt.init_params(2)))
    n_tied = sum(tm.get_weight(tt.init_params(2, tied=True), w).size for w in tm.weight_names(tt.init_params(2, tied=True)))
    assert f"removes {n_own - n_tied} of the toy's {n_own} weights" in text and (n_own, n_tied) == (308, 260)
    assert "regulariser, a constraint" not in text and "documented benefit" not in text
    assert "The mechanism here is different and says nothing about their result" in text


def test_the_lab_says_what_it_measures_and_no_more():
    text = prose()
    assert "memorising the pairs" not in text and "memorising its corpus" not in text
    assert "maximum-likelihood" not in text and text.count("the best fit to the corpus") == 2
    assert "Four facts limit what the sweep can show" in text and "sensitive a run is to a small change" in text
    assert "a model stopped before it tells the cat's places from the dog's wins on this held-out set" in text
    assert "every weight moves by about the learning rate" not in text      # only while g is steady
    assert "Adam's v forgets slowly: its β₂, the share of the old v that each step keeps" in text
    assert "makes it average over about 1,000 steps" in text
    assert inspect.signature(tt.adam_step).parameters["betas"].default[1] == 0.999    # the lab's Adam
    assert "Here early stopping keeps a model from before the subject was learnt: a model stopped before" in text
    assert "On real text, held-out sentences come from the same source as the training text" in text
    assert "Read this first" not in text and "can even beat" not in text
    assert "it has begun to *overfit*" not in text and "starts to memorise" not in text and "by heart" not in text
    assert "It covers that luck only, from seed to seed: every run is scored on the same 14 held-out predictions" in text
    sweep, pick, _ = sweep_facts()
    d, low, high = paired_interval(pick("clipping", "tied"), pick("constant lr", "tied"),
                                   lambda r: rolling_median_low(r["heldout_history"]))
    assert 0 <= d < 0.001 and low < 0 < high                                # level, within luck
    assert "it gives nearly the same probabilities after either animal, close to the pooled shares" in text
    corpus = tt.load_corpus()
    pooled = sum(tt.next_token_counts(corpus, tm.encode(t)) for t in ["the cat climbed the", "the dog climbed the"])
    shares = [pooled[tm.VOCAB.index(p)] / pooled.sum() for p in (" roof", " floor", " roof", " floor")]
    (row,) = [line for line in printed("prompt, dog_prompt").splitlines() if line.startswith("the pooled shares")]
    assert row.split()[-4:] == [f"{x:.3f}" for x in shares] and shares[0] == 4 / 13
    assert "exactly w for any |w| above about 10⁻⁴" in text
    for w in (1.3e-4, -2e-4, 0.3, -2.0, 1e3):       # |w| from 2^-13 = 1.22e-4 up: half a spacing > 1e-20
        assert w + 1e-20 == w and w - 1e-20 == w
    assert 1e-5 + 1e-20 != 1e-5 and np.spacing(2.0 ** -13) / 2 > 1e-20 > np.spacing(2.0 ** -14) / 2
    assert "by 1/√N, N the number of residual layers" in text and "with N = 2L" in text


def test_the_school_maths_steps():
    text = prose()
    r = tm.intermediates()
    assert np.allclose((r["f"] ** 2).sum(axis=1), 4, atol=1e-3) and "f · f is about d = 4" in text
    a = np.array([-1.0, 1.0])
    slope = tt.gelu_backward(np.ones_like(a), a)
    assert slope[0] < 0 and slope[1] > 1 and "overshoots 1" in text
    grid = np.linspace(-3, 3, 60001)                            # GELU's slope by central differences
    measured = (tm.gelu(grid + 1e-6) - tm.gelu(grid - 1e-6)) / 2e-6
    assert -0.8 < grid[measured < 0].max() < -0.7 and 0.7 < grid[measured > 1].min() < 0.8
    assert -1.5 < grid[measured.argmin()] < -1.3 and 1.3 < grid[measured.argmax()] < 1.5
    assert "below about −¾ it is negative, lowest near a = −1.4" in text and "above about ¾" in text
    assert "just below 0 it dips" not in text
    assert "about 0 well below 0 and about 1 well above" not in text
    assert "the slope of tanh t is 1 − tanh² t" in text and "u′v + uv′" in text
    assert "f = [[a, b], [c, d]]" in text
