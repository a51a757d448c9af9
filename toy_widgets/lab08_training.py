"""Lab 08, Training: the live loss curve, the finished curves, and the lab's exercises.
"""
import html

import matplotlib.pyplot as plt
import numpy as np

import toy_model as _model
import toy_train
from toy_model import PARAMS, VOCAB, encode, forward

from .draw import BLUE, GREEN, GREY, ORANGE, PURPLE, fmt, new_figure, static, token_name
from .kit import live_figure, redraw, shown_running
from .exercises import EXAMPLE_TEXT, token_id, code_exercise, number_exercise


# The training lab: a live loss curve while the toy trains, a static plot of finished
# runs, and the lab's exercises (registered with the functions of "Exercises" above).

LEVEL_STYLES = [(GREEN, ":"), (PURPLE, "-.")]        # reference levels after ln 12's dashed grey
APART = 0.01                                         # nats below the first level: the curves have parted


def level_label(level):
    """A reference level's legend entry: (value, label) or (value, label, held-out value)."""
    value, label, *held = level
    same = held and abs(held[0] - value) < 0.01            # the two would draw as one line
    return f"{label}, {fmt(value)}" + (f" (held out {fmt(held[0])}" + (", the same line here)" if same else ")")
                                       if held else "")


def loss_axes(ax, steps, title, levels=()):
    """Axes for loss curves: steps across, nats up on a log scale (so that the last few
    hundredths above the best possible loss show as well as the first fall from ln 12),
    ln 12 (the uniform guess) dashed; levels: (value, label) or (value, label, held-out
    value), each drawn in its own style."""
    ax.axhline(np.log(len(VOCAB)), color=GREY, linestyle="--", linewidth=1,
               label=f"uniform guess, ln {len(VOCAB)} = {fmt(np.log(len(VOCAB)))}")
    for level, (color, style) in zip(levels, LEVEL_STYLES):
        ax.axhline(level[0], color=color, linestyle=style, linewidth=1.2, label=level_label(level))
    ax.set_xlim(0, steps)
    ax.set_yscale("log")
    ax.set_ylim(0.25, 3.2)
    ax.set_yticks([0.3, 0.5, 1, 2, 3], ["0.3", "0.5", "1", "2", "3"])
    ax.minorticks_off()
    ax.set_xlabel("training step")
    ax.set_ylabel("mean loss, nats (log scale)")
    ax.set_title(title)


