"""Bad input, in one place: a table of calls a learner could make and the sentence each
must get, a ValueError with the course's one sentence (one line) naming what is allowed.
(Generated junk against every public function and widget builder: test_bad_input_fuzz.py.)
"""
import re
from pathlib import Path

import numpy as np
import pytest

import toy_gpt2
import toy_induction
import toy_model as tm
import toy_train as tt
import toy_widgets as tw
import toy_writes as tx


ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "the cat climbed the"
EXAMPLE = tm.encode(SENTENCE)
EXAMPLE_TARGETS = EXAMPLE[1:] + [tm.VOCAB.index(" roof")]
_ROWS, _WHERE = toy_induction.repeat_rows(0, 2, filler_first=True)
_RUN = toy_induction.train_copying(0, steps=2, every=1)

# (call, words): the words are found in the sentence (as written, or as a pattern).
BAD = [
    # the model: text, ids, sampling and generation settings, the loss, heads
    (lambda: tm.encode(""), "empty"),
    (lambda: tm.encode("the cat jumped"), r"^(?!.*jumped.*jumped).*jumped"),        # named once
    (lambda: tm.encode("the " + "x" * 200_000), r"^.{1,399}$"),                      # short, in a long text
    (lambda: tm.encode("The cat"), "The"),
    (lambda: tm.encode("the  cat"), "␣␣"),
    (lambda: tm.forward(tm.encode("the cat climbed the roof. the cat climbed")), "at most 8"),
    (lambda: tm.forward([]), "at least one token"),
    (lambda: tm.forward([0, 12]), "ids run from 0 to 11"),
    (lambda: tm.forward([-1]), "ids run from 0 to 11"),
    (lambda: tm.decode([3, 99]), "ids run from 0 to 11"),
    (lambda: tm.next_token_probs(np.zeros(12), -1), "positive"),
    (lambda: tm.next_token_probs(np.zeros(12), float("nan")), "positive"),
    (lambda: tm.next_token_probs(np.zeros(12), 1, top_k=0), "at least 1"),
    (lambda: tm.next_token_probs(np.zeros(12), 1, top_k=2.5), "whole number"),
    (lambda: tm.next_token_probs(np.zeros(12), 1, top_p=0), "above 0 and at most 1"),
    (lambda: tm.next_token_probs(np.zeros(12), 1, top_p=1.5), "above 0 and at most 1"),
    (lambda: tm.softmax([0.0, float("nan")]), "NaN"),
    (lambda: tm.next_token_probs([0.0, float("nan")], 0), "NaN"),
    (lambda: tm.softmax([0.0, float("inf")]), "finite"),
    (lambda: tm.generate("the cat", temperature=-2), "positive"),
    (lambda: tm.forward([0.5, 1.2]), "whole numbers"),
    (lambda: tm.forward("the cat"), "encode"),
    (lambda: tm.forward([[0, 1], [2, 3]]), "one list"),
    (lambda: tm.forward([0, float("nan")]), "whole numbers"),
    (lambda: tm.decode([1.9]), "whole numbers"),
    (lambda: tm.decode("012"), "not text"),
    (lambda: tm.decode(tm.intermediates(SENTENCE)["p"][-1]), "whole numbers"),
    (lambda: tm.decode(np.zeros((2, 2), dtype=int)), "one list"),
    (lambda: tm.token_name(12), "ids run from 0 to 11"),
    (lambda: tm.token_name(-1), "ids run from 0 to 11"),
    (lambda: tm.token_name(None), "text or its id"),
    (lambda: tm.next_token_probs(tm.intermediates(SENTENCE)["logits"]), "one row"),
    (lambda: tm.next_token_probs(np.zeros((1, 12))), "one row"),
    (lambda: tm.next_token_probs(np.zeros((0, 12))), "one row"),
    (lambda: tm.next_token_probs([]), "one row"),
    (lambda: tm.next_token_probs(np.full(12, -np.inf)), "-infinity"),
    (lambda: tm.next_token_probs(np.zeros(12), "1"), "Temperature"),
    (lambda: tm.next_token_probs(np.zeros(12), 1, top_k=True), "top-k"),
    (lambda: tm.next_token_probs(np.zeros(12), 1, top_p=float("nan")), "top-p"),
    (lambda: tm.sample(np.full(12, 1 / 12), -1), "seed"),
    (lambda: tm.sample(np.full(12, 1 / 12), 1.5), "seed"),
    (lambda: tm.sample(np.full(12, 1 / 12), 2**70), "seed"),
    (lambda: tm.sample(np.full(12, 0.5), 0), "add up to 1"),
    (lambda: tm.sample(tm.intermediates(SENTENCE)["p"], 0), "one probability"),
    (lambda: tm.cross_entropy(tm.intermediates(SENTENCE)["logits"], [1, 2, 3, 4, 12]), "ids run from 0 to 11"),
    (lambda: tm.cross_entropy(tm.intermediates(SENTENCE)["logits"], [1, 2, 3, 4, -2]), "ids run from 0 to 11"),
    (lambda: tm.cross_entropy(tm.intermediates(SENTENCE)["logits"], [-1] * 5), "at least one graded"),
    (lambda: tm.cross_entropy(tm.intermediates(SENTENCE)["logits"], [1, 2, 3]), "one target per row"),
    (lambda: tm.cross_entropy(tm.intermediates(SENTENCE)["logits"], []), "one target per row"),
    (lambda: tm.cross_entropy(tm.intermediates(SENTENCE)["logits"][-1], [6]), "one row of logits per position"),
    (lambda: tm.forward([0, 2], n_head=3), "divides d = 4"),
    (lambda: tm.forward([0, 2], n_head=0), "divides d = 4"),
    (lambda: tm.intermediates(SENTENCE, n_head=2.0), "divides d = 4"),
    # the model's pieces, called directly with the wrong kinds
    (lambda: tm.causal_mask(5.0), "causal_mask must be a whole number"),
    (lambda: tm.causal_mask(10**9), "causal_mask must be a whole number, 1 to 8192"),
    (lambda: tm.intermediates(5), "intermediates takes a list of token ids"),
    (lambda: tm.intermediates(SENTENCE, temperature=2), "intermediates takes the options"),
    (lambda: tm.forward([0, 1], mask="no"), "mask must be True or False"),
    (lambda: tm.intermediates(SENTENCE, tied=True), "a switch is an edit of the weights, such as params=tm.switch_off"),
    (lambda: tm.forward([0, 1], 5), "params must be the weights' dict"),
    (lambda: tm.layer_norm("abc", 1, 0), "layer_norm takes an array of real numbers"),
    (lambda: tm.layer_norm([0, 2, 2, 8], [1, 1], 0), "g and b of d numbers"),
    (lambda: tm.layer_norm([1e300, 1], 1, 0), "at most 1e\\+30"),
    (lambda: tm.gelu([np.nan]), "finite numbers"),
    (lambda: tm.linear(np.ones((2, 4)), np.ones((3, 4)), 0), "linear takes x \\[n, d_in\\]"),
    (lambda: tm.attention([[1.0, 0]], [[1.0, 0, 0]], [[1.0]]), "attention takes q"),
    (lambda: tm.mlp(np.ones((1, 4)), None, None), "mlp's c_fc takes a layer's weights"),
    (lambda: tm.block(np.ones((1, 4)), {}, 2), "block takes one block's weights"),
    (lambda: tm.embed([0, 12], tm.PARAMS["wte"], tm.PARAMS["wpe"]), "Token id 12 does not exist"),
    (lambda: tm.softmax(np.zeros(3), axis=2), "axis must name one of the 1 axes"),
    (lambda: tm.tree_map(5, tm.PARAMS), "take a function to apply to each weight"),
    (lambda: tm.get_weight(tm.PARAMS, np.zeros(2)), "get_weight takes a weight's name"),
    (lambda: tm.replace_weight(tm.PARAMS, "wte", np.full((12, 4), np.nan)), "finite numbers"),
    (lambda: tm.copy_params({"wte": 1}), "params must be the weights' dict"),
    (lambda: tm.entropy(np.ones(3) + 1j), "one probability distribution"),
    # training: the weights and the gradients checked as forward checks them
    (lambda: tt.loss_and_grads([1, 2, 3], [2, 3, 4], n_head=3), "n_head must be a whole number that divides"),
    (lambda: tt.loss_and_grads([1, 2, 3], [2, 3, 4], {k: v for k, v in tm.PARAMS.items() if k != "ln_f"}),
     "params must be the weights' dict"),
    (lambda: tt.loss_and_grads([1, 2, 3], [2, 3, 4], {**tm.copy_params(), "wpe": np.ones((8, 3))}),
     "The weight 'wpe' has shape"),
    (lambda: tm.replace_weight(tm.PARAMS, "wte", np.ones(3)), "its replacement has"),
    *[(lambda step=step, w=w, g=g: step(w, g), words)
      for step in (lambda w, g: tt.sgd_step(w, g, 0.1), lambda w, g: tt.adam_step(w, g, None, 0.1))
      for w, g, words in [({"blocks": [np.ones(4), np.ones(4)]}, {"blocks": [np.ones(4)]},
                           "'blocks.1' is in one but not the other"),
                          ({"a": np.ones(4)}, {"a": np.ones(4), "b": np.ones(4)}, "'b' is in one but not the other"),
                          ({"w": np.ones(4)}, {"w": np.ones((3, 4))},
                           r"gradient of 'w' has shape \(3, 4\), but the weight has shape \(4,\)"),
                          ({"w": np.ones(4)}, {"w": np.array([0, np.nan, 0, 0])}, "not finite"),
                          ({"w": np.ones(4)}, None, "layout")]],
    (lambda: tt.sgd_step({"w": np.ones(4)}, {"w": np.ones(4)}, float("nan")), "learning rate lr must be a positive number"),
    # training
    (lambda: tt.read_corpus("the cat climbed the roof. the dog climbed the"), "at most 8"),
    (lambda: tm.get_weight(tm.PARAMS, "blocks.0.attn.w_q"), "No weight is named"),
    (lambda: tt.loss_and_grads([1, 2, 3], [2, 3]), "same shape"),
    (lambda: tt.loss_and_grads([1, 2, 3], [-1, -1, -1]), "at least one graded"),
    (lambda: tt.loss_and_grads([1, 2, 30], [2, 3, 4]), "does not exist"),
    (lambda: tt.train([[0, 2, 11]], steps=1, optimizer="rmsprop"), "'adam' or 'sgd'"),
    (lambda: tt.train(["the cat"]), "holds text"),
    (lambda: tt.train("the cat climbed"), "non-empty list of token sequences"),
    (lambda: tt.train([]), "non-empty list of token sequences"),
    (lambda: tt.train([[0]]), "at least 2 token ids"),
    (lambda: tt.train([[0, 99]]), "does not exist"),
    (lambda: tt.next_token_counts(tt.load_corpus(), "the"), "not text"),
    (lambda: tt.best_possible_loss([]), "non-empty list"),
    (lambda: tt.finite_difference(EXAMPLE, EXAMPLE_TARGETS, "wte", 0), "one entry of 'wte'"),
    (lambda: tt.finite_difference(EXAMPLE, EXAMPLE_TARGETS, "wte", (0, 9)), "one entry of 'wte'"),
    (lambda: tt.finite_difference(EXAMPLE, EXAMPLE_TARGETS, "wte", (0, 0), eps=1e-20), "round-off"),
    (lambda: tt.finite_difference(EXAMPLE, EXAMPLE_TARGETS, "wte", (0, 0), eps=-1e-5), "eps must be"),
    (lambda: tt.read_corpus(None), "takes the corpus's text"),
    (lambda: tt.init_params(-1), "seed must be"),
    (lambda: tt.init_params(0, std=0), "std must be a positive number"),
    (lambda: tt.load_sweep(ROOT / "data" / "corpus.txt"), "is not a seed sweep that can be read"),
    (lambda: tt.load_sweep(ROOT / "no such file.json"), "is not a seed sweep that can be read"),
    # the measures of chance
    (lambda: tt.fisher_exact(5, 4, 1, 4), "0 <= hits <= runs"),
    (lambda: tt.fisher_exact(1.5, 4, 1, 4), "whole numbers"),
    (lambda: tt.bootstrap_interval([1.0], [1.0, 2.0]), "at least 2 numbers"),
    (lambda: tt.bootstrap_interval([1.0, 2.0], [1.0, 2.0], statistic=np.max), "'median' or 'mean'"),
    (lambda: tt.bootstrap_interval([1.0, 2.0], [1.0, 2.0], level=95), "between 0 and 1"),
    (lambda: tt.train(tt.load_corpus(), steps=2, record=[]), "record must be a dict"),
    (lambda: tt.train(tt.load_corpus(), steps=200, lr=5, optimizer="sgd"), r"diverged at step \d+.*lr = 5 is too large"),
    *[(lambda options=options: tt.train(tt.load_corpus()[:2], **{"steps": 2, **options}), words) for options, words in [
        *[({"lr": bad}, "learning rate lr must be a positive number") for bad in (float("nan"), float("inf"), -0.1, "0.1", 0)],
        ({"steps": 2.5}, "steps must be a whole number"),
        ({"steps": -5}, "steps must be a whole number"),
        ({"seed": -1}, "seed must be a whole number"),
        ({"seed": 1.5}, "seed must be a whole number"),
        ({"warmup": -1}, "warmup must be a whole number"),
        ({"warmup": 30, "steps": 20}, "must be shorter than the run"),
        ({"clip": 0}, "clip .* must be a positive number"),
        ({"decay": "yes"}, "True or False")]],
    # a bad id is named; no finite logit is a sentence, not NaN
    *[(lambda ids=ids: tm.decode(ids), f"got {named} among them") for ids, named in
      [([0, 2, 4.0], "'4.0'"), ([0, 2, 4.5], "'4.5'"), ([1, True], "'True'"), ([3, None], "'None'"),
       (np.array([0.0, 1.0]), "'0.0'")]],
    *[(lambda fn=fn, z=z: fn(z), words) for fn in (tm.softmax, tm.log_softmax) for z, words in
      [([-np.inf, -np.inf], "Every logit of a row is -infinity"), ([[0.0, 1.0], [-np.inf, -np.inf]], "Every logit"),
       ([], "at least one logit"), (np.zeros((0, 12)), "at least one logit")]],
    # generation's settings, with and without the KV cache; the stepper's, as generate's
    *[(lambda bad=bad, cache=cache: tm.generate(SENTENCE, max_new=bad, cache=cache), "max_new")
      for bad in (-1, 2.5, "3", float("nan")) for cache in (False, True)],
    *[(lambda bad=bad, cache=cache: tm.generate(SENTENCE, temperature=1.0, seed=bad, cache=cache), "seed")
      for bad in (None, -1, 1.5, 2**64, "0") for cache in (False, True)],
    (lambda: tm.generate(SENTENCE, cache="yes"), "cache"),
    *[(lambda kwargs=kwargs: tw.generation_stepper(SENTENCE, **kwargs), "seed|Temperature")
      for kwargs in ({"seed": -1}, {"seed": 2**64}, {"seed": 1.5}, {"temperature": -1}, {"temperature": "hot"})],
    # lab 9's shapes, costs and BPE trainer
    *[(lambda sizes=sizes: toy_gpt2.gpt2_small_shapes(**sizes), words) for sizes, words in [
        (dict(d=10**6), "at most four times GPT-2 small's"), (dict(n_layer=0), "n_layer must be a whole"),
        (dict(vocab=2.5), "vocab must be a whole"), (dict(seed=-1), "seed")]],
    (lambda: toy_gpt2.params_by_part(None), "params must be the weights' dict"),
    (lambda: toy_gpt2.count_params(None), "count_params takes the weights"),
    (lambda: toy_gpt2.time_generation([1, 2], tm.PARAMS, 2, 1, cache="yes"), "cache is True or False"),
    *[(lambda bad=bad: toy_gpt2.train_bpe(bad, 3), "list of words") for bad in ("the cat", [1, 2], None)],
    (lambda: toy_gpt2.train_bpe(["ab"], -1), "n_merges"),
    (lambda: toy_gpt2.train_bpe(["ab"], 1, ties="oldest"), "ties"),
    # the exercises, as the course's authors write and show them, and a typed number
    (lambda: tw.typed_number("1e999"), r"^(?=.{1,199}$).*too large"),
    (lambda: tw.typed_number("x" * 200_000), r"^(?=.{1,199}$).*is not a number"),
    (lambda: tw.exercise("99.9"), "There is no exercise '99.9'"),
    (lambda: tw.exercise("02.4"), "checks a function you write"),
    (lambda: tw.exercise("02.4", "embed_rows"), "pass the function itself"),
    (lambda: tw.exercise("01.1", print), "answered in its box"),
    (lambda: tw.number_exercise("3.1", "Q?", 1.0, "A."), "key is a string such as"),
    (lambda: tw.number_exercise("01.1", "Q?", 1.0, "A."), "already registered"),
    (lambda: tw.choice_exercise("98.1", "Q?", ["only one"], "only one", "A."), "at least two strings"),
    (lambda: tw.p_summary([]), "p_summary needs one distribution over the 12 tokens"),
    (lambda: tw.table([]), "table needs at least one row"),
    # notebook 3's head: the weights and the picker
    *[(lambda build=build, head=head: build(head=head), "head must be a whole number from 0 to 1")
      for build in (tw.head_weights, tw.query_picker) for head in (2, -1, 1.0, "1")],
    # lab 11's characters and helpers: the sentence starts with the function's name
    (lambda: tx.encode_chars("Señor"), r"^(?!.*\. )tx\.encode_chars: the character 'ñ' \(at position 2\).*\.$"),
    (lambda: tx.decode_chars([1, 70]), r"^tx\.decode_chars: the id 70 .* from 0 to 62\.$"),
    *[(lambda bad=bad: tx.decode_chars(bad), r"^tx\.decode_chars takes.*\.$") for bad in ("abc", 3, [[1]], [0.5])],
    (lambda: tx.encode_chars(["a"]), r"^tx\.encode_chars takes text.*\.$"),
    (lambda: tx.windows(tx.encode_chars("to be or not to be"), [20], 4), r"^tx\.windows takes.*\.$"),
    (lambda: tx.windows(tx.encode_chars("to be or not to be"), [0.5], 4), r"^tx\.windows takes.*\.$"),
    (lambda: tx.windows(tx.encode_chars("to be or not to be"), "0", 4), r"^tx\.windows takes.*\.$"),
    (lambda: tx.smoothed([3, -1]), r"^tx\.smoothed takes.*\.$"),
    (lambda: tx.smoothed([3, 1], add=0), r"^tx\.smoothed takes.*\.$"),
    (lambda: tx.smoothed("counts"), r"^tx\.smoothed takes.*\.$"),
    (lambda: tx.first_below([0, 50], [3.0]), r"^tx\.first_below takes.*\.$"),
    (lambda: tx.first_below([0, 50], [3.0, 1.0], "2"), r"^tx\.first_below takes.*\.$"),
    (lambda: tx.adam_run(None, {}, 10, 1e-3, 1, 4, print, {}), r"^tx\.adam_run takes.*\.$"),
    (lambda: tx.adam_run(lambda s: None, {}, 10, -1, 1, 4, print, {}), r"^tx\.adam_run takes.*\.$"),
    (lambda: tx.fast_loss_and_grads([1, 2], [2, 3], tx.new_char_model(0), 4), r"^tx\.fast_loss_and_grads takes.*\.$"),
    (lambda: tx.halves_loss_and_grads([[1, 2]], [[2, 3]], tx.new_char_model(0), 4),
     r"^tx\.halves_loss_and_grads takes.*\.$"),
    (lambda: tx.fast_loss_and_grads([[1, 2]], [[2, -1]], tx.new_char_model(0), 4), r"^tx\.fast_loss_and_grads takes.*\.$"),
    (lambda: tx.fast_loss_and_grads([[1, 2]], [[2, 3]], tm.tie(tx.new_char_model(0)), 4),
     r"^tx\.fast_loss_and_grads takes.*\.$"),
    # lab 10's widgets: the run or model, the rows of ids, and where each row's two copies are
    *[(lambda build=build, args=args: build(*args), re.escape(words) + r".*\.$")
      for build in (tw.head_explorer, tw.head_switches) for args, words in [
          (("weights", _ROWS, _WHERE), "takes a trained model"), (({"params": {"wte": 1}}, _ROWS, _WHERE), "params"),
          ((_RUN, _ROWS[:, :10], _WHERE), "rows of 17 whole-number ids"), ((_RUN, [[1, 2], [3]], _WHERE), "rows"),
          ((_RUN, _ROWS + 20, _WHERE), "from 0 to 15"), ((_RUN, _ROWS, _WHERE[:-1]), "one (l, s1, s2) per row"),
          ((_RUN, _ROWS, [(5, 0, 3)] + _WHERE[1:]), "where[0]"),
          ((_RUN, _ROWS, [(l, s1 + 1, s2 + 1) for l, s1, s2 in _WHERE]), "where[0]")]],
    *[(lambda run=run, where=where: tw.training_replay(run, _ROWS, where), re.escape(words) + r".*\.$")
      for run, where, words in [(_RUN["params"], _WHERE, "takes the run"), (_RUN, "where", "where must be a list"),
                                ({**_RUN, "snapshots": []}, _WHERE, "with its snapshots")]],
]


@pytest.mark.parametrize("call, words", BAD)
def test_bad_input_gets_one_sentence(call, words):
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert words in message or re.search(words, message), message
    assert "\n" not in message
