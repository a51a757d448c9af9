"""Notebook 07 (Generation): its widgets without a browser, its pictures and worked answers.

The widgets are built as the notebook builds them; controls are set programmatically
(w.value = ..., button.click()) as the browser would set them, and what the charts and
the text show is compared with next_token_probs for the state chosen. Then the content:
the stepper's first draw, the temperature picture's legend, the worked answers of 07.4 and
of the dog question, and the sampling-loop exercise, against references written here.
"""
import html
import json
import re
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest

import reference as ref
import toy_model as tm
import toy_widgets as tw
from widget_tools import echo, shown, text, walk

PROMPT = "the cat climbed the"
Z = tm.forward(tm.encode(PROMPT))[-1]


def control(root, kind, description=None):
    found = [w for w in walk(root) if type(w).__name__ == kind
             and (description is None or getattr(w, "description", None) == description)]
    assert found, f"no {kind} {description!r} in the widget"
    return found[0]


def message(root):
    """The message area: the last HTML child of the panel before the canvas."""
    return html.unescape(root.children[-3].value)          # then the canvas, the style


# --- w-temperature -------------------------------------------------------------

def check_explorer(root, T, k, p):
    """Bars, outlines, boxes and text line all show the state (T, k, p), exactly."""
    want = tm.next_token_probs(Z, T, k, p)
    assert np.allclose(shown(root.chart), want)
    assert np.allclose(shown(root.before), tm.next_token_probs(Z, T))
    assert (root.state.T, root.state.k, root.state.p) == (T, k, p)
    boxes = [control(root, kind, f"exact {name}").value
             for kind, name in (("FloatText", "T"), ("IntText", "k"), ("FloatText", "p"))]
    assert boxes == [T, k, p]
    top = int(np.argmax(want))
    q = want[want > 0]
    assert text(root.children[4]) == (
        f"T = {tw.plain(T)}, k = {k}, p = {tw.plain(p)}: kept {len(q)} of 12 tokens · most "
        f"likely {tm.token_name(top)} with p = {tw.fmt(want[top])} · entropy "
        f"{tw.fmt(-(q * np.log(q)).sum())} nats (uniform: {tw.fmt(np.log(12))})")


def test_temperature_widget_starts_at_the_models_p():
    root = tw.temperature_explorer()
    assert "w-temperature" in root._dom_classes
    check_explorer(root, 1.0, 12, 1.0)                      # (T = 1 and no filter is softmax: test_toy_model)
    assert "␣roof with p = 0.395" in text(root.children[4])
    assert message(root) == ""


def test_exact_values_survive_the_sliders_echo():
    root = tw.temperature_explorer()
    control(root, "FloatText", "exact T").value = 0.333
    check_explorer(root, 0.333, 12, 1.0)
    echo(control(root, "FloatSlider", "temperature"))      # 0.35 from the browser
    check_explorer(root, 0.333, 12, 1.0)
    control(root, "FloatText", "exact p").value = 0.333
    echo(control(root, "FloatSlider", "top-p"))
    check_explorer(root, 0.333, 12, 0.333)
    control(root, "FloatText", "exact T").value = 1000.0   # beyond the slider: allowed
    echo(control(root, "FloatSlider", "temperature"))
    check_explorer(root, 1000.0, 12, 0.333)


@pytest.mark.parametrize("box, kind, bad, sentence", [
    ("temperature", "FloatSlider", float("nan"), "finite number"),      # set from code: refused
    ("exact T", "FloatText", -1.0, "Temperature must be 0 (greedy) or a positive number"),
    ("exact T", "FloatText", float("nan"), "finite number"),
    ("exact k", "IntText", 0, "top-k must be a whole number of at least 1"),
    ("exact p", "FloatText", 0.0, "top-p must be above 0 and at most 1"),
    ("exact p", "FloatText", 1.5, "top-p must be above 0 and at most 1"),
    ("exact p", "FloatText", float("nan"), "finite number"),
])
def test_bad_typed_values_get_a_sentence_and_keep_the_plot(box, kind, bad, sentence):
    root = tw.temperature_explorer()
    control(root, kind, box).value = {"FloatText": 0.7, "FloatSlider": 0.7, "IntText": 5}[kind]   # a good value first
    good = dict(T=root.state.T, k=root.state.k, p=root.state.p)
    control(root, kind, box).value = bad
    assert sentence in message(root)
    assert kind != "FloatSlider" or control(root, kind, box).value == 0.7       # put back
    assert np.allclose(shown(root.chart), tm.next_token_probs(Z, good["T"], good["k"], good["p"]))
    control(root, "FloatSlider", "temperature").value = 1.3    # a later good input clears it
    assert message(root) == ""
    check_explorer(root, 1.3, good["k"], good["p"])