def train_live(corpus, steps=200, every=20, heldout=None, levels=(), **options):
    """w-train: tt.train(corpus, steps, **options) drawing its loss curve as it goes, with
    a progress line. heldout: texts never trained on, whose loss is drawn beside the
    training loss; levels: reference lines, as loss_axes takes them. With held-out texts,
    the finished curve marks two steps with thin vertical lines: the step early stopping
    keeps (the lowest held-out loss), and, given levels, the first step whose training loss
    is APART nats below the first level. Returns what train returns:
    (trained params, loss history). The stored output (the notebook's picture of the
    widget) is the finished curve.

    Bad settings, and a run that diverges, get their sentence in the progress line; the
    curve then shows the run up to where it stopped, and (None, the losses so far) is
    returned."""
    try:
        every, problem = _every(every), None
    except ValueError as err:
        every, problem = 1, str(err)
    fig, ax = live_figure("train", 7.2, 4.3)
    loss_axes(ax, steps if isinstance(steps, int) and steps > 0 else 1,
              "Training the toy from random weights", levels)
    line, = ax.plot([], [], color=BLUE, linewidth=2, label="training loss (the corpus)")
    held_line, = ax.plot([], [], color=ORANGE, linewidth=2, label="held-out loss (data/heldout.txt)")
    if heldout is None:
        held_line.remove()
    # below the axes, where no curve runs: a spike can rise to the top of the plot
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8, frameon=False)
    moving = [line] + ([held_line] if heldout is not None else [])
    root, progress, handle = shown_running("train", fig, moving, steps)
    root.line, root.held_line, root.progress = line, held_line, progress
    train_live.panel = root                             # the last one shown, for tests
    losses, record = [], {}
    if problem is not None:
        progress.value = html.escape(problem)
        return None, losses

    def on_step(step, loss):                            # loss after `step` steps
        losses.append(loss)
        if step % every == 0 or step == steps:
            line.set_data(range(len(losses)), losses)
            held = record.get("heldout", [])
            held_line.set_data(range(len(held)), held)
            progress.value = f"step {step} of {steps} · loss {fmt(loss)} nats" + (
                f" · held-out {fmt(held[-1])} nats" if held else "")
            redraw(fig)

    try:
        params, history = toy_train.train(corpus, steps=steps, callback=on_step, heldout=heldout,
                                           record=record, **options)
    except ValueError as err:                           # bad settings, or divergence
        params, history = None, losses
        progress.value = html.escape(str(err))
    else:
        progress.value = (f"done: {steps} steps · loss {fmt(history[0])} → {fmt(history[-1])} "
                          f"nats (uniform guess {fmt(np.log(len(VOCAB)))})" + (
                              f" · held-out {fmt(record['heldout'][-1])} nats, lowest "
                              f"{fmt(min(record['heldout']))} at step {record['best_step']}"
                              if heldout is not None else ""))
    shown = [h for h in history if np.isfinite(h)]
    line.set_data(range(len(shown)), shown)
    held = record.get("heldout", [])
    held_line.set_data(range(len(held)), held)
    if params is not None and held:
        marks = [(record["best_step"], "early stopping")] if "best_step" in record else []
        below = np.flatnonzero(np.array(shown) < levels[0][0] - APART) if levels else []
        if len(below):
            marks.append((int(below[0]), "curves part"))
        for step, word in marks:                        # early stopping's label left of its line
            side = "right" if word == "early stopping" else "left"
            ax.axvline(step, color=GREY, linewidth=0.8, linestyle=(0, (2, 2)), zorder=0)
            ax.annotate(f"{word}, {step}", (step, 0.25), xytext=(-3 if side == "right" else 3, 3),
                        textcoords="offset points", ha=side, fontsize=8, color=GREY, annotation_clip=False)
    redraw(fig)
    if handle is not None:
        handle.update(root)                             # the stored picture: the finished curve
    train_live.record = record
    return params, history


def _every(every):
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every (how many steps between redraws) must be a whole number, 1 or "
                         f"more, not {every!r}.")
    return int(every)


def loss_curves(histories, title="Loss during training"):
    """A static plot of finished runs: {label: loss history}, one line each."""
    if not isinstance(histories, dict) or not histories or not all(
            isinstance(h, (list, tuple, np.ndarray)) and len(h) > 1 for h in histories.values()):
        raise ValueError("loss_curves takes {label: loss history}, as train returns the history.")
    steps = max(len(h) for h in histories.values()) - 1
    fig, ax = new_figure(7.2, 3.2)
    loss_axes(ax, steps, title)
    for (label, history), color in zip(histories.items(), [BLUE, ORANGE, GREEN, PURPLE]):
        ax.plot(range(len(history)), history, color=color, linewidth=2, label=label)
    ax.legend(loc="upper right")
    static(fig)


def _example():
    """The Output page's example: ids, targets (the next tokens, then ␣roof), its logits."""
    ids = encode(EXAMPLE_TEXT)
    return ids, ids[1:] + [VOCAB.index(" roof")], forward(ids)


def _dz_row(row, token):
    """d(-ln p(target)) / dz for `token` on row `row` (1 to 5) of the example, that row's own loss."""
    ids, targets, logits = _example()
    i = row - 1
    return float(toy_train.softmax_cross_entropy_backward(logits[i:i + 1], targets[i:i + 1])[0, token_id(token)])


number_exercise(
    "08.1", lambda: "p − onehot by hand. On row 3 (after ␣climb) the target is ed, which the model "
                    f"gives p = {fmt(1 + _dz_row(3, 'ed'))}. What is the gradient of that row's own "
                    "loss, −ln p(ed), with respect to ed's own logit?",
    answer=lambda: _dz_row(3, "ed"),
    hints=lambda: [(-_dz_row(3, "ed"), "Check the sign: raising the target's logit makes the loss "
                    "smaller, so the gradient is negative."),
                   (1 + _dz_row(3, "ed"), "That is p(ed) itself; the target also gets the "
                    "one-hot's 1 taken away."),
                   (_dz_row(3, "ed") / 5, "That is the share of the mean over 5 rows; the "
                    "question asks for row 3's own loss.")],
    solution=lambda: (
        f"p − 1 = {fmt(1 + _dz_row(3, 'ed'))} − 1 = {fmt(_dz_row(3, 'ed'))}. For the target, the "
        "one-hot vector holds a 1, so its gradient is p − 1: always negative, and the further p "
        "is from 1, the stronger the push up. Every other token gets p − 0 = p, which is positive."))

