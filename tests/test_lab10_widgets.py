"""Lab 10's widgets and exercises: every number a widget shows against a reference written
here (attention, scores, losses and ablation recomputed by hand from the weights), bad
input answered with one sentence, readable pictures, and each exercise's checker taking
the right answer and naming the typical mistake.

A short run (100 steps) stands in for the lab's trained model: the widgets show whatever
the weights do, trained or not, and so are tested on any weights.
"""
import re

import ipywidgets as widgets
import numpy as np
import pytest
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from test_figure_text import measure  # the measure of tools/figure_probe.py, drawn
from widget_tools import figure_of, find, text

import reference as ref
import toy_induction as ti
import toy_widgets as tw
import toy_widgets.lab10_induction as lab

MIN_PX = 14


@pytest.fixture(scope="module")
def run():
    return ti.train_copying(4, steps=100, every=25)


@pytest.fixture(scope="module")
def task():
    return ti.repeat_rows(7, 24, filler_first=True)


# --- The references: GPT-2's attention-only forward pass written out here ---------------

def by_hand(params, ids, n_head=1, off=()):
    """(attention weights [layer][head] of one row's ids, logits [n, V]) from the shared
    reference (tests/reference.py), with the heads in `off` silenced (their rows of W_O zeroed)."""
    trace = {}
    logits = ref.forward(ids, ref.without(params, heads=off, n_head=n_head), n_head, trace=trace)
    return [blk["weights"] for blk in trace["blocks"]], logits