# --- w-generate-steps ------------------------------------------------------------

def stepper(**kwargs):
    root = tw.generation_stepper(**kwargs)
    buttons = [w for w in walk(root) if type(w).__name__ == "Button"]
    assert [b.description for b in buttons][1:] == ["reset"]
    return root, buttons[0], buttons[1]


def next_p(ids, T):
    return tm.next_token_probs(tm.forward(ids)[-1], T)


def reference_draws(prompt, temperatures, seed):
    """What the stepper must draw (tests/reference.py's loop: one Generator seeded at reset,
    the temperature set at each click): [(p, the id drawn)] and the ids at the end."""
    steps = ref.sampled_steps(tm.forward, tm.encode(prompt), temperatures, seed, tm.EOT, tm.N_CTX)
    end = steps[-1][0] + [steps[-1][2]] if steps else tm.encode(prompt)
    return [(p, nxt) for _, p, nxt in steps], end


@pytest.mark.parametrize("prompt, seed, temperatures", [
    (PROMPT, 0, [1.0] * 4), ("the dog", 1, [1.0] * 4), ("the cat climbed", 18, [1.0, 0.333, 2.0, 1.0]),
    ("the", 3, [2.0, 0.0, 3.0, 1.5]), (PROMPT, 0, [0.0] * 4)])                     # greedy: to the end
def test_each_click_draws_from_the_seeds_generator_at_the_temperature_set_then(prompt, seed, temperatures):
    draws, end = reference_draws(prompt, temperatures, seed)
    if prompt == PROMPT:                                     # given to the builder
        root, step, reset = stepper(temperature=temperatures[0], seed=seed)
    else:                                                    # or typed into the boxes
        root, step, reset = stepper()
        control(root, "Text", "seed").value = str(seed)
        control(root, "Text", "prompt").value = prompt
    for _ in range(2):                                       # and the same again after reset
        for T, (p, nxt) in zip(temperatures, draws):
            control(root, "FloatText", "temperature").value = T
            written = root.children[3].value
            step.click()
            assert root.state.ids[-1] == nxt and root.children[3].value != written
            assert "<mark" in root.children[3].value                 # the new token is highlighted
            assert np.allclose(shown(root.chart), p) and root.chart.highlight == [nxt]
            assert f"which had p = {tw.fmt(p[nxt])}" in text(root.children[4])
        assert root.state.ids == end
        assert step.disabled == (end[-1] == tm.EOT or len(end) == tm.N_CTX)
        if step.disabled:
            assert "finished" in step.description
            assert ("<|endoftext|>" if end[-1] == tm.EOT else "context is full") in text(root.children[4])
            step.click()                                         # nothing more happens
            assert root.state.ids == end
        control(root, "FloatText", "temperature").value = temperatures[0]
        reset.click()
        assert root.state.ids == tm.encode(prompt)
        assert np.allclose(shown(root.chart), next_p(tm.encode(prompt), temperatures[0]))
        assert not step.disabled


def test_a_new_temperature_is_shown_at_once_and_used_by_the_next_draw():
    root, step, _ = stepper(temperature=1.0, seed=0)
    ids = tm.encode(PROMPT)
    assert np.allclose(shown(root.chart), next_p(ids, 1.0))
    step.click()
    ids = list(root.state.ids)
    control(root, "FloatText", "temperature").value = 0.25
    assert np.allclose(shown(root.chart), next_p(ids, 0.25))     # the next token's, at T = 0.25
    assert "T = 0.25" in root.chart.title
    step.click()
    assert np.allclose(shown(root.chart), next_p(ids, 0.25))     # drawn from that one
    assert root.state.ids[:-1] == ids
    control(root, "FloatText", "temperature").value = 0.0         # greedy from here on
    step.click()
    assert root.state.ids[-1] == int(np.argmax(next_p(root.state.ids[:-1], 1.0)))


def test_a_prompt_ending_the_text_says_so_over_an_empty_chart():
    root, step, _ = stepper(prompt="the cat climbed the roof.<|endoftext|>")
    assert step.disabled
    assert "already ends with <|endoftext|>" in text(root.children[4])
    assert not shown(root.chart).any()


def test_a_full_context_stops_the_button():
    root, step, _ = stepper(prompt="the cat climbed the roof. the", temperature=1.0)   # 8 tokens
    assert step.disabled and "context full" in step.description
    root, step, _ = stepper(prompt="the cat climbed the roof climb", temperature=0.0)  # 7 tokens
    step.click()
    assert len(root.state.ids) == 8 and step.disabled and "finished" in step.description


