"""The "Check yourself" exercises: every registered exercise, checked through its widget.

The checker's rules (the close window, fewer decimals, unreadable input, a function not
written yet) are tested once. For each exercise, its own content: the right answer passes
and its worked answer prints it, a value off by more than its tolerance does not, each hint
is reached by its wrong value, nothing picked is refused; a write-it-yourself exercise
accepts its worked solution and names each typical mistake. The notebooks' exercise lines work
in a namespace whose variables are junk, and no answer is on a stored notebook's page.
"""
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

import toy_gpt2 as tg
import toy_model as tm
import toy_train as tt
import toy_widgets as tw

MODULES = {"tm": tm, "tw": tw, "tt": tt, "tg": tg}     # as a notebook's first cell imports them

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("0[1-7]_*.ipynb"))
KEYS = sorted(tw.EXERCISES)
GENERIC = "Not quite: recompute step by step and try again."


def kind(*kinds):
    return [k for k in KEYS if tw.EXERCISES[k]["kind"] in kinds]


def facts(key):
    spec = tw.EXERCISES[key]
    return {name: tw.exercises._now(value) for name, value in spec.items() if name != "reference"}


def typed(value, spec):
    return str(int(round(value))) if spec["kind"] == "count" else tw.fmt(value, spec["decimals"])


def solved(key):
    """The exercise's worked solution, run: the function it defines."""
    namespace = {"np": np, **MODULES}
    exec(facts(key)["solution"], namespace)
    (name,) = [n for n, v in namespace.items() if callable(v) and n not in ("np", *MODULES)
               and not n.startswith("__")]
    return namespace[name]


# --- numbers and counts ---------------------------------------------------------------

@pytest.mark.parametrize("key", kind("number", "count"))
def test_the_answer_to_the_asked_decimals_is_right_and_the_verdict_prints_the_worked_answer(key):
    """One rule: the question asks for d decimals, the checker compares d decimals, and
    "Right: ..." prints the value the worked answer prints, fmt(answer, d)."""
    spec = facts(key)
    shown = tw.fmt(spec["answer"], spec["decimals"])
    assert shown in spec["solution"], f"the worked answer of {key} does not print {shown}"
    box = tw.exercise(key)
    assert box.try_answer(shown) == f"Right: {shown}." and box.right is True
    if spec["kind"] == "number":             # the question names the precision it checks
        assert all(int(n) == spec["decimals"] for n in re.findall(r"(\d+) decimals?", spec["question"]))
    assert re.search(r"\d decimals?|whole number", box._plain), key


def test_the_checkers_rules_on_typed_values_written_out(monkeypatch):
    """The checker's rules, once, on an exercise of this test's own (answer 0.263, 3
    decimals, one hint at 0.300): the verdict for each typed value written out. Up to 3
    units of the last decimal is close, fewer decimals than asked are close unless exact,
    any other wrong value gets the generic sentence, unreadable input one sentence."""
    monkeypatch.delitem(tw.EXERCISES, "99.1", raising=False)
    tw.exercises.number_exercise("99.1", "What is it?", 0.263, "`print(0.263)`",
                                 hints=[(0.300, "Hint sentence.")])
    try:
        close = "Close, but the last decimal is off: keep every decimal in the steps in between."
        far = "Not quite: recompute step by step and try again."
        verdicts = {"0.263": "Right: 0.263.", "0.2631": "Right: 0.263.",
                    "0.262": close, "0.264": close, "0.261": close, "0.265": close,
                    "0.260": close, "0.266": close, "0.26": "Close: give 3 decimals.",
                    "0.259": far, "0.267": far, "0.258": far, "0.268": far, "0.253": far,
                    "0.273": far, "0.299": "Not quite. Hint sentence.",
                    "0.300": "Not quite. Hint sentence.", "0.301": "Not quite. Hint sentence.",
                    "0.302": far, "0.2630": "Right: 0.263.", "1.263": far}
        for typed_text, verdict in verdicts.items():
            assert tw.answer_number("99.1", typed_text)[1] == verdict, typed_text
        for junk, sentence in [("0,263", "use a point for decimals"), ("abc", "'abc' is not a number"),
                               ("", "Type a number first.")]:
            message = tw.exercise("99.1").try_answer(junk)
            assert sentence in message and message.count(". ") <= 1, message
    finally:
        tw.EXERCISES.pop("99.1", None)


def test_an_exact_answer_with_fewer_decimals_is_right():
    """03.2's answer is 1/5: a learner who predicts it and types 0.2 is right, as with 0.200;
    0.25 (1/4) and 0.3 are not (typed as 1/5: test_fractions_are_accepted_...)."""
    say = tw.exercise("03.2").try_answer
    assert say("0.2") == say("0.200") == "Right: 0.200."
    assert not say("0.25").startswith("Right") and not say("0.3").startswith("Right")


