"""toy_model.py: the Output page's figures, invariants, an independent reference, bad input."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import reference as ref
import toy_checks
import toy_model as tm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import output_page as page  # noqa: E402  (the Output page's figures, typed once)

TEXT = page.TEXT


# --- The figures of the Output page, typed from the spec ------------------------------

def _figures(dtype):
    """Every figure of the page, computed by the model (float64 or float32 throughout)."""
    params = ref.cast(tm.PARAMS, dtype)
    r = {}
    tm.forward(tm.encode(TEXT), params, trace=r)
    y5 = r["y"][-1]
    z = r["logits"][-1]
    e = np.exp(z)
    p = e / e.sum()
    figs = {f"y5[{i}]": y5[i] for i in range(4)}
    figs.update({"mean": y5.mean(), "sum": y5.sum(), "std": y5.std()})
    figs.update({f"f5[{i}]": r["f"][-1][i] for i in range(4)})
    for j, tok in enumerate(tm.VOCAB):
        figs.update({f"z {tm.token_name(tok)}": z[j], f"e^z {tm.token_name(tok)}": e[j], f"p {tm.token_name(tok)}": p[j]})
    figs["sum e^z"] = e.sum()
    targets = tm.encode(TEXT)[1:] + [tm.VOCAB.index(" roof")]
    probs = tm.softmax(r["logits"])
    for i, t in enumerate(targets):
        figs[f"row {i + 1} p(target)"] = probs[i, t]
        figs[f"row {i + 1} -ln p"] = -np.log(probs[i, t])
    figs["mean loss"] = np.mean([-np.log(probs[i, t]) for i, t in enumerate(targets)])
    off = tm.softmax(tm.forward(tm.encode(TEXT), tm.switch_off(params, "attn"))[-1])
    for tok in (" cat", " dog", " roof"):
        figs[f"attention off p {tm.token_name(tok)}"] = off[tm.VOCAB.index(tok)]
    return figs


PAGE = {f"y5[{i}]": v for i, v in enumerate(page.Y5)}
PAGE.update({"mean": page.MEAN, "sum": page.SUM, "std": page.STD, "sum e^z": page.SUM_E,
             "mean loss": page.MEAN_LOSS})
PAGE.update({f"f5[{i}]": v for i, v in enumerate(page.F5)})
for i, (p, nll) in enumerate(page.ROWS):
    PAGE.update({f"row {i + 1} p(target)": p, f"row {i + 1} -ln p": nll})
for tok, p in page.ATTENTION_OFF.items():
    PAGE[f"attention off p {tm.token_name(tok)}"] = p
for tok, (z, e, p) in page.LAST_ROW.items():
    PAGE.update({f"z {tm.token_name(tok)}": z, f"e^z {tm.token_name(tok)}": e, f"p {tm.token_name(tok)}": p})

@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_every_figure_of_the_page(dtype):
    figs = _figures(dtype)
    wrong = [f"{name}: {figs[name]:.6f} vs {PAGE[name]}" for name in sorted(PAGE)
             if not abs(figs[name] - PAGE[name]) < page.TOL]
    assert not wrong and len(PAGE) > 60, wrong


def test_most_likely_token_at_every_position():
    p = tm.intermediates(TEXT)["p"]
    assert [tm.token_name(int(i)) for i in p.argmax(1)] == ["␣cat", "␣climb", "ed", "␣the", "␣roof"]


def test_sorted_order_of_the_last_row():
    z = tm.intermediates(TEXT)["logits"][-1]
    order = [tm.token_name(int(j)) for j in np.argsort(-z)]
    assert order == ["␣roof", "␣wall", "␣sofa", "␣floor", "␣cat", "␣dog", "␣the", "ed", "the",
                     "<|endoftext|>", "␣climb", "'.'"]


def test_entropy_of_a_uniform_guess_is_ln_12_and_of_a_certain_one_0():
    assert abs(tm.entropy(np.full(12, 1 / 12)) - page.UNIFORM_LOSS) < page.TOL
    assert tm.entropy(np.eye(12)[6]) == 0
    p = tm.intermediates(TEXT)["p"][-1]
    assert np.isclose(tm.entropy(p), -sum(q * math.log(q) for q in p))


def test_the_mean_loss_is_the_pages_and_log_softmax_is_ln_p():
    """cross_entropy (the page's figure is the mean of -ln p computed from softmax above)."""
    r = tm.intermediates(TEXT)
    targets = tm.encode(TEXT)[1:] + [tm.VOCAB.index(" roof")]
    assert abs(tm.cross_entropy(r["logits"], targets) - page.MEAN_LOSS) < page.TOL
    z = r["logits"]
    by_hand = [[zj - math.log(sum(math.exp(a) for a in row)) for zj in row] for row in z]
    assert np.allclose(tm.log_softmax(z), by_hand, atol=1e-12)


def test_tied_weights_favour_the_token_itself():
    p = tm.intermediates(TEXT, params=tm.tie(tm.PARAMS))["p"][-1]
    assert tm.VOCAB[int(p.argmax())] == " the"


def test_attention_off_is_ln_of_d4_alone():
    """With h = x, the last row's p over all 12 tokens is, at the page's precision, that of
    f = LN of a vector along d4 alone (the spec's note)."""
    p = tm.intermediates(TEXT, params=tm.switch_off(tm.PARAMS, "attn"))["p"][-1]
    along_d4 = tm.softmax(tm.layer_norm(np.array([0, 0, 0, 1.0]), 1, 0) @ tm.PARAMS["w_u"])
    assert np.abs(p - along_d4).max() < 5e-4


def test_greedy_generation_ends_cleanly():
    steps = tm.generate(TEXT)
    assert [tm.VOCAB[s["next"]] for s in steps] == [" roof", ".", "<|endoftext|>"]
    assert tm.decode(tm.encode(TEXT) + [s["next"] for s in steps]) == \
        "the cat climbed the roof.<|endoftext|>"


# --- The shared reference (tests/reference.py): GPT-2 written again, loop by loop ----------
# (On random models, with every option of forward and generate: test_forward_combinations.py.)

def test_matches_the_loop_reference_on_the_toy():
    ids = tm.encode("the cat climbed the roof.")
    assert np.allclose(tm.forward(ids), ref.forward(ids, tm.PARAMS, tm.N_HEAD), atol=1e-12)


# --- Invariants -----------------------------------------------------------------------

@pytest.mark.parametrize("shift", [-1000.0, -3.0, 0.5, 10.0, 1000.0])
def test_softmax_ignores_a_constant_shift(shift):
    z = tm.intermediates(TEXT)["logits"][-1]
    assert np.allclose(tm.softmax(z + shift), tm.softmax(z), atol=1e-12)


@pytest.mark.parametrize("j", range(5))
def test_changing_a_token_never_changes_an_earlier_row(j):
    ids = tm.encode(TEXT)
    for other in range(len(tm.VOCAB)):
        changed = ids[:j] + [other] + ids[j + 1:]
        assert np.allclose(tm.forward(ids)[:j], tm.forward(changed)[:j], atol=1e-12)


@pytest.mark.parametrize("head", [0, 1])
def test_attention_rows_sum_to_one_and_hide_the_future(head):
    w = tm.intermediates(TEXT)["heads"][head]["weights"]
    assert np.allclose(w.sum(1), 1) and np.all(w[np.triu_indices(5, 1)] == 0)


def test_layer_norm_has_mean_0_and_std_1():
    f = tm.intermediates(TEXT)["f"]
    assert np.allclose(f.mean(1), 0) and np.allclose(f.std(1), 1, atol=1e-4)


def test_temperature_zero_is_greedy_and_top_k_one_too():
    z = tm.intermediates(TEXT)["logits"][-1]
    greedy = tm.next_token_probs(z, 0)
    assert greedy.max() == 1 and tm.VOCAB[int(greedy.argmax())] == " roof"
    assert np.array_equal(tm.next_token_probs(z, 1.0, top_k=1), greedy)


def test_high_temperature_approaches_uniform():
    z = tm.intermediates(TEXT)["logits"][-1]
    assert np.allclose(tm.next_token_probs(z, 1e6), 1 / 12, atol=1e-5)


def test_top_k_and_top_p_keep_the_right_tokens():
    """On the toy's last row (the rule on random logits: test_sampling_filters_match_the_reference_...):
    top-p 0.5 keeps ␣roof 0.395 + ␣wall 0.141; top-p is measured after top-k: at k = 3 the
    three renormalised give ␣roof 0.632, so top-p 0.6 keeps it alone (measured before top-k
    it would need ␣wall and ␣sofa too)."""
    z = tm.intermediates(TEXT)["logits"][-1]

    def kept(**filters):
        return [tm.token_name(int(j)) for j in np.nonzero(tm.next_token_probs(z, 1.0, **filters))[0]]
    assert kept(top_k=3) == kept(top_p=0.6) == ["␣roof", "␣wall", "␣sofa"]
    assert kept(top_p=0.5) == ["␣roof", "␣wall"] and kept(top_k=3, top_p=0.6) == ["␣roof"]
    assert np.allclose(tm.next_token_probs(z, 1.0, top_p=1.0), tm.softmax(z), rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed, temperatures", [(18, [1.0, 0.333, 2.0, 1.0]), (5, [2.0, 0.0, 3.0, 0.5]),
                                                (0, [1.0, 1.0, 1.0, 1.0])])
