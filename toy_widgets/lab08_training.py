"""Lab 08, Training: the live loss curve, the finished curves, and the lab's exercises.
"""
import ipywidgets as widgets
import numpy as np

import toy_model as _model
from toy_model import PARAMS, VOCAB, encode, forward

from .draw import BLUE, GREEN, GREY, ORANGE, PURPLE, TOKENS, fmt, freeze_layout, new_figure, static
from .kit import _canvas_ready, live_artists, live_figure, panel, redraw
from .exercises import _TEXT, _tok, choice_exercise, code_exercise, number_exercise


# The training lab: a live loss curve while the toy trains, a static plot of finished
# runs, and the lab's exercises (registered with the functions of "Exercises" above).

def loss_axes(ax, steps, title):
    """Axes for loss curves: steps across, nats up, ln 12 (the uniform guess) dashed."""
    ax.axhline(np.log(len(VOCAB)), color=GREY, linestyle="--", linewidth=1,
               label=f"uniform guess, ln {len(VOCAB)} = {fmt(np.log(len(VOCAB)))}")
    ax.set_xlim(0, steps)
    ax.set_ylim(0, 3.2)
    ax.set_xlabel("training step")
    ax.set_ylabel("mean loss on the corpus (nats)")
    ax.set_title(title)


def train_live(corpus, steps=200, every=10, **options):
    """w-train: tm.train(corpus, steps, **options) drawing its loss curve as it goes, with
    a progress line. Returns what train returns: (trained params, loss history)."""
    from IPython.display import display
    fig, ax = live_figure("train", 7.2, 3.2)
    loss_axes(ax, steps, "Training the toy from random weights")
    line, = ax.plot([], [], color=BLUE, linewidth=2, label="loss of the model being trained")
    ax.legend(loc="upper right")
    freeze_layout(fig)
    live_artists(fig, [line])
    progress = widgets.HTML(f"step 0 of {steps}")
    root = panel("train", progress, fig.canvas)
    root.line, root.progress = line, progress
    train_live.panel = root                             # the last one shown, for tests
    display(root)
    _canvas_ready(fig.canvas)
    fig.canvas.draw()                                   # the axes once; then only the line
    losses = []

    def on_step(step, loss):
        losses.append(loss)
        if step % every == 0 or step == steps:
            line.set_data(range(len(losses)), losses)
            progress.value = f"step {step} of {steps} · loss {fmt(loss)} nats"
            redraw(fig)

    params, history = _model.train(corpus, steps=steps, callback=on_step, **options)
    line.set_data(range(len(history)), history)
    progress.value = (f"done: {steps} steps · loss {fmt(history[0])} → {fmt(history[-1])} nats "
                      f"(uniform guess {fmt(np.log(len(VOCAB)))})")
    redraw(fig)
    return params, history


def loss_curves(histories, title="Loss during training"):
    """A static plot of finished runs: {label: loss history}, one line each."""
    steps = max(len(h) for h in histories.values()) - 1
    fig, ax = new_figure(7.2, 3.2)
    loss_axes(ax, steps, title)
    for (label, history), color in zip(histories.items(), [BLUE, ORANGE, GREEN, PURPLE]):
        ax.plot(range(len(history)), history, color=color, linewidth=2, label=label)
    ax.legend(loc="upper right")
    static(fig)


def _example():
    """The Output page's example: ids, targets (the next tokens, then ␣roof), its logits."""
    ids = encode(_TEXT)
    return ids, ids[1:] + [VOCAB.index(" roof")], forward(ids)


def _dz_last(token):
    """d(-ln p(target)) / dz for `token` on the example's last row (target ␣roof)."""
    ids, targets, logits = _example()
    return float(_model.softmax_cross_entropy_backward(logits[-1:], targets[-1:])[0, _tok(token)])


number_exercise(
    "08.1", lambda: "p − onehot by hand. On the last row the target is ␣roof, which the model "
                    f"gives p = {fmt(1 + _dz_last('␣roof'))}. What is the gradient of that row's "
                    "loss, −ln p(␣roof), with respect to ␣roof's own logit?",
    answer=lambda: _dz_last("␣roof"),
    hints=lambda: [(-_dz_last("␣roof"), "Check the sign: raising ␣roof's logit makes the loss "
                    "smaller, so the gradient is negative."),
                   (1 + _dz_last("␣roof"), "That is p(␣roof) itself; the target also gets the "
                    "one-hot's 1 taken away."),
                   (_dz_last("␣roof") / 5, "That is the share of the mean over 5 rows; the "
                    "question asks for the last row's own loss.")],
    solution=lambda: (
        f"p − 1 = {fmt(1 + _dz_last('␣roof'))} − 1 = {fmt(_dz_last('␣roof'))}. For the target, the "
        "one-hot vector holds a 1, so its gradient is p − 1: always negative, and the further p "
        "is from 1, the stronger the push up. Every other token gets p − 0 = p, which is positive."))