@pytest.mark.parametrize("key", kind("number", "count"))
def test_each_hint_is_reached_by_its_wrong_value(key):
    spec = facts(key)
    assert spec["hints"], "a number exercise names at least one likely mistake"
    d = spec["decimals"]
    wrongs = [round(w * 10 ** d) for w, _ in spec["hints"]]
    answer = round(spec["answer"] * 10 ** d)
    apart = 0 if spec["kind"] == "count" else 4      # outside the close window (3) and its edge
    assert all(abs(w - answer) > apart for w in wrongs), "a hint is within the close window"
    assert all(abs(a - b) > (0 if spec["kind"] == "count" else 2)
               for i, a in enumerate(wrongs) for b in wrongs[i + 1:]), \
        "two hints share a value: the second can never be reached"
    box = tw.exercise(key)
    for wrong, sentence in spec["hints"]:
        assert box.try_answer(typed(wrong, spec)) == f"Not quite. {sentence}"
        assert box.right is False and not box.answer_shown


def test_some_exercises_can_be_close():
    assert sum(abs(round(a, 1) - a) > 10.0 ** -facts(k)["decimals"] for k in kind("number")
               for a in [facts(k)["answer"]]) >= 5


def test_counts_want_whole_numbers_read_exactly_and_read_thousands():
    box = tw.exercise("04.1")
    assert box.try_answer("abc") == "'abc' is not a number: type a whole number, such as 7."
    assert box.try_answer("7.5") == "'7.5' is not a whole number: type a whole number, such as 7."
    assert box.try_answer("1,500") == GENERIC              # read as 1500, not as 1.5
    assert box.try_answer("36.0").startswith("Right")
    assert tw.typed_number("9223372036854775807", whole=True) == 2**63 - 1    # not rounded by a float
    assert [tw.typed_number(t, whole=True) for t in ("15.0", "1e3", "1,500", "10/2")] == [15, 1000, 1500, 5]
    ok, sentence = tw.answer_number(next(k for k in KEYS if tw.EXERCISES[k]["kind"] == "count"), "1" * 400)
    assert ok is False and "not a count" not in sentence      # a huge count is a wrong count


def test_typed_numbers_are_read_as_written():
    assert tw.typed_number("7,000") == 7000.0
    assert tw.typed_number("−1.5") == -1.5
    assert tw.typed_number("5/3") == pytest.approx(5 / 3)
    assert tw.typed_number(" 1/12 ") == pytest.approx(1 / 12)
    assert tw.typed_number("12,345.5") == 12345.5
    assert tw.typed_number("1e-3") == 0.001 and tw.typed_number("-2.5", "logit") == -2.5
    # (the sentences for a comma, 1/0, nan: test_bad_input_fuzz.py's TYPED_SENTENCES, in every
    # box; for a huge number and a long text: test_bad_input.py's table)


@pytest.mark.parametrize("key, fraction", [("05.1", "5/3"), ("03.2", "1/5")])
def test_fractions_are_accepted_where_the_answer_is_one(key, fraction):
    assert "fraction" in tw.exercise(key)._plain
    assert tw.exercise(key).try_answer(fraction).startswith("Right")


def test_an_answer_from_the_printed_rounded_inputs_is_right_too():
    """04.3's row is printed to 3 decimals: from it the hand answer is 1.582, from the
    unrounded row 1.581; both are right, a value beyond the inputs' rounding is not."""
    assert tw.EXERCISES["04.3"]["tolerance"] > 0
    assert tw.exercise("04.3").try_answer("1.582") == "Right: 1.582."
    assert tw.exercise("04.3").try_answer("1.581") == "Right: 1.582."
    assert not tw.exercise("04.3").try_answer("1.585").startswith("Right")
    assert not tw.exercise("04.3").try_answer("1.58").startswith("Right")
    with pytest.raises(ValueError, match="tolerance"):
        tw.number_exercise("97.1", "Q?", 1.0, "A.", tolerance=0.01)
    assert "97.1" not in tw.EXERCISES


def test_06_6_accepts_the_loss_from_06_5s_rounded_p_and_says_so():
    """06.5's answer is p to 3 decimals; −ln of that rounded p is 1.749, of the unrounded p
    1.751 (computed here from E's rows by hand): both right, and the worked answer says why."""
    z = np.asarray(tm.PARAMS["wte"]) @ np.array([1.0, 0.0, 1.0, 0.0])
    floor = tm.VOCAB.index(" floor")
    p = np.exp(z[floor]) / np.exp(z).sum()
    exact, carried = tw.fmt(-np.log(p)), tw.fmt(-np.log(round(float(p), 3)))
    assert (exact, carried) == ("1.751", "1.749")
    for typed_text in (exact, carried):
        assert tw.exercise("06.6").try_answer(typed_text) == f"Right: {exact}."
    assert not tw.exercise("06.6").try_answer("1.747").startswith("Right")
    worked = tw.exercises._now(tw.EXERCISES["06.6"]["solution"])
    assert f"−ln {tw.fmt(p)} = {carried}" in worked and f"−ln {tw.fmt(p)} = {exact}" not in worked