def test_generate_goes_on_drawing_from_a_generator_it_is_given(seed, temperatures):
    """One step at a time (max_new=1) with one Generator, as the stepper asks, the temperature
    changed between steps: each step's p and draw are those of tests/reference.py's loop."""
    want = ref.sampled_steps(tm.forward, tm.encode("the"), temperatures, seed)
    mine, ids = np.random.default_rng(seed), tm.encode("the")
    for T, (context, p, nxt) in zip(temperatures, want, strict=True):
        (step,) = tm.generate(ids, T, seed=mine, max_new=1)
        assert step["ids"] == context and step["next"] == nxt
        np.testing.assert_allclose(step["p"], p, rtol=0, atol=1e-12)
        ids = ids + [nxt]
    if temperatures == [1.0] * 4:                  # one call with the seed writes the same text
        assert [s["next"] for s in tm.generate("the", 1.0, seed=seed)][:4] == [w[2] for w in want]


def test_sampling_filters_match_the_reference_on_random_logits():
    rng = np.random.default_rng(3)
    for _ in range(300):
        z = rng.normal(0, rng.uniform(0.5, 4), rng.integers(2, 30))
        t = float(rng.choice([0.25, 0.7, 1.0, 2.0]))
        k = None if rng.random() < 0.3 else int(rng.integers(1, len(z) + 1))
        top_p = None if rng.random() < 0.3 else float(rng.uniform(0.05, 1.0))
        assert np.allclose(tm.next_token_probs(z, t, k, top_p), ref.sampling_filter(z, t, k, top_p),
                           atol=1e-12), (z, t, k, top_p)