def _dz_mean(row, token):
    """d(mean loss over the example's 5 rows) / dz for `token` on row `row` (1 to 5)."""
    ids, targets, logits = _example()
    return float(toy_train.softmax_cross_entropy_backward(logits, targets)[row - 1, token_id(token)])


def _step_on_weights_dog():
    """How far ␣dog's logit on row 1 moves, per unit of learning rate, when one small step on
    row 1's loss moves every weight of the model (not the logits alone)."""
    ids, targets, logits = _example()
    only_1 = [targets[0]] + [-1] * (len(ids) - 1)
    _, grads = toy_train.loss_and_grads(ids, only_1)
    lr, dog = 1e-6, token_id("␣dog")
    stepped = toy_train.sgd_step(PARAMS, grads, lr)
    return float((forward(ids, stepped)[0, dog] - logits[0, dog]) / lr)


number_exercise(
    "08.2", lambda: "A wrong token's gradient. On row 1 (after the) the target is ␣cat, and the "
                    f"model gives ␣dog p = {fmt(_dz_row(1, '␣dog'))}. What is the gradient of the "
                    "example's loss, the mean over its 5 rows, with respect to ␣dog's logit on "
                    "row 1?",
    answer=lambda: _dz_mean(1, "␣dog"),
    hints=lambda: [(_dz_row(1, "␣dog"), "That is the gradient of row 1's own loss; the "
                    "example's loss is the mean over 5 rows."),
                   (-_dz_mean(1, "␣dog"), "Check the sign: ␣dog is not the target, so its "
                    "one-hot entry is 0 and the gradient is p − 0, positive."),
                   (_dz_mean(1, "␣dog") - 1 / 5, "That is the target's rule, p − 1; ␣dog is not "
                    "row 1's target.")],
    solution=lambda: (
        f"p(␣dog) / 5 = {fmt(_dz_row(1, '␣dog'))} / 5 = {fmt(_dz_mean(1, '␣dog'))}. ␣dog is not "
        "the target, so its one-hot entry is 0 and row 1's own gradient is p − 0; the mean over "
        "5 rows divides it by 5. It is positive: raising ␣dog's logit would raise the loss, "
        "because ␣dog takes probability away from the target, so a step on the logits, −lr × "
        "(a positive number), lowers it. On the real model the logits are not free: a step moves "
        "the weights, and a weight serves every token, as section 3 showed. One small step on "
        f"all the weights, against row 1's gradient, moves ␣dog's logit by {_step_on_weights_dog():+.1f} "
        "per unit of learning rate: it rises, carried along with ␣cat's, since the two nouns "
        "share the toy's \"noun\" dimension."))


def _loss_cases():
    ids, targets, logits = _example()
    rng = np.random.default_rng(83)
    return [("the example's logits (5 rows) and targets", (logits, targets)),
            ("random logits for 3 rows", (rng.normal(0, 1, (3, len(VOCAB))), [2, 7, 11])),
            ("one row of larger logits", (rng.normal(0, 3, (1, len(VOCAB))), [4]))]


def _loss_measured(logits, targets):
    return _measured(lambda z: np.array(_model.cross_entropy(z, targets)), logits, 1.0, eps=1e-5)


def _p_minus_onehot(logits, targets, axis=-1):
    return _model.softmax(logits, axis=axis) - np.eye(logits.shape[-1])[targets]


