"""Lab 08's held-out measurement and its measures of chance: the held-out file holds only
sentences the corpus lacks, train() measures the held-out loss step by step and can stop
early, and Fisher's exact test and the bootstrap interval give what is computed here in
another way (enumeration, a hand-written hypergeometric law, known cases), as does Holm's
correction of the sweep's 20 pairs of recipes; section 7's spike replayed with an Adam
written here, and the steps its picture marks."""
import itertools
import re
from math import exp, lgamma

import numpy as np
import pytest

import toy_model as tm
import toy_train as tt
import toy_widgets as tw
from test_lab08_exercises import (discordant, learnt_at, levels, mcnemar_p, notebook, notebook_function,
                                 outputs_of, printed, prose, sweep_facts)


# --- The held-out file --------------------------------------------------------------------

def pairs(corpus):
    """(subject, place) of every 'the X climbed the Y.' of a corpus, as text."""
    found = []
    for seq in corpus:
        words = tm.decode(seq).replace("<|endoftext|>", "").rstrip(".").split(" ")
        if len(words) == 5:
            found.append((words[1], words[4]))
    return found


def test_no_heldout_sentence_is_a_training_sentence():
    corpus, heldout = tt.load_corpus(), tt.load_heldout()
    assert heldout and not any(seq in corpus for seq in heldout)


def test_the_heldout_sentences_are_the_corpus_kind_with_every_pair_it_never_shows():
    trained = pairs(tt.load_corpus())
    subjects, places = {s for s, _ in trained}, {p for _, p in trained}
    missing = {(s, p) for s in subjects for p in places} - set(trained)
    held = pairs(tt.load_heldout())
    assert len(held) == len(tt.load_heldout()), "every held-out line is 'the X climbed the Y.'"
    assert missing and set(held) == missing


# --- train() with a held-out set ----------------------------------------------------------

def test_the_heldout_curve_is_the_heldout_loss_of_the_weights_at_each_step():
    corpus, heldout = tt.load_corpus(), tt.load_heldout()
    record = {}
    _, history = tt.train(corpus, steps=12, seed=5, heldout=heldout, record=record)
    assert len(record["heldout"]) == len(history) == 13 and len(record["grad_norm"]) == 12
    for k in (0, 4, 12):         # a constant rate: a shorter run is the start of a longer one
        params, _ = tt.train(corpus, steps=k, seed=5) if k else (tt.init_params(5), None)
        assert record["heldout"][k] == pytest.approx(tt.corpus_loss(heldout, params), abs=1e-12)
    ids, targets = tt.corpus_batch(corpus)
    first = _flat(tt.loss_and_grads(ids, targets, tt.init_params(5))[1])
    assert record["grad_norm"][0] == pytest.approx(np.sqrt((first ** 2).sum()), rel=1e-12)


def _flat(tree):
    out = []
    tm.walk(lambda path, leaf: out.append(np.ravel(leaf)), tree)
    return np.concatenate(out)


# --- Fisher's exact test -----------------------------------------------------------------

def fisher_by_enumeration(hits_a, n_a, hits_b, n_b):
    """Every way of choosing which runs hold the hits, counted: the share of them whose
    split is no likelier than the one seen (likelihood = how many ways give that split)."""
    total, hits = n_a + n_b, hits_a + hits_b
    ways = {}
    for chosen in itertools.combinations(range(total), hits):
        x = sum(i < n_a for i in chosen)
        ways[x] = ways.get(x, 0) + 1
    seen = ways[hits_a]
    return sum(w for w in ways.values() if w <= seen) / sum(ways.values())


def hypergeometric_p(hits_a, n_a, hits_b, n_b):
    def log_comb(n, k):
        return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
    hits = hits_a + hits_b
    law = {x: exp(log_comb(n_a, x) + log_comb(n_b, hits - x) - log_comb(n_a + n_b, hits))
           for x in range(max(0, hits - n_b), min(hits, n_a) + 1)}
    return sum(p for p in law.values() if p <= law[hits_a] * (1 + 1e-7))


@pytest.mark.parametrize("case", [(3, 4, 1, 4), (4, 4, 0, 4), (2, 5, 2, 5), (0, 6, 3, 5), (5, 7, 1, 6)])
def test_fisher_matches_counting_every_split(case):
    assert tt.fisher_exact(*case) == pytest.approx(fisher_by_enumeration(*case), rel=1e-12)


