"""Bad input, generated (the table of calls and their sentences: test_bad_input.py).

The generated junk (hypothesis): each public function of the model modules gets arguments
drawn from a small table of strategies (values of the right kind, near misses, junk: None,
text, NaN, infinity, huge, empty, ragged, float32, complex, wrong keys) and returns a result
without NaN or raises ValueError with the course's sentence; no other exception, no numpy
warning, and tm.PARAMS unchanged. A public function without an entry in the strategies'
table fails the test that lists them, so a new function gets fuzzed too; so do the widget
builders. Then what a learner types into the widgets.
"""
import inspect
import re
import warnings

import ipywidgets as widgets
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays
from test_bad_input import _ROWS, _RUN, _WHERE
from widget_tools import text, walk

import toy_checks
import toy_gpt2
import toy_induction
import toy_model as tm
import toy_train
import toy_train_checks
import toy_tree
import toy_widgets as tw


MODULES = [tm, toy_tree, toy_checks, toy_train, toy_train_checks, toy_gpt2, toy_induction]
FUZZ = settings(max_examples=6, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],       # no shrinking: a failure is shown as found
                suppress_health_check=list(HealthCheck))

# --- Junk, and values of the right kind ---------------------------------------------------

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**30, 10**30), ANY_FLOAT,
    st.complex_numbers(max_magnitude=10), st.text(max_size=12), st.binary(max_size=4),
    st.lists(st.integers(-3, 14), max_size=9), st.lists(ANY_FLOAT, max_size=5),
    st.sampled_from([[[0, 1], [2]], [], (), {}, {"wte": 1}, set(), np.float32(1.5), np.int64(3),
                     np.array(2.0), np.zeros(0), np.full((300, 12), 1e300), object(), 10**400,
                     "the cat", "the cat climbed the", "<|endoftext|>", "\ud800"]),
    arrays(st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.complex128]),
           array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
)


def either(good, *near):
    """A value of the right kind, a near miss of that kind, or junk of any kind."""
    return st.one_of(good, *near, JUNK)


ODD = st.sampled_from([0.0, -1.0, np.nan, np.inf, -np.inf, 1e300, -1e308, 5e-324, 1e31])


def rows(width, dtype=np.float64):
    """Rows of `width` finite numbers; near misses: other widths, NaN, infinity, huge."""
    good = arrays(dtype, st.tuples(st.integers(1, 5), st.just(width)), elements=FINITE)
    odd = arrays(np.float64, st.tuples(st.integers(1, 3), st.sampled_from([width, width + 1, 1])),
                 elements=ODD)
    return either(good, odd, good.map(lambda a: a.tolist()), good.map(lambda a: a[0]))


WORDS = ["the", " cat", " dog", " climb", "ed", " the", " roof", " wall", ".", " sofa"]
TEXT = either(st.lists(st.sampled_from(WORDS), min_size=1, max_size=9).map("".join),
              st.lists(st.sampled_from(WORDS + [" ", "x", "<|endoftext|>", "The", "\n"]), max_size=12).map("".join))
IDS = either(st.lists(st.integers(0, 11), min_size=1, max_size=9),
             st.lists(st.integers(-3, 14), max_size=10),
             st.lists(st.sampled_from([0, 1.0, 2.5, True, None, "a", np.int64(2), np.nan]), min_size=1, max_size=4))
IDS_2D = either(st.integers(1, 3).flatmap(
    lambda b: arrays(np.int64, (b, 4), elements=st.integers(-1, 11))))
FINITE = st.floats(-1e3, 1e3)
ROW12 = either(arrays(st.sampled_from([np.float64, np.float32]), (12,), elements=FINITE),
               arrays(np.float64, st.sampled_from([(12,), (11,), (1, 12)]), elements=ODD))
ROWS12, ROWS4, ROWS2 = rows(12), rows(4), rows(2)
DIST = either(st.sampled_from([np.full(12, 1 / 12), np.eye(12)[3], np.full(12, 1 / 12, np.float32)]),
              st.sampled_from([np.full(12, 0.5), -np.eye(12)[3], np.full(12, np.nan), np.zeros(12)]))