code_exercise(
    "08.3", "Write `loss_backward(logits, targets)`: logits has one row of scores per position "
            "(n × V), targets the n target token ids. Return the gradient of the loss, the mean "
            "of −ln p(target) over the n rows, with respect to the logits (logits' shape). It is "
            "checked against finite differences of `tm.cross_entropy`.",
    reference=_loss_measured, reference_is="the measurement", cases=_loss_cases,
    mistakes=[(lambda z, t: _p_minus_onehot(z, t), "the loss is the mean over the rows: divide "
               "each row's gradient by the number of rows, len(targets)."),
              (lambda z, t: -_p_minus_onehot(z, t) / len(t), "that points uphill: the gradient is "
               "p − onehot, not onehot − p."),
              (lambda z, t: _model.softmax(z) / len(t), "subtract the onehot: the target's own "
               "logit gets p − 1."),
              (lambda z, t: _p_minus_onehot(z, t) / z.shape[-1], "divide by the number of rows, "
               "len(targets), not by the number of tokens."),
              (lambda z, t: _p_minus_onehot(z, t, axis=0) / len(t), "softmax runs along each row "
               "(axis=-1): p is one position's probabilities over the tokens.")],
    solution='''def loss_backward(logits, targets):
    p = tm.softmax(logits)                          # [n, V]: each row sums to 1
    onehot = np.eye(logits.shape[-1])[targets]      # a 1 at each row's target
    return (p - onehot) / len(targets)              # the loss is the mean over the n rows''')


_PROMPT_4, _TOKEN_4 = "the dog climbed the", "␣wall"


def _after_prompt():
    """Counts [V] of what follows "the dog climbed the" in the corpus."""
    return toy_train.next_token_counts(toy_train.load_corpus(), encode(_PROMPT_4))


def _subject_sentences():
    """How many sentences of the corpus begin with the prompt's first two tokens ("the dog")."""
    start = encode(_PROMPT_4)[:2]
    return sum(seq[:2] == start for seq in toy_train.load_corpus())


def _share():
    counts = _after_prompt()
    return counts[token_id(_TOKEN_4)] / counts.sum()


def _best_split():
    counts = _after_prompt()
    return ", ".join(f"{token_name(j)} {counts[j]}" for j in np.argsort(-counts, kind="stable") if counts[j])


number_exercise(
    "08.4", f"The best possible prediction. In the corpus, count what follows \"{_PROMPT_4}\". "
            f"Which p({_TOKEN_4}) after that prompt makes the loss on the corpus as small as it can be?",
    answer=_share, fractions=True,
    hints=lambda: [(1.0, "p = 1 would be perfect only if this token always came next; when another "
                    "token comes, −ln p of it would be infinite."),
                   (_after_prompt()[token_id(_TOKEN_4)] / len(toy_train.load_corpus()),
                    f"Count only the sentences that begin with \"{_PROMPT_4}\", not every "
                    "line of the corpus."),
                   (_after_prompt()[token_id(_TOKEN_4)] / _subject_sentences(),
                    f"\"the dog climbed.\" does not continue \"{_PROMPT_4}\": count only the "
                    "sentences that do.")],
    solution=lambda: (
        f"The corpus's own frequency, {_after_prompt()[token_id(_TOKEN_4)]}/{_after_prompt().sum()} = "
        f"{fmt(_share())}. After \"{_PROMPT_4}\" the corpus goes on with: "
        f"{_best_split()}. The loss over those cases, a sum of count × (−ln p) over the tokens, is "
        "smallest when each p equals its token's share of the count. A model trained on the "
        "corpus moves towards these frequencies; no model can do better than them on the corpus."))


