"""Lab 08's held-out measurement and its measures of chance: the held-out file holds only
sentences the corpus lacks, train() measures the held-out loss step by step, and Fisher's
exact test, the bootstrap interval and Holm's correction give what is computed here in
another way (enumeration, a hand-written hypergeometric law, known cases)."""
import itertools
import re
from math import exp, lgamma

import numpy as np
import pytest

import toy_model as tm
import toy_train as tt
from test_lab08_exercises import notebook, notebook_function


# --- The held-out file --------------------------------------------------------------------

def pairs(corpus):
    """(subject, place) of every 'the X climbed the Y.' of a corpus, as text."""
    found = []
    for seq in corpus:
        words = tm.decode(seq).replace("<|endoftext|>", "").rstrip(".").split(" ")
        if len(words) == 5:
            found.append((words[1], words[4]))
    return found


def test_no_heldout_sentence_is_a_training_sentence_and_each_fits_the_context():
    corpus, heldout = tt.load_corpus(), tt.load_heldout()
    assert heldout and not any(seq in corpus for seq in heldout)
    assert all(seq[-1] == tm.EOT and len(seq) <= tm.N_CTX for seq in heldout)


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


def test_holm_of_the_notebook_on_a_case_worked_by_hand():
    holm = notebook_function("holm")
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> kept at 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and holm([0.2]) == pytest.approx([0.2])


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