def test_the_fraction_example_is_no_exercise_s_answer():
    """The note under a question that takes a fraction names an example, never an answer."""
    example = re.search(r"a fraction such as (\d+/\d+)", tw.exercises._precision(
        {"kind": "number", "decimals": 3, "fractions": True})).group(1)
    value = tw.typed_number(example)
    for key in kind("number"):
        assert tw.fmt(facts(key)["answer"]) != tw.fmt(value), key


# --- choices -----------------------------------------------------------------------------

@pytest.mark.parametrize("key", kind("choice"))
def test_choice_right_wrong_with_hints_and_nothing_picked(key):
    spec = facts(key)
    box = tw.exercise(key)
    assert box.try_answer(None) == "Pick one of the options first." and box.right is None
    for option in spec["options"]:
        if option != spec["answer"]:
            assert option in spec["hints"], f"no hint for the wrong option {option!r}"
            assert box.try_answer(option) == f"Not quite. {spec['hints'][option]}"
            assert not box.answer_shown
    assert box.try_answer(spec["answer"]) == "Right." and box.answer_shown


def test_code_in_a_hint_is_shown_as_code_not_as_backticks():
    """A hint may name code in backticks, as questions and worked answers do; the box shows
    it as code. 06.1's hint on the logits names two lines of code."""
    spec = facts("06.1")
    wrong = next(o for o, h in spec["hints"].items() if "`" in h and o != spec["answer"])
    box = tw.exercise("06.1")
    box.try_answer(wrong)
    shown = next(w.value for w in box.children if "Not quite" in getattr(w, "value", ""))
    assert "`" not in shown and "<code>model(...).logits</code>" in shown, shown


# --- write it yourself ---------------------------------------------------------------------

@pytest.mark.parametrize("key", kind("code"))
def test_code_right_solution_passes_and_typical_mistakes_get_their_hints(key):
    spec = facts(key)
    box = tw.exercise(key, solved(key))
    assert box.right is True and box.message.startswith("Right"), box.message
    assert len(spec["mistakes"]) >= 3
    for wrong, sentence in spec["mistakes"]:
        ok, message = tw.answer_code(key, wrong)
        assert ok is False and message.endswith(sentence), (sentence, message)


def test_code_not_done_raising_and_wrong_shapes_get_one_sentence():
    def stub(*args):
        ...

    def unfinished(*args):
        raise NotImplementedError

    def broken(*args):
        raise ValueError("boom\nsecond line")

    assert tw.exercise("03.4", stub).message == tw.exercise("03.4", unfinished).message == tw.NOT_DONE
    message = tw.exercise("03.4", broken).message
    assert message.endswith("raised ValueError: boom.") and "second line" not in message
    message = tw.exercise("03.4", lambda *args: np.zeros((2, 3, 4))).message
    assert message.startswith("Not yet, on ") and "shape" in message


class Awkward:
    """An object numpy cannot read (its __array__ raises)."""
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array here")


@pytest.mark.parametrize("key", ["03.4", "07.7"])      # the checker's rule, on an array and a loop
def test_every_return_of_a_learners_function_gets_a_verdict_sentence(key):
    reference = tw.EXERCISES[key]["reference"]
    returns = {"a ragged list": [[1, 2], [3]], "text": "abc", "a dict": {"a": 1}, "a set": {1, 2},
               "a generator": (i for i in range(3)), "a 400-digit int": 10**400, "an awkward object": Awkward(),
               "parts": (np.zeros(2), np.zeros((2, 2)), 1), "NaN": np.nan}
    for what, value in returns.items():
        ok, sentence = tw.answer_code(key, lambda *a, value=value: value)
        assert ok is False and sentence.startswith(("Not yet, on", "On ")) and sentence.endswith(".") \
            and "\n" not in sentence, (key, what, sentence)
    ok, sentence = tw.answer_code(key, lambda *a: np.asarray(reference(*a)) + 5j)
    assert ok is False and "complex" in sentence


def test_an_answer_not_among_the_options_is_refused_when_shown():
    """(The other authoring mistakes, refused at once: test_bad_input.py's table.)"""
    tw.choice_exercise("98.2", "Q?", ["a", "b"], "c", "A.")
    try:
        with pytest.raises(ValueError, match="exactly one of its distinct options"):
            tw.exercise("98.2")
    finally:
        del tw.EXERCISES["98.2"]


# --- what the page shows -------------------------------------------------------------------