def recipe_curves(sweep, levels=()):
    """A seed sweep (tt.load_sweep()) as two pictures, one per arm (own W_U, tied), each a
    row of panels, one per recipe, titled with the recipe's name. In a panel each run is one
    strip, seed 0 at the top, so that a strip lines up with the same seed's strips in the
    other panels; along it, step by step, the training loss's band: above the subject-blind
    level (falling from ln 12, or in a spike; light grey), at about that level (green), or
    below halfway from it to the best possible loss (the subject learnt; dark blue); a black
    mark where the loss rose by more than 0.5 nats in one step (a jump). Counting strips
    that end in dark blue, or that carry a mark, gives the table's counts of runs that learnt
    the subject and runs that jumped. levels: the lab's (subject-blind, ...) and (best possible, ...)."""
    if not isinstance(sweep, dict) or not {"recipes", "runs", "seeds"} <= sweep.keys():
        raise ValueError("recipe_curves takes a seed sweep, as tt.load_sweep() returns it.")
    if len(levels) < 2:
        raise ValueError("recipe_curves needs levels: the subject-blind level and the best possible loss, as the lab passes them.")
    from matplotlib.colors import ListedColormap
    import textwrap
    recipes, seeds = sweep["recipes"], sorted(sweep["seeds"])
    blind, best = levels[0][0], levels[1][0]
    learnt, above = (best + blind) / 2, blind + 0.02
    colours = ListedColormap(["#E6E6E6", GREEN, BLUE])
    for arm in ["own W_U", "tied"]:
        fig, _ = new_figure(6.8, 3.5)
        fig.clear()
        axes = fig.subplots(1, len(recipes), sharey=True, squeeze=False)[0]
        for ax, recipe in zip(axes, recipes):
            chosen = sorted((run for run in sweep["runs"] if run["recipe"] == recipe and run["arm"] == arm),
                            key=lambda run: run["seed"])
            loss = np.array([run["history"] for run in chosen])
            band = np.where(loss < learnt, 2, np.where(loss < above, 1, 0))
            ax.imshow(band, cmap=colours, vmin=0, vmax=2, aspect="auto", interpolation="nearest",
                      extent=(0, loss.shape[1] - 1, len(chosen) - 0.5, -0.5))
            for row, run in enumerate(chosen):
                steps = np.flatnonzero(np.diff(run["history"]) > 0.5) + 1
                ax.plot(steps, np.full(len(steps), row), linestyle="none", marker="|", color="black",
                        markersize=7, markeredgewidth=1.6)
            ax.set_xticks([0, sweep["steps"]], ["0", str(sweep["steps"])], fontsize=8)
            ax.set_xlabel("step", fontsize=8, labelpad=0)
            ax.set_title(textwrap.fill(recipe, 14), fontsize=9)
            ax.tick_params(axis="y", length=0)
        axes[0].set_yticks(range(0, len(seeds), 3), [str(s) for s in seeds[::3]], fontsize=8)
        axes[0].set_ylabel("seed (one strip per run)", fontsize=9)
        handles = [plt.Rectangle((0, 0), 1, 1, facecolor="#E6E6E6", edgecolor=GREY,
                                 label="above the subject-blind level"),
                   plt.Rectangle((0, 0), 1, 1, facecolor=GREEN, label="at about that level"),
                   plt.Rectangle((0, 0), 1, 1, facecolor=BLUE, label="learnt the subject"),
                   plt.Line2D([], [], linestyle="none", marker="|", color="black", markersize=8,
                              markeredgewidth=1.6, label="a jump (+0.5 nats in one step)")]
        fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
        fig.suptitle(f"Training loss, {len(seeds)} seeds per recipe, {arm}", fontsize=11)
        static(fig)


# --- Write the backward passes yourself ---------------------------------------------
# Each is checked against finite differences of the forward function on random inputs:
# the reference below measures the gradient of sum(dout * forward(x)) entry by entry, so
# a learner's function is right when it agrees with a measurement, not with our code.

def _measured(f, x, dout, eps=1e-6):
    """d sum(dout * f(x)) / dx by central differences, entry by entry."""
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = ((dout * f(up)).sum() - (dout * f(down)).sum()) / (2 * eps)
    return grad


def _softmax_cases():
    rng = np.random.default_rng(85)
    scores = [rng.normal(0, 1, (4, 4)), rng.normal(0, 1.5, (1, 5)), rng.normal(0, 2, (2, 3, 6))]
    masked = rng.normal(0, 1, (4, 4))
    masked[np.triu_indices(4, 1)] = -np.inf                 # a causal mask: p = 0 above
    return [(f"scores of shape {s.shape}", (rng.normal(size=s.shape), _model.softmax(s)))
            for s in scores + [masked]]


def _softmax_measured(dout, p):
    scores = np.log(np.where(p > 0, p, 1.0))                # softmax(log p) = p on each row
    free = p > 0                                            # masked scores stay -infinity
    grad = _measured(lambda s: _model.softmax(np.where(free, s, -np.inf)), scores, dout)
    return np.where(free, grad, 0.0)