@pytest.mark.parametrize("name, value, sentence", [
    ("prompt", "the zebra", "The toy vocabulary has no token for '␣zebra'"),
    ("prompt", "", "The text is empty"),
    ("prompt", "the cat climbed the roof. the cat climbed the", "The prompt has 12 tokens but the context holds at most 8"),
    ("temperature", -1.0, "Temperature must be 0 (greedy) or a positive number"),
    ("temperature", float("nan"), "Temperature must be 0 (greedy) or a positive number"),
    ("seed", "-2", "The seed must be a whole number from 0 to 2**63 - 1, not -2."),
    ("seed", str(2**63), f"The seed must be a whole number from 0 to 2**63 - 1, not {2**63}."),
    ("seed", "1" * 5000, "'111111111111111111111...' is too large: type an ordinary finite number."),
    ("seed", "1.5", "'1.5' is not a whole number: type the seed as a whole number, such as 7."),
])
def test_stepper_bad_input_gets_one_sentence(name, value, sentence):
    root, step, _ = stepper()
    step.click()
    good_values, good_ids = shown(root.chart).copy(), list(root.state.ids)
    widget = next(w for w in walk(root) if getattr(w, "description", None) == name)
    widget.value = value
    assert sentence in message(root)
    step.click()                                             # a click repeats the sentence, draws nothing
    assert sentence in message(root)
    assert root.state.ids == good_ids
    assert np.allclose(shown(root.chart), good_values)
    widget.value = {"prompt": "the dog", "temperature": 0.5, "seed": str(2**63 - 1)}[name]
    assert message(root) == ""
    assert name != "seed" or root.state.seed == 2**63 - 1            # exact: not rounded through a float


# --- the page's content: the first draw, the pictures, the worked answers ------------

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "07_generation.ipynb"
CELLS = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
SENTENCE = re.compile(r"the (cat|dog) climbed the (roof|wall|sofa|floor)\.<\|endoftext\|>")


def source(cell):
    return "".join(cell["source"])


def code_cells():
    return [source(c) for c in CELLS if c["cell_type"] == "code"]


def p_after(text_):
    """p of the next token after text_, by hand: the softmax of the last row, written here."""
    z = tm.forward(tm.encode(text_))[-1]
    e = np.exp(z - z.max())
    return e / e.sum()


def our_loop(prompt, temperature, seed):
    """07.7's loop, from reference_draws (written independently of tm.generate and tm.sample)."""
    draws, _ = reference_draws(prompt, [temperature] * tm.N_CTX, seed)
    return [token for _, token in draws]


# --- the stepper's first draw -----------------------------------------------------------

def stepper_call():
    """The arguments the notebook builds its stepper with, read from its code cell."""
    (call,) = [s for s in code_cells() if s.startswith("tw.generation_stepper(")]
    return eval(call.replace("tw.generation_stepper", "dict"))


def test_the_stepper_a_class_sees_first_writes_a_sentence():
    """The default demo ends the text with <|endoftext|> after a sentence, and no draw is a
    long shot (that the widget draws what generating draws: test_each_click_draws_...)."""
    args = stepper_call()
    steps = tm.generate(args["prompt"], temperature=args["temperature"], seed=args["seed"])
    assert args["temperature"] == 1, "the demo samples from the model's own p"
    ids = steps[-1]["ids"] + [steps[-1]["next"]]
    assert SENTENCE.fullmatch(tm.decode(ids)), tm.decode(ids)
    assert min(s["p"][s["next"]] for s in steps) > 0.05
    assert [s["next"] for s in steps] != [s["next"] for s in tm.generate(args["prompt"])], \
        "a draw that only repeats greedy shows nothing greedy does not"


def colour(c):
    return mcolors.to_hex(c, keep_alpha=False)