def widget_texts(widget):
    """Every string a widget and its children hold (what the stored widget state would)."""
    found = []
    for name in ("value", "description", "placeholder", "options", "_options_labels"):
        value = getattr(widget, name, None)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found += [str(v) for v in value]
    for child in getattr(widget, "children", ()):
        found += widget_texts(child)
    return found


def answer_marks(key):
    """Texts that would give exercise `key` away if shown before the learner asks."""
    spec = facts(key)
    solution = re.sub(r"\s+", " ", spec["solution"]).strip()
    marks = [solution[:60]]
    if spec["kind"] == "code":
        marks = [line.split("#")[0].strip() for line in spec["solution"].splitlines() if "return" in line]
    if spec["kind"] == "number":
        marks.append(tw.fmt(spec["answer"], spec["decimals"]))
    return marks


@pytest.mark.parametrize("key", KEYS)
def test_the_widget_shows_the_question_and_not_the_answer_until_asked(key):
    spec = facts(key)
    box = tw.exercise(key, solved(key)) if spec["kind"] == "code" else tw.exercise(key)
    assert {"course-widget", "w-check"} <= set(box._dom_classes)
    bundle = box._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    question = spec["question"]
    assert question[:40] in bundle["text/plain"]
    assert question.replace("`", "")[:30] in html.unescape(re.sub(r"<[^>]+>", "", bundle["text/html"]))
    if spec["kind"] == "code":
        return                                     # right at once: its solution is shown
    shown = " ".join(widget_texts(box) + [bundle["text/plain"], bundle["text/html"]])
    for mark in answer_marks(key):
        assert mark not in re.sub(r"\s+", " ", html.unescape(shown)), mark
    box.show_answer()
    assert box.answer_shown and box.children[-1].value


# --- the notebooks ----------------------------------------------------------------------------

def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


JUNK = {name: "junk" for name in
        "dots weights attn concat W_O p r z q k v E P X h tokens n roof steps ids text u mask rows "
        "scores two e options answer both_off v_ c g0 g10 right p_off z_h z_wu top2 distance ids_1 "
        "sentence n_words n_allowed unmasked change".split()}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_exercise_lines_work_whatever_the_notebook_variables_hold(path):
    """Run the notebook's exercise cells (and the unfinished functions they check) with
    every variable a learner could have overwritten set to junk."""
    namespace = {**MODULES, "np": np, **JUNK}
    boxes = []
    for cell in cells(path):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith("def "):
            exec(source, namespace)
        if cell["cell_type"] == "code" and "tw.exercise(" in source:
            boxes.append(eval(source.strip(), namespace))
    assert boxes
    for box in boxes:
        spec = facts(box.key)
        if spec["kind"] == "code":
            assert box.message == tw.NOT_DONE, "the stored notebook holds the unfinished function"
        elif spec["kind"] == "choice":
            assert box.try_answer(spec["answer"]) == "Right."
        else:
            assert box.try_answer(typed(spec["answer"], spec)).startswith("Right")


def page_text(path):
    """What a reader of the stored notebook can see: sources, outputs, widget state."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    parts = [json.dumps(nb.get("metadata", {}).get("widgets", {}), ensure_ascii=False)]
    for cell in nb["cells"]:
        parts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            parts += ["".join(v) if isinstance(v, list) else str(v) for v in out.get("data", {}).values()]
    return re.sub(r"\s+", " ", html.unescape("\n".join(parts)).replace("−", "-"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_answer_is_on_a_stored_page(path):
    text = page_text(path)
    keys = [k for k in KEYS if k.startswith(path.stem[:2])]
    assert keys
    for key in keys:
        for mark in answer_marks(key):
            mark = re.sub(r"\s+", " ", mark).replace("−", "-")
            if re.fullmatch(r"-?\d+(\.\d+)?", mark):
                assert not re.search(rf"(?<![\d.]){re.escape(mark)}0*(?![\d])", text), (key, mark)
            else:
                assert mark not in text, (key, mark)


def test_07_2_from_the_printed_p_column_ends_at_the_same_answer():
    """07.2's worked answer squares p(␣wall) to 4 decimals and says the printed 3-decimal column
    ends at the same 0.097: checked here from the softmax written out."""
    z = tm.forward(tm.encode("the cat climbed the"))[-1]
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    wall = tm.VOCAB.index(" wall")
    exact = tw.fmt(p[wall] ** 2 / (p ** 2).sum())
    printed = np.round(p, 3)
    assert tw.fmt(printed[wall] ** 2 / (printed ** 2).sum()) == exact == "0.097"
    assert tw.fmt(printed[wall] ** 2 / (p ** 2).sum()) == exact
    worked = tw.exercises._now(tw.EXERCISES["07.2"]["solution"])
    assert f"{p[wall]:.4f}² = {p[wall] ** 2:.4f}" in worked
    assert f"{p[wall]:.3f}² = " not in worked