code_exercise(
    "08.6", "Write `softmax_backward(dp, p)`: p = softmax(s) row by row (the last axis), and "
            "dp is the gradient of the loss with respect to p. Return ds, the gradient with "
            "respect to the scores s (p's shape). It is checked against finite differences on "
            "random scores, masked ones included.",
    reference=_softmax_measured, reference_is="the measurement", cases=_softmax_cases,
    mistakes=[(lambda dp, p: dp * p, "p_j moves with every score of its row, not only its own: "
               "subtract the row's sum of p · dp from dp before multiplying by p."),
              (lambda dp, p: dp * p * (1 - p), "that is only the diagonal of the Jacobian, "
               "∂p_j/∂s_j = p_j (1 − p_j); the other scores of the row move p_j too."),
              (lambda dp, p: dp - (dp * p).sum(axis=-1, keepdims=True),
               "multiply by p at the end: a score moves its own p_j in proportion to p_j."),
              (lambda dp, p: p * (dp - (dp * p).sum(axis=0, keepdims=True)),
               "the sum runs along each row (axis=-1, keepdims=True), the axis softmax normalised.")],
    solution='''def softmax_backward(dp, p):
    # dp_j/ds_k = p_j (1[j = k] - p_k), so ds_k = sum_j dp_j p_j (1[j = k] - p_k)
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))''')


def _ln_cases():
    rng = np.random.default_rng(86)
    return [("one row [0, 2, 2, 8] with g = 1", (rng.normal(size=(1, 4)), np.array([[0., 2, 2, 8]]),
                                                 np.ones(4))),
            ("5 rows of 4, g random", (rng.normal(size=(5, 4)), rng.normal(size=(5, 4)),
                                       rng.uniform(0.5, 1.5, 4))),
            ("2 texts of 3 rows of 6", (rng.normal(size=(2, 3, 6)), rng.normal(0, 3, (2, 3, 6)),
                                        rng.uniform(0.5, 1.5, 6)))]


def _ln_measured(dout, x, g):
    return _measured(lambda v: _model.layer_norm(v, g, 0.0), x, dout)


def _ln_parts(x, eps=1e-5):
    std = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    return (x - x.mean(axis=-1, keepdims=True)) / std, std


def _ln_no_std_term(dout, x, g):
    xhat, std = _ln_parts(x)
    dxhat = dout * g
    return (dxhat - dxhat.mean(axis=-1, keepdims=True)) / std


code_exercise(
    "08.7", "Write `layer_norm_backward(dout, x, g)`: out = g · x̂ + b with x̂ = (x − mean) / std "
            "row by row and std = sqrt(var + 1e-5), as in the forward pass. Return dx, the "
            "gradient with respect to x (x's shape). It is checked against finite differences.",
    reference=_ln_measured, reference_is="the measurement", cases=_ln_cases,
    mistakes=[(lambda dout, x, g: dout * g / _ln_parts(x)[1],
               "moving one entry also moves its row's mean and std: subtract the row's mean of "
               "dx̂ and x̂ times the mean of dx̂ · x̂ before dividing by std."),
              (_ln_no_std_term, "the mean is taken care of; the std moves too: subtract also "
               "x̂ times the row's mean of dx̂ · x̂."),
              (lambda dout, x, g: toy_train.layer_norm_backward(dout, x, np.ones_like(g))[0],
               "the gain g multiplies x̂ on the way forward, so dx̂ = dout · g."),
              (lambda dout, x, g: toy_train.layer_norm_backward(dout, x, g, eps=0.0)[0],
               "use std = sqrt(var + 1e-5), with the forward pass's 1e-5.")],
    solution='''def layer_norm_backward(dout, x, g, eps=1e-5):
    std = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    xhat = (x - x.mean(axis=-1, keepdims=True)) / std
    dxhat = dout * g
    return (dxhat - dxhat.mean(axis=-1, keepdims=True)
            - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)) / std''')


def _attention_cases():
    rng = np.random.default_rng(87)
    return [(f"{n} positions, d_head = {d}", tuple(rng.normal(size=(n, d)) for _ in range(4)))
            for n, d in [(3, 2), (5, 2), (4, 3)]]


def _attention_measured(dout, q, k, v):
    return tuple(_measured(lambda m, i=i: _model.attention(*[m if j == i else a
                                                              for j, a in enumerate((q, k, v))]),
                           arg, dout)
                 for i, arg in enumerate((q, k, v)))


def _attention_mistake(dout, q, k, v, scale=True, transpose_a=True, transpose_ds=True):
    trace = {}
    _model.attention(q, k, v, trace=trace)
    a = trace["weights"]
    dscores = toy_train.softmax_backward(dout @ v.T, a) / (np.sqrt(q.shape[-1]) if scale else 1)
    return dscores @ k, (dscores.T if transpose_ds else dscores) @ q, (a.T if transpose_a else a) @ dout


