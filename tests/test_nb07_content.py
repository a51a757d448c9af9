"""Notebook 07 (Generation): its pictures and worked answers, checked against the model and
against references written here.

The widgets' mechanics are tested in test_nb_07_generation.py; this file checks the
content: the stepper's first draw, the temperature picture's legend, the worked answers of
07.4 and of the dog question, and the sampling-loop exercise.
"""
import json
import re
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest

import toy_model as tm
import toy_widgets as tw
from widget_tools import text, walk

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "07_generation.ipynb"
CELLS = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
SENTENCE = re.compile(r"the (cat|dog) climbed the (roof|wall|sofa|floor)\.<\|endoftext\|>")


def source(cell):
    return "".join(cell["source"])


def code_cells():
    return [source(c) for c in CELLS if c["cell_type"] == "code"]


def prose():
    return "\n".join(source(c) for c in CELLS if c["cell_type"] == "markdown")


def outputs(cell):
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))


def p_after(text_):
    """p of the next token after text_, by hand: the softmax of the last row, written here."""
    z = tm.forward(tm.encode(text_))[-1]
    e = np.exp(z - z.max())
    return e / e.sum()


def our_loop(prompt, temperature, seed):
    """The sampling loop written independently of tm.generate and tm.sample: one
    Generator, the last row, rng.choice; stop at <|endoftext|> or a full context."""
    ids, rng, new = tm.encode(prompt), np.random.default_rng(seed), []
    while len(ids) < tm.N_CTX and ids[-1] != tm.EOT:
        p = tm.next_token_probs(tm.forward(ids)[-1], temperature)
        token = int(np.argmax(p)) if temperature == 0 else int(rng.choice(len(p), p=p / p.sum()))
        ids.append(token)
        new.append(token)
    return new


# --- the stepper's first draw -----------------------------------------------------------

def stepper_call():
    """The arguments the notebook builds its stepper with, read from its code cell."""
    (call,) = [s for s in code_cells() if s.startswith("tw.generation_stepper(")]
    return eval(call.replace("tw.generation_stepper", "dict"))


def test_the_stepper_a_class_sees_first_writes_a_sentence():
    """The default demo ends the text with <|endoftext|> after a sentence, and no draw is a
    long shot; the widget, clicked through, writes the same text tm.generate does."""
    args = stepper_call()
    steps = tm.generate(args["prompt"], temperature=args["temperature"], seed=args["seed"])
    assert args["temperature"] == 1, "the demo samples from the model's own p"
    ids = steps[-1]["ids"] + [steps[-1]["next"]]
    assert SENTENCE.fullmatch(tm.decode(ids)), tm.decode(ids)
    assert min(s["p"][s["next"]] for s in steps) > 0.05
    assert [s["next"] for s in steps] != [s["next"] for s in tm.generate(args["prompt"])], \
        "a draw that only repeats greedy shows nothing greedy does not"

    root = tw.generation_stepper(**args)
    button = next(w for w in walk(root) if type(w).__name__ == "Button")
    for want in steps:
        button.click()
        assert root.state.ids[-1] == want["next"]
    assert button.disabled and root.state.ids == ids


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


def a_learners_loop(prompt, temperature, seed, eot=True, reseed=False, row=-1, room=0,
                    with_prompt=False, greedy=False, ignore_temperature=False):
    """07.7 as a learner writes it (the worked answer), with one thing changed by a flag."""
    ids = tm.encode(prompt)
    rng, new = np.random.default_rng(seed), []
    while len(ids) < tm.N_CTX - room and not (eot and ids[-1] == tm.EOT):
        rng = np.random.default_rng(seed) if reseed else rng
        p = tm.next_token_probs(tm.forward(ids)[row], 1.0 if ignore_temperature else temperature)
        token = int(np.argmax(p)) if greedy else tm.sample(p, rng)
        ids.append(token)
        new.append(token)
    return tm.encode(prompt) + new if with_prompt else new


@pytest.mark.parametrize("change, hint", [
    ({"eot": False}, "stop as soon as it is drawn"), ({"reseed": True}, "seeded afresh"),
    ({"row": 0}, "the first row of the logits"), ({"room": 1}, "one token early"),
    ({"with_prompt": True}, "the prompt too"), ({"greedy": True}, "the most likely token"),
    ({"ignore_temperature": True}, "at T = 1")])
def test_a_learners_typical_wrong_loop_gets_its_hint(change, hint):
    assert tw.answer_code("07.7", a_learners_loop)[0] is True
    ok, message = tw.answer_code("07.7", lambda *args: a_learners_loop(*args, **change))
    assert ok is False and hint in message, message


def test_the_loop_exercise_is_on_the_page_unfinished_with_its_check():
    stub = [s for s in code_cells() if s.startswith("def sampling_loop(prompt, temperature, seed):")]
    assert len(stub) == 1 and stub[0].rstrip().endswith("...   # your code here")
    assert 'tw.exercise("07.7", sampling_loop)' in code_cells()


@pytest.mark.parametrize("settings", [dict(T=1.0, k=12, p=1.0), dict(T=0.5, k=3, p=0.9)])
def test_the_explorers_title_gives_its_settings(settings):
    root = tw.temperature_explorer()
    boxes = {w.description: w for w in walk(root) if getattr(w, "description", "").startswith("exact")}
    boxes["exact T"].value, boxes["exact k"].value = settings["T"], settings["k"]
    boxes["exact p"].value = settings["p"]
    assert root.chart.ax.get_title() == (f'p after "the cat climbed the" at T = {settings["T"]:g}, '
                                         f'top-k = {settings["k"]}, top-p = {settings["p"]:g}')


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