def test_fisher_on_the_tea_tasting_case_and_on_sixteen_seeds():
    assert tt.fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70)       # Fisher's lady tasting tea
    assert tt.fisher_exact(4, 4, 0, 4) == pytest.approx(2 / 70)
    for case in [(4, 16, 11, 16), (0, 16, 2, 16), (2, 16, 6, 16), (12, 16, 1, 16), (16, 16, 0, 16)]:
        assert tt.fisher_exact(*case) == pytest.approx(hypergeometric_p(*case), rel=1e-9)
    assert tt.fisher_exact(7, 16, 7, 16) == 1.0


# --- The bootstrap interval ---------------------------------------------------------------

def test_the_bootstrap_interval_holds_the_true_shift_and_zero_for_no_shift():
    rng = np.random.default_rng(0)
    b = rng.normal(0.3, 0.05, 16)
    same = tt.bootstrap_interval(b, b.copy())
    assert same[0] == 0 and same[1] <= 0 <= same[2]
    diff, low, high = tt.bootstrap_interval(b + 0.2, b)
    assert diff == pytest.approx(0.2) and low < 0.2 < high and low > 0.1 and high < 0.3


def test_the_bootstrap_interval_is_the_middle_of_the_resampled_differences():
    """Written out by hand for the mean: resample each set, take the 2.5 and 97.5 % points."""
    a, b = np.array([0.1, 0.4, 0.2, 0.9, 0.5]), np.array([0.3, 0.2, 0.25, 0.1])
    got = tt.bootstrap_interval(a, b, statistic="mean", n=4000, seed=3)
    rng = np.random.default_rng(3)
    ia, ib = rng.integers(0, 5, (4000, 5)), rng.integers(0, 4, (4000, 4))
    diffs = a[ia].mean(axis=1) - b[ib].mean(axis=1)
    assert got == pytest.approx((a.mean() - b.mean(), *np.quantile(diffs, [0.025, 0.975])))