NUMBER = either(st.floats(0, 3), ODD, st.floats())
COUNT = either(st.integers(0, 9), st.integers(-5, 10**6), st.sampled_from([2.5, 3.0, True, "3", np.int64(3)]))
SEED = either(st.integers(0, 2**63 - 1), st.integers(-2**70, 2**70), st.sampled_from([1.5, True, "0", None]))
WHO = st.sampled_from(["steps", "The weight 'wte'"])     # the caller's name for it, never junk
FLAG = either(st.booleans(), st.sampled_from([0, 1, "no", None, np.bool_(True)]))
NAME = either(st.sampled_from(["wte", "wpe", "blocks.0.ln_1.g", "ln_f.b", "w_u", "blocks.0.mlp.c_fc.w"]),
              st.sampled_from(["blocks.1.ln_1.g", "wte.0", "", "blocks", "W_U"]))


def _params():
    good = [tm.PARAMS, tm.copy_params(), toy_train.init_params(1),
            tm.tree_map(lambda a: np.asarray(a, np.float32), tm.PARAMS)]
    broken = tm.copy_params()
    del broken["ln_f"]
    shapes = tm.copy_params()
    shapes["wpe"] = np.zeros((8, 3))
    nans = tm.copy_params()
    nans["wte"][0, 0] = np.nan
    return either(st.sampled_from(good + [broken, shapes, nans, {"blocks": []}]))


PARAMS = _params()
TREE = PARAMS
BLOCK = either(st.sampled_from([tm.PARAMS["blocks"][0], {"ln_1": {}}]))
C_ATTN = either(st.sampled_from([tm.PARAMS["blocks"][0]["attn"]["c_attn"], {"w": np.zeros((4, 5))}]))
C_PROJ = either(st.sampled_from([tm.PARAMS["blocks"][0]["attn"]["c_proj"]]))
C_FC = either(st.sampled_from([tm.PARAMS["blocks"][0]["mlp"]["c_fc"]]))
MLP_PROJ = either(st.sampled_from([tm.PARAMS["blocks"][0]["mlp"]["c_proj"]]))
FN = either(st.sampled_from([np.copy, np.zeros_like, lambda *a: a[0]]))
CORPUS = either(st.sampled_from([[[0, 2, 4, 5, 1, 6, 10, 11]], [[0, 3, 11], [0, 2, 11]]]))
BATCH = either(st.sampled_from([(np.array([[0, 2, 4]]), np.array([[2, 4, 5]])),
                                 (np.array([[0, 2], [0, 3]]), np.array([[2, -1], [3, 11]]))]))
BATCHES = BATCH.map(lambda batch: lambda step: batch)
ROWS_OF_IDS = either(st.just(_ROWS))
WHERE = either(st.just(_WHERE), st.just([(2, 0, 2), (3, 1, 4)]))
TWO_BLOCKS = either(st.just(toy_induction.new_copy_model(0)))
CORPUS_TEXT = either(st.sampled_from(["the cat climbed the roof.\nthe dog climbed the wall.\n"]))
GRADS = either(st.sampled_from([tm.tree_map(np.ones_like, tm.PARAMS),
                                tm.tree_map(np.zeros_like, tm.PARAMS)]))
FOLDER = either(st.sampled_from(["ckpt", "ckpt/a", "missing/deeper", "."]))   # inside a temporary cwd