code_exercise(
    "08.8", "Write `attention_backward(dout, q, k, v)` for one causal head, out = A v with "
            "A = softmax(q kᵀ / sqrt(d_head), masked). Return (dq, dk, dv). Run the forward pass "
            "inside with `trace = {}; tm.attention(q, k, v, trace=trace)` to get A = "
            "trace[\"weights\"], and use `tt.softmax_backward` (or yours). Checked against "
            "finite differences.",
    reference=_attention_measured, reference_is="the measurement", cases=_attention_cases,
    mistakes=[(lambda *a: _attention_mistake(*a, scale=False),
               "the scores were divided by sqrt(d_head) on the way forward: so are their gradients."),
              (lambda *a: _attention_mistake(*a, transpose_a=False),
               "dv = Aᵀ dout: each v row collects from every query that looked at it (the transpose)."),
              (lambda *a: _attention_mistake(*a, transpose_ds=False),
               "dk = dsᵀ q / sqrt(d_head): score s_ij = q_i · k_j / sqrt(d_head), so k_j collects "
               "from column j of ds (the transpose).")],
    solution='''def attention_backward(dout, q, k, v):
    trace = {}
    tm.attention(q, k, v, trace=trace)
    A = trace["weights"]                      # [n, n], 0 above the diagonal
    dA, dv = dout @ v.T, A.T @ dout           # out = A v
    ds = tt.softmax_backward(dA, A) / np.sqrt(q.shape[-1])   # 0 where masked
    return ds @ k, ds.T @ q, dv               # scores = q k^T / sqrt(d_head)''')


_FD_WEIGHT, _FD_INDEX = "blocks.0.ln_2.g", (2,)


def _fd_grad():
    ids, targets, _ = _example()
    return float(_model.get_weight(toy_train.loss_and_grads(ids, targets)[1], _FD_WEIGHT)[_FD_INDEX])


def _central(eps=1e-4):
    ids, targets, _ = _example()
    losses = []
    for sign in (1, -1):
        w = np.array(_model.get_weight(PARAMS, _FD_WEIGHT))
        w[_FD_INDEX] += sign * eps
        losses.append(_model.cross_entropy(forward(ids, _model.replace_weight(PARAMS, _FD_WEIGHT, w)), targets))
    return (losses[0] - losses[1]) / (2 * eps)


def _one_sided(eps=1e-4):
    ids, targets, _ = _example()
    w = np.array(_model.get_weight(PARAMS, _FD_WEIGHT))
    w[_FD_INDEX] += eps
    up = _model.cross_entropy(forward(ids, _model.replace_weight(PARAMS, _FD_WEIGHT, w)), targets)
    return (up - _model.cross_entropy(forward(ids), targets)) / eps


number_exercise(
    "08.5", f"Check a gradient yourself. Measure d loss / d {_FD_WEIGHT}[2] (the third gain of "
            "the block's second LayerNorm) on the example, by a central difference with "
            "ε = 1e-4: build the nudged weights with `tm.replace_weight`, grade them with "
            "`tm.cross_entropy(tm.forward(ids, params), targets)`, and compute "
            "(L(w + ε) − L(w − ε)) / 2ε (not with tt.finite_difference). The toy's weights are "
            "read-only: nudge a copy, `w = np.array(tm.get_weight(tm.PARAMS, name))`.",
    answer=_fd_grad, decimals=4,
    hints=lambda: [(-_fd_grad(), "Check the sign: L(w + ε) comes first."),
                   (2 * _fd_grad(), "Divide by 2ε: the two nudges are 2ε apart."),
                   (_fd_grad() / 2, "Divide by 2ε, not multiply by 2: the two nudges are 2ε apart."),
                   (0.0, "A zero change means the nudge did not reach the weight: nudge a "
                    "copy of the array (w = np.array(...)) and pass it to replace_weight.")],
    solution=lambda: (
        f"`w = np.array(tm.get_weight(tm.PARAMS, '{_FD_WEIGHT}'))`, then `w[2] += 1e-4` for the "
        "up version and `w[2] -= 1e-4` (on a fresh copy) for the down one; each goes into "
        "`tm.replace_weight`, and `tm.cross_entropy(tm.forward(ids, params), targets)` grades "
        f"it. The central difference is {_fd_grad():.4f}, backpropagation's value is "
        f"{_fd_grad():.6f}: they differ by about {abs(_central() - _fd_grad()):.0e}, ε²/6 times the "
        f"loss's third derivative. A one-sided difference, (L(w + ε) − L(w)) / ε, gives "
        f"{_one_sided():.6f}, off by about ε/2 times the curvature."))


