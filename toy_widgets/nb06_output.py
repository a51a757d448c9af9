"""Notebook 06, Output: its exercises and its widgets (logit playground, shift, attention and tying switches).
"""
import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Patch

from toy_checks import shown_value
from toy_model import (PARAMS, VOCAB, cross_entropy, encode, entropy, intermediates, softmax, switch_off, tie,
                       token_name)

from .draw import GREY, SKY, TOKENS, fmt, freeze_layout
from .kit import builder_text
from .kit import (BarChart, WidgetState, guarded, live_artists, live_chart, live_figure,
                  message_area, on_change, on_enter, panel, picked, plain, redraw, say, slider_move,
                  typed_number)
from .exercises import EXAMPLE_TEXT, token_id, choice_exercise, code_exercise, number_exercise


_OUT = ["A word: the one with the highest logit", "12 probabilities, one per token, that add up to 1",
        "The 4 numbers of f_5", "12 logits, and the largest one is the answer"]


def _softmax_output():
    p = intermediates(EXAMPLE_TEXT)["p"][-1]
    return _OUT[1] if len(p) == len(VOCAB) and np.isclose(p.sum(), 1) else _OUT[3]


choice_exercise(
    "06.1", "Does the model output a word? Predict it before you read section 4: once the output "
            "layer and the softmax have run, what exactly will the model have produced for the last "
            "position?",
    options=_OUT, answer=_softmax_output,
    hints={_OUT[0]: "No token has been chosen yet; choosing is a separate step.",
           _OUT[2]: "f_5 is an input of the output layer, not its result.",
           _OUT[3]: "That is one step earlier: the output layer makes the logits, and the softmax after it "
                    "makes p from them. Real code does stop there: a forward pass returns the "
                    "logits (`model(...).logits`, nanoGPT's `logits, loss = model(idx, targets)`), and "
                    "the softmax lives in the loss or in the sampler. What is p, then: how many numbers, "
                    "and what do they add up to?",
           _OUT[1]: "Follow the last row through the output layer and the softmax once more."},
    solution="No word at all: the model's output is a distribution, one probability per token of "
             "its vocabulary (12 in the toy, 50,257 in GPT-2), adding up to 1. A word appears only "
             "after one token is chosen from that distribution and its id is decoded back into text, "
             "which is the subject of the next notebook.\n\n"
             "In real code the forward pass stops one step earlier, at the logits; the softmax is "
             "applied by whatever uses them: the loss (as a log-softmax) or the sampler.")

_ADD = ["p(␣roof) stays exactly the same", "p(␣roof) grows e^10 times",
        "p(␣roof) grows and the others shrink", "p(␣roof) comes close to 1"]


def _last_z():
    return intermediates(EXAMPLE_TEXT)["logits"][-1]


choice_exercise(
    "06.2", "Add 10 to every logit. Suppose you add 10 to each of the 12 logits of the last row. "
            "What happens to p(␣roof)? Work it out from the softmax formula (or in the cell above).",
    options=_ADD,
    answer=lambda: _ADD[0] if np.allclose(softmax(_last_z() + 10), softmax(_last_z())) else _ADD[2],
    hints={_ADD[1]: "You changed the numerator but not the sum below it: every e^z in the sum grows too.",
           _ADD[2]: "That is what adding 10 to ␣roof's logit alone would do; here every logit moves.",
           _ADD[3]: "That would need ␣roof's logit to move away from the others; here they all move together.",
           _ADD[0]: "Write e^(z + 10) as a product and look again."},
    solution=lambda: (
        f"Nothing changes: p(␣roof) stays {fmt(softmax(_last_z() + 10)[token_id('␣roof')])}, and so does "
        "every other p. Each exponential becomes e^(z+10) = e^10 · e^z, the sum below grows by the "
        "same factor e^10, and the factor cancels. Only differences between logits matter, so a "
        "single logit means nothing on its own. The widget below shows it for any shift."))

