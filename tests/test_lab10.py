"""Lab 10's module: the copying task, the heads' scores, ablation, the stored sweep and the
shipped checkpoint. Scores and ablations are recomputed here by hand from the weights."""
import sys
from pathlib import Path

import numpy as np
import pytest

import reference as ref
import toy_gpt2 as tg
import toy_induction as ti
import toy_model as tm
import toy_train as tt

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("filler_first", [True, False, None])
def test_each_row_holds_a_block_of_distinct_ids_twice_and_distinct_filler(filler_first):
    rows, where = ti.repeat_rows(5, 200, filler_first=filler_first)
    assert rows.shape == (200, ti.COPY_N_CTX + 1) and rows.min() >= 0 and rows.max() < ti.COPY_VOCAB
    places = set()
    for row, (l, s1, s2) in zip(rows, where):
        assert l in ti.LENGTHS and s2 == s1 + l
        assert list(row[s1:s1 + l]) == list(row[s2:s2 + l])
        others = list(row[:s1]) + list(row[s2 + l:])
        assert len(set(row[s1:s1 + l]) | set(others)) == l + len(others) == ti.COPY_N_CTX + 1 - l
        places.add(s1 == 0)
        if filler_first is not None:
            assert (s1 > 0) == filler_first                # 17 - 2 l >= 1 filler ids
    assert places == ({False, True} if filler_first is None else {not filler_first})


def test_the_second_copy_mask_marks_exactly_the_predictable_targets():
    rows, where = ti.repeat_rows(6, 50, filler_first=True)
    ids, targets = ti.as_batch(rows)
    mask = ti.second_copy_mask(where)
    for r, row in enumerate(rows):
        for i in range(ti.COPY_N_CTX):
            earlier = [j for j in range(i) if ids[r, j] == ids[r, i]]
            predictable = bool(earlier) and targets[r, earlier[0]] == targets[r, i]
            assert mask[r, i] == predictable, (r, i)


def attention_by_hand(params, ids, layer):
    """One head per block: layer's weights [B, n, n], from the shared reference."""
    traces = [{} for _ in ids]
    for row, trace in zip(ids, traces):
        ref.forward(row, params, 1, trace=trace)
    return np.array([trace["blocks"][layer]["weights"][0] for trace in traces])


def test_scores_are_the_attention_one_back_and_after_the_earlier_copy():
    params = ti.new_copy_model(1)
    rows, where = ti.repeat_rows(7, 20, filler_first=True)
    ids = ti.as_batch(rows)[0]
    scores = ti.head_scores(params, 1, rows, where)
    for layer in range(2):
        w = attention_by_hand(params, ids, layer)
        assert np.allclose(ti.attention_weights(params, 1, ids)[layer][0], w)
        prev = np.mean([w[r, i, i - 1] for r in range(len(ids)) for i in range(1, ti.COPY_N_CTX)])
        ind = np.mean([w[r, i, i - l + 1] for r, (l, s1, s2) in enumerate(where)
                       for i in range(s2, s2 + l - 1)])
        assert scores["previous"][layer][0] == pytest.approx(prev)
        assert scores["induction"][layer][0] == pytest.approx(ind)


def test_a_perfect_pattern_scores_one_and_a_uniform_one_its_share():
    n = 6
    one_back = np.eye(n, k=-1)
    one_back[0, 0] = 1
    assert ti.previous_token_score(one_back[None]) == pytest.approx(1)
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    assert ti.previous_token_score(uniform[None]) == pytest.approx(np.mean(1 / np.arange(2, n + 1)))


def test_ablating_a_head_removes_exactly_its_output():
    params = tt.init_params(3, d=8, d_mlp=0, n_layer=2, n_vocab=ti.COPY_VOCAB, n_ctx=ti.COPY_N_CTX)
    ids = ti.as_batch(ti.repeat_rows(1, 4)[0])[0]
    off = ti.ablate(params, 1, 1, 2)
    trace = {}
    tm.forward(ids, params, 2, trace=trace)
    head = trace["blocks"][1]["heads"][1]["out"]             # [B, n, 4]
    w_o = params["blocks"][1]["attn"]["c_proj"]["w"][4:]
    after = tm.forward(ids, off, 2, trace=(t2 := {}))
    assert np.allclose(t2["blocks"][1]["y"], trace["blocks"][1]["y"] - head @ w_o)
    assert np.array_equal(tm.get_weight(off, "blocks.0.attn.c_proj.w"),
                          tm.get_weight(params, "blocks.0.attn.c_proj.w"))
    assert after.shape == (4, ti.COPY_N_CTX, ti.COPY_VOCAB)
    with pytest.raises(ValueError, match="head from 0 to 1"):
        ti.ablate(params, 0, 2, 2)