# The table: function name -> strategies for its positional arguments, then its keywords.
# "skip" with a reason for the few that must not be called with generated values.
A = {
    # toy_model
    "token_name": [either(st.integers(0, 11))], "encode": [TEXT], "decode": [IDS],
    "walk": [either(st.just(lambda path, leaf: leaf)), TREE], "tree_map": [FN, TREE], "weight_name": [either(st.just(("blocks", 0, "ln_1")))],
    "weight_names": [TREE], "get_weight": [TREE, NAME],
    "replace_weight": [TREE, NAME, either(st.just(np.zeros((12, 4))))], "freeze": [TREE],
    "copy_params": [PARAMS], "layer_norm": [ROWS4, either(st.just(np.ones(4))), either(st.just(np.zeros(4)))],
    "gelu": [ROWS4], "softmax": [ROWS12], "linear": [ROWS4, either(st.just(np.eye(4))), either(st.just(np.zeros(4)))],
    "embed": [IDS, either(st.just(tm.PARAMS["wte"])), either(st.just(tm.PARAMS["wpe"]))],
    "causal_mask": [COUNT], "attention": [ROWS2, ROWS2, ROWS2, {"mask": FLAG}],
    "multi_head": [ROWS4, C_ATTN, C_PROJ, either(st.sampled_from([1, 2, 4])), {"mask": FLAG}],
    "mlp": [ROWS4, C_FC, MLP_PROJ], "block": [ROWS4, BLOCK, either(st.sampled_from([1, 2, 4]))],
    "unembed": [ROWS4, PARAMS], "tie": [PARAMS],
    "forward": [IDS, PARAMS, {"n_head": either(st.just(2)), "mask": FLAG}],
    "switch_off": [PARAMS, either(st.sampled_from(["attn", "mlp"]))],
    "intermediates": [TEXT, {"mask": FLAG}], "log_softmax": [ROWS12],
    "cross_entropy": [ROWS12, either(st.lists(st.integers(-1, 11), min_size=1, max_size=5))],
    "entropy": [DIST], "next_token_probs": [ROW12, NUMBER, {"top_k": either(st.integers(1, 12)),
                                                            "top_p": either(st.floats(0.01, 1))}],
    "sample": [DIST, SEED],
    "generate": [TEXT, {"temperature": NUMBER, "top_k": either(st.integers(1, 12)), "seed": SEED,
                        "max_new": COUNT, "cache": FLAG, "params": PARAMS}],
    # toy_checks
    # (the second argument of as_ids, check_targets, ... is the course's own, never a learner's)
    "as_ids": [IDS, st.just("decode")], "check_ids": [IDS], "check_targets": [IDS, st.just((4,)), st.just(12)],
    "check_n_head": [either(st.integers(1, 4)), st.just(4)], "check_params": [PARAMS, either(st.just(2))],
    "as_numbers": [ROWS4, st.just("linear"), st.integers(0, 2)], "as_layer": [C_FC, st.just("mlp's c_fc")],
    "as_path": [FOLDER, st.just("load_gpt2"), either(st.sampled_from(["file", "folder"]))],
    "check_sampling": [NUMBER, either(st.integers(1, 5)), either(st.floats(0.1, 1))],
    "check_seed": [SEED], "check_distribution": [DIST, st.just("sample")],
    "check_cache": [either(st.sampled_from([[], [{}], [{"k": np.zeros((2, 4)), "v": np.zeros((2, 4))}],
                                            [{"k": np.zeros(4), "v": np.zeros(4)}]])),
                    st.just(tm.PARAMS)],
    "check_cache_batch": [st.just([{"k": np.zeros((1, 2, 4)), "v": np.zeros((1, 2, 4))}]),
                          st.sampled_from([[1], [1, 2], np.array([[1, 2]]), np.array([[1], [2]])])],
    "frozen": [ROWS4], "is_frozen": [ROWS4],
    **dict.fromkeys(["tree_from", "layout", "layout_shapes", "checkpoint_name"],
                    "skip: builds the weights' layout for code that makes, loads or saves a model, "
                    "from sizes and names it has checked"),
    "shown_value": [TEXT], "short_text": [TEXT], "is_number": [NUMBER], "as_count": [COUNT, WHO],
    "as_flag": [FLAG, WHO], "as_logits": [ROWS12, WHO],
    **dict.fromkeys(["as_floats", "weight_at", "mismatch_sentence"],
                    "skip: a step of the checks above, given the values they have already looked at"),
    # toy_train
    "transpose": [ROWS4], "softmax_cross_entropy_backward": [ROWS12, either(st.lists(st.integers(0, 11), min_size=1, max_size=5))],
    "linear_backward": [ROWS4, ROWS4, either(st.just(np.eye(4)))],
    "layer_norm_backward": [ROWS4, ROWS4, either(st.just(np.ones(4)))], "gelu_backward": [ROWS4, ROWS4],
    "mlp_backward": [ROWS4, ROWS4, C_FC, MLP_PROJ], "softmax_backward": [ROWS12, ROWS12],
    "attention_backward": [ROWS2, ROWS2, ROWS2, ROWS2],
    "multi_head_backward": [ROWS4, ROWS4, C_ATTN, C_PROJ, either(st.just(2))],
    "block_backward": [ROWS4, ROWS4, BLOCK, either(st.just(2))],
    "unembed_backward": [ROWS12, ROWS4, either(st.just(tm.PARAMS["w_u"]))],
    "embed_backward": [ROWS4, IDS, either(st.just(tm.PARAMS["wte"])), either(st.just(tm.PARAMS["wpe"]))],
    "backward": [ROWS12, IDS, PARAMS], "loss_and_grads": [IDS, IDS, PARAMS],
    "check_batch": [IDS_2D, IDS_2D],
    "finite_difference": [IDS, IDS, NAME, either(st.sampled_from([(0, 0), 0, (3,)])), PARAMS],
    "check_grads": [PARAMS, GRADS], "sgd_step": [PARAMS, GRADS, NUMBER],
    "adam_step": [PARAMS, GRADS, {"lr": NUMBER}], "learning_rate": [COUNT, NUMBER, COUNT],
    "grad_norm": [GRADS], "clip_gradients": [GRADS, NUMBER],
    "init_params": [SEED, {"d": either(st.sampled_from([4, 8])), "n_layer": either(st.integers(1, 2))}],
    "read_corpus": [CORPUS_TEXT], "check_corpus": [CORPUS], "load_corpus": [FOLDER],
    "load_heldout": [], "load_sweep": [FOLDER], "next_token_counts": [CORPUS, IDS], "best_possible_loss": [CORPUS],
    "fisher_exact": [COUNT, COUNT, COUNT, COUNT],
    "bootstrap_interval": [either(st.lists(st.floats(0, 2), min_size=2, max_size=8)),
                           either(st.lists(st.floats(0, 2), min_size=2, max_size=8)),
                           {"n": either(st.integers(1, 50)), "level": NUMBER}],
    "corpus_batch": [CORPUS], "corpus_loss": [CORPUS, PARAMS],
    "train": [CORPUS, {"steps": either(st.integers(1, 3)), "lr": NUMBER, "seed": SEED,
                       "optimizer": either(st.sampled_from(["adam", "sgd"]))}],
    "train_batches": [BATCHES, PARAMS, {"steps": either(st.integers(1, 3)), "lr": NUMBER}],
    # toy_induction
    "repeat_rows": [SEED, either(st.integers(1, 4)), {"filler_first": FLAG}], "as_batch": [ROWS_OF_IDS],
    "check_rows": [ROWS_OF_IDS, WHERE], "copy_batches": [SEED, {"size": COUNT}],
    "second_copy_mask": [WHERE], "first_copy_mask": [WHERE], "token_losses": [TWO_BLOCKS, either(st.just(1)), ROWS_OF_IDS],
    "copy_losses": [TWO_BLOCKS, either(st.just(1)), ROWS_OF_IDS, WHERE],
    "new_copy_model": [SEED, {"n_layer": either(st.integers(1, 2))}],
    "train_copying": [SEED, {"steps": either(st.integers(1, 2)), "every": COUNT}],
    "load_copy_sweep": [FOLDER],
    "attention_weights": [TWO_BLOCKS, either(st.just(1)), IDS_2D],
    "previous_token_score": [ROWS4], "induction_score": [ROWS4, WHERE],
    "head_scores": [TWO_BLOCKS, either(st.just(1)), ROWS_OF_IDS, WHERE],
    "ablate": [TWO_BLOCKS, COUNT, COUNT, either(st.just(1))],
    "ablation_losses": [TWO_BLOCKS, either(st.just(1)), ROWS_OF_IDS, WHERE],
    "drop_step": [either(st.just([0, 50, 100])), either(st.just([2.7, 0.5, 0.05]))],
    "load_copy_model": [], 
    "attention_by_offset": [ROWS4],
    "composed_forward": [TWO_BLOCKS, IDS_2D, {"removed": either(st.sampled_from(["", "k", "qv"]))}],
    "composition_losses": [TWO_BLOCKS, ROWS_OF_IDS, WHERE],
    "edited_forward": [TWO_BLOCKS, IDS_2D, either(st.just(lambda w: w))],
    "one_back": [ROWS4], "one_back_losses": [TWO_BLOCKS, ROWS_OF_IDS, WHERE],
    "ov_copying": [TWO_BLOCKS, ROWS_OF_IDS, WHERE],
    "position_model": [{"scale": NUMBER}],
    "best_first_copy_loss": [{"filler_first": FLAG}],
    "mcnemar_exact": [either(st.lists(st.booleans(), min_size=1, max_size=6)),
                      either(st.lists(st.booleans(), min_size=1, max_size=6))],
    # toy_gpt2
    "bytes_to_unicode": [], "byte_chars": [TEXT], "as_text": [TEXT], "pre_split": [TEXT],
    "bpe": [TEXT, either(st.just({("t", "h"): 0}))], "bpe_fast": [TEXT, either(st.just({("t", "h"): 0}))],
    "bpe_tokenizer": [either(st.just({"a": 0})), either(st.just([]))],
    "read_bpe": [FOLDER], "gpt2_tokenizer": "skip: reads the 50,257-token files (slow, no junk to give)",
    "save_bpe": [FOLDER, either(st.just({"a": 0, "b": 1})), either(st.just([]))],
    "toy_bpe": [either(st.just(list(tm.VOCAB)))], "merge_pair": [either(st.just(("a", "b"))), either(st.just(("a", "b")))],
    "train_bpe": [either(st.just(["ab", "ab"])), COUNT],
    "check_gpt2_config": [either(st.just({"n_layer": 1, "n_head": 2, "n_embd": 4, "vocab_size": 12,
                                          "n_positions": 8, "n_inner": 0}))],
    "load_gpt2": [FOLDER], "save_gpt2": [FOLDER, PARAMS], "save_toy_as_gpt2": [FOLDER],
    "find_gpt2": [FOLDER], "download_gpt2": "skip: the network",
    "count_params": [PARAMS], "token_texts": [either(st.just({"decode": tm.decode})), IDS],
    "gpt2_small_shapes": [SEED, {"n_layer": either(st.integers(1, 2)), "d": either(st.sampled_from([8, 16])),
                                 "vocab": either(st.integers(1, 50)), "n_ctx": either(st.integers(1, 8))}],
    "params_by_part": [PARAMS], "tokenizers_merges": [TEXT, COUNT], "time_generation": [IDS, PARAMS, either(st.just(2)), COUNT, FLAG],
}