_H6 = np.array([1.0, 0.0, 1.0, 0.0])


def _tied_z():
    return PARAMS["wte"] @ _H6


number_exercise(
    "06.3", "Score the vocabulary with tied weights, by hand. With W_U = Eᵀ and no final norm, the "
            "logit of token j for v = [1, 0, 1, 0] is v · E[j]. What is the highest of the 12 logits?",
    answer=lambda: _tied_z().max(), decimals=1,
    hints=lambda: [(float((_H6 @ PARAMS["w_u"]).max()), "Several tokens score 1 (and 1 is the top if "
                    "you used W_U's columns); look for a row with something on both d1 and d3."),
                   (0.5, "Add both parts: the d1 entry and the d3 entry of the row.")],
    solution=lambda: (
        f"{fmt(_tied_z().max(), 1)}: the logit of each token is \"d1 + d3\" of its row of E, and the "
        "largest such sum comes from the one row with something positive on both d1 and d3. Which "
        "token's row that is, the next question asks."))

choice_exercise(
    "06.4", "With the same tied weights and v = [1, 0, 1, 0]: which token gets the highest logit?",
    options=["␣the", "␣cat", "␣climb", "␣floor", "."], answer=lambda: TOKENS[int(_tied_z().argmax())],
    hints={".": "'.' wins with the columns of W_U; with tied weights, use the rows of E.",
           "␣the": "␣the's embedding lies on d4 only, which v ignores: it scores 0.",
           "␣cat": "␣cat scores 1 (d1 only); another token also has something on d3.",
           "␣climb": "␣climb scores 1 (d3 only); another token also has something on d1.",
           "␣floor": "Add d1 and d3 of each row once more."},
    solution=lambda: (
        f"`{token_name(int(_tied_z().argmax()))}`, whose embedding "
        f"{[float(v) for v in PARAMS['wte'][int(_tied_z().argmax())]]} gives {fmt(_tied_z().max(), 1)}. "
        "With tied weights, a logit just measures how much v looks like each token's embedding. The 12 "
        "logits: " + ", ".join(f"{token_name(t)} {fmt(z, 1)}" for t, z in zip(TOKENS, _tied_z(), strict=True))
        + f". With the toy's own W_U, `{token_name(int((_H6 @ PARAMS['w_u']).argmax()))}` would have come "
        "first instead."))

def _tied_p():
    return softmax(_tied_z())


_FLOOR = VOCAB.index(" floor")


def _mean_loss():
    """The toy's mean loss on "the cat climbed the roof": notebook 6's 0.979."""
    ids = encode(EXAMPLE_TEXT + " roof")
    return float(np.mean(-np.log(intermediates(ids[:-1])["p"][np.arange(len(ids) - 1), ids[1:]])))

number_exercise(
    "06.5", "Carry the example through the softmax. With the same tied weights, no norm "
            "and v = [1, 0, 1, 0], what probability does ␣floor get?",
    answer=lambda: _tied_p()[_FLOOR],
    hints=lambda: [(1 / 12, "That is the uniform 1/12: the logits are not all equal, so p is not either."),
                   (float(_tied_z()[_FLOOR] / _tied_z()[_tied_z() > 0].sum()),
                    "Divide e^z by the sum of e^z over all 12 tokens, not z by a sum of logits."),
                   (float(softmax(_H6 @ PARAMS["w_u"])[_FLOOR]),
                    "That is the toy's own W_U; with tied weights the logits are v · E[j].")],
    solution=lambda: (
        "Exponentiate all twelve logits and divide by their sum: "
        + ", ".join(f"{token_name(t)} {fmt(z, 1)} → {fmt(q)}" for t, z, q in zip(TOKENS, _tied_z(), _tied_p(), strict=True))
        + f". ␣floor leads, yet gets only {fmt(_tied_p()[_FLOOR])}: six other tokens score 1, half a "
        "unit behind, and together they take most of the mass."))