_SIGN = ["its logit goes down, and p(␣wall) with it",
         "its logit goes up: a positive gradient means the loss wants more ␣wall",
         "nothing: ␣wall is not the target, so its gradient is 0"]


choice_exercise(
    "08.2", lambda: "The sign of a gradient. On the last row, the gradient of the loss with "
                    f"respect to ␣wall's logit is p(␣wall) = {fmt(_dz_last('␣wall'))}, a positive "
                    "number. Gradient descent moves every weight by −learning rate × its "
                    "gradient. What does one small step do to ␣wall's logit?",
    options=_SIGN, answer=lambda: _SIGN[0] if _dz_last("␣wall") > 0 else _SIGN[1],
    hints={_SIGN[1]: "A positive gradient says the loss grows when the logit grows; descent goes "
                     "the other way.",
           _SIGN[2]: "Every token's logit shares one softmax: a wrong token with p > 0 has the "
                     "gradient p − 0 = p.",
           _SIGN[0]: "Look at the sign once more."},
    solution=lambda: (
        f"It goes down. The gradient {fmt(_dz_last('␣wall'))} is positive: raising ␣wall's logit "
        "would raise the loss, because ␣wall takes probability away from the target. The step is "
        "−lr × (a positive number), so the logit falls, p(␣wall) falls, and the probability it "
        "gives up goes to the other tokens, the target first among them."))


def _sgd_cases():
    ids, targets, _ = _example()
    _, grads = _model.loss_and_grads(ids, targets)
    rng = np.random.default_rng(8)
    return [("W_U with its gradient, lr = 1", (PARAMS["w_u"], grads["w_u"], 1.0)),
            ("wte with its gradient, lr = 0.1", (PARAMS["wte"], grads["wte"], 0.1)),
            ("a random 3 × 2 weight, lr = 0.5", (rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), 0.5))]


code_exercise(
    "08.3", "Write `sgd_update(w, g, lr)`: one step of gradient descent on one weight array w "
            "whose gradient is g. Return the new array (leave w itself unchanged: the model's "
            "weights are read-only).",
    reference=lambda w, g, lr: _model.sgd_step({"w": w}, {"w": g}, lr)["w"], cases=_sgd_cases,
    mistakes=[(lambda w, g, lr: w + lr * g, "that climbs uphill: the step goes against the gradient."),
              (lambda w, g, lr: w - g, "the learning rate sets the size of the step: multiply g by lr."),
              (lambda w, g, lr: -lr * g, "return the new weights, not only the change: start from w."),
              (lambda w, g, lr: w - g / lr, "multiply by lr, do not divide.")],
    solution='''def sgd_update(w, g, lr):
    return w - lr * g          # a new array; w itself is not changed''')


def _after_prompt():
    """Counts [V] of what follows "the cat climbed the" in the corpus."""
    return _model.next_token_counts(_model.load_corpus(), encode(_TEXT))


def _roof_share():
    counts = _after_prompt()
    return counts[_tok("␣roof")] / counts.sum()


def _best_split():
    counts = _after_prompt()
    return ", ".join(f"{TOKENS[j]} {counts[j]}" for j in np.argsort(-counts, kind="stable") if counts[j])


number_exercise(
    "08.4", "The best possible prediction. In the corpus, count what follows \"the cat climbed the\". "
            "Which p(␣roof) after that prompt makes the loss on the corpus as small as it can be?",
    answer=_roof_share, fractions=True,
    hints=lambda: [(1.0, "p = 1 would be perfect only if ␣roof always came next; when another "
                    "token comes, −ln p of it would be infinite."),
                   (_after_prompt()[_tok("␣roof")] / len(_model.load_corpus()),
                    "Count only the sentences that begin with \"the cat climbed the\", not every "
                    "line of the corpus.")],
    solution=lambda: (
        f"The corpus's own frequency, {_after_prompt()[_tok('␣roof')]}/{_after_prompt().sum()} = "
        f"{fmt(_roof_share())}. After \"the cat climbed the\" the corpus goes on with: "
        f"{_best_split()}. The loss over those cases, a sum of count × (−ln p) over the tokens, is "
        "smallest when each p equals its token's share of the count. A model trained on the "
        "corpus moves towards these frequencies; no model can do better than them."))