@pytest.mark.parametrize("k", [12, 3])
def test_the_temperature_legend_explains_every_mark_on_the_picture(k):
    """Every filled bar has the colour the legend gives "drawn from", every outline the
    colour and dash of the legend's "before" entry, whatever the state."""
    root = tw.temperature_explorer()
    next(w for w in walk(root) if getattr(w, "description", None) == "exact k").value = k
    legend = root.chart.ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) == 2 and labels[0].startswith("drawn from") and labels[1].startswith("before")
    fill, outline = legend.legend_handles
    assert {colour(b.get_facecolor()) for b in root.chart.bars} == {colour(fill.get_facecolor())}
    assert {colour(b.get_edgecolor()) for b in root.before.bars} == {colour(outline.get_edgecolor())}
    dashes = {b._unscaled_dash_pattern for b in root.before.bars}    # what is drawn, not the name
    assert dashes == {outline._unscaled_dash_pattern} and dashes != {(0, None)}
    assert not root.before.bars[0].get_fill() and not outline.get_fill()
    assert colour(outline.get_edgecolor()) != colour(fill.get_facecolor()), \
        "an outline in the bars' colour vanishes on them"
    assert np.count_nonzero([b.get_height() for b in root.chart.bars]) == k


def named(token, p):
    return f"{tm.token_name(token)} ({tw.fmt(p[tm.VOCAB.index(token)])})"


def test_the_dog_answer_names_the_step_that_goes_wrong_with_its_margins():
    solution = tw.exercises._now(tw.EXERCISES["07.5"]["solution"])
    greedy = [s["next"] for s in tm.generate("the dog", temperature=0)]
    assert solution.startswith(f"{len(greedy)}: ")
    left = tm.N_CTX - len(tm.encode("the dog"))           # the reading-only variant's answer
    assert len(greedy) < left and f"at most {tm.N_CTX} − 2 = {left} could have been added" in solution
    cell = next(source(c) for c in CELLS if source(c).startswith("### 5. How long is the greedy answer?"))
    assert "*Reading only?*" in cell and "what is the most greedy could add" in cell
    dog, cat = p_after("the dog climbed"), p_after("the cat climbed")
    climb, the, stop = (tm.VOCAB.index(t) for t in (" climb", " the", "."))
    assert greedy[2] == climb and np.argmax(dog) == climb          # the step after "climbed"
    assert np.argmax(cat) == the                                    # the cat goes on to "the"
    assert dog[climb] > dog[stop] > dog[the] and cat[the] > cat[climb]
    assert (f"greedy takes {named(' climb', dog)}, just ahead of {named('.', dog)} and "
            f"{named(' the', dog)}") in solution
    assert f"{named(' the', cat)} against {named(' climb', cat)}" in solution
    gap = tm.PARAMS["wte"][tm.VOCAB.index(" dog")] - tm.PARAMS["wte"][tm.VOCAB.index(" cat")]
    (dim,) = np.flatnonzero(gap)
    assert f"only by {tw.fmt(gap[dim], 1)} on d{dim + 1}" in solution
    assert "has not learned" not in solution and "learned nothing" in solution


def test_the_loop_exercise_checks_against_an_independent_loop_and_both_stopping_rules():
    spec = tw.EXERCISES["07.7"]
    cases = tw.exercises._now(spec["cases"])
    ends = set()
    for label, args in cases:
        want = our_loop(*args)
        assert spec["reference"](*args) == want, label
        full = len(tm.encode(args[0])) + len(want) == tm.N_CTX
        ends.add("eot" if want[-1] == tm.EOT and not full else "full" if want[-1] != tm.EOT else "both")
    assert {"eot", "full"} <= ends, "the cases must catch a loop that ignores either stopping rule"
    ok, message = tw.answer_code("07.7", our_loop)
    assert ok is True, message


def test_the_temperature_picture_draws_its_ticks_as_token_bars_does():
    (cell,) = [s for s in code_cells() if "at three temperatures" in s]
    assert "tw.token_bars(" in cell and "set_xticks" not in cell


def test_07_4_accepts_the_share_from_notebook_6s_rounded_exponentials():
    """Notebook 6 prints e^z to 3 decimals (12.069 and 4.318 for ␣roof and ␣wall): from them
    ␣wall's share is 0.264, from the unrounded p 0.263; both are right, 0.265 is not."""
    z = tm.forward(tm.encode("the cat climbed the"))[-1]
    e = np.round(np.exp(z), 3)
    roof, wall = e[tm.VOCAB.index(" roof")], e[tm.VOCAB.index(" wall")]
    assert (tw.fmt(roof), tw.fmt(wall)) == ("12.069", "4.318")
    exact = np.exp(z) / np.exp(z)[[tm.VOCAB.index(" roof"), tm.VOCAB.index(" wall")]].sum()
    assert (tw.fmt(wall / (roof + wall)), tw.fmt(exact[tm.VOCAB.index(" wall")])) == ("0.264", "0.263")
    for typed_text in ("0.264", "0.263"):
        assert tw.exercise("07.4").try_answer(typed_text) == "Right: 0.263."
    assert not tw.exercise("07.4").try_answer("0.265").startswith("Right")