number_exercise(
    "06.6", "And the loss: if the token that really came next were ␣floor, what would this "
            "prediction cost, in nats?",
    answer=lambda: -np.log(_tied_p()[_FLOOR]),
    hints=lambda: [(float(-np.log10(_tied_p()[_FLOOR])), "Use the natural log, ln, not log base 10."),
                   (float(-np.log2(_tied_p()[_FLOOR])), "That is in bits (log base 2); the loss is in nats (ln)."),
                   (float(_tied_p()[_FLOOR]), "That is p itself; the loss is −ln p.")],
    tolerance=0.002,          # carrying 06.5's rounded p, 0.174, gives 1.749
    solution=lambda: (
        f"{fmt(-np.log(_tied_p()[_FLOOR]))} nats. With no rounding on the way, straight from the logits "
        f"(section 5's log-sum-exp): ln Σ e^z − z(␣floor) = {fmt(np.log(np.exp(_tied_z()).sum()))} − "
        f"{fmt(_tied_z()[_FLOOR], 1)} = {fmt(-np.log(_tied_p()[_FLOOR]))}; through p unrounded, "
        f"−ln {fmt(_tied_p()[_FLOOR], 5)} gives the same. Carrying the last answer's rounded "
        f"{fmt(_tied_p()[_FLOOR])} gives −ln {fmt(_tied_p()[_FLOOR])} = "
        f"{fmt(-np.log(round(float(_tied_p()[_FLOOR]), 3)))}: the rounding of p moves the last decimal, and "
        "both count as right.\n\nEven a right guess costs "
        f"this much, more than the toy's mean loss of {fmt(_mean_loss())} "
        "on its own sentence: small gaps between logits make a flat p, and a flat p makes a high loss, "
        "however the gaps come about."))


def _softmax_rows(z, shift="row", axis=-1):
    """Typical wrong softmaxes of each row (and, with the defaults, the right one)."""
    m = {"row": z.max(axis=-1, keepdims=True), "all": z.max(), "none": 0.0}[shift]
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(z - m)
        return e / (e.sum(axis=axis, keepdims=True) if axis is not None else e.sum())


def _softmax_cases():
    rng = np.random.default_rng(0)
    return [(f'the logits of "{EXAMPLE_TEXT}"', (np.array(intermediates(EXAMPLE_TEXT)["logits"], dtype=float),)),
            ("the rows [1000, 999, 0] and [0, 1, 2]", (np.array([[1000.0, 999.0, 0.0], [0.0, 1.0, 2.0]]),)),
            ("the rows [-1000, -1001] and [0, 1]", (np.array([[-1000.0, -1001.0], [0.0, 1.0]]),)),
            ("random logits, 3 rows of 12", (rng.standard_normal((3, 12)) * 3,))]


code_exercise(
    "06.7", "Write `softmax(z)`: the probabilities of each row of the logits z (an n × V array). "
            "Subtract each row's largest logit first, so that e^z stays finite for logits like "
            "1000; then exponentiate and divide each row by its own sum.",
    reference=lambda z: softmax(z), cases=_softmax_cases,
    mistakes=[(lambda z: _softmax_rows(z, shift="none"),
               "e^1000 overflows: subtract each row's largest logit before exponentiating."),
              (lambda z: _softmax_rows(z, axis=None),
               "you divided by the sum of the whole array: divide each row by its own sum (axis=-1)."),
              (lambda z: _softmax_rows(z, axis=0),
               "each column adds up to 1, not each row: sum along axis=-1."),
              (lambda z: _softmax_rows(z, shift="all"),
               "subtract each row's own largest logit: with the largest of the whole array, a row "
               "of very negative logits underflows to 0 / 0.")],
    solution='''def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))     # each row's largest logit -> e^0 = 1
    return e / e.sum(axis=-1, keepdims=True)          # each row adds up to 1''')


