"""Nothing a learner types changes the model or gets a raw error: the weights refuse every
change at every level, sampling takes what its check takes, the bad-input sentences name the
right thing, and the widget builders and the exercise checker answer junk in one sentence."""
import copy
import pickle

import numpy as np
import pytest

import toy_checks
import toy_model as tm
import toy_widgets as tw

TEXT = "the cat climbed the"
P_ROOF = tm.intermediates(TEXT)["p"][-1][tm.VOCAB.index(" roof")]


def unchanged():
    """The model still gives the Output page's p(␣roof) and has every weight."""
    assert tm.intermediates(TEXT)["p"][-1][tm.VOCAB.index(" roof")] == P_ROOF
    assert "w_u" in tm.PARAMS and len(tm.PARAMS["blocks"]) == 1


# --- The weights' dict and lists refuse every change ------------------------------------------

BLOCK = tm.PARAMS["blocks"][0]
CHANGES = {
    "p[k] = v": lambda p: p.__setitem__("w_u", p["wte"].T),
    "del p[k]": lambda p: p.__delitem__("w_u"),
    "update": lambda p: p.update(w_u=p["wte"].T),
    "pop": lambda p: p.pop("w_u"),
    "popitem": lambda p: p.popitem(),
    "clear": lambda p: p.clear(),
    "setdefault": lambda p: p.setdefault("extra", 1),
    "|=": lambda p: p.__ior__({"w_u": 1}),
    "block[k] = v": lambda p: p["blocks"][0].__setitem__("ln_1", {}),
    "nested update": lambda p: p["blocks"][0]["mlp"]["c_fc"].update(w=0),
    "append": lambda p: p["blocks"].append(BLOCK),
    "extend": lambda p: p["blocks"].extend([BLOCK]),
    "insert": lambda p: p["blocks"].insert(0, BLOCK),
    "remove": lambda p: p["blocks"].remove(BLOCK),
    "list pop": lambda p: p["blocks"].pop(),
    "list clear": lambda p: p["blocks"].clear(),
    "sort": lambda p: p["blocks"].sort(key=id),
    "reverse": lambda p: p["blocks"].reverse(),
    "list[i] = v": lambda p: p["blocks"].__setitem__(0, {}),
    "del list[i]": lambda p: p["blocks"].__delitem__(0),
    "+=": lambda p: p["blocks"].__iadd__([BLOCK]),
    "*=": lambda p: p["blocks"].__imul__(2),
    "vocab append": lambda p: tm.VOCAB.append(" bird"),
    "vocab[i] = v": lambda p: tm.VOCAB.__setitem__(2, " bird"),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_the_weights_tree_refuses_every_change(change):
    with pytest.raises(ValueError) as info:
        change(tm.PARAMS)
    assert str(info.value) == toy_checks.READ_ONLY_SENTENCE
    unchanged()


def test_statements_a_learner_writes_are_refused_too():
    p = tm.PARAMS
    with pytest.raises(ValueError, match="read-only"):
        p["w_u"] = p["wte"].T
    with pytest.raises(ValueError, match="read-only"):
        del tm.PARAMS["w_u"]
    with pytest.raises(ValueError, match="read-only"):
        tm.PARAMS["blocks"] += [BLOCK]
    unchanged()


def test_copies_of_the_tree_are_ordinary_and_writable():
    for mine in (tm.copy_params(), copy.deepcopy(tm.PARAMS)):
        assert type(mine) is dict and type(mine["blocks"]) is list and type(mine["wte"]) is np.ndarray
        mine["w_u"] = mine["wte"].T
        mine["blocks"].append(mine["blocks"][0])
        mine["wte"][0, 0] = 5
    assert type(copy.copy(tm.PARAMS)) is dict and type(pickle.loads(pickle.dumps(tm.PARAMS))) is dict
    assert repr(tm.PARAMS) == repr(copy.deepcopy(tm.PARAMS))       # prints as a plain dict
    unchanged()


def test_walk_builds_the_container_types_asked_for():
    frozen = tm.freeze(tm.copy_params())
    assert type(frozen) is toy_checks.ReadOnlyDict and type(frozen["blocks"]) is toy_checks.ReadOnlyList
    assert type(tm.tree_map(np.copy, frozen)) is dict and type(tm.tree_map(np.copy, frozen)["blocks"]) is list


# --- The arrays: over memory that cannot be made writable --------------------------------------

W = tm.PARAMS["wte"]
WRITES = {
    "W[i, j] = v": lambda: W.__setitem__((0, 0), 5),
    "W[i][j] = v": lambda: W[0].__setitem__(0, 5),
    "W.T[i, j] = v": lambda: W.T.__setitem__((0, 0), 5),
    "W += 1": lambda: W.__iadd__(1),
    "W *= 2": lambda: W.__imul__(2),
    "W[0] += 1": lambda: W[0].__iadd__(1),
    "np.add(out=W)": lambda: np.add(W, 1, out=W),
    "np.add.at(W)": lambda: np.add.at(W, 0, 1),
    "np.copyto(W)": lambda: np.copyto(W, 0),
    "W.flags.writeable = True": lambda: setattr(W.flags, "writeable", True),
    "W.flags['W'] = True": lambda: W.flags.__setitem__("W", True),
    "W.setflags(write=True)": lambda: W.setflags(write=True),
    "view.setflags(write=True)": lambda: W.view(np.ndarray).setflags(write=True),
    "np.asarray(W)[i, j] = v": lambda: np.asarray(W).__setitem__((0, 0), 5),
    "W.fill(0)": lambda: W.fill(0),
    "W[0].sort()": lambda: W[0].sort(),
    "W.put(0, 1)": lambda: W.put(0, 1),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_numpy_refuses_every_write_into_a_weight(write):
    """numpy itself refuses, in its own words: the array lies over an immutable bytes object."""
    with pytest.raises(ValueError, match="read-only|WRITEABLE"):
        write()
    unchanged()


def test_no_door_to_writable_memory_is_left():
    flat = W.base
    assert type(W) is np.ndarray and type(flat) is np.ndarray and type(flat.base) is bytes
    for attempt in (lambda: flat.setflags(write=True), lambda: np.frombuffer(flat.base, float).setflags(write=True)):
        with pytest.raises(ValueError):
            attempt()
    with pytest.raises(TypeError):                  # bytes have no item assignment at all
        flat.base[0] = 1
    unchanged()


RESHAPES = {"W.shape = (48,)": ("shape", (48,)), "W.shape = (4, 12)": ("shape", (4, 12)),
            "W.dtype = np.int64": ("dtype", np.int64), "W.dtype = np.float32": ("dtype", np.float32)}


@pytest.mark.parametrize("attribute, value", RESHAPES.values(), ids=RESHAPES.keys())
def test_a_weight_reshaped_in_place_gets_a_sentence_not_a_wrong_answer(attribute, value):
    """numpy lets W.shape and W.dtype be set in place (no number changes): the next forward
    pass names the weight instead of computing with it."""
    before = getattr(W, attribute)
    setattr(W, attribute, value)
    try:
        with pytest.raises(ValueError, match=r"The weight '\w+' has shape"):
            tm.intermediates(TEXT)
    finally:
        setattr(W, attribute, before)
    unchanged()


def test_what_is_computed_from_a_weight_is_an_ordinary_array():
    for result in (W + 1, W[[1, 2]], W.copy(), W @ tm.PARAMS["w_u"], W.sum(axis=0), np.exp(W)):
        assert type(result) is np.ndarray and result.flags.writeable
    assert not W[0].flags.writeable and not W.T.flags.writeable    # a view stays read-only
    assert toy_checks.is_frozen(W.T) and not toy_checks.is_frozen(W.copy())
    assert not toy_checks.is_frozen(np.frombuffer(W.tobytes()))    # only what freeze checked is trusted
    assert repr(W).startswith("array([[") and str(W).startswith("[[")


# --- Sampling, softmax and the bad-id sentence -------------------------------------------------

def test_sample_takes_float32_rows_that_its_check_takes():
    rng = np.random.default_rng(0)
    for _ in range(50):
        z = rng.normal(0, 3, 50257)
        p = (np.exp(z - z.max()) / np.exp(z - z.max()).sum()).astype(np.float32)
        assert 0 <= tm.sample(p, 0) < 50257
    assert tm.sample(np.array([0.5, 0.500001]), 0) in (0, 1)
    assert tm.sample(np.array([0.5, 0.500001], np.float32), 1) in (0, 1)


def test_lists_work_where_a_learner_would_pass_them():
    assert np.allclose(tm.layer_norm([0, 2, 2, 8], 1, 0), tm.layer_norm(np.array([0.0, 2, 2, 8]), 1, 0))
    assert np.allclose(tm.gelu([-1, 0, 1]), tm.gelu(np.array([-1.0, 0, 1])))
    q = [[1.0, 0.0], [0.0, 1.0]]
    assert np.allclose(tm.attention(q, q, q), tm.attention(np.array(q), np.array(q), np.array(q)))
    assert tm.layer_norm(np.ones((2, 4), np.float32), 1, 0).dtype == np.float32


BUILDER_JUNK = [None, 5, "", "the cat jumped", "the " * 20, [0, 1, 2], b"the", np.array([1, 2])]
BUILDER_NAMES = ["tokenizer_widget", "embedding_scatter", "query_picker", "mask_and_heads", "block_branches",
                 "logit_playground", "logit_shift", "attention_switch", "tying_switch",
                 "temperature_explorer", "generation_stepper"]


@pytest.mark.parametrize("name", BUILDER_NAMES)
def test_a_widget_builder_answers_a_wrong_text_in_one_sentence(name):
    for junk in BUILDER_JUNK:
        if name == "tokenizer_widget" and isinstance(junk, str):
            continue                                # any text: the widget says what it cannot cover
        with pytest.raises(ValueError) as info:
            getattr(tw, name)(junk)
        message = str(info.value)
        assert "\n" not in message and message.endswith(".") and "trait" not in message, message


class Awkward:
    """An object numpy cannot read (its __array__ raises)."""
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array here")


RETURNS = {"a ragged list": lambda *a: [[1, 2], [3]], "text": lambda *a: "abc", "a dict": lambda *a: {"a": 1},
           "a generator": lambda *a: (i for i in range(3)), "a set": lambda *a: {1, 2},
           "a 400-digit int": lambda *a: 10**400, "an awkward object": lambda *a: Awkward(),
           "parts": lambda *a: (np.zeros(2), np.zeros((2, 2)), 1), "NaN": lambda *a: np.nan}


@pytest.mark.parametrize("key", ["03.4", "07.7"])      # the checker's rule, on an array and a loop
def test_every_return_of_a_learners_function_gets_a_verdict_sentence(key):
    from toy_widgets.exercises import EXERCISES, answer_code
    reference = EXERCISES[key]["reference"]
    junk = dict(RETURNS, complex=lambda *a: np.asarray(reference(*a)) + 5j)
    for what, function in junk.items():
        ok, sentence = answer_code(key, function)
        assert ok is False, f"{key}: {what} was judged {ok}"
        assert sentence.startswith(("Not yet, on", "On ")) and sentence.endswith(".") and "\n" not in sentence, \
            f"{key}, {what}: {sentence!r}"


def test_a_complex_result_is_not_right():
    from toy_widgets.exercises import answer_code
    ok, sentence = answer_code("06.7", lambda z: tm.softmax(z) + 5j)
    assert ok is False and "complex" in sentence


def test_a_huge_whole_number_is_a_wrong_count_not_a_non_count():
    from toy_widgets.exercises import EXERCISES, answer_number
    key = next(k for k, v in EXERCISES.items() if v["kind"] == "count")
    ok, sentence = answer_number(key, "1" * 400)
    assert ok is False and "not a count" not in sentence


def test_the_steppers_seed_box_takes_the_seeds_generate_takes():
    from widget_tools import text, walk
    import ipywidgets as widgets
    root = tw.generation_stepper(TEXT)
    box = next(w for w in walk(root) if isinstance(w, widgets.Text) and w.description == "seed")
    area = root.children[-3]                                  # the message area
    for bad, sentence in [(str(2**63), f"The seed must be a whole number from 0 to 2**63 - 1, not {2**63}."),
                          ("-1", "The seed must be a whole number from 0 to 2**63 - 1, not -1."),
                          ("1" * 5000, "'111111111111111111111...' is too large: type an ordinary finite number."),
                          ("1.5", "'1.5' is not a whole number: type the seed as a whole number, such as 7.")]:
        box.value = bad
        assert text(area) == sentence, bad
    box.value = str(2**63 - 1)                                # exact: not rounded through a float
    assert text(area) == "" and root.state.seed == 2**63 - 1


def test_the_temperature_explorer_writes_tiny_and_huge_temperatures_readably():
    from widget_tools import text, walk
    import ipywidgets as widgets
    root = tw.temperature_explorer(TEXT)
    box = next(w for w in walk(root) if isinstance(w, widgets.FloatText) and w.description == "exact T")
    for value, shown in ((1e-300, "T = 1e-300"), (1e300, "T = 1e+300"), (0.5, "T = 0.5")):
        box.value = value
        lines = [text(w) for w in walk(root) if isinstance(w, widgets.HTML) and "T = " in text(w)]
        assert any(shown + "," in line or shown + " " in line or line.endswith(shown) for line in lines), \
            (value, lines)
        assert all(len(line) < 400 for line in lines)


def test_a_typed_logit_is_read_in_decimal_notation_only():
    from toy_widgets.kit import typed_number
    assert typed_number("-2.5", "logit") == -2.5 and typed_number("1e2", "logit") == 100
    for typed in ("1_0", "0x1f", "one", "nan", "inf"):       # float() would read the first two
        with pytest.raises(ValueError, match="is not a number"):
            typed_number(typed, "logit")


# Every box a number is typed into reads it with one parser, so the same bad text gets the
# same sentence in each; {as} is where a widget names its number ("the logit as ").
TYPED_SENTENCES = [
    ("abc", "'abc' is not a number: type {as}a decimal number such as 0.25, or a fraction such as 3/4."),
    ("nan", "'nan' is not a number: type {as}a decimal number such as 0.25, or a fraction such as 3/4."),
    ("1_0", "'1_0' is not a number: type {as}a decimal number such as 0.25, or a fraction such as 3/4."),
    ("0,811", "'0,811': use a point for decimals (0.811) and commas only between groups of three digits (7,000)."),
    ("7,00", "'7,00': use a point for decimals (0.811) and commas only between groups of three digits (7,000)."),
    ("1/0", "'1/0' divides by 0: a fraction needs a denominator other than 0."),
]


def test_the_same_bad_number_gets_the_same_sentence_in_every_box():
    from widget_tools import text, walk
    import ipywidgets as widgets
    for typed, sentence in TYPED_SENTENCES:
        assert tw.exercise("06.3").try_answer(typed) == sentence.format(**{"as": ""})
    for build, what in ((tw.logit_playground, "logit"), (tw.logit_shift, "constant c")):
        root = build()
        box = next(w for w in walk(root) if type(w) is widgets.Text and "type" in w.placeholder)
        for typed, sentence in TYPED_SENTENCES:
            box.value = typed
            said = [text(w) for w in walk(root) if isinstance(w, widgets.HTML) and text(w).startswith(f"'{typed}'")]
            assert said == [sentence.format(**{"as": f"the {what} as "})], (build.__name__, typed)


def test_a_whole_number_is_read_exactly_and_a_count_box_wants_one():
    from toy_widgets.kit import typed_number
    assert typed_number("9223372036854775807", whole=True) == 2**63 - 1    # not rounded by a float
    assert [typed_number(t, whole=True) for t in ("15.0", "1e3", "1,500", "10/2")] == [15, 1000, 1500, 5]
    assert tw.exercise("04.1").try_answer("abc") == "'abc' is not a number: type a whole number, such as 7."
    assert tw.exercise("04.1").try_answer("7.5") == "'7.5' is not a whole number: type a whole number, such as 7."