# A function's declared check (toy_checks.checked) runs first in every call of the function
# from outside the model's code, with the call's arguments: fuzzing the function fuzzes it.
A.update(dict.fromkeys([f"check_{name}" for name in [
    "transpose", "softmax_cross_entropy_backward", "linear_backward", "layer_norm_backward",
    "gelu_backward", "mlp_backward", "softmax_backward", "attention_backward",
    "multi_head_backward", "block_backward", "unembed_backward", "embed_backward", "backward",
    "sgd_step", "adam_step", "grad_norm", "clip_gradients", "layer_norm", "gelu", "softmax",
    "log_softmax", "linear", "embed", "causal_mask", "attention", "multi_head", "mlp", "block",
    "unembed"]], "skip: runs first in each call of the function it checks, fuzzed with the same arguments"))
A.update({"raise_unless": "skip: the checks' own sentence, given the verdict they have computed",
          "positive": [NUMBER, WHO], "same_shape": [WHO],
          "as_linear": [C_FC, WHO, COUNT], "as_block": [BLOCK, COUNT, WHO], "as_mask": [FLAG, WHO],
          "leaves": [PARAMS], "gradient_tree": [GRADS, WHO]})

A.update({"check_finite": "skip: forward and the losses call it on their own result, after check_params",
          "read_sweep": "skip: each lab's sweep loader checks the path, then calls it"})