def _loss_ref(z, targets, lse=True, shift=True, mean=True, sign=1, log=np.log):
    """Typical wrong cross-entropies from logits (and, with the defaults, the right one)."""
    z, t = np.asarray(z, dtype=float), np.asarray(targets)
    rows = np.arange(len(z))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if not lse:                                     # through p: -ln of a p that may be 0
            losses = -log(softmax(z)[rows, t])
        else:
            m = z.max(axis=-1) if shift else 0.0
            losses = sign * (m + log(np.exp(z - np.atleast_1d(m)[:, None]).sum(axis=-1)) - z[rows, t])
    return float(losses.mean()) if mean else losses


def _loss_cases():
    rng = np.random.default_rng(1)
    ids = encode(EXAMPLE_TEXT + " roof")
    return [(f'the logits of "{EXAMPLE_TEXT}", the next tokens as targets',
             (np.array(intermediates(ids[:-1])["logits"], dtype=float), np.array(ids[1:]))),
            ("the rows [1000, 999] and [0, 1], targets 1 and 0",
             (np.array([[1000.0, 999.0], [0.0, 1.0]]), np.array([1, 0]))),
            ("the rows [1000, 0, -1000] and [2, 1, 0], targets 1 and 0",
             (np.array([[1000.0, 0.0, -1000.0], [2.0, 1.0, 0.0]]), np.array([1, 0]))),
            ("the rows [0, 900, 0] and [-1000, -1001, -1002], targets 0 and 2",
             (np.array([[0.0, 900.0, 0.0], [-1000.0, -1001.0, -1002.0]]), np.array([0, 2]))),
            ("random logits, 4 rows of 12", (rng.standard_normal((4, 12)) * 3, rng.integers(0, 12, 4)))]


code_exercise(
    "06.8", "Write `cross_entropy(logits, targets)`: the mean over the rows of −ln p(target), "
            "straight from the logits (an n × V array; targets: n token ids), by log-sum-exp: "
            "for each row, ln Σ_k e^(z_k) − z_target, with the row's largest logit m taken out "
            "first, ln Σ_k e^(z_k) = m + ln Σ_k e^(z_k − m).",
    reference=lambda z, t: cross_entropy(z, t), cases=_loss_cases,
    mistakes=[(lambda z, t: _loss_ref(z, t, lse=False),
               "−ln p turns into ∞ when p underflows to 0 (e^−1000 is 0 in floating point): "
               "compute ln Σ e^z − z_target from the logits instead of taking the log of p."),
              (lambda z, t: _loss_ref(z, t, shift=False),
               "e^1000 overflows: take each row's largest logit m out first, "
               "ln Σ e^z = m + ln Σ e^(z − m)."),
              (lambda z, t: _loss_ref(z, t, mean=False),
               "that is each row's loss: the loss is their mean, one number."),
              (lambda z, t: _loss_ref(z, t, sign=-1),
               "the sign is flipped: −ln p = ln Σ e^z − z_target, never negative."),
              (lambda z, t: _loss_ref(z, t, log=np.log10),
               "use the natural log (np.log), not log base 10: the loss is in nats."),
              (lambda z, t: _loss_ref(z, t, log=np.log2),
               "use the natural log (np.log), not log base 2: the loss is in nats, not bits.")],
    solution='''def cross_entropy(logits, targets):
    m = logits.max(axis=-1, keepdims=True)                            # each row's largest logit
    log_sum_exp = m[:, 0] + np.log(np.exp(logits - m).sum(axis=-1))   # ln Σ e^z, safely
    picked = logits[np.arange(len(logits)), targets]                  # z_target, row by row
    return (log_sum_exp - picked).mean()''')


def vector(v, digits=3):
    """A vector as the course prints it in prose: [-0.436, 1.551, -0.461, 1.698]."""
    return "[" + ", ".join(fmt(x, digits) for x in np.ravel(v)) + "]"