def test_the_copy_losses_are_the_mean_loss_over_each_copy():
    params = ti.new_copy_model(2)
    rows, where = ti.repeat_rows(8, 30, filler_first=True)
    ids, targets = ti.as_batch(rows)
    p = tm.softmax(tm.forward(ids, params, 1))
    nll = -np.log(np.take_along_axis(p, targets[..., None], -1)[..., 0])
    first, second = ti.copy_losses(params, 1, rows, where)
    assert second == pytest.approx(nll[ti.second_copy_mask(where)].mean())
    assert first == pytest.approx(nll[ti.first_copy_mask(where)].mean())
    assert second == pytest.approx(np.log(ti.COPY_VOCAB), abs=0.5)          # a fresh model: near a guess


def test_a_short_run_keeps_its_measurements_and_snapshots_in_step():
    seen = []
    run = ti.train_copying(4, steps=60, every=20, callback=lambda *a: seen.append(a))
    assert run["steps"] == [0, 20, 40, 60] and len(run["snapshots"]) == 4
    assert [s for s, _, _ in seen] == run["steps"]
    rows, where = ti.repeat_rows(10_004, 256)                        # both kinds of row
    for snap, second in zip(run["snapshots"], run["second"]):
        assert ti.copy_losses(snap, 1, rows, where)[1] == pytest.approx(second)
    assert tm.weight_names(run["snapshots"][-1]) == tm.weight_names(run["params"])


def trained_pair():
    """A model with some structure (the shipped checkpoint) and rows of both kinds."""
    return ti.load_copy_model(), ti.repeat_rows(31, 40)


def test_composed_forward_is_the_forward_when_nothing_is_removed():
    params, (rows, where) = trained_pair()
    ids = ti.as_batch(rows)[0]
    logits, weights = ti.composed_forward(params, ids)
    assert np.allclose(logits, tm.forward(ids, params, 1), atol=1e-6)
    assert np.allclose(weights[0], ti.attention_weights(params, 1, ids)[1][0], atol=1e-6)
    two = tt.init_params(3, d=8, d_mlp=0, n_layer=2, n_vocab=ti.COPY_VOCAB, n_ctx=ti.COPY_N_CTX)
    assert np.allclose(ti.composed_forward(two, ids, n_head=2)[0], tm.forward(ids, two, 2))