A.update({"checked": "skip: a decorator, applied to the model's functions above"})


def entry(module, name):
    """The table's entry for a function: by module and name where two modules share a name."""
    return A.get(f"{module}.{name}", A.get(name))


def public_functions():
    """Every public function defined in the model modules, as (module name, name, function)."""
    return [(m.__name__, name, f) for m in MODULES for name, f in vars(m).items()
            if not name.startswith("_") and inspect.isfunction(f) and f.__module__ == m.__name__]


def test_every_public_function_is_in_the_table():
    missing = [f"{module}.{name}" for module, name, _ in public_functions() if entry(module, name) is None]
    assert not missing, f"add an entry to the fuzz table A for: {', '.join(missing)}"


def test_a_wrong_number_of_arguments_gets_the_functions_own_name():
    """Too few and too many arguments, to every public function of the model modules and
    the widgets: the TypeError names the function the learner called (Python's own message
    for it, or the course's with its parameters), never a check inside it."""
    wrong = []
    for module in NAMED:
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            kinds = [p for p in inspect.signature(fn).parameters.values()]
            if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in kinds):
                continue                                # takes any number
            positional = [p for p in kinds if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            required = [p for p in positional if p.default is p.empty]
            for args in [[None] * (len(positional) + 1)] + ([[None] * (len(required) - 1)] if required else []):
                try:
                    fn(*args)
                except TypeError as err:
                    if not str(err).startswith(f"{name}("):
                        wrong.append(f"{module.__name__}.{name} with {len(args)}: {err}")
                else:
                    wrong.append(f"{module.__name__}.{name} accepted {len(args)} arguments")
    assert not wrong, "\n".join(wrong)


# --- What counts as the course's sentence ------------------------------------------------

NAMED = MODULES + [__import__(f"toy_widgets.{m}").__dict__[m] for m in __import__("toy_widgets").MODULES]
PUBLIC = {name for m in NAMED for name in vars(m) if not name.startswith("_")}
ARGUMENT_NAMES = {p for m in NAMED for f in vars(m).values() if inspect.isfunction(f)
                  for p in inspect.signature(f).parameters} | {"top-k", "top-p"}
RAW = re.compile(r"broadcast|inhomogeneous|setting an array element|could not convert|invalid literal|"
                 r"not subscriptable|unsupported operand|truth value|core dimension|cannot reshape|"
                 r"object is not|unexpected keyword|positional argument|out of bounds|numpy\.|dtype\(")


def course_sentence(message, fn):
    """One sentence of the course's: one line, ends with '.', starts with a capital, a quote,
    a public name or an argument's name, or a file's (numpy's and Python's own messages
    start lower case), and holds none of their phrases."""
    first = re.match(r"[\w.-]+", message)
    first = first.group() if first else ""
    return ("\n" not in message and message.rstrip().endswith(".") and len(message) < 700
            and (message[:1].isupper() or message[:1] in "'\"`(["
                 or first in PUBLIC | ARGUMENT_NAMES or re.fullmatch(r"\w+\.(json|txt|safetensors)", first))
            and not RAW.search(message))


def has_nan(x, depth=0):
    if depth > 6:
        return False
    if isinstance(x, dict):
        return any(has_nan(v, depth + 1) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(has_nan(v, depth + 1) for v in x[:50])
    if isinstance(x, (float, np.floating, np.ndarray)):
        a = np.asarray(x)
        return a.dtype.kind in "fc" and bool(np.isnan(a).any())
    return False


def snapshot():
    return [(name, tm.get_weight(tm.PARAMS, name).tobytes()) for name in tm.weight_names(tm.PARAMS)]


BEFORE = snapshot()


def short(x, depth=0):
    """A generated argument in a few characters, for the failure message."""
    if isinstance(x, np.ndarray):
        return f"array{x.shape}:{x.dtype}" + (f"={x.tolist()}" if x.size <= 4 else "")
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {short(v, depth + 1)}" for k, v in list(x.items())[:4]) + \
            (", ..." if len(x) > 4 else "") + "}" if depth < 2 else "{...}"
    if isinstance(x, (list, tuple)) and len(x) > 6:
        return f"{type(x).__name__} of {len(x)}: {short(list(x[:4]), depth + 1)[:-1]}, ...]"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(short(v, depth + 1) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
    return repr(x)[:60]


def check_call(fn, args, kwargs):
    """fn(*args, **kwargs) returns a result without NaN or raises the course's sentence."""
    call = f"{fn.__module__}.{fn.__name__}({', '.join([short(a) for a in args] + [f'{k}={short(v)}' for k, v in kwargs.items()])})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            result = fn(*args, **kwargs)
    except ValueError as err:
        assert course_sentence(str(err), fn), f"not the course's sentence: {str(err)!r}\n  from {call}"
    except Exception as err:   # noqa: BLE001 (what the test is about)
        pytest.fail(f"{type(err).__name__}: {str(err)[:300]}\n  from {call}")
    else:
        assert not has_nan(result), f"NaN in the result of {call}"
        if fn.__name__ in RIGHT and fn.__module__ in ("toy_model", "toy_checks"):
            assert RIGHT[fn.__name__](result, *args, **kwargs), f"a wrong result from {call}"
    assert snapshot() == BEFORE, f"{call} changed tm.PARAMS"


def _sums_to_one(p, *_args, **_kwargs):
    return bool(np.allclose(np.sum(p, axis=-1), 1, atol=1e-5)) and bool((np.asarray(p) >= 0).all())


# What a result must satisfy when a function returns one (an independent check, not the code).
RIGHT = {
    "encode": lambda ids, text: tm.decode(ids) == text,
    "decode": lambda text, ids: tm.encode(text) == [int(i) for i in ids] if text else len(ids) == 0,
    "softmax": _sums_to_one, "next_token_probs": _sums_to_one,
    "log_softmax": lambda lp, z: bool(np.allclose(np.exp(lp).sum(-1), 1)),
    "causal_mask": lambda m, n: m.shape == (n, n) and int(m.sum()) == n * (n + 1) // 2,
    "entropy": lambda h, p: 0 <= h <= np.log(len(p)) + 1e-6,
    "sample": lambda i, p, seed: 0 <= i < len(p) and np.asarray(p)[i] > 0,
    "gelu": lambda y, x: bool((np.asarray(y) >= -0.17).all()),
    "layer_norm": lambda y, x, g, b, **_: y.shape == np.shape(x),
    "cross_entropy": lambda loss, logits, targets: loss >= 0,
    "generate": lambda steps, prompt, **kw: all(_sums_to_one(s["p"]) for s in steps),
    "copy_params": lambda copy, params: tm.weight_names(copy) == tm.weight_names(
        tm.PARAMS if params is None else params) and type(copy["wte"]) is np.ndarray,
}


def call_strategy(entry):
    """(args, kwargs) for a table entry: its positional strategies, then a dict of keywords."""
    positional = [s for s in entry if not isinstance(s, dict)]
    keywords = next((s for s in entry if isinstance(s, dict)), {})
    return st.tuples(st.tuples(*positional), st.fixed_dictionaries(keywords))


def fuzzed(items):
    return [pytest.param(*item, id=f"{item[0]}.{item[1]}") for item in items]


FUZZED = fuzzed([(module, name, f) for module, name, f in public_functions()
                 if entry(module, name) is not None and not isinstance(entry(module, name), str)])


@pytest.mark.parametrize("module, name, fn", FUZZED)
def test_junk_gets_a_result_or_one_sentence(module, name, fn, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # a function that writes files writes them here

    @FUZZ
    @given(call_strategy(entry(module, name)))
    def run(call):
        args, kwargs = call
        check_call(fn, args, kwargs)
    run()


# --- Widget builders ------------------------------------------------------------------------
# A builder is a public function of a notebook's widget module that builds a panel. Each is
# called with junk for each argument (fewer examples: a widget takes tens of ms to build).

WIDGET_MODULES = [m for m in __import__("toy_widgets").MODULES if m.startswith(("nb", "lab"))]
TINY_LAB = st.just("lab")           # replaced by a loaded lab of the toy in GPT-2's format
BUILDERS = {
    "tokenizer_widget": [TEXT], "embedding_scatter": [TEXT], "query_picker": [TEXT, either(st.integers(0, 1))],
    "mask_and_heads": [TEXT], "block_branches": [TEXT], "logit_playground": [TEXT], "logit_shift": [TEXT],
    "attention_switch": [TEXT], "tying_switch": [TEXT], "temperature_explorer": [TEXT],
    "generation_stepper": [TEXT, NUMBER, SEED],
    "train_live": [CORPUS, either(st.integers(1, 3)), either(st.integers(1, 3))],
    "lab_attention": [either(TINY_LAB), TEXT],
    "copy_training": [SEED, either(st.integers(1, 3)), either(st.integers(1, 2))],
    "head_explorer": [TWO_BLOCKS, ROWS_OF_IDS, WHERE], "head_switches": [TWO_BLOCKS, ROWS_OF_IDS, WHERE],
    "training_replay": [either(st.just(_RUN)), ROWS_OF_IDS, WHERE],
}


def widget_builders():
    import importlib
    found = []
    for name in WIDGET_MODULES:
        module = importlib.import_module(f"toy_widgets.{name}")
        for fname, f in vars(module).items():
            if not fname.startswith("_") and inspect.isfunction(f) and f.__module__ == module.__name__ \
                    and re.search(r"\b(panel|_switch)\(", inspect.getsource(f)):
                found.append((name, fname, f))
    return found


def test_every_widget_builder_is_in_the_table():
    missing = [f"{m}.{n}" for m, n, _ in widget_builders() if n not in BUILDERS]
    assert not missing, f"add an entry to the fuzz table BUILDERS for: {', '.join(missing)}"


@pytest.fixture(scope="module")
def toy_lab(tmp_path_factory):
    folder = toy_gpt2.save_toy_as_gpt2(tmp_path_factory.mktemp("toy-gpt2"))
    return toy_gpt2.load_gpt2(folder)


BUILT = fuzzed([b for b in widget_builders() if b[1] in BUILDERS])


@pytest.mark.parametrize("module, name, fn", BUILT)
def test_widget_builders_take_junk(module, name, fn, toy_lab):
    @settings(FUZZ, max_examples=3)
    @given(call_strategy(BUILDERS[name]))
    def run(call):
        args, kwargs = call
        args = tuple(toy_lab if isinstance(a, str) and a == "lab" else a for a in args)
        try:
            check_call(fn, args, kwargs)
        finally:
            import matplotlib.pyplot as plt
            plt.close("all")
    run()


# --- What a learner types into the widgets (writes into the weights: tests/test_toy_model.py) --

LONG = " ".join(["the"] * 20)


def test_a_widget_builder_answers_a_wrong_text_in_one_sentence():
    for name in ["tokenizer_widget", "embedding_scatter", "query_picker", "mask_and_heads", "block_branches",
                 "logit_playground", "logit_shift", "attention_switch", "tying_switch",
                 "temperature_explorer", "generation_stepper"]:
        for junk in [None, 5, "", "the cat jumped", "the " * 20, LONG, [0, 1, 2], b"the", np.array([1, 2])]:
            if name == "tokenizer_widget" and isinstance(junk, str):
                continue                            # any text: the widget says what it cannot cover
            with pytest.raises(ValueError) as info:
                getattr(tw, name)(junk)
            assert course_sentence(str(info.value), None) and "trait" not in str(info.value), (name, junk)
            assert junk is not LONG or "the context holds at most 8" in str(info.value), name


# Every box a number is typed into reads it with one parser, so the same bad text gets the
# same sentence in each; {as} is where a widget names its number ("the logit as ").
TYPED_SENTENCES = [
    *[(typed, f"'{typed}' is not a number: type {{as}}a decimal number such as 0.25, or a fraction such as 3/4.")
      for typed in ("abc", "nan", "1_0", "0x1f")],
    ("0,811", "'0,811': use a point for decimals (0.811) and commas only between groups of three digits (7,000)."),
    ("7,00", "'7,00': use a point for decimals (0.811) and commas only between groups of three digits (7,000)."),
    ("1/0", "'1/0' divides by 0: a fraction needs a denominator other than 0."),
]


def test_the_same_bad_number_gets_the_same_sentence_in_every_box():
    for typed, sentence in TYPED_SENTENCES:
        assert tw.exercise("06.3").try_answer(typed) == sentence.format(**{"as": ""})
    for build, what in ((tw.logit_playground, "logit"), (tw.logit_shift, "constant c")):
        root = build()
        box = next(w for w in walk(root) if type(w) is widgets.Text and "type" in w.placeholder)
        for typed, sentence in TYPED_SENTENCES:
            box.value = typed
            said = [text(w) for w in walk(root) if isinstance(w, widgets.HTML) and text(w).startswith(f"'{typed}'")]
            assert said == [sentence.format(**{"as": f"the {what} as "})], (build.__name__, typed)