# --- The backward pass as the forward pass run in reverse -----------------------------

def _shape(a):
    a = np.asarray(a)
    return " × ".join(str(n) for n in a.shape) if a.ndim else "1 number"


def backward_picture(r, dz, df, dy, dh, dx):
    """Section 4's backward pass beside the forward pass: the forward pass's arrays in a row
    (ids, x, h, y, f, z, the loss), each with its shape read from the run r (tm.intermediates's
    intermediates), the forward steps as arrows from left to right above them, and below
    them the gradients (dz, df, dy, dh, dx as section 4 computed them, shapes read from the
    arrays) travelling the other way, each arrow labelled with the rule it applies."""
    arrays = [dz, df, dy, dh, dx]
    if not isinstance(r, dict) or not {"ids", "x", "h", "y", "f", "logits"} <= r.keys() \
            or not all(isinstance(a, np.ndarray) for a in arrays):
        raise ValueError("backward_picture takes tm.intermediates(...)'s result and the arrays dz, df, dy, dh, dx of section 4.")
    nodes = [("ids", f"{len(r['ids'])} token ids"), ("x", _shape(r["x"])), ("h", _shape(r["h"])),
             ("y", _shape(r["y"])), ("f", _shape(r["f"])), ("z", _shape(r["logits"])), ("loss", "1 number")]
    grads = ["dwte, dwpe", f"dx {_shape(dx)}", f"dh {_shape(dh)}", f"dy {_shape(dy)}",
             f"df {_shape(df)}", f"dz {_shape(dz)}", "d loss = 1"]
    forward_steps = ["wte[ids]\n+ wpe", "+ attention\n(LN₁ first)", "+ MLP\n(LN₂ first)", "LN_f", "f W_U", "−ln p(target),\nmean"]
    backward_rules = ["to each token's\nrow of wte", "skip + branch\n(attention's rules)", "skip + branch\n(MLP's rules)",
                      "LayerNorm's\nrule", "dz W_Uᵀ", "p − onehot,\n/ 5"]
    fig, ax = new_figure(6.8, 3.0)
    xs = np.arange(len(nodes)) * 1.0
    for x, (name, shape), grad in zip(xs, nodes, grads):
        ax.text(x, 0.55, f"{name}\n{shape}", ha="center", va="center", fontsize=9,
                bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor=BLUE, linewidth=1.2))
        ax.text(x, -0.55, grad, ha="center", va="center", fontsize=9, color="black",
                bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor=ORANGE, linewidth=1.2))
    for k, (step, rule) in enumerate(zip(forward_steps, backward_rules)):
        left, right = xs[k] + 0.36, xs[k + 1] - 0.36
        ax.annotate("", xy=(right, 0.55), xytext=(left, 0.55),
                    arrowprops=dict(arrowstyle="-|>", color=BLUE, linewidth=1.5))
        ax.text((left + right) / 2, 1.0, step, ha="center", va="bottom", fontsize=8, color=BLUE)
        ax.annotate("", xy=(left, -0.55), xytext=(right, -0.55),
                    arrowprops=dict(arrowstyle="-|>", color=ORANGE, linewidth=1.5))
        ax.text((left + right) / 2, -1.0, rule, ha="center", va="top", fontsize=8, color=ORANGE)
    ax.text(xs[0] - 0.55, 0.55, "forward", rotation=90, ha="center", va="center", fontsize=9, color=BLUE)
    ax.text(xs[0] - 0.55, -0.55, "backward", rotation=90, ha="center", va="center", fontsize=9, color=ORANGE)
    ax.set_xlim(xs[0] - 0.7, xs[-1] + 0.5)
    ax.set_ylim(-1.75, 1.75)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_axis_off()
    ax.set_title("The forward pass left to right; its gradients right to left", fontsize=10)
    static(fig)
