"""Lab 10, Induction heads: the copy task trained live, each head's attention, heads switched
off, the training replayed, and the lab's exercises.
"""
import functools
import html
import itertools

import ipywidgets as widgets
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

import toy_induction as ti
from toy_checks import check_params, shown_value
from toy_model import forward

from .draw import BLUE, GREEN, GREY, HEAT, ORANGE, VERMILION, fmt, freeze_layout, new_figure, static
from .kit import (WidgetState, live_artists, live_figure, message_area, on_change,
                  panel, picked, redraw, shown_running)
from .exercises import choice_exercise, code_exercise, count_exercise, number_exercise


# --- What the widgets take: a model, and repeated rows -----------------------------------

def _model_of(model, n_head, who):
    """(params, n_head) from a run of ti.train_copying (or copy_training), a checkpoint loaded with
    tg.load_gpt2, or the weights themselves; one sentence for anything else."""
    if isinstance(model, dict) and "params" in model:
        n_head = model.get("n_head", n_head)
        model = model["params"]
    if not isinstance(model, dict):
        raise ValueError(f"{who} takes a trained model: the run ti.train_copying returns, or its "
                         f"run['params'], not {shown_value(model)}.")
    return model, check_params(model, n_head)


def _task(rows, where, params, who):
    """Rows as ti.repeat_rows gives them ([B, N_CTX + 1] ids) with their where (one
    (l, s1, s2) per row, the two copies in the row): checked, as an int array and a list."""
    usage = (f"{who} takes rows and where as ti.repeat_rows returns them: "
             f"rows, where = ti.repeat_rows(seed, n_rows)")
    try:
        array = np.asarray(rows)
    except (ValueError, TypeError):
        array = None
    n = ti.COPY_N_CTX + 1
    if array is None or array.dtype.kind not in "iu" or array.ndim != 2 or array.shape[1] != n \
            or not 1 <= len(array) <= 10_000:
        raise ValueError(f"{usage}; rows must be 1 to 10,000 rows of {n} whole-number ids, "
                         f"not {shown_value(rows)}.")
    vocab = len(params["wte"])
    if array.min() < 0 or array.max() >= vocab:
        raise ValueError(f"The rows' ids must lie from 0 to {vocab - 1}, the model's vocabulary; "
                         f"they go from {array.min()} to {array.max()}.")
    if not isinstance(where, (list, tuple)) or len(where) != len(array):
        raise ValueError(f"{usage}; where must be a list of one (l, s1, s2) per row "
                         f"({len(array)} here), not {shown_value(where)}.")
    checked = []
    for r, place in enumerate(where):
        ok = isinstance(place, (list, tuple)) and len(place) == 3 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in place)
        if ok:
            l, s1, s2 = (int(v) for v in place)
            ok = 2 <= l and 0 <= s1 and s2 == s1 + l and s2 + l <= n \
                and bool((array[r, s1:s2] == array[r, s2:s2 + l]).all())
        if not ok:
            raise ValueError(f"where[{r}] must be (l, s1, s2) with the block of length l at s1 "
                             f"and again at s2 = s1 + l in row {r}, not {shown_value(place)}.")
        checked.append((l, s1, s2))
    return array, checked


def _heads(params, n_head):
    """[(layer, head)] for every head of the model, in order."""
    return [(layer, head) for layer in range(len(params["blocks"])) for head in range(n_head)]


def _name(layer, head, n_head):
    """A head as the widgets name it: block 2's head, or block 2, head 1 when blocks have several."""
    return f"block {layer + 1}'s head" if n_head == 1 else f"block {layer + 1}, head {head + 1}"


# --- The pictures: loss curves and attention maps ----------------------------------------

LN_V = float(np.log(ti.COPY_VOCAB))