def p_summary(p, n_top=3):
    """One line about p: the most likely tokens with their p, and the entropy."""
    p = np.asarray(p, dtype=float)
    if p.shape != (len(TOKENS),):
        raise ValueError(f"p_summary needs one distribution over the {len(TOKENS)} tokens "
                         f"(a list of {len(TOKENS)} probabilities), not an array of shape {p.shape}.")
    order = np.argsort(-p, kind="stable")[:n_top]
    first, rest = order[0], order[1:]
    then = ", ".join(f"{token_name(j)} {fmt(p[j])}" for j in rest)
    return (f"most likely: {token_name(first)} with p = {fmt(p[first])}"
            + (f" (then {then})" if then else "") + f" · entropy of p: {fmt(entropy(p))} nats")


def _last_logits(text, **options):
    return intermediates(text, **options)["logits"][-1]


def _z_over_p(name, z, p, z_title, p_title, z_highlight):
    """A live figure of the logits z (above) over p (below), one column per token, the
    tokens named once, under p, so that no two labels share a column. The titles move
    with the state, so the widget's stored picture says what its text line says."""
    fig, _ = live_figure(name, 7.2, 3.7)
    fig.clear()
    ax_z, ax_p = fig.subplots(2, 1, sharex=True)
    z_chart = BarChart(ax_z, z, None, ylabel="logit z", ymax=None, color=SKY, xlabel="")
    ax_z.axhline(0, color=GREY, linewidth=0.8)
    ax_z.set_ylim(*_logit_range(z))
    ax_z.tick_params(labelbottom=False)
    p_chart = BarChart(ax_p, p, None)
    z_chart.set(z, highlight=z_highlight)
    set_titles({ax_z: z_title, ax_p: p_title})      # laid out with the first titles
    freeze_layout(fig)
    live_artists(fig, [*z_chart.bars, *p_chart.bars, ax_z.title, ax_p.title])
    return fig, z_chart, p_chart


def _logit_range(z):
    """The logit axis: symmetric about 0, in steps of 4, wide enough for every logit with room
    above the tallest bar (±4 for the model's logits, which reach 2.5)."""
    half = 4 * max(1, int(np.ceil((np.abs(z).max() + 0.5) / 4)))
    return -half, half


def _fit_logit_axis(fig, ax_z, z):
    """Widen or narrow the logit axis to _logit_range(z); True when it changed (the figure
    is then laid out and drawn again whole: its tick labels change)."""
    limits = _logit_range(z)
    if limits == tuple(ax_z.get_ylim()):
        return False
    ax_z.set_ylim(*limits)
    fig.set_layout_engine("constrained")        # wider tick labels (-1000): lay out again
    freeze_layout(fig)
    fig.canvas.draw_idle()
    return True


def set_titles(titles):
    """Each axes' title, in the figure's 10 pt (ax.set_title would reset the size)."""
    for ax, title in titles.items():
        ax.title.set_text(title)
        ax.title.set_fontsize(10)


def _z_title(text, z, j):
    return f'your logits after "{text}": {token_name(j)} at {fmt(z[j])}'


def _p_title(p):
    top = int(np.argmax(p))
    return (f"p = softmax(z): {token_name(top)} leads with {fmt(p[top])} · "
            f"entropy {fmt(entropy(p))} nats")