def test_removing_block_1s_head_from_keys_only_is_written_out_by_hand():
    """Block 2's keys from the stream less block 1's head's output; its queries and values,
    and the residual stream, from the whole stream."""
    params, (rows, where) = trained_pair()
    ids = ti.as_batch(rows)[0][:3]
    b1, b2 = params["blocks"]
    n = ids.shape[1]
    causal = np.tril(np.ones((n, n), bool))

    def ln(x, p):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * p["g"] + p["b"]

    def soft(s):                                            # the causal softmax, by row
        s = np.where(causal, s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    x = params["wte"][ids] + params["wpe"][:n]
    q, k, v = np.split(ln(x, b1["ln_1"]) @ b1["attn"]["c_attn"]["w"] + b1["attn"]["c_attn"]["b"], 3, -1)
    head = soft(q @ k.swapaxes(1, 2) / np.sqrt(q.shape[-1])) @ v @ b1["attn"]["c_proj"]["w"]
    h = x + head + b1["attn"]["c_proj"]["b"]
    w, b, d = b2["attn"]["c_attn"]["w"], b2["attn"]["c_attn"]["b"], h.shape[-1]
    q2 = ln(h, b2["ln_1"]) @ w[:, :d] + b[:d]
    k2 = ln(h - head, b2["ln_1"]) @ w[:, d:2 * d] + b[d:2 * d]
    v2 = ln(h, b2["ln_1"]) @ w[:, 2 * d:] + b[2 * d:]
    att = soft(q2 @ k2.swapaxes(1, 2) / np.sqrt(d))
    y = h + att @ v2 @ b2["attn"]["c_proj"]["w"] + b2["attn"]["c_proj"]["b"]
    logits, weights = ti.composed_forward(params, ids, removed="k")
    assert np.allclose(weights[0], att, atol=1e-5)
    assert np.allclose(logits, ln(y, params["ln_f"]) @ params["w_u"], atol=1e-4)
    with pytest.raises(ValueError, match="'q', 'k' and 'v'"):
        ti.composed_forward(params, ids, removed="x")


def test_composition_losses_none_is_the_copy_loss_and_the_score():
    params, (rows, where) = trained_pair()
    out = ti.composition_losses(params, rows, where)
    assert out["none"][0] == pytest.approx(ti.copy_losses(params, 1, rows, where)[1], abs=1e-6)
    assert out["none"][1] == pytest.approx(ti.head_scores(params, 1, rows, where)["induction"][1][0], abs=1e-6)
    assert out["k"][0] > 1 > 0.2 > out["q"][0]                      # the keys carry it


def test_mcnemar_is_the_two_sided_binomial_of_the_discordant_seeds():
    from math import comb
    a = [True] * 6 + [False] * 2 + [True, False]                 # 6 both, 2 neither,
    b = [True] * 6 + [False] * 2 + [False, False]                # 1 only a
    assert ti.mcnemar_exact(a, b) == (1, 0, 1.0)
    a, b = [True] * 8 + [False] * 2, [False] * 9 + [True]          # 8 only a, 1 only b
    only_a, only_b, p = ti.mcnemar_exact(a, b)
    assert (only_a, only_b) == (8, 1)
    assert p == pytest.approx(2 * (comb(9, 0) + comb(9, 1)) / 2 ** 9)   # 0.0390625
    assert ti.mcnemar_exact([True] * 8 + [False] * 2, [False] * 10)[2] == pytest.approx(2 / 2 ** 8)
    assert ti.mcnemar_exact([True, False], [True, False])[2] == 1.0     # no discordant seed
    with pytest.raises(ValueError, match="True and False"):
        ti.mcnemar_exact([1, 0], [0, 1])


def ov_by_hand(params, rows, where):
    trace = {}
    ids = ti.as_batch(rows)[0]
    tm.forward(ids, params, 1, trace=trace)
    b2, t2 = params["blocks"][1], trace["blocks"][1]
    d = params["wte"].shape[1]
    margins = []
    for r, i in zip(*np.nonzero(ti.second_copy_mask(where))):
        j = int(np.argmax(t2["heads"][0]["weights"][r, i]))
        o = (t2["ln1"][r, j] @ b2["attn"]["c_attn"]["w"][:, 2 * d:] + b2["attn"]["c_attn"]["b"][2 * d:]) @ b2["attn"]["c_proj"]["w"]
        y = trace["y"][r, i]
        rise = (o - o.mean()) / np.sqrt(y.var() + 1e-5) * params["ln_f"]["g"] @ params["w_u"]
        margins.append(rise[ids[r, j]] - np.delete(rise, ids[r, j]).mean())
    return np.mean(margins)


def test_ov_copying_reads_the_attended_sources_write_through_the_unembedding():
    params, (rows, where) = trained_pair()
    ov = ti.ov_copying(params, rows, where)
    assert ov["margin"] == pytest.approx(ov_by_hand(params, rows, where), rel=1e-5)
    assert ov["margin"] > 1 and ov["top"] > 0.5
    # The same rise added to every token's logit (a constant column added to W_U's rows)
    # changes no margin; switching block 2's head off leaves nothing to copy.
    shifted = tm.replace_weight(params, "w_u", params["w_u"] + np.arange(params["w_u"].shape[0])[:, None] * 0.3)
    assert ti.ov_copying(shifted, rows, where)["margin"] == pytest.approx(ov["margin"], rel=1e-5)
    off = ti.ov_copying(ti.ablate(params, 1, 0, 1), rows, where)
    assert off["margin"] == pytest.approx(0, abs=1e-9) and off["top"] == 0


def test_attention_by_offset_adds_up_to_one_and_starts_with_the_previous_token_score():
    params, (rows, where) = trained_pair()
    w = ti.attention_weights(params, 1, ti.as_batch(rows)[0])[0][0]
    share = ti.attention_by_offset(w)
    assert share.sum() == pytest.approx(1) and share[1] == pytest.approx(ti.previous_token_score(w))
    by_hand = [np.mean([w[r, i, i - k] if i >= k else 0 for r in range(len(w)) for i in range(1, ti.COPY_N_CTX)])
               for k in range(ti.COPY_N_CTX)]
    assert np.allclose(share, by_hand)


def test_the_best_first_copy_loss_is_an_even_bet_on_the_ids_not_read_yet():
    # l = 2, n = 3, filler after: the first copy's one target comes after 1 id read
    assert ti.best_first_copy_loss(False, lengths=(2,), n=3, vocab=4) == pytest.approx(np.log(3))
    by_hand = [np.log(ti.COPY_VOCAB - m) for l in ti.LENGTHS for m in range(ti.COPY_N_CTX + 2 - 2 * l, ti.COPY_N_CTX + 1 - l)]
    assert ti.best_first_copy_loss(True) == pytest.approx(np.mean(by_hand))
    params = ti.load_copy_model()                              # no trained model does better
    for first in (True, False, None):
        rows, where = ti.repeat_rows(2024, 512, filler_first=first)
        assert ti.best_first_copy_loss(first) - 0.03 < ti.copy_losses(params, 1, rows, where)[0] < np.log(ti.COPY_VOCAB)


def test_the_hand_built_one_block_model_bets_on_the_ids_three_to_seven_back():
    model = ti.position_model()
    assert len(model["blocks"]) == 1 and tm.weight_names(model)[:2] == ["wte", "wpe"]
    rows, where = ti.repeat_rows(12, 64, filler_first=True)
    w = ti.attention_weights(model, 1, ti.as_batch(rows)[0])[0][0][0]
    for i in range(7, ti.COPY_N_CTX):
        assert np.allclose(w[i, i - 7:i - 2], 0.2, atol=1e-6)
    # filler first: every second-copy position has 5 ids 3 to 7 back, and the next is one
    assert ti.copy_losses(model, 1, rows, where)[1] == pytest.approx(np.log(5), abs=0.01)


# --- The stored sweep and what the lab says of it ------------------------------------------

SWEEP = ti.load_copy_sweep()


def runs(setting):
    return [r for r in SWEEP["runs"] if r["setting"] == setting]


SETTINGS = ("two blocks", "two blocks, other batches", "one block", "one block, two heads",
            "one block, l = 8 only")


def test_the_sweep_has_ten_seeds_of_each_setting_with_the_labs_recipe():
    assert (SWEEP["steps"], SWEEP["lr"], SWEEP["batch"], SWEEP["clip"]) == (ti.STEPS, ti.LR, ti.BATCH, ti.CLIP)
    for setting in SETTINGS:
        assert sorted(r["seed"] for r in runs(setting)) == list(range(10)), setting
        assert all(r["steps"][-1] == SWEEP["steps"] for r in runs(setting))


def copies(r, place="both"):
    return r["final"][place] < 0.1


def test_the_sweep_says_what_the_lab_says():
    guess = np.log(ti.COPY_VOCAB)
    for setting in ("two blocks", "two blocks, other batches"):      # 9 of 10 on each kind of row
        for place in ("filler first", "block first", "both"):
            assert sum(copies(r, place) for r in runs(setting)) >= 9, (setting, place)
    for setting in ("one block", "one block, two heads"):             # no seed copies
        assert all(1.0 < r["final"]["both"] < guess for r in runs(setting)), setting
    assert all(r["own_second"] < r["final_second"] for r in runs("one block, l = 8 only"))
    copying = [r for r in runs("two blocks") if copies(r)]
    assert all(r["induction"][1][0] > 0.85 > 0.2 > r["induction"][0][0] for r in copying)
    assert all(r["ablated"][0][0] > guess and r["ablated"][1][0] > guess for r in copying)
    one_prev = [r["previous"][0][0] for r in runs("one block")]
    prev = [r["previous"][0][0] for r in copying]                      # about one block's
    assert min(prev) < max(one_prev) and max(prev) < max(one_prev) + 0.05
    for r in copying:                                                   # K-composition
        c = r["composition"]
        assert c["k"][0] > 1 and c["k"][1] < 0.3 and max(c["q"][0], c["v"][0]) < 0.1
        assert r["ov"]["margin"] > 1 and r["ov"]["top"] > 0.9
    two, one = (sorted(runs(s), key=lambda r: r["seed"]) for s in ("two blocks", "one block"))
    assert ti.mcnemar_exact([copies(r) for r in two], [copies(r) for r in one])[2] < 0.01
    assert all(r["fall"] is not None and r["fall"] < r["drop"] for r in copying)
    live = next(r for r in runs("two blocks") if r["seed"] == ti.COPY_SEED)
    assert live["drop"] is not None and live["drop"] < ti.STEPS      # the live run has time


def test_one_stored_run_is_what_training_gives():
    """The sweep's tool trains a run again, with the sweep's whole schedule, and stops it
    after 100 steps: its first measurements agree (later ones may differ in the last bits
    of another BLAS, which the fall magnifies)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import induction_sweep

    class Enough(Exception):
        pass

    seen = []

    def measured(step, first, second):
        seen.append(second)
        if step >= 100:
            raise Enough

    stored = next(r for r in runs("one block") if r["seed"] == 1)
    with pytest.raises(Enough):
        ti.train_copying(1, steps=SWEEP["steps"], every=SWEEP["every"], n_layer=1, callback=measured)
    assert np.allclose(seen, stored["second"][:len(seen)], atol=2e-4) and len(seen) == 3
    assert induction_sweep.SETTINGS["one block"] == {"n_layer": 1}


def test_the_other_generator_draws_the_same_task():
    sys.path.insert(0, str(ROOT / "tools"))
    import induction_sweep
    for kind, side in (("filler", True), ("block", False), ("either", None)):
        rows, where = induction_sweep.other_rows(np.random.default_rng(3), 300, kind)
        assert rows.shape == (300, ti.COPY_N_CTX + 1) and rows.min() >= 0 and rows.max() < ti.COPY_VOCAB
        for row, (l, s1, s2) in zip(rows, where):
            assert l in ti.LENGTHS and s2 == s1 + l and list(row[s1:s2]) == list(row[s2:s2 + l])
            others = list(row[:s1]) + list(row[s2 + l:])
            assert len(set(row[s1:s2]) | set(others)) == ti.COPY_N_CTX + 1 - l
            if side is not None:
                assert (s1 > 0) == side
        assert side is not None or {s1 > 0 for _, s1, _ in where} == {True, False}


def test_the_shipped_checkpoint_is_the_live_seeds_run():
    checkpoint = tg.load_gpt2(ROOT / "data" / "induction_model")
    assert checkpoint["encode"] is None and checkpoint["n_head"] == 1
    assert tm.weight_names(checkpoint["params"])[:6] == ["wte", "wpe", "blocks.0.ln_1.g", "blocks.0.ln_1.b",
                                                 "blocks.0.attn.c_attn.w", "blocks.0.attn.c_attn.b"]
    rows, where = ti.repeat_rows(2024, 512, filler_first=True)
    assert ti.copy_losses(checkpoint["params"], 1, rows, where)[1] < 0.1
    trained = ti.load_copy_model()
    assert all(np.array_equal(tm.get_weight(trained, n), tm.get_weight(checkpoint["params"], n))
               for n in tm.weight_names(trained))


def stored_text(cell):
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))


def test_the_pages_numbers_from_the_live_run_are_the_shipped_models():
    """The cells that print the live run's numbers are not compared by nbval (another CPU may
    move its last bits); they are compared here with the shipped checkpoint of that run."""
    import json
    import re
    nb = json.loads((ROOT / "notebooks" / "10_induction.ipynb").read_text(encoding="utf-8"))
    text = {"".join(c["source"]).splitlines()[0]: stored_text(c) for c in nb["cells"]
            if c["cell_type"] == "code" and c["source"]}
    params = ti.load_copy_model()
    rows, where = ti.repeat_rows(10_000 + ti.COPY_SEED, 256)
    shown = text['params = run["params"]']
    final = re.search(r"([\d.]+) at step (\d+)", shown)
    first = re.search(r"first copy: [\d.]+ nats at step 0, ([\d.]+) at step (\d+)", shown)
    assert int(final.group(2)) == int(first.group(2)) == ti.STEPS
    measured = ti.copy_losses(params, 1, rows, where)
    assert float(final.group(1)) == pytest.approx(measured[1], abs=0.006)
    assert float(first.group(1)) == pytest.approx(measured[0], abs=0.006)
    test_rows, test_where = ti.repeat_rows(2024, 512)
    scores = ti.head_scores(params, 1, test_rows, test_where)
    shown = text["test_rows, test_where = ti.repeat_rows(2024, 512)"]
    for layer in range(2):
        line = re.search(rf"block {layer + 1}'s head: previous-token score ([\d.]+), induction score ([\d.]+)", shown)
        assert float(line.group(1)) == pytest.approx(scores["previous"][layer][0], abs=0.006)
        assert float(line.group(2)) == pytest.approx(scores["induction"][layer][0], abs=0.006)
    shown = text["ablated = ti.ablation_losses(params, 1, test_rows, test_where)"]
    ablated = ti.ablation_losses(params, 1, test_rows, test_where)
    for layer in range(2):
        got = re.search(rf"with block {layer + 1}'s head off: ([\d.]+) nats", shown)
        assert float(got.group(1)) == pytest.approx(ablated[layer][0], abs=0.006)
    shown = text["without = ti.head_scores(ti.ablate(params, 0, 0, 1), 1, test_rows, test_where)"]
    rest = ~ti.second_copy_mask(test_where)                  # nothing to copy, but position 0
    rest[:, 0] = False
    ids, targets = ti.as_batch(test_rows)
    for label, model in [("every head on", params), ("block 1's head off", ti.ablate(params, 0, 0, 1)),
                         ("both heads off", ti.ablate(ti.ablate(params, 0, 0, 1), 1, 0, 1))]:
        got = re.search(rf"{label}: nothing to copy, loss ([\d.]+) nats; block 2's weight on position 0 there ([\d.]+)", shown)
        p = tm.softmax(tm.forward(ids, model, 1))
        nll = -np.log(np.take_along_axis(p, targets[..., None], -1)[..., 0])
        sink = attention_by_hand(model, ids[:64], 1)[:, :, 0][rest[:64]].mean()
        assert float(got.group(1)) == pytest.approx(nll[rest].mean(), abs=0.006)
        assert float(got.group(2)) == pytest.approx(sink, abs=0.03)          # on 64 of the rows
    shown = text["parts = ti.composition_losses(params, test_rows, test_where)"]
    parts = ti.composition_losses(params, test_rows, test_where)
    for removed, label in [("none", "nowhere"), ("q", "queries"), ("k", "keys"), ("v", "values")]:
        got = re.search(rf"taken out [^:]*{label}[^:]*: second copy ([\d.]+) nats, block 2's induction score ([\d.]+)", shown)
        assert float(got.group(1)) == pytest.approx(parts[removed][0], abs=0.006)
        assert float(got.group(2)) == pytest.approx(parts[removed][1], abs=0.006)
    shown = text["ov = ti.ov_copying(params, test_rows, test_where)"]
    ov = ti.ov_copying(params, test_rows, test_where)
    got = re.search(r"([\d.]+) of its attention.*raises that source's id ([\d.]+) nats.*at (\d+)% of", shown)
    assert float(got.group(1)) == pytest.approx(ov["weight"], abs=0.006)
    assert float(got.group(2)) == pytest.approx(ov["margin"], abs=0.06)
    assert int(got.group(3)) == pytest.approx(100 * ov["top"], abs=0.6)


def test_every_figure_the_prose_quotes_is_printed_by_a_cell():
    """A decimal in the page's prose is either printed by one of its cells (from the sweep,
    the shipped run or a computation) or a setting of the module it names."""
    import json
    import re
    nb = json.loads((ROOT / "notebooks" / "10_induction.ipynb").read_text(encoding="utf-8"))
    printed = " ".join(stored_text(c) for c in nb["cells"] if c["cell_type"] == "code")
    shown = re.findall(r"(?<![\w.])\d+\.\d+", printed)
    settings = {str(ti.FALL_LEVEL), "0.1", "0.02", str(ti.INIT_STD)}

    def printed_as(figure):                 # printed so, or with more digits that round to it
        k = len(figure.split(".")[1])
        return any(len(x.split(".")[1]) >= k and f"{float(x):.{k}f}" == figure for x in shown)
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown" or "".join(cell["source"]).startswith("## 8 In a real model"):
            continue                        # that section is the literature's (heads named 5.5, ...)
        for figure in re.findall(r"(?<![\w.])\d+\.\d+", "".join(cell["source"])):
            assert figure in settings or printed_as(figure), figure