def _loss_axes(ax, steps, title):
    """Axes for the copies' losses: steps across, nats up on a log scale (so that the drop
    to a few hundredths shows as well as the plateau at ln 16), ln 16 dashed, 0.1 dotted."""
    ax.axhline(LN_V, color=GREY, linestyle="--", linewidth=1,
               label=f"blind guess, ln {ti.COPY_VOCAB} = {fmt(LN_V, 2)}")
    ax.axhline(0.1, color=GREEN, linestyle=":", linewidth=1.2, label="0.1 nats")
    ax.set_xlim(0, steps)
    ax.set_yscale("log")
    ax.set_ylim(0.005, 5)
    ax.set_yticks([0.01, 0.1, 1, 3], ["0.01", "0.1", "1", "3"])
    ax.minorticks_off()
    ax.set_xlabel("training step")
    ax.set_ylabel("mean loss, nats (log)")
    ax.set_title(title)
    first, = ax.plot([], [], color=BLUE, linewidth=2, label="first copy")
    second, = ax.plot([], [], color=ORANGE, linewidth=2, label="second copy")
    ax.legend(loc="lower left", fontsize=8)
    return first, second


def sweep_curves(sweep):
    """The stored sweep's second-copy loss for every seed: two blocks on the lab's batches in
    colour (the seeds whose held-out loss ends below 0.1 in orange, the others in vermilion,
    keyed only when there are any), one block in grey. A static picture."""
    fits = isinstance(sweep, dict) and isinstance(sweep.get("runs"), list) and sweep["runs"] \
        and all(isinstance(r, dict) and {"setting", "steps", "second"} <= r.keys() for r in sweep["runs"])
    if not fits:
        raise ValueError(f"sweep_curves takes the sweep ti.load_copy_sweep() reads, not {shown_value(sweep)}.")
    fig, ax = new_figure(7.2, 3.4)
    first, second = _loss_axes(ax, max(r["steps"][-1] for r in sweep["runs"]),
                               "Second copy's loss, ten seeds each")
    first.remove()
    second.remove()
    late = False                          # a two-block seed not yet below 0.1 at the end
    for r in sweep["runs"]:
        if r["setting"] == "one block":
            ax.plot(r["steps"], r["second"], color=GREY, linewidth=1.2)
        elif r["setting"] == "two blocks":
            copies = r.get("final_second", r["second"][-1]) < 0.1
            late = late or not copies
            ax.plot(r["steps"], r["second"], linewidth=1.6, color=ORANGE if copies else VERMILION)
    keys = [(ax.lines[0], ax.lines[0].get_label()), (ax.lines[1], ax.lines[1].get_label()),
            (Patch(color=ORANGE), "two blocks, copying")]
    keys += [(Patch(color=VERMILION), "two blocks, not yet")] if late else []   # no key for no line
    keys += [(Patch(color=GREY), "one block")]
    ax.legend(handles=[h for h, _ in keys], labels=[t for _, t in keys], loc="lower left", fontsize=8)
    static(fig)