def logit_playground(text="the cat climbed the"):
    """Edit one logit of the last row (pick the token, drag or type its logit): p follows.

    The state holds the logits exactly; the slider only shows where the picked one is
    (its own rounding, sent back by the browser, is not taken as a new logit)."""
    text = builder_text(text, "logit_playground")   # one sentence for a wrong text
    z0 = _last_logits(text)
    roof = VOCAB.index(" roof")
    state = WidgetState(z=z0.copy(), token=roof)
    fig, z_chart, chart = _z_over_p("logit-playground", z0, softmax(z0), _z_title(text, z0, roof),
                                    _p_title(softmax(z0)), roof)
    pick = widgets.Dropdown(options=[(t, j) for j, t in enumerate(TOKENS)], value=roof,
                            description="token")
    slider = widgets.FloatSlider(value=z0[roof], min=-10, max=10, step=0.1, description="its logit",
                                 continuous_update=True, readout=False)
    typed = widgets.Text(value="", placeholder="or type any logit, then Enter",
                         description="type", continuous_update=False)
    reset = widgets.Button(description="Reset", tooltip="back to the model's logits")
    line, area = message_area(), message_area()

    def update():
        j = state.token
        p = softmax(state.z)
        z_chart.set(state.z, highlight=j)
        chart.set(p, highlight=int(np.argmax(p)))
        set_titles({z_chart.ax: _z_title(text, state.z, j), chart.ax: _p_title(p)})
        if not _fit_logit_axis(fig, z_chart.ax, state.z):
            redraw(fig)
        say(line, f"logit of {token_name(j)}: {fmt(state.z[j])} · " + p_summary(p))
        state.set(slider, float(np.clip(state.z[j], slider.min, slider.max)))

    def set_logit(value):
        z = state.z.copy()
        z[state.token] = value
        state.z = z

    def on_slider(value):
        value = slider_move(state, slider, value, state.z[state.token], "logit")
        if value is not None:
            set_logit(value)
            state.set(typed, "")                # the box is empty or shows what is applied
            update()

    def on_pick(_):
        state.token = picked(state, pick, "token", state.token)
        state.set(typed, "")
        update()

    def on_typed(text):
        if text.strip():
            value = typed_number(text, "logit", low=-1000, high=1000)
            if value != float(fmt(state.z[state.token])):   # typed back as shown (2.491): keep
                set_logit(value)                            # the exact logit (2.4907...)
            update()

    def on_reset(_):
        state.z = z0.copy()
        state.set(typed, "")
        update()

    on_change(slider, area, state, on_slider)
    on_change(pick, area, state, on_pick)
    on_enter(typed, area, state, on_typed)
    reset.on_click(guarded(area, on_reset, state))
    update()
    root = panel("logit-playground", widgets.HBox([pick, slider]), widgets.HBox([typed, reset]),
                 fig.canvas, line, area)
    root.chart, root.charts, root.state = chart, {"z": z_chart, "p": chart}, state   # for tests
    return root


def _shift_title(c):
    return f"the logits z + c, with c = {plain(c)}"


def _shift_p_title(p, p0):
    top = int(np.argmax(p))
    return (f"p = softmax(z + c): {token_name(top)} leads with {fmt(p[top])} · "
            f"largest change of any p: {fmt(np.abs(p - p0).max())}")


def logit_shift(text="the cat climbed the", c=0.0):
    """Add the same constant c to every logit: the logits move, p does not. c: the shift the
    widget starts at (the state its stored picture shows), any number from -1000 to 1000."""
    text = builder_text(text, "logit_shift")   # one sentence for a wrong text
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not -1000 <= c <= 1000:
        raise ValueError(f"logit_shift: c is the shift to start at, a number from -1000 to 1000, not {shown_value(c)}.")
    z0 = _last_logits(text)
    p0 = softmax(z0)
    top = int(np.argmax(z0))
    fig, z_chart, p_chart = _z_over_p("logit-shift", z0, p0, _shift_title(0.0), _shift_p_title(p0, p0),
                                      top)
    slider = widgets.FloatSlider(value=0, min=-10, max=10, step=0.1, description="add c",
                                 continuous_update=True, readout=False)
    typed = widgets.Text(value="", placeholder="or type any c, then Enter",
                         description="type c", continuous_update=False)
    line, area = message_area(), message_area()
    state = WidgetState(c=0.0)

    def apply(c):
        state.c = c
        z = z0 + c
        p = softmax(z)
        z_chart.set(z, highlight=top)
        p_chart.set(p, highlight=int(np.argmax(p)))
        set_titles({z_chart.ax: _shift_title(c), p_chart.ax: _shift_p_title(p, p0)})
        if not _fit_logit_axis(fig, z_chart.ax, z):
            redraw(fig)
        state.set(slider, float(np.clip(c, slider.min, slider.max)))
        say(line, f"c = {plain(c)}: every logit moved by {plain(c)}; the largest change of "
                  f"any p is {fmt(np.abs(p - p0).max())}\n" + p_summary(p))

    def on_slider(value):
        value = slider_move(state, slider, value, state.c, "c")
        if value is not None:
            state.set(typed, "")
            apply(value)

    def on_typed(text):
        if text.strip():
            apply(typed_number(text, "constant c", low=-1000, high=1000))

    on_change(slider, area, state, on_slider)
    on_enter(typed, area, state, on_typed)
    apply(float(c))
    root = panel("logit-shift", widgets.HBox([slider, typed]), fig.canvas, line, area)
    root.charts, root.state = {"z": z_chart, "p": p_chart}, state     # for tests
    return root