def losses_by_hand(params, row, off=()):
    logits = by_hand(params, row[:-1], off=off)[1]
    log_p = logits - logits.max(1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
    return -log_p[np.arange(len(row) - 1), row[1:]]


def scores_by_hand(params, rows, where, layer, head):
    """(previous-token score, induction score) of one head, averaged over the rows."""
    previous, induction = [], []
    for row, (l, s1, s2) in zip(rows, where):
        w = by_hand(params, row[:-1])[0][layer][head]
        previous += [w[i, i - 1] for i in range(1, len(w))]
        induction += [w[i, i - l + 1] for i in range(s2, s2 + l - 1)]
    return np.mean(previous), np.mean(induction)


def second_copy_loss_by_hand(params, rows, where, off=()):
    picked = []
    for row, (l, s1, s2) in zip(rows, where):
        picked += list(losses_by_hand(params, row, off)[s2:s2 + l - 1])
    return np.mean(picked)


def numbers(s):
    return [float(x) for x in re.findall(r"\d+\.\d+", s)]


def info_line(root):
    (line,) = [w for w in find(root, widgets.HTML) if "nats" in w.value or "score" in w.value]
    return text(line)


def readable_and_inside(fig, name):
    """Every drawn text at least 14 px, and inside the figure (test_figure_text's measure)."""
    measure(fig, name)
    small = [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and t.get_fontsize() * fig.dpi / 72 < MIN_PX]
    assert not small, f"{name}: text under {MIN_PX} px: {small[:5]}"
    assert fig.bbox.width + 8 <= tw.COLUMN_PX


# --- 1. copy_training ----------------------------------------------------------------------

def test_copy_training_draws_every_measurement_as_it_comes_and_keeps_the_whole_curve(monkeypatch):
    frames = []

    def record(fig):
        root = tw.copy_training.panel
        frames.append((list(root.first_line.get_xdata()), list(root.second_line.get_ydata()),
                       root.progress.value))
    monkeypatch.setattr(lab, "redraw", record)
    got = tw.copy_training(11, steps=60, every=25)
    reference = ti.train_copying(11, steps=60, every=25)
    assert got["steps"] == reference["steps"] == [0, 25, 50, 60]
    assert np.allclose(got["second"], reference["second"]) and np.allclose(got["first"], reference["first"])
    during = frames[:-1]
    assert [f[0] for f in during] == [reference["steps"][:k + 1] for k in range(4)]
    for k, (_, seconds, progress) in enumerate(during):
        step = reference["steps"][k]
        assert seconds == pytest.approx(reference["second"][:k + 1])
        assert progress == (f"step {step} of 60: first copy {tw.fmt(reference['first'][k], 2)} nats, "
                            f"second copy {tw.fmt(reference['second'][k], 2)} nats")
    root = tw.copy_training.panel
    assert list(root.second_line.get_xdata()) == reference["steps"]
    assert root.progress.value.startswith(f"done: 60 steps: first copy {tw.fmt(reference['first'][-1], 2)} "
                                          f"nats, second copy {tw.fmt(reference['second'][-1], 2)} nats")
    readable_and_inside(figure_of(root), "copy_training")


@pytest.mark.parametrize("settings, words", [
    ({"steps": 2.5}, "steps must be a whole number"), ({"every": 0}, "every must be a whole number"),
    ({"seed": -1}, "seed must be a whole number"), ({"n_layer": "two"}, "n_layer"),
])
def test_copy_training_says_what_is_wrong_with_its_settings(settings, words):
    arguments = {"seed": 1, "steps": 3, **settings}
    assert tw.copy_training(arguments.pop("seed"), **arguments) is None
    message = text(tw.copy_training.panel.progress)
    assert words in message and message.endswith(".") and "\n" not in message, message


# --- 2. head_explorer --------------------------------------------------------------------

def test_head_explorer_shows_each_heads_attention_and_scores(run, task):
    rows, where = task
    root = tw.head_explorer(run, rows, where)
    (picker,) = find(root, widgets.ToggleButtons)
    assert [label for label, _ in picker.options] == ["block 1's head", "block 2's head"]
    for layer in (0, 1, 0):
        picker.value = (layer, 0)
        expected = by_hand(run["params"], rows[0, :-1])[0][layer][0]
        assert np.allclose(np.ma.filled(root.image.get_array(), np.nan),
                           np.where(np.tril(np.ones((16, 16))) > 0, expected, np.nan), equal_nan=True)
        previous, induction = scores_by_hand(run["params"], rows, where, layer, 0)
        line = info_line(root)
        assert numbers(line)[:2] == [float(tw.fmt(previous, 2)), float(tw.fmt(induction, 2))], line
        assert f"block {layer + 1}'s head" in line and "24 rows" in line
        assert root.figure.axes[0].get_title() == f"block {layer + 1}'s head: where each position looks"
    ticks = [t.get_text() for t in root.figure.axes[0].get_xticklabels()]
    assert ticks == [str(i) for i in rows[0, :-1]]
    l, s1, s2 = where[0]
    outlined = sorted((round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in root.figure.axes[0].patches
                      if isinstance(p, Rectangle) and not p.get_fill())
    assert outlined == [(i, i - l + 1) for i in range(s2, s2 + l - 1)], "the induction cells outlined"
    colours = [t.get_color() for t in root.figure.axes[0].get_yticklabels()]
    assert [i for i, c in enumerate(colours) if c == tw.ORANGE] == list(range(s2, min(s2 + l, ti.COPY_N_CTX)))
    assert [i for i, c in enumerate(colours) if c == tw.BLUE] == list(range(s1, s2))
    readable_and_inside(root.figure, "head_explorer")


def test_head_explorer_takes_the_weights_alone_and_two_heads(task):
    rows, where = task
    params = ti.new_copy_model(2)          # the same weights split into two heads of 16
    root = tw.head_explorer(params, rows, where, n_head=2)
    (picker,) = find(root, widgets.ToggleButtons)
    picker.value = (1, 1)
    expected = by_hand(params, rows[0, :-1], n_head=2)[0][1][1]
    assert np.allclose(np.ma.filled(root.image.get_array(), np.nan)[np.tril_indices(16)],
                       expected[np.tril_indices(16)])
    picker.value = None                                  # set from code: one sentence, kept
    assert any(text(w).startswith("Pick one of the head options") for w in find(root, widgets.HTML))
    assert root.state.head == (1, 1)


# --- 3. head_switches ---------------------------------------------------------------------

def test_head_switches_ablate_each_head_as_zeroing_its_rows_of_w_o(run, task):
    rows, where = task
    root = tw.head_switches(run, rows, where)
    first, second = root.boxes
    cases = [((), "all heads on", []), ((0, 0), "block 1's head off", [first]),
             ((1, 0), "block 2's head off", [second]), (None, "all heads off", [first, second])]
    for head, words, turned_off in cases:
        for box in root.boxes:
            box.value = box not in turned_off
        off = [(0, 0), (1, 0)] if head is None else [head] if head else []
        expected = losses_by_hand(run["params"], rows[0], off)
        assert np.allclose([b.get_height() for b in root.bars], expected)
        mean = second_copy_loss_by_hand(run["params"], rows, where, off)
        assert info_line(root) == f"second copy: {tw.fmt(mean, 2)} nats ({words}), the mean over 24 rows"
        assert figure_of(root).axes[0].get_title() == words[0].upper() + words[1:]      # the picture says it
    colours = [tuple(b.get_facecolor()[:3]) for b in root.bars]
    l, s1, s2 = where[0]
    orange = [i for i, c in enumerate(colours) if np.allclose(c, (0xE6 / 255, 0x9F / 255, 0))]
    assert orange == list(range(s2, s2 + l - 1)), "the second copy's positions are marked"
    readable_and_inside(figure_of(root), "head_switches")


# --- 4. training_replay --------------------------------------------------------------------

def test_training_replay_shows_each_snapshot(run, task):
    rows, where = task
    root = tw.training_replay(run, rows, where)
    assert list(root.slider.options) == [0, 25, 50, 75, 100] and root.slider.value == 100
    for k in (1, 3, 0):
        step = run["steps"][k]
        root.slider.value = step
        weights = by_hand(run["snapshots"][k], rows[0, :-1])[0]
        for image, layer in zip(root.images, (0, 1)):
            assert np.allclose(np.ma.filled(image.get_array(), np.nan)[np.tril_indices(16)],
                               weights[layer][0][np.tril_indices(16)])
        assert list(root.marker.get_xdata()) == [step, step]
        assert np.allclose(root.dots.get_ydata(), [run["first"][k], run["second"][k]])
        line = info_line(root)
        expected = [run["first"][k], run["second"][k]]
        for layer in (0, 1):
            expected += scores_by_hand(run["snapshots"][k], rows, where, layer, 0)
        assert numbers(line) == [float(tw.fmt(v, 2)) for v in expected], line
        assert line.startswith(f"step {step}: first copy")
    readable_and_inside(figure_of(root), "training_replay")


# --- Bad input: one sentence ------------------------------------------------------------------

def one_sentence(fn, *args, words=""):
    with pytest.raises(ValueError) as err:
        fn(*args)
    message = str(err.value)
    assert words in message and "\n" not in message and message.endswith("."), message


@pytest.mark.parametrize("builder", ["head_explorer", "head_switches"])
def test_widgets_say_what_is_wrong_with_their_model_rows_or_where(builder, run, task):
    rows, where = task
    build = getattr(tw, builder)
    one_sentence(build, "weights", rows, where, words="takes a trained model")
    one_sentence(build, {"params": {"wte": 1}}, rows, where, words="params")
    one_sentence(build, run, rows[:, :10], where, words="rows of 17 whole-number ids")
    one_sentence(build, run, [[1, 2], [3]], where, words="rows")
    one_sentence(build, run, rows + 20, where, words="from 0 to 15")
    one_sentence(build, run, rows, where[:-1], words="one (l, s1, s2) per row")
    one_sentence(build, run, rows, [(5, 0, 3)] + where[1:], words="where[0]")
    one_sentence(build, run, rows, [(l, s1 + 1, s2 + 1) for l, s1, s2 in where], words="where[0]")


def test_training_replay_says_what_is_wrong_with_its_run(run, task):
    rows, where = task
    one_sentence(tw.training_replay, run["params"], rows, where, words="takes the run")
    one_sentence(tw.training_replay, {**run, "snapshots": []}, rows, where, words="with its snapshots")
    one_sentence(tw.training_replay, run, rows, "where", words="where must be a list")


# --- Exercises -------------------------------------------------------------------------------

def test_10_1_reads_the_models_own_argmax_and_names_the_typical_mistakes(run, monkeypatch):
    monkeypatch.setattr(lab, "_trained", lambda: (run["params"], 1))
    rows, where = ti.repeat_rows(1010, 1, filler_first=True)          # the row the question reads
    l, s1, s2 = where[0]
    read = rows[0, :s2 + 3]
    assert " ".join(map(str, read)) in tw.exercises._now(tw.EXERCISES["10.1"]["question"])
    best = int(np.argmax(by_hand(run["params"], read)[1][-1]))
    box = tw.exercise("10.1")
    assert box.try_answer(str(best)) == f"Right: {best}."
    i = len(read) - 1
    for wrong, words in [(rows[0, i], "That is the id just read"),
                         (rows[0, i - 1], "That is the id before the last one"), (rows[0, i + 2], "One too far")]:
        if wrong != best:
            assert tw.exercise("10.1").try_answer(str(wrong)).startswith(f"Not quite. {words}")
    assert tw.exercise("10.1").try_answer("seven").endswith("type a whole number, such as 7.")


def test_10_1_with_the_shipped_model_the_answer_is_the_copy():
    if not (lab.CHECKPOINT / "config.json").is_file():
        pytest.skip("the lab's checkpoint data/induction_model/ is not written yet")
    rows, where = ti.repeat_rows(1010, 1, filler_first=True)
    l, s1, s2 = where[0]
    assert tw.answer_number("10.1", str(rows[0, s2 + 3])) == (True, f"Right: {rows[0, s2 + 3]}.")


def test_10_2_the_answer_is_the_mean_of_the_printed_weights_it_names():
    question = tw.exercises._now(tw.EXERCISES["10.2"]["question"])
    rows = [[float(x) for x in part.split()] for part in re.findall(r"row \d: ([\d. ]+\d)", question)]
    assert [len(r) for r in rows] == [1, 2, 3, 4, 5, 6]
    answer = (rows[3][1] + rows[4][2]) / 2               # l = 3: from 3 on 1, from 4 on 2
    assert tw.answer_number("10.2", tw.fmt(answer)) == (True, f"Right: {tw.fmt(answer)}.")
    for wrong, words in [((rows[3][1] + rows[4][2] + rows[5][3]) / 3, "last position"),
                         ((rows[3][0] + rows[4][1]) / 2, "i − l"), ((rows[3][2] + rows[4][3]) / 2, "i − 1"),
                         (rows[3][1] + rows[4][2], "not their sum")]:
        ok, sentence = tw.answer_number("10.2", tw.fmt(wrong))
        assert not ok and sentence.startswith("Not quite.") and words in sentence, (wrong, sentence)