def _attention_map(ax, weights, ids, place, labels=True):
    """One head's attention on one row: a heat map, row i where position i looks (the
    future blank); the first copy's ids in blue, the second's in orange, and outlined the
    cells an induction head fills: from i in the second copy to i - l + 1. Returns the image."""
    n = len(ids)
    image = ax.imshow(_masked(weights), cmap=HEAT, vmin=0, vmax=1)
    l, s1, s2 = place
    for i in range(s2, s2 + l - 1):
        ax.add_patch(Rectangle((i - l + 1 - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=VERMILION,
                               linewidth=1.5))
    colours = [BLUE if s1 <= i < s2 else ORANGE if s2 <= i < s2 + l else "black" for i in range(n)]
    if labels:
        ax.set_xticks(range(n), [str(i) for i in ids], fontsize=8)
        ax.set_yticks(range(n), [str(i) for i in ids], fontsize=8)
        for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
            for tick, colour in zip(ticks, colours):
                tick.set_color(colour)
        ax.set_xlabel("id looked at (key)")
        ax.set_ylabel("id looking (query)")
    else:
        ax.set_xticks([s1, s2], ["copy 1", "copy 2"], fontsize=8)
        ax.set_yticks([])
    return image


def _masked(weights):
    """Attention weights with the future (above the diagonal) blank."""
    n = len(weights)
    return np.where(np.tril(np.ones((n, n), dtype=bool)), weights, np.nan)


# --- 1. The copy task trained live --------------------------------------------------------

def copy_training(seed, steps=ti.STEPS, n_layer=2, every=25, n_head=1):
    """w-copy-training: ti.train_copying(seed, steps, n_layer, n_head, every) drawing both copies'
    losses as it trains, with a progress line. Returns the run ti.train_copying returns; the stored
    output (the notebook's picture of the widget) is the finished curve. Bad settings get
    their sentence in the progress line, and None is returned."""
    shown_steps = steps if isinstance(steps, (int, np.integer)) and 0 < steps <= 100_000 else 1
    fig, ax = live_figure("copy-training", 7.2, 3.4)
    blocks = f"{n_layer} attention-only block{'s' if n_layer != 1 else ''}" \
        if isinstance(n_layer, (int, np.integer)) else "Attention-only blocks"
    first_line, second_line = _loss_axes(ax, shown_steps, f"{blocks} learning to copy")
    root, progress, handle = shown_running("copy-training", fig, [first_line, second_line], shown_steps)
    root.first_line, root.second_line, root.progress = first_line, second_line, progress
    copy_training.panel = root                          # the last one shown, for tests
    seen = {"steps": [], "first": [], "second": []}

    def show(run):
        first_line.set_data(run["steps"], run["first"])
        second_line.set_data(run["steps"], run["second"])
        redraw(fig)

    def on_measure(step, first, second):
        for key, value in (("steps", step), ("first", first), ("second", second)):
            seen[key].append(value)
        progress.value = (f"step {step} of {steps}: first copy {fmt(first, 2)} nats, "
                          f"second copy {fmt(second, 2)} nats")
        show(seen)

    try:
        run = ti.train_copying(seed, steps, n_layer, n_head, every=every, callback=on_measure)
    except ValueError as err:                           # bad settings
        run = None
        progress.value = html.escape(str(err))
    else:
        drop = ti.drop_step(run["steps"], run["second"])
        progress.value = (f"done: {steps} steps: first copy {fmt(run['first'][-1], 2)} nats, "
                          f"second copy {fmt(run['second'][-1], 2)} nats (blind guess "
                          f"ln {ti.COPY_VOCAB} = {fmt(LN_V, 2)}); " + (
                              f"the second copy's loss fell below 0.1 nats by step {drop}."
                              if drop is not None else "the second copy's loss never fell below 0.1 nats."))
        show(run)
    if handle is not None:
        handle.update(root)                             # the stored picture: the finished curve
    return run


# --- 2. One head's attention, picked -----------------------------------------------------

def head_explorer(run_or_params, rows, where, n_head=1):
    """w-head-explorer: pick a head with the buttons; the heat map shows its attention on
    the first of the rows (ids as tick labels, the two copies in colour, the induction
    head's cells outlined), and the line under it that head's previous-token and induction
    scores over all the rows (ti.previous_token_score, ti.induction_score)."""
    params, n_head = _model_of(run_or_params, n_head, "head_explorer")
    rows, where = _task(rows, where, params, "head_explorer")
    ids = ti.as_batch(rows)[0]
    weights = ti.attention_weights(params, n_head, ids)
    scores = ti.head_scores(params, n_head, rows, where)
    heads = _heads(params, n_head)
    picker = widgets.ToggleButtons(options=[(_name(L, h, n_head), (L, h)) for L, h in heads],
                                   value=heads[-1], description="head",
                                   style={"button_width": "10em"})
    fig, ax = live_figure("head-explorer", 5.6, 3.69)
    image = _attention_map(ax, weights[-1][-1][0], ids[0], where[0])
    fig.colorbar(image, ax=ax, label="attention weight", shrink=0.9)
    key = [Line2D([], [], linestyle="none", marker="s", color=colour, label=label)
           for colour, label in [(BLUE, "first copy's ids"), (ORANGE, "second copy's ids"), ("black", "filler")]]
    key.append(Patch(fill=False, edgecolor=VERMILION, linewidth=1.5, label="where an induction head looks"))
    ax.legend(handles=key, loc="upper right", fontsize=8, frameon=False)          # in the blank future
    ax.set_title(" ")
    freeze_layout(fig)
    live_artists(fig, [image, ax.title])
    info, area = widgets.HTML(), message_area()
    note = widgets.HTML(html.escape(
        "Blue ids: the first copy; orange: the second. Outlined: where an induction head "
        "looks, from each id of the second copy to the id after its first occurrence."))
    state = WidgetState(head=heads[-1])

    def update(_=None):
        layer, head = picked(state, picker, "head", state.head)
        state.head = (layer, head)
        image.set_data(_masked(weights[layer][head][0]))
        ax.set_title(f"{_name(layer, head, n_head)}: where each position looks")
        redraw(fig)
        info.value = html.escape(
            f"{_name(layer, head, n_head)}: previous-token score "
            f"{fmt(scores['previous'][layer][head], 2)} (its weight on i − 1), induction score "
            f"{fmt(scores['induction'][layer][head], 2)} (its weight on i − l + 1 in the second "
            f"copy), each the mean over {_rows_named(rows)}.")

    on_change(picker, area, state, update)
    update()
    root = panel("head-explorer", picker, fig.canvas, info, note, area)
    root.state, root.image, root.figure = state, image, fig       # for tests
    return root


# --- 3. Heads switched off ----------------------------------------------------------------

def _switched(params, n_head, off):
    """The weights with each head in `off` switched off (ti.ablate)."""
    for layer, head in sorted(off):
        params = ti.ablate(params, layer, head, n_head)
    return params


def _highest_loss(params, n_head, rows, heads):
    """The highest loss the bars can show: over every choice of heads switched off (every
    single head, all of them, and none, when there are more than 6 heads)."""
    if len(heads) <= 6:
        choices = [c for k in range(len(heads) + 1) for c in itertools.combinations(heads, k)]
    else:
        choices = [(), tuple(heads), *((head,) for head in heads)]
    return max(2 * LN_V, *(float(ti.token_losses(_switched(params, n_head, off), n_head, rows).max())
                           for off in choices))


def _rows_named(rows):
    return f"{len(rows)} row{'s' if len(rows) != 1 else ''}"


def head_switches(params, rows, where, n_head=1, off=()):
    """w-head-switches: a checkbox per head, all on at first but for the heads in `off`
    ((block, head) pairs counted from 0, as ti.ablate takes them: the state the stored
    picture shows); switching one off (ti.ablate) redraws the bars, the loss at each
    position of the first row (the second copy's in orange), and the line under them, the
    second copy's mean loss over all the rows."""
    params, n_head = _model_of(params, n_head, "head_switches")
    rows, where = _task(rows, where, params, "head_switches")
    heads = _heads(params, n_head)
    try:
        start_off = {(int(L), int(h)) for L, h in off}
    except (TypeError, ValueError):
        start_off = None
    if start_off is None or not start_off <= set(heads) or isinstance(off, (str, bytes, dict)):
        raise ValueError(f"head_switches: off lists the heads to start switched off, as (block, head) "
                         f"pairs counted from 0, such as [(0, 0)]; this model's heads are {heads}, "
                         f"not {shown_value(off)}.")
    boxes = [widgets.Checkbox(value=(L, h) not in start_off, description=_name(L, h, n_head), indent=False)
             for L, h in heads]
    predictable = ti.second_copy_mask(where)[0]
    ids = rows[0, :-1]
    fig, ax = live_figure("head-switches", 6.8, 3.2)
    bars = ax.bar(range(len(ids)), np.zeros(len(ids)),
                  color=[ORANGE if p else BLUE for p in predictable])
    ax.axhline(LN_V, color=GREY, linestyle="--", linewidth=1)
    ax.set_xticks(range(len(ids)), [str(i) for i in ids])
    ax.set_xlabel("the id read at each position of the row" + ("" if len(rows) == 1 else " (the first row given)"))
    ax.set_ylabel("−ln p(next id), nats")
    ax.legend(handles=[Patch(color=ORANGE), Patch(color=BLUE), ax.lines[0]],
              labels=["second copy", "other positions", f"blind guess, ln {ti.COPY_VOCAB} = {fmt(LN_V, 2)}"],
              loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, fontsize=8, frameon=False)
    ax.set_title(" ", pad=22)                          # above the key: which heads are off
    ax.set_ylim(0, _highest_loss(params, n_head, rows[:1], heads) * 1.05)
    freeze_layout(fig)
    live_artists(fig, [*bars, ax.title])
    state = WidgetState(off=(), losses=None, second=None)
    info, area = widgets.HTML(), message_area()

    def update(_=None):
        off = tuple(head for head, box in zip(heads, boxes) if not box.value)
        switched = _switched(params, n_head, off)
        losses = ti.token_losses(switched, n_head, rows)
        second = ti.copy_losses(switched, n_head, rows, where)[1]
        state.off, state.losses, state.second = off, losses, second
        for bar, loss in zip(bars, losses[0]):
            bar.set_height(loss)
        redraw(fig)
        said = ("all heads on" if not off else "all heads off" if len(off) == len(heads)
                else ", ".join(_name(L, h, n_head) for L, h in off) + " off")
        ax.set_title(said[0].upper() + said[1:], pad=22)
        info.value = html.escape(f"second copy: {fmt(second, 2)} nats ({said}), the mean over "
                                 f"{_rows_named(rows)}")

    for box in boxes:
        on_change(box, area, state, update)
    update()
    root = panel("head-switches", widgets.HBox(boxes), fig.canvas, info, area)
    root.state, root.bars, root.boxes = state, bars, boxes                 # for tests
    return root


# --- 4. The training replayed -------------------------------------------------------------

def _run_of(run):
    if not isinstance(run, dict) or not {"params", "steps", "first", "second", "snapshots"} <= run.keys() \
            or not len(run["steps"]) == len(run["snapshots"]) == len(run["first"]) == len(run["second"]) > 0:
        raise ValueError(f"training_replay takes the run that ti.train_copying (or tw.copy_training) "
                         f"returns, with its snapshots, not {shown_value(run)}.")
    return run


def training_replay(run, rows, where, step=None):
    """w-training-replay: a slider over the steps at which the run kept its weights, at
    `step` first (one of those steps; None: the last, the state the stored picture shows);
    the heat maps show every head's attention on the first of the rows at that step, the
    curves both copies' losses with a marker at that step, and the line under them the
    losses and each head's two scores there: a teacher replays the phase change."""
    run = _run_of(run)
    params, n_head = _model_of(run, run.get("n_head", 1), "training_replay")
    rows, where = _task(rows, where, params, "training_replay")
    ids = ti.as_batch(rows)[0]
    heads = _heads(params, n_head)
    steps = [int(s) for s in run["steps"]]
    if step is None:
        step = steps[-1]
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or int(step) not in steps:
        raise ValueError(f"training_replay: step is one of the steps the run kept its weights at, "
                         f"from {steps[0]} to {steps[-1]} every {steps[1] - steps[0] if len(steps) > 1 else 1}, "
                         f"or None for the last, not {shown_value(step)}.")
    step = int(step)
    slider = widgets.SelectionSlider(options=steps, value=step, description="step",
                                     layout=widgets.Layout(width="30em"))
    fig, _ = live_figure("training-replay", 6.77, 3.4)
    fig.clear()
    grid = fig.add_gridspec(n_head, len(params["blocks"]) + 1,
                            width_ratios=[1] * len(params["blocks"]) + [1.5])
    images = []
    for L, h in heads:
        ax = fig.add_subplot(grid[h, L])
        images.append(_attention_map(ax, np.zeros((ti.COPY_N_CTX, ti.COPY_N_CTX)), ids[0], where[0], labels=False))
        ax.set_title(_name(L, h, n_head), fontsize=9)
    key = fig.colorbar(images[0], ax=fig.axes, location="bottom", fraction=0.05, aspect=30,
                       shrink=0.9, ticks=[0, 0.5, 1])
    key.set_label("attention weight", fontsize=8)
    key.ax.tick_params(labelsize=8)
    curves = fig.add_subplot(grid[:, -1])
    first, second = _loss_axes(curves, steps[-1], "Both copies' loss")
    first.set_data(steps, run["first"])
    second.set_data(steps, run["second"])
    curves.set_ylabel("nats (log)")
    marker = curves.axvline(steps[-1], color=VERMILION, linewidth=1.5)
    dots, = curves.plot([], [], "o", color=VERMILION, markersize=5)
    freeze_layout(fig)
    live_artists(fig, [*images, marker, dots])
    info, area = widgets.HTML(), message_area()
    state = WidgetState(step=step, scores=None)

    @functools.cache
    def at(k):
        """Snapshot k's attention on the first row and its heads' scores on all the rows."""
        snapshot = run["snapshots"][k]
        return ti.attention_weights(snapshot, n_head, ids[:1]), ti.head_scores(snapshot, n_head, rows, where)

    def update(step):
        if step not in steps:
            raise ValueError(f"Pick one of the steps the run kept, from {steps[0]} to {steps[-1]}.")
        k = steps.index(step)
        weights, scores = at(k)
        state.step, state.scores = step, scores
        for image, (L, h) in zip(images, heads):
            image.set_data(_masked(weights[L][h][0]))
        marker.set_xdata([step, step])
        dots.set_data([step, step], [run["first"][k], run["second"][k]])
        redraw(fig)
        info.value = html.escape(
            f"step {step}: first copy {fmt(run['first'][k], 2)} nats, second copy "
            f"{fmt(run['second'][k], 2)} nats · " + "; ".join(
                f"{_name(L, h, n_head)}: previous-token {fmt(scores['previous'][L][h], 2)}, "
                f"induction {fmt(scores['induction'][L][h], 2)}" for L, h in heads))

    on_change(slider, area, state, update)
    update(step)
    root = panel("training-replay", slider, fig.canvas, info, area)
    root.state, root.images, root.marker, root.dots, root.slider = state, images, marker, dots, slider
    return root


# --- Exercises -------------------------------------------------------------------------------
# 10.1 asks what the lab's trained model puts next: the live run's final weights, read from
# the checkpoint the course ships (ti.load_copy_model) when an answer is first checked, or,
# where that checkpoint is missing, trained once (ti.train_copying with the live run's seed, the
# same weights). The other exercises need no model.

CHECKPOINT = ti.DATA / "induction_model"


@functools.cache
def _trained():
    """(params, n_head) of the lab's trained two-block model."""
    if (CHECKPOINT / "config.json").is_file():
        return ti.load_copy_model(), 1
    return ti.train_copying(ti.COPY_SEED)["params"], 1


def _new_row():
    """A repeated row none of the lab's runs trains or measures on, read up to a position
    inside its second copy: (the ids read so far, the row, where the copies are)."""
    rows, where = ti.repeat_rows(1010, 1, filler_first=True)
    l, s1, s2 = where[0]
    return rows[0, :s2 + 3], rows[0], (l, s1, s2)


def _next_probs():
    """The trained model's p of every id after the ids of _new_row."""
    params, n_head = _trained()
    logits = forward(_new_row()[0], params, n_head)[-1]
    p = np.exp(logits - logits.max())
    return p / p.sum()


def _predicted():
    return int(np.argmax(_next_probs()))


def _copy_hints():
    """The typical wrong ids: the one just read, the one before it, the one two ahead."""
    read, row, (l, s1, s2) = _new_row()
    i = len(read) - 1
    hints = [(int(row[i]), f"That is the id just read, {row[i]}. Look at what followed {row[i]} "
                            "the first time it appeared."),
             (int(row[i - 1]), f"That is the id before the last one; look at what followed "
                                f"{row[i]} the first time it appeared."),
             (int(row[i + 2]), f"One too far: find {row[i]} in the first copy and take the id "
                                "right after it.")]
    return [(wrong, sentence) for wrong, sentence in hints if wrong != _predicted()]


def _copy_solution():
    read, row, (l, s1, s2) = _new_row()
    i, p = len(read) - 1, _next_probs()
    earlier = i - l
    rule = int(row[earlier + 1])
    follows = ("the model follows it" if rule == _predicted() else
               "this model has not learned to follow it")
    return (f"{_predicted()}, with p = {fmt(p[_predicted()])}. The last id read, {row[i]}, "
            f"appeared before at position {earlier} (counting from 0), in the first copy, and "
            f"the id after it there was {rule}: the induction rule says {rule}, and {follows}. "
            f"Block 2's head looks from the last position back to position {earlier + 1} (i − l + 1 "
            f"with l = {l}) and copies the id it finds there; block 1's head made that position "
            "findable by writing into it the id before it.")


count_exercise(
    "10.1", lambda: ("Predict the trained model. A new row, never trained on, has been read up to "
                     f"here: {' '.join(str(i) for i in _new_row()[0])}. Which id does the lab's "
                     "trained two-block model give the highest probability next?"),
    answer=_predicted, hints=_copy_hints, solution=_copy_solution)


# 10.2: an induction score by hand, from a head's attention printed in full. The row is
# 7 2 11 7 2 11 5 (a block of l = 3, the block again, one filler id); the model reads its
# first 6 ids. The weights are printed exactly as the answer uses them.
_SCORE_IDS = [7, 2, 11, 7, 2, 11]
_SCORE_PLACE = (3, 0, 3)
_SCORE_WEIGHTS = np.array([
    [1.00, 0, 0, 0, 0, 0],
    [0.55, 0.45, 0, 0, 0, 0],
    [0.20, 0.50, 0.30, 0, 0, 0],
    [0.06, 0.78, 0.10, 0.06, 0, 0],
    [0.02, 0.03, 0.89, 0.04, 0.02, 0],
    [0.10, 0.05, 0.05, 0.41, 0.24, 0.15]])


def _score_by(pick):
    """The mean of the weights w[i, pick(i)] over the second copy's predictable positions."""
    l, s1, s2 = _SCORE_PLACE
    return float(np.mean([_SCORE_WEIGHTS[i, pick(i)] for i in range(s2, s2 + l - 1)]))


def _score_question():
    rows = "; ".join(f"row {i}: " + " ".join(f"{w:.2f}" for w in row[:i + 1])
                     for i, row in enumerate(_SCORE_WEIGHTS))
    return ("An induction score by hand. A head reads the ids 7 2 11 7 2 11 (a block of l = 3 "
            "and the block again; the next id is 5). Its attention weights, row i for the "
            "position looking (counting from 0), from column 0 to column i (the later columns "
            f"are 0, masked): {rows}. What is its induction score: the mean, over the second "
            "copy's positions whose next id is predictable, of the weight from i on i − l + 1?")


number_exercise(
    "10.2", _score_question, answer=lambda: _score_by(lambda i: i - 2),
    tolerance=0.0,                     # the weights are printed exactly: no rounding to allow for
    hints=lambda: [
        (float(np.mean([_SCORE_WEIGHTS[i, i - 2] for i in (3, 4, 5)])),
         "Leave out the second copy's last position (5): its next id is the filler 5, which "
         "nothing before predicts, so ti.second_copy_mask does not count it."),
        (_score_by(lambda i: i - 3), "That is the weight on i − l, the earlier occurrence of the "
         "same id; the induction head looks one further on, at the id that came after it."),
        (_score_by(lambda i: i - 1), "That is the weight on the previous position, i − 1: the "
         "previous-token score's entries."),
        (_score_by(lambda i: i - 2) * 2, "Take the mean of the two weights, not their sum.")],
    solution=lambda: (
        f"{fmt(_score_by(lambda i: i - 2))}. The second copy starts at position 3; its positions "
        "with a predictable next id are 3 and 4 (position 5 is followed by the filler). From 3 "
        f"the head should look at 3 − 3 + 1 = 1, and puts {_SCORE_WEIGHTS[3, 1]:.2f} there; from 4 "
        f"at 2, with {_SCORE_WEIGHTS[4, 2]:.2f}. The mean: ({_SCORE_WEIGHTS[3, 1]:.2f} + "
        f"{_SCORE_WEIGHTS[4, 2]:.2f}) / 2 = {fmt(_score_by(lambda i: i - 2))}. "
        "ti.induction_score computes the same over many rows."))


def _previous_cases():
    rng = np.random.default_rng(103)

    def causal_softmax(shape):
        scores = rng.normal(0, 1.5, shape)
        n = shape[-1]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    pure = np.eye(6, k=-1)
    pure[0, 0] = 1.0
    rows, _ = ti.repeat_rows(104, 4, filler_first=True)
    fresh = ti.attention_weights(ti.new_copy_model(105), 1, ti.as_batch(rows)[0])[0][0]
    return [("a head's weights on 5 positions (random scores)", (causal_softmax((5, 5)),)),
            ("a batch of 3 rows of 6 positions, 3 × 6 × 6", (causal_softmax((3, 6, 6)),)),
            ("a pure previous-token head on 6 positions (position 0 on itself)", (pure,)),
            ("block 1's head of an untrained model on 4 rows, 4 × 16 × 16", (fresh,))]


def _pairs(weights):
    """Position i and the one before it, i - 1, for i = 1 .. n - 1."""
    i = np.arange(1, np.shape(weights)[-1])
    return i, i - 1


code_exercise(
    "10.3", "Write `previous_token_score(weights)`: weights is a head's attention, n × n (or a "
            "batch of them, B × n × n), row i where position i looks. Return, as one number, "
            "how much each position i ≥ 1 attends to position i − 1, on average (1: all of it).",
    reference=ti.previous_token_score, cases=_previous_cases,
    mistakes=[(lambda w: float(np.diagonal(w, offset=1, axis1=-2, axis2=-1).mean()),
               "that is the diagonal above the main one, where position i looks at i + 1 (the "
               "future, always 0 under the mask): the previous position is column i − 1."),
              (lambda w: float(np.diagonal(w, offset=0, axis1=-2, axis2=-1).mean()),
               "that is the main diagonal, each position's weight on itself; the previous "
               "position is one column to the left."),
              (lambda w: float(np.asarray(w)[..., np.arange(np.shape(w)[-1]),
                                             np.arange(np.shape(w)[-1]) - 1].mean()),
               "start at position 1: position 0 has no previous position (w[0, -1] is the "
               "last column, which the mask keeps at 0)."),
              (lambda w: float(np.asarray(w)[(..., *_pairs(w))].sum()),
               "take the mean of those weights, not their sum.")],
    solution='''def previous_token_score(weights):
    weights = np.asarray(weights)
    i = np.arange(1, weights.shape[-1])          # positions 1 .. n - 1 (0 has none before it)
    return float(weights[..., i, i - 1].mean())  # every row's weight on the position before''')


_WHY_RIGHT = "Yes: each key could then carry the id before it, for one head to match against the current id."
_WHY = [
    "No: one attention-only block can never copy, whatever each position holds in its input.",
    "No: the causal mask hides the first copy from the positions of the second copy.",
    _WHY_RIGHT,
    "Only with an MLP after its attention: attention can average vectors, not copy an id.",
]

choice_exercise(
    "10.4", "Suppose each position's input held, besides its own id and place, the id just before "
            "it (one more embedding table, looked up by the previous id). Could a model of one "
            "attention-only block then learn the copy?",
    options=_WHY, answer=_WHY_RIGHT,
    hints={_WHY[0]: "Section 2's argument is about what the keys hold: in one block, nothing in "
                    "the key at j + 1 says which id came before it. Here the input says it.",
           _WHY[1]: "The mask hides only later positions; the first copy comes earlier, so "
                    "every position of the second copy can see all of it.",
           _WHY[3]: "A head that puts all its weight on one position copies that position's "
                    "vector, id and all; the lab's two-block model has no MLP and copies."},
    solution=(
        "Yes. Section 2's obstacle was the key at j + 1, the position after the earlier copy of "
        "the current id t: in one block it is computed from its own id and place, and nothing in "
        "it says \"the id before me was t\". Here the input already holds the previous id at "
        "every position, which is exactly what block 1's previous-token head writes there in "
        "the two-block model. So one head can ask, from the current position, \"who was "
        "preceded by t?\", find j + 1, and copy its id: the earlier block's work has been done "
        "by the embedding."))