def _switch(name, options, labels, text, title, on=True):
    """A toggle that reruns the model with options(on), intermediates' options for the switch on
    or off, plus a prompt box; p of the last row as filled bars, and p with the switch
    flipped as dashed outlines, so that its picture shows both settings.
    labels = (label when True, label when False)."""
    state = WidgetState(text=text, on=on)
    chart = live_chart(name, softmax(_last_logits(text)), title)
    flipped = BarChart(chart.ax, np.zeros(len(TOKENS)), outline=labels[1 if on else 0], color="black")
    handles = [Patch(color=chart.color), Patch(color=chart.accent), flipped.bars[0]]
    legend = chart.ax.legend(handles, ["", "", ""], loc="upper right")
    live_artists(chart.fig, [*chart.bars, chart.ax.title, *flipped.bars])
    toggle = widgets.ToggleButton(value=on, description=labels[0 if on else 1], button_style="info")
    prompt = widgets.Text(value=text, description="prompt", continuous_update=False,
                          placeholder="a prompt in the toy vocabulary, then Enter")
    line, area = message_area(), message_area()

    def update():
        p = softmax(_last_logits(state.text, **options(state.on)))
        chart.set(p, highlight=int(np.argmax(p)), title=f'{title}: "{state.text}"')
        flipped.set(softmax(_last_logits(state.text, **options(not state.on))))
        now, other = (labels[0], labels[1]) if state.on else (labels[1], labels[0])
        for label, words in zip(legend.get_texts(), [now, "its most likely token", f"{other} (dashed)"],
                                strict=True):
            label.set_text(words)
        chart.fig.canvas.draw_idle()                # the legend changes too: draw it all
        say(line, f"{toggle.description}: " + p_summary(p))

    def on_toggle(value):
        state.on = value
        toggle.description = labels[0] if value else labels[1]
        update()

    def on_prompt(value):
        intermediates(value)                                  # raises the sentence for a bad prompt
        state.text = value
        update()

    on_change(toggle, area, state, on_toggle)
    on_enter(prompt, area, state, on_prompt)
    update()
    root = panel(name, widgets.HBox([toggle, prompt]), chart.fig.canvas, line, area)
    root.chart, root.state = chart, state                     # for tests
    return root


def attention_switch(text="the cat climbed the"):
    """Switch the attention branch off (h = x) and back: the last row's p changes."""
    text = builder_text(text, "attention_switch")   # one sentence for a wrong text
    return _switch("attention-switch", lambda on: {"params": PARAMS if on else switch_off(PARAMS, "attn")},
                   ("attention on", "attention off"),
                   text, "p of the last row")


def tying_switch(text="the cat climbed the"):
    """Use the embedding table as the output layer (z = f Eᵀ) or the toy's own W_U;
    it starts from the toy's own W_U."""
    text = builder_text(text, "tying_switch")   # one sentence for a wrong text
    return _switch("tying-switch", lambda on: {"params": tie(PARAMS) if on else PARAMS},
                   ("tied: W_U = Eᵀ", "own W_U"),
                   text, "p of the last row", on=False)