@pytest.mark.parametrize("call, words", [
    (lambda: tt.fisher_exact(5, 4, 1, 4), "0 <= hits <= runs"),
    (lambda: tt.fisher_exact(1.5, 4, 1, 4), "whole numbers"),
    (lambda: tt.bootstrap_interval([1.0], [1.0, 2.0]), "at least 2 numbers"),
    (lambda: tt.bootstrap_interval([1.0, 2.0], [1.0, 2.0], statistic=np.max), "'median' or 'mean'"),
    (lambda: tt.bootstrap_interval([1.0, 2.0], [1.0, 2.0], level=95), "between 0 and 1"),
    (lambda: tt.train(tt.load_corpus(), steps=2, record=[]), "record must be a dict"),
])
def test_the_measures_of_chance_answer_bad_input_with_a_sentence(call, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        call()


# --- Section 7's run: its spike step by step, and the steps its picture marks ----------------

def adam_by_hand(steps, clip):
    """Section 7's run written again with its own Adam (bias-corrected m and v, beta 0.9 and
    0.999): for each step, (loss before it, gradient length, rms of the step taken / lr, rms of
    the step the same state would take on the uncut gradient / lr)."""
    corpus = tt.load_corpus()
    ids, targets = tt.corpus_batch(corpus)
    params = tt.init_params(2, tied=True)
    names = tm.weight_names(params)
    m = [np.zeros_like(tm.get_weight(params, n)) for n in names]
    v = [np.zeros_like(x) for x in m]
    out = []
    for t in range(1, steps + 1):
        loss, grads = tt.loss_and_grads(ids, targets, params)
        g = [np.array(tm.get_weight(grads, n)) for n in names]
        length = np.sqrt(sum((x ** 2).sum() for x in g))
        def update(factor):                                        # Adam on the gradient times factor
            m2 = [0.9 * a + 0.1 * factor * x for a, x in zip(m, g)]
            v2 = [0.999 * a + 0.001 * (factor * x) ** 2 for a, x in zip(v, g)]
            moves = [0.05 * (a / (1 - 0.9 ** t)) / (np.sqrt(b / (1 - 0.999 ** t)) + 1e-8) for a, b in zip(m2, v2)]
            return m2, v2, moves, np.sqrt(np.mean(np.concatenate([x.ravel() for x in moves]) ** 2)) / 0.05
        uncut = update(1.0)[3]                                     # from the same state, before it moves
        m, v, moves, taken = update(min(1.0, clip / length))
        sizes = taken, uncut
        for n, x in zip(names, moves):
            params = tm.replace_weight(params, n, np.array(tm.get_weight(params, n)) - x)
        out.append((float(loss), float(length), *sizes))
    return out


def test_the_spike_step_by_step_is_what_adam_gives():
    every = adam_by_hand(309, clip=1.0)
    rows = every[304:]                                             # steps 305 to 309
    text = prose()
    loss, length, taken, uncut = (np.array(x) for x in zip(*rows))
    assert length[1] < 1 < min(length[2:])                         # step 306: nothing to cut
    assert "The rise began at step 306, from a gradient 0.216 long, which clipping leaves alone" in text
    assert np.all(uncut[2:] / taken[2:] < 1.6) and np.all(length[2:] / 1 > 1.3)   # the step shrinks far less
    assert (f"At step 309 clipping cut the gradient from {length[4]:.3f} to 1, to a seventh of its length, "
            f"but Adam's step only from {uncut[4]:.3f} to {taken[4]:.3f} times lr, by about a third") in text
    assert 6.5 < length[4] < 7.5 and 0.28 < 1 - taken[4] / uncut[4] < 0.4
    assert f"at step 307, from {length[2]:.3f} to 1, the step went from {uncut[2]:.3f} to {taken[2]:.3f}" in text
    steps = np.array([row[2] for row in every])                    # Adam's step / lr, steps 1 to 309
    flat = steps[99:300]                                           # the flat stretch, steps 100 to 300
    assert (f"over the flat stretch its median was {np.median(flat):.3f} times lr (from {flat.min():.3f} to "
            f"{flat.max():.3f}), and it grew step by step from {steps[299]:.3f} at step 300 to {steps[304]:.3f} "
            "at step 305") in text
    assert np.all(np.diff(steps[299:306]) > 0) and taken[0] > 20 * np.median(flat)   # growing before the rise
    assert f"The steps that raised the loss, {taken[1]:.3f} to {max(taken[2:]):.3f} times lr, carry on that growth" in text
    assert "of the same order as the one before the rise" not in text
    assert length[4] / length[0] > 100 and "the gradient grew more than a hundredfold from step 305 to step 309" in text
    assert "The spikes are short bursts of steps" in text and "single steps that overshoot" not in text
    assert "one step overshoots" not in text and "remembers the flat stretch" not in text


def test_the_live_curve_marks_the_steps_the_prose_points_to():
    """Section 7's picture: thin lines at the step early stopping keeps (330) and where the
    training loss is first 0.01 below the subject-blind level (434), and the level's legend
    entry gives its held-out value beside it."""
    corpus, heldout = tt.load_corpus(), tt.load_heldout()
    best, blind, held = levels()
    tw.train_live(corpus, steps=600, seed=2, heldout=heldout, lr=0.05, clip=1.0, tied=True,
                  levels=[(blind, "subject-blind level", held), (best, "best possible loss")])
    ax = tw.train_live.panel.line.axes
    marks = [line.get_xdata()[0] for line in ax.lines
             if len(line.get_xdata()) == 2 and line.get_xdata()[0] == line.get_xdata()[1]]
    assert marks == [330, 434]
    assert [t.get_text() for t in ax.texts] == ["early stopping, 330", "curves part, 434"]
    assert abs(blind - held) < 0.01                                # one line at the picture's scale
    assert f"subject-blind level, {blind:.3f} (held out {held:.3f}, the same line here)" in [
        t.get_text() for t in ax.get_legend().get_texts()]
    assert "(the right-hand marker)" in prose() and "(the left-hand marker)" in prose()
    fig = ax.figure
    fig.canvas.draw()                                   # the legend below the axes: the spike's top stays in sight
    assert ax.get_legend().get_window_extent().y1 < ax.get_window_extent().y0
    assert max(t.get_window_extent().y1 for t in ax.get_legend().get_texts()) < ax.get_window_extent().y0


# --- Holm's correction over the 20 pairs of recipes within an arm -----------------------------

def holm_by_hand(p):
    """Holm's step-down adjustment written as its definition: for the i-th smallest,
    the largest of (m - j) p_(j) over j <= i, capped at 1."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, (len(p) - rank) * p[i])
        out[i] = min(1.0, running)
    return out


def test_holm_of_the_notebook_on_a_case_worked_by_hand():
    holm = notebook_function("holm")
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> kept at 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and holm([0.2]) == pytest.approx([0.2])


def within_arm_pairs(test):
    """(arm, recipe a, recipe b, seeds only a passed, seeds only b passed, McNemar p) for the 20
    pairs of recipes within an arm, their runs paired by seed."""
    sweep, pick, _ = sweep_facts()
    rows = []
    for arm in ("own W_U", "tied"):
        for a, b in itertools.combinations(sweep["recipes"], 2):
            x, y = (sum(map(test, pick(r, arm))) for r in (a, b))
            only_a, only_b = discordant(pick(a, arm), pick(b, arm), test)
            rows.append((arm, a, b, only_a, only_b, mcnemar_p(only_a, only_b)))
    return rows


def test_after_holms_correction_one_jump_difference_survives():
    _, _, learnt = sweep_facts()
    text = prose()
    jumped = within_arm_pairs(lambda r: max(np.diff(r["history"])) > 0.5)
    adjusted = holm_by_hand([row[-1] for row in jumped])
    assert len(jumped) == 20 and "20 in all" in text
    survivors = [row[:5] for row, q in zip(jumped, adjusted) if q < 0.05]
    assert survivors == [("tied", "constant lr", "warmup + decay + clipping", 11, 0)]
    raw = {row[:5]: row[-1] for row in jumped}
    p = raw[survivors[0]]
    assert f"(11 seeds against 0, p = {p:.2g}, Holm p = {min(adjusted):.2g})" in text and f"{p:.2g}" == "0.00098"
    table = printed("from itertools import combinations")
    for arm, a, b, x, y in [("own W_U", "warmup + decay", "clipping", 6, 0), ("tied", "constant lr", "warmup + decay", 8, 0),
                            ("tied", "clipping", "warmup + decay + clipping", 8, 0)]:
        (line,) = [l for l in table.splitlines() if l.startswith(f"{arm} ") and f" {a} vs {b}  " in l]
        assert f"{x} vs {y}" in line and line.split()[-2] == f"{raw[(arm, a, b, x, y)]:.2g}" and float(line.split()[-1]) > 0.05
    assert sum(p < 0.05 for p in raw.values()) == 4
    assert "four pairs have a McNemar p below 0.05, and only one keeps its Holm p below 0.05" in text
    assert "Fisher p" not in "".join(outputs_of(c) for c in notebook()["cells"] if c["cell_type"] == "code")
    learns = within_arm_pairs(lambda r: learnt_at(r, 600, learnt))
    q = dict(zip([row[:3] for row in learns], holm_by_hand([row[-1] for row in learns])))
    weakest = q[("tied", "clipping", "warmup + decay + clipping")]
    assert weakest > 0.05 and f"not significant even before correction; Holm p = {weakest:.2g} over the 20 pairs" in text
    assert min(q.values()) > 0.05
    assert 40 * p < 0.05 and "taken as one family of 40, the survivor would still pass, since 40 × 0.00098 is below 0.05" in text
    biggest = min(learns, key=lambda row: row[-1])
    assert biggest[:5] == ("tied", "constant lr", "clipping", 0, 7)
    assert (f"with clipping 11 runs learnt the subject, without it 4, in 7 seeds against 0 "
            f"(p = {biggest[-1]:.2g}, Holm p = {q[biggest[:3]]:.2g})") in text


def test_the_comparisons_table_gives_the_tests_as_computed():
    """Going further B's table of the tied comparisons: seeds, McNemar p and Holm p as written here."""
    _, _, learnt = sweep_facts()
    text = prose()
    tests = {"jumped": lambda r: max(np.diff(r["history"])) > 0.5, "learnt": lambda r: learnt_at(r, 600, learnt)}
    holm = {}
    for word, test in tests.items():
        rows = within_arm_pairs(test)
        holm[word] = {row[:3]: (row[3], row[4], row[5], q) for row, q in zip(rows, holm_by_hand([row[-1] for row in rows]))}
    for word, a, b, label in [("jumped", "constant lr", "warmup + decay + clipping", "constant lr vs all three"),
                              ("learnt", "constant lr", "clipping", "constant lr vs clipping"),
                              ("learnt", "clipping", "warmup + decay + clipping", "clipping vs all three")]:
        x, y, p, q = holm[word][("tied", a, b)]
        verdict = "more than luck" if q < 0.05 else "may be luck"
        assert f"| {word}: {label} | {x} vs {y} | {p:.2g} | {q:.2g} | {verdict} |" in text, (word, label)
    slow = [holm["learnt"][("tied", *pair)][:3] for pair in [("warmup + decay + clipping", "clipping, lr = decay's mean"),
                                                             ("clipping", "clipping, lr = decay's mean")]]
    assert slow == [(2, 4, pytest.approx(0.6875)), (7, 2, pytest.approx(0.1797, abs=1e-4))]     # the first recipe of each pair first
    q = [holm["learnt"][("tied", *pair)][3] for pair in [("warmup + decay + clipping", "clipping, lr = decay's mean"),
                                                         ("clipping", "clipping, lr = decay's mean")]]
    assert ("| learnt: clipping at the lower rate vs all three, and vs at 0.05 | 4 vs 2, and 2 vs 7 | 0.69, and 0.18 | "
            f"{q[0]:.2g}, and {q[1]:.2g} | may be luck |") in text and min(q) > 0.05
    assert (f"learnt, tied, Holm p: clipping vs all three {holm['learnt'][('tied', 'clipping', 'warmup + decay + clipping')][3]:.2g} "
            f"· clipping at the lower rate vs all three {q[0]:.2g}, vs at 0.05 {q[1]:.2g}") in printed("from itertools import combinations")


def test_c_counts_the_step_of_learning_by_the_rule_b_defines():
    """The tied run of section 7 learnt the subject at the first step whose median of 20 is below the line."""
    sweep, _, learnt = sweep_facts()
    own = next(r for r in sweep["runs"] if (r["seed"], r["arm"], r["recipe"]) == (2, "own W_U", "clipping"))
    tied = next(r for r in sweep["runs"] if (r["seed"], r["arm"], r["recipe"]) == (2, "tied", "clipping"))
    first = [next(s for s in range(19, 601) if learnt_at(r, s, learnt)) for r in (own, tied)]
    rows = {line.split()[0]: line.split() for line in printed("own = next(run for run").splitlines()[:5]}
    assert int(rows["own"][3]) == first[0] and int(rows["tied,"][5]) == first[1] == 448


def test_adams_step_is_about_the_learning_rate_whatever_the_gradient():
    """Section 7: while a gradient keeps its size and sign, m/sqrt(v) is about 1, so a weight moves by about lr."""
    params = {"w": np.zeros(3)}
    for size in (1e-4, 1.0, 1e3):
        state, w = None, params
        for _ in range(5):
            new, state = tt.adam_step(w, {"w": np.array([size, -size, 2 * size])}, state, lr=0.05)
            step, w = new["w"] - w["w"], new
        assert np.allclose(step, [-0.05, 0.05, -0.05], rtol=1e-3)


def test_the_main_path_reads_in_one_sitting():
    """Everything before Going further: at most 4,000 words of prose, with the five exercises on it."""
    cells = notebook()["cells"]
    end = next(i for i, c in enumerate(cells) if "".join(c["source"]).startswith("## Going further"))
    main = ["".join(c["source"]) for c in cells[:end] if c["cell_type"] == "markdown"]
    words = sum(len(re.sub(r"[$*#|`]", " ", m).split()) for m in main)
    assert words <= 4000, words
    code = "".join("".join(c["source"]) for c in cells[:end] if c["cell_type"] == "code")
    assert all(f'tw.exercise("08.{k}"' in code for k in range(1, 6))
    assert "maximum-likelihood" not in "".join(main)


def test_the_main_paths_asides_are_gathered_under_a_heading_of_their_own_in_a():
    """Section 4's pointers to Going further A land under one heading that names them, and A's summary names them too."""
    cells = [("".join(c["source"]), c["cell_type"]) for c in notebook()["cells"]]
    start = next(i for i, (s, _) in enumerate(cells) if s.startswith("## Going further"))
    topics = ["LayerNorm's rule on the example", "GELU's slope", "equal entries", "autograd"]
    heading = None
    for text, kind in cells[start:]:
        heading = next((line for line in text.splitlines() if line.startswith("#")), heading) if kind == "markdown" else heading
        for bold in ["**LayerNorm's rule on the example.**", "**GELU's slope.**", "**Equal entries", "**Autograd.**"]:
            if bold in text:
                assert heading.startswith("#### Asides to sections 4 and 5") and all(t in heading for t in topics), (bold, heading)
    assert "gathers the asides of sections 4 and 5 (LayerNorm's rule on the example, GELU's slope, equal gradient entries, autograd)" in cells[start][0]
    main = "\n".join(s for s, kind in cells[:start] if kind == "markdown")
    assert "a stretch along x̂ (adding c · x̂ to a row stretches y − μ and σ alike, so x̂ stays as it was; Going further A checks it)" in main
    assert "(Going further A says where)" in main and "Going further A says why" in main and "Going further A says how" in main
    y = tm.run()["y"]                                                   # a stretch along x̂ raises σ by about c
    sigma = np.sqrt(y.var(axis=-1) + 1e-5)
    xhat = (y - y.mean(axis=-1, keepdims=True)) / sigma[:, None]
    assert np.allclose(np.sqrt((y + 0.5 * xhat).var(axis=-1) + 1e-5) - sigma, 0.5, atol=1e-4)