def test_sampling_follows_p():
    p = tm.intermediates(TEXT)["p"][-1]
    rng = np.random.default_rng(0)
    counts = np.bincount([tm.sample(p, rng) for _ in range(5000)], minlength=12) / 5000
    assert np.abs(counts - p).max() < 0.03                 # over 4 standard deviations


# --- Bad input: a clear ValueError that says what is allowed, or a finite right answer ---

def test_a_sample_takes_a_seed_or_a_generator():
    p = tm.intermediates(TEXT)["p"][-1]
    assert tm.sample(p, 7) == tm.sample(p, np.random.default_rng(7))


def test_a_tiny_temperature_is_greedy_not_an_error():
    z = tm.intermediates(TEXT)["logits"][-1]
    for t in (1e-300, 5e-324):
        assert np.array_equal(tm.next_token_probs(z, t), tm.next_token_probs(z, 0))


def test_the_weights_refuse_every_change_and_a_copy_is_ordinary():
    """The tree (dicts, lists, the vocabulary) refuses every change in the course's one
    sentence; numpy refuses every write into an array (it lies over immutable bytes);
    copies and results are ordinary writable arrays; the model still gives its p."""
    import copy
    import pickle
    p_roof = tm.intermediates(TEXT)["p"][-1][tm.VOCAB.index(" roof")]
    p, blk, W = tm.PARAMS, tm.PARAMS["blocks"][0], tm.PARAMS["wte"]
    tree_changes = [lambda: p.__setitem__("w_u", 1), lambda: p.__delitem__("w_u"), lambda: p.update(w_u=1),
                    lambda: p.pop("w_u"), p.popitem, p.clear, lambda: p.setdefault("x", 1),
                    lambda: p.__ior__({"w_u": 1}), lambda: blk.__setitem__("ln_1", {}),
                    lambda: blk["mlp"]["c_fc"].update(w=0), lambda: p["blocks"].append(blk),
                    lambda: p["blocks"].extend([blk]), lambda: p["blocks"].insert(0, blk),
                    lambda: p["blocks"].remove(blk), p["blocks"].pop, p["blocks"].clear,
                    lambda: p["blocks"].sort(key=id), p["blocks"].reverse,
                    lambda: p["blocks"].__setitem__(0, {}), lambda: p["blocks"].__delitem__(0),
                    lambda: p["blocks"].__iadd__([blk]), lambda: p["blocks"].__imul__(2),
                    lambda: tm.VOCAB.append(" bird"), lambda: tm.VOCAB.__setitem__(2, " bird")]
    for change in tree_changes:
        with pytest.raises(ValueError) as info:
            change()
        assert str(info.value) == toy_checks.READ_ONLY_SENTENCE
    writes = [lambda: W.__setitem__((0, 0), 5), lambda: W[0].__setitem__(0, 5), lambda: W.T.__setitem__((0, 0), 5),
              lambda: W.__iadd__(1), lambda: W[0].__imul__(2), lambda: np.add(W, 1, out=W),
              lambda: np.add.at(W, 0, 1), lambda: np.copyto(W, 0), lambda: setattr(W.flags, "writeable", True),
              lambda: W.setflags(write=True), lambda: W.view(np.ndarray).setflags(write=True),
              lambda: np.asarray(W).__setitem__((0, 0), 5), lambda: W.fill(0), lambda: W[0].sort(),
              lambda: W.put(0, 1), lambda: W.base.setflags(write=True)]
    for write in writes:
        with pytest.raises(ValueError, match="read-only|WRITEABLE"):
            write()
    for mine in (tm.copy_params(), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(mine) is dict and type(mine["blocks"]) is list
        mine["blocks"].append(mine["blocks"][0])
        mine["wte"][0, 0] = 5
    for result in (W + 1, W[[1, 2]], W.copy(), W @ p["w_u"], np.exp(W)):
        assert type(result) is np.ndarray and result.flags.writeable
    assert repr(p) == repr(copy.deepcopy(p))                   # prints as a plain dict
    assert tm.intermediates(TEXT)["p"][-1][tm.VOCAB.index(" roof")] == p_roof and "w_u" in p
    mine = tm.copy_params()
    mine["wte"][tm.VOCAB.index(" climb")] = 0                  # a copy changes what the model says
    assert tm.intermediates(TEXT, params=mine)["p"][-1][tm.VOCAB.index(" roof")] < 0.2
    assert tm.intermediates(TEXT)["x"].flags.writeable and repr(W).startswith("array(")


@pytest.mark.parametrize("attribute, value", [("shape", (48,)), ("shape", (4, 12)), ("dtype", np.int64)])
def test_a_weight_reshaped_in_place_gets_a_sentence_not_a_wrong_answer(attribute, value):
    """numpy lets W.shape and W.dtype be set in place: the next forward pass names the weight."""
    W = tm.PARAMS["wte"]
    before = getattr(W, attribute)
    setattr(W, attribute, value)
    try:
        with pytest.raises(ValueError, match=r"The weight '\w+' has shape"):
            tm.intermediates(TEXT)
    finally:
        setattr(W, attribute, before)


def test_sample_takes_float32_rows_and_the_pieces_take_lists():
    rng = np.random.default_rng(0)
    for _ in range(20):
        z = rng.normal(0, 3, 50257)
        assert 0 <= tm.sample((np.exp(z - z.max()) / np.exp(z - z.max()).sum()).astype(np.float32), 0) < 50257
    assert tm.sample(np.array([0.5, 0.500001], np.float32), 1) in (0, 1)
    assert np.allclose(tm.layer_norm([0, 2, 2, 8], 1, 0), tm.layer_norm(np.array([0.0, 2, 2, 8]), 1, 0))
    q = [[1.0, 0.0], [0.0, 1.0]]
    assert np.allclose(tm.attention(q, q, q), tm.attention(np.array(q), np.array(q), np.array(q)))
    assert tm.layer_norm(np.ones((2, 4), np.float32), 1, 0).dtype == np.float32


