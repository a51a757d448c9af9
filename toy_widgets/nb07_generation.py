"""Notebook 07, Generation: its exercises, the temperature explorer and the generation stepper.
"""
import html

import ipywidgets as widgets
import numpy as np

import toy_model as _model
from toy_checks import check_seed
from toy_model import (EOT, N_CTX, VOCAB, check_ids, decode, encode, entropy, forward,
                       next_token_probs, sample, token_name)

from .draw import GREY, MONOSPACE, ORANGE, VERMILION, fmt
from .kit import builder_text, typed_number
from .kit import (BarChart, WidgetState, guarded, live_artists, live_chart, message_area, on_change,
                  panel, plain, slider_move)
from .exercises import EXAMPLE_TEXT, choice_exercise, code_exercise, count_exercise, number_exercise


def _p07(temperature=1.0, **options):
    return next_token_probs(forward(encode(EXAMPLE_TEXT))[-1], temperature, **options)




def _t0_options():
    top = token_name(int(np.argmax(_p07())))
    return [f"all the probability on {top}: 1 there, 0 elsewhere", "1/12 for every token",
            "unchanged: temperature only matters when sampling", "the order of the tokens changes"]


choice_exercise(
    "07.1", "Temperature toward 0. Predict it from the formula above, before you read on: what "
            "happens to the last row's p as the temperature goes toward 0?",
    options=_t0_options,
    answer=lambda: _t0_options()[0] if _p07(1e-3).max() > 1 - 1e-9 else _t0_options()[2],
    hints=lambda: {
        "1/12 for every token": "That is the other end: a very large T makes every z / T close to 0.",
        "unchanged: temperature only matters when sampling":
            "Dividing by a small T stretches the gaps between the logits: try T = 0.05 on two of them.",
        "the order of the tokens changes": "Dividing every logit by the same positive T keeps their order.",
        _t0_options()[0]: "Divide the logits by a tiny T and look again."},
    solution=lambda: (
        f"All the mass goes to the largest logit, {token_name(int(np.argmax(_p07())))}: dividing by a tiny "
        "T makes the gap between it and every other token huge, so their e^(z/T) vanish next to its "
        f"(at T = 0.01 it gets {fmt(_p07(0.01).max())}). That is greedy, which is why temperature 0 "
        "means greedy."))

_WALL_P, _ROOF_P = VOCAB.index(" wall"), VOCAB.index(" roof")

number_exercise(
    "07.2", "Temperature 0.5, by hand. At T = 0.5 every logit is doubled, so each e^(z/T) is the "
            "square of e^z, and p at T = 0.5 is proportional to p² at T = 1. Using the p column of "
            "the first table (or the logits), what probability does ␣wall get at T = 0.5?",
    answer=lambda: _p07(0.5)[_WALL_P],
    hints=lambda: [(_p07()[_WALL_P], "That is p(␣wall) at T = 1: square each p first."),
                   (_p07(2.0)[_WALL_P], "That is T = 2: at T = 0.5 the logits are doubled, not halved."),
                   (_p07()[_WALL_P] ** 2, "Squaring is half of it: divide by the sum of all twelve squares, "
                    "so that the new p add up to 1 again.")],
    solution=lambda: (lambda p: (
        f"{fmt(_p07(0.5)[_WALL_P])}. Squared, ␣wall's p is {fmt(p[_WALL_P], 4)}² = {fmt(p[_WALL_P] ** 2, 4)} "
        f"(from the printed {fmt(p[_WALL_P])}, {fmt(round(float(p[_WALL_P]), 3) ** 2, 4)}, which ends at the same answer); "
        f"the twelve squares add up to {fmt((p ** 2).sum(), 4)}, and {fmt(p[_WALL_P] ** 2, 4)} / "
        f"{fmt((p ** 2).sum(), 4)} = {fmt(_p07(0.5)[_WALL_P])}. ␣roof's share grows from "
        f"{fmt(p[_ROOF_P])} to {fmt(_p07(0.5)[_ROOF_P])}: squaring favours the large p, which is what a "
        "temperature below 1 does."))(_p07()))

_K1 = ["the same text as greedy, whatever the temperature and the seed",
       "different: sampling is random", "the same only at temperature 0"]


def _k1_runs():
    return ([s["next"] for s in _model.generate(EXAMPLE_TEXT, temperature=1.5, top_k=1, seed=3)],
            [s["next"] for s in _model.generate(EXAMPLE_TEXT, temperature=0)])


choice_exercise(
    "07.3", "Top-k = 1. You sample with top-k = 1 at T = 1.5 and seed 3. Is the text different from greedy?",
    options=_K1, answer=lambda: _K1[0] if _k1_runs()[0] == _k1_runs()[1] else _K1[1],
    hints={_K1[1]: "After top-k = 1 only one token has p > 0; what can a draw return?",
           _K1[2]: "Temperature never changes which token is most likely, so top-k = 1 always keeps the argmax.",
           _K1[0]: "Ask what a draw can return when one token has all the probability."},
    solution=lambda: (
        "The same. Top-k = 1 keeps one token, the most likely, with p = 1 after renormalising, so "
        "every draw returns it. Temperature cannot change which token that is (it keeps the order), "
        "and the seed cannot either. With top-k = 1, T = 1.5 and seed 3, `tm.generate` adds "
        f"{', '.join(token_name(i) for i in _k1_runs()[0])}; greedy adds "
        f"{', '.join(token_name(i) for i in _k1_runs()[1])}."))

_ROOF, _WALL = VOCAB.index(" roof"), VOCAB.index(" wall")

number_exercise(
    "07.4", lambda: (
        f"By hand: top-k = 2. At T = 1, p(␣roof) = {fmt(_p07()[_ROOF])} and p(␣wall) = "
        f"{fmt(_p07()[_WALL])} are the two largest. With top-k = 2, what is the probability of "
        "␣wall after renormalising?"),
    answer=lambda: _p07(top_k=2)[_WALL],
    tolerance=0.001,          # notebook 6's e^z column, 12.069 and 4.318, gives 0.264
    hints=lambda: [(_p07()[_WALL], "That is p before the cut; the two kept tokens must add up to 1 "
                    "again: divide by their total."),
                   (_p07(top_k=2)[_ROOF], "That is ␣roof's share; the question asks for ␣wall."),
                   (_p07(top_k=3)[_WALL], "That is top-k = 3; keep only two tokens.")],
    solution=lambda: (
        f"The two kept tokens are ␣roof ({fmt(_p07()[_ROOF])}) and ␣wall ({fmt(_p07()[_WALL])}). "
        f"Renormalising divides each by their total: p(␣wall) = {fmt(_p07()[_WALL])} / "
        f"({fmt(_p07()[_ROOF])} + {fmt(_p07()[_WALL])}) = {fmt(_p07(top_k=2)[_WALL])}, and ␣roof "
        f"gets the rest, {fmt(_p07(top_k=2)[_ROOF])}. You can also set top-k to 2 in the temperature "
        f"widget above: the line under the boxes gives the leader, ␣roof, with {fmt(_p07(top_k=2)[_ROOF])}, "
        f"and ␣wall has the rest, 1 − {fmt(_p07(top_k=2)[_ROOF])}."))

_DOG2 = "the dog"


def _greedy_dog():
    return [s["next"] for s in _model.generate(_DOG2, temperature=0)]


def _after(text, *tokens):
    """p of each named token after `text`, formatted: 'name (p)'."""
    p = next_token_probs(forward(encode(text))[-1])
    return [f"{token_name(t)} ({fmt(p[VOCAB.index(t)])})" for t in tokens]


def _dog_solution():
    new, n = _greedy_dog(), len(encode(_DOG2))
    dog_climb, dog_stop, dog_the = _after("the dog climbed", " climb", ".", " the")
    cat_the, cat_climb = _after("the cat climbed", " the", " climb")
    wte = _model.PARAMS["wte"]
    gap = wte[VOCAB.index(" dog")] - wte[VOCAB.index(" cat")]
    (dim,) = np.flatnonzero(gap)
    return (
        f"{len(new)}: {', '.join(token_name(i) for i in new)}. It stops because the model picked "
        f"<|endoftext|>, before the context was full ({n} + {len(new)} = {n + len(new)} of {N_CTX} "
        f"places); at most {N_CTX} − {n} = {N_CTX - n} could have been added, the places the prompt "
        "leaves. The text goes wrong at the token after \"the dog climbed\": there greedy takes "
        f"{dog_climb}, just ahead of {dog_stop} and {dog_the}, the token the sentence needed. After "
        f"\"the cat climbed\" the margin is just as thin the other way: {cat_the} against {cat_climb}. "
        "The toy learned nothing: its weights were set by hand around one sentence about a cat, and "
        f"␣dog's embedding differs from ␣cat's only by {fmt(gap[dim], 1)} on d{dim + 1}, which is "
        "enough to tip a margin that thin.")


count_exercise(
    "07.5", f'How long is the greedy answer? Starting from "{_DOG2}", how many tokens does greedy '
            "generation add before it stops? Run `tm.generate` (or the stepper) to find out.",
    answer=lambda: len(_greedy_dog()),
    hints=lambda: [(len(_greedy_dog()) - 1, "Count <|endoftext|> too: it is a token the model chose, "
                    "and choosing it is what stops the loop."),
                   (N_CTX - len(encode(_DOG2)), "That is how many places the context has left; the "
                    "loop stopped before it was full."),
                   (N_CTX, "That is the length of the whole context, prompt included; count only the new tokens.")],
    solution=_dog_solution)


def _nucleus(p, top_p, strict=False, renormalise=True, ascending=False):
    """Typical wrong top-p filters (and, with the defaults, the right one)."""
    order = np.argsort(p if ascending else -p, kind="stable")
    before = np.cumsum(p[order]) - p[order]
    keep = np.zeros(len(p), dtype=bool)
    keep[order[(np.cumsum(p[order]) <= top_p) if strict else (before < top_p)]] = True
    q = np.where(keep, p, 0.0)
    return q / q.sum() if renormalise and q.sum() > 0 else q


def _top_p_cases():
    p = np.array(_p07(), dtype=float)
    return [("the toy's p at T = 1, top_p = 0.6", (p, 0.6)), ("the toy's p at T = 1, top_p = 0.9", (p, 0.9)),
            ("the toy's p at T = 1, top_p = 0.3", (p, 0.3)),
            ("p = [0.1, 0.2, 0.3, 0.4], top_p = 0.5", (np.array([0.1, 0.2, 0.3, 0.4]), 0.5)),
            ("the toy's p at T = 1, top_p = 1", (p, 1.0))]


code_exercise(
    "07.6", "Write `top_p_filter(p, top_p)`: keep the smallest set of most likely tokens whose "
            "probabilities add up to at least top_p, set every other p to 0, and renormalise so "
            "the kept ones add up to 1. Return an array as long as p.",
    reference=lambda p, top_p: next_token_probs(np.log(p), 1.0, top_p=top_p),
    cases=_top_p_cases,
    mistakes=[(lambda p, top_p: _nucleus(p, top_p, strict=True),
               "you stopped before the token that makes the total reach top_p: keep it too."),
              (lambda p, top_p: _nucleus(p, top_p, renormalise=False),
               "the kept probabilities must add up to 1 again: divide them by their total."),
              (lambda p, top_p: _nucleus(p, top_p, ascending=True),
               "you kept the least likely tokens: sort from the most likely down.")],
    solution='''def top_p_filter(p, top_p):
    order = np.argsort(-p)                          # most likely first
    before = np.cumsum(p[order]) - p[order]         # mass of the tokens ranked above each
    keep = np.zeros(len(p), dtype=bool)
    keep[order[before < top_p]] = True             # until the total reaches top_p
    q = np.where(keep, p, 0.0)
    return q / q.sum()''')


def _new_tokens(prompt, temperature, seed, **options):
    """The ids tm.generate adds: each typical mistake below is it with one thing changed."""
    return [s["next"] for s in _model.generate(prompt, temperature, seed=seed, **options)]


def _reseeded(prompt, temperature, seed):
    """tm.generate one step at a time, each step with a generator seeded afresh."""
    ids = encode(prompt)
    while (step := _model.generate(ids, temperature, seed=seed, max_new=1)):
        ids.append(step[0]["next"])
    return ids[len(encode(prompt)):]


def _from_row_0(prompt, temperature, seed):
    """A loop that reads the first row of the logits, which sees only the first token: every
    draw comes from the same p."""
    ids, rng = encode(prompt), np.random.default_rng(seed)
    p = next_token_probs(forward(ids)[0], temperature)
    while len(ids) < N_CTX and ids[-1] != EOT:
        ids.append(sample(p, rng))
    return ids[len(encode(prompt)):]


def _loop_cases():
    return [(f'"{text}" at T = {T:g}, seed {seed}', (text, T, seed))
            for text, T, seed in [("the", 1.0, 18), ("the dog", 0.5, 3), ("the cat climbed the", 1.0, 0),
                                  ("the cat climbed the", 1.0, 4), ("the cat", 2.0, 1)]]


code_exercise(
    "07.7", "Write `sampling_loop(prompt, temperature, seed)`, the loop of `tm.generate`: encode the "
            "prompt and make one generator, `rng = np.random.default_rng(seed)`; then, over and over, "
            "run the model, turn the last row of its logits into p at the given temperature "
            "(`tm.next_token_probs`), draw one token with `tm.sample(p, rng)` and append it. Stop when "
            "the model has drawn `<|endoftext|>` (`tm.EOT`) or the text fills the context (`tm.N_CTX` "
            "tokens, prompt included). Return the list of the new token ids.",
    reference=_new_tokens,
    cases=_loop_cases,
    mistakes=[(lambda *a: _new_tokens(*a, eot=None),
               "the model drew <|endoftext|> and your loop went on; stop as soon as it is drawn."),
              (_reseeded,
               "every draw started from a generator seeded afresh, so each one reuses the same random "
               "number; make the generator once, before the loop, and pass it to every tm.sample."),
              (_from_row_0,
               "you read the first row of the logits; the next token's p comes from the last row, "
               "`tm.forward(ids)[-1]`."),
              (lambda prompt, *a: _new_tokens(prompt, *a, max_new=N_CTX - 1 - len(encode(prompt))),
               "you stopped one token early: the text may grow until it holds tm.N_CTX tokens."),
              (lambda prompt, *a: encode(prompt) + _new_tokens(prompt, *a),
               "you returned the prompt too; return only the tokens the loop added."),
              (lambda prompt, temperature, seed: _new_tokens(prompt, 0.0, seed),
               "you took the most likely token; draw it at random with tm.sample(p, rng)."),
              (lambda prompt, temperature, seed: _new_tokens(prompt, 1.0, seed),
               "you drew from p at T = 1; pass the temperature to tm.next_token_probs.")],
    solution='''def sampling_loop(prompt, temperature, seed):
    ids = tm.encode(prompt)
    rng = np.random.default_rng(seed)               # one generator for the whole text
    new = []
    while len(ids) < tm.N_CTX and ids[-1] != tm.EOT:
        z = tm.forward(ids)[-1]                     # [V]: the last row only
        p = tm.next_token_probs(z, temperature)
        token = tm.sample(p, rng)
        ids.append(token)
        new.append(token)
    return new''')


def _explorer_title(prompt, T, k, top_p):
    return f'p after "{prompt}" at T = {plain(T)}, top-k = {k}, top-p = {plain(top_p)}'


def temperature_explorer(prompt="the cat climbed the"):
    """w-temperature: the last row's p under a temperature, a top-k and a top-p, live.

    Filled bars (one colour: the leader needs no mark, since no setting changes which token
    leads): the distribution a token would be drawn from; grey dashed outlines, as in the
    notebook's figures of the cut: the same before top-k and top-p cut it (temperature only). Sliders follow the drag;
    the boxes below take exact values (and show the values applied), and a value that
    is not allowed gets one sentence while the plot keeps its last good state."""
    prompt = builder_text(prompt, "temperature_explorer")   # one sentence for a wrong text
    logits = forward(encode(prompt))[-1]
    n = len(VOCAB)
    style = {"description_width": "7em"}
    wide = widgets.Layout(width="30em")
    t_slider = widgets.FloatSlider(value=1.0, min=0.0, max=3.0, step=0.05, description="temperature",
                                   readout=False, continuous_update=True, style=style, layout=wide)
    k_slider = widgets.IntSlider(value=n, min=1, max=n, step=1, description="top-k",
                                 readout=False, continuous_update=True, style=style, layout=wide)
    p_slider = widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top-p",
                                   readout=False, continuous_update=True, style=style, layout=wide)
    box_style = {"description_width": "6em"}
    box_layout = widgets.Layout(width="13em")
    t_box = widgets.FloatText(value=1.0, step=0.05, description="exact T", style=box_style,
                              layout=box_layout)
    k_box = widgets.IntText(value=n, description="exact k", style=box_style, layout=box_layout)
    p_box = widgets.FloatText(value=1.0, step=0.05, description="exact p", style=box_style,
                              layout=box_layout)
    info = widgets.HTML()
    area = message_area()

    # The title names the settings, so that the widget's stored picture says which they are.
    chart = live_chart("temperature", np.zeros(n), _explorer_title(prompt, 1.0, n, 1.0),
                       width=7.2, height=3.4)
    ax = chart.ax
    ax.title.set_fontsize(10)
    before = BarChart(ax, np.zeros(n), outline="before top-k and top-p cut it", color=GREY)
    chart.bars.set_label("drawn from: after temperature, top-k, top-p")
    ax.legend(handles=[chart.bars, before.bars], loc="upper left", fontsize=8)
    live_artists(chart.fig, [*chart.bars, *before.bars, ax.title])
    state = WidgetState(T=1.0, k=n, p=1.0)
    controls = {"T": (t_slider, t_box), "k": (k_slider, k_box), "p": (p_slider, p_box)}

    def apply(**change):
        new = {key: change.get(key, getattr(state, key)) for key in ("T", "k", "p")}
        p = next_token_probs(logits, new["T"], new["k"], new["p"])   # ValueError: one sentence
        for key, value in new.items():
            setattr(state, key, value)
        top = int(np.argmax(p))
        before.set(next_token_probs(logits, state.T))
        chart.ax.title.set_text(_explorer_title(prompt, state.T, state.k, state.p))
        chart.show(p)
        info.value = (f"T = {plain(state.T)}, k = {state.k}, p = {plain(state.p)}: kept "
                      f"<b>{int((p > 0).sum())}</b> of {n} tokens · most likely "
                      f"<b>{html.escape(token_name(top))}</b> with p = {fmt(p[top])} · entropy {fmt(entropy(p))} nats "
                      f"(uniform: {fmt(np.log(n))})")
        with state.quiet():                     # every control shows the values applied
            for key, (slider, box) in controls.items():
                value = getattr(state, key)
                slider.value = min(max(value, slider.min), slider.max)
                box.value = value

    def from_slider(key, what):
        slider = controls[key][0]

        def callback(value):
            if key != "k":
                value = slider_move(state, slider, value, getattr(state, key), what)
            if value is not None:
                apply(**{key: value})
        on_change(slider, area, state, callback)

    def from_box(key, what):
        box = controls[key][1]

        def callback(value):
            if not np.isfinite(value):
                state.set(box, getattr(state, key))
                raise ValueError(f"Type {what} as a finite number, not {value}.")
            apply(**{key: value})
        on_change(box, area, state, callback)

    for key, what in (("T", "temperature"), ("k", "top-k"), ("p", "top-p")):
        from_slider(key, what)
        from_box(key, what)
    apply()
    root = panel("temperature", t_slider, k_slider, p_slider,
                 widgets.HBox([t_box, k_box, p_box]), info, area, chart.fig.canvas)
    root.chart, root.before, root.state = chart, before, state         # for tests
    return root


def generation_stepper(prompt="the cat climbed the", temperature=1.0, seed=0):
    """w-generate-steps: draw the next token one click at a time.

    "next token" draws from the last row's distribution at the current temperature
    (0 = greedy) with a numpy Generator seeded at reset, appends the token and shows
    the distribution it came from. Changing the temperature shows the next token's
    distribution at the new temperature. Changing the prompt or the seed starts again,
    so a given seed always gives the same sequence (the same one tm.generate gives)."""
    prompt = builder_text(prompt, "generation_stepper", temperature=temperature, seed=seed)
    n = len(VOCAB)
    style = {"description_width": "7em"}
    prompt_box = widgets.Text(value=prompt, description="prompt", continuous_update=False,
                              style=style, layout=widgets.Layout(width="30em"))
    t_box = widgets.FloatText(value=temperature, step=0.1, description="temperature", style=style,
                              layout=widgets.Layout(width="13em"))
    seed_box = widgets.Text(value=str(seed), description="seed", continuous_update=False,
                            style=style, layout=widgets.Layout(width="13em"))
    step_button = widgets.Button(description="next token", button_style="primary",
                                 layout=widgets.Layout(width="16em"))
    reset_button = widgets.Button(description="reset")
    text_view = widgets.HTML()
    status = widgets.HTML()
    area = message_area()
    area.layout.min_height = "1.6em"                # an error line does not push the chart down

    chart = live_chart("generate-steps", np.zeros(n),        # two lines: the text, then p
                       "the text so far\nthe distribution the next token will be drawn from", width=7.2)
    chart.ax.title.set_fontsize(10)
    marker = chart.ax.annotate(                     # points at the drawn token, however small
        "drawn", (0, 0), xytext=(0, 18), textcoords="offset points", ha="center", fontsize=9,
        color=VERMILION, arrowprops={"arrowstyle": "->", "color": VERMILION}, visible=False)
    live_artists(chart.fig, [*chart.bars, chart.ax.title, marker])
    state = WidgetState(ids=[], start=0, rng=None, done=False, T=None, seed=None)

    def read_temperature():
        T = t_box.value
        next_token_probs(np.zeros(2), T)            # a bad T raises its sentence
        return T

    def read_seed():                                # a whole number, as tm.generate takes it
        return check_seed(typed_number(seed_box.value, "seed", whole=True))

    def show_text(new=None):
        parts = [html.escape(VOCAB[i]) for i in state.ids]
        if new is not None:
            parts[-1] = f'<mark style="background:{ORANGE}">{parts[-1]}</mark>'
        prompt_part = "".join(parts[:state.start])
        added = "".join(parts[state.start:])
        text_view.value = (f'<span style="font-family:{MONOSPACE};font-size:1.1em;white-space:pre">'
                           f'{prompt_part}<b>{added}</b></span> ({len(state.ids)} of {N_CTX} tokens)')

    def text_so_far():
        """The text as the chart's title names it (the widget's text line, in short)."""
        return f'"{decode(state.ids)}" ({len(state.ids)} of {N_CTX} tokens)'

    def show_next():
        """The chart shows the distribution the next token will be drawn from."""
        if state.done:
            return
        marker.set_visible(False)
        chart.ax.title.set_text(f"{text_so_far()}\nthe distribution the next token will be drawn "
                                f"from (T = {plain(state.T)})")
        chart.show(next_token_probs(forward(state.ids)[-1], state.T))

    def finish_if_done(drawn):
        ids = state.ids
        if ids[-1] == EOT and not drawn:
            why, label = ("The prompt already ends with <|endoftext|>: there is nothing to "
                          "continue; change the prompt."), "finished: <|endoftext|>"
        elif ids[-1] == EOT:
            why, label = ("The model drew <|endoftext|>: the text is finished; "
                          "press reset to start again."), "finished: <|endoftext|>"
        elif len(ids) >= N_CTX:
            why, label = (f"The context is full ({N_CTX} tokens): the model cannot read more; "
                          "press reset to start again."), "finished: context full"
        else:
            return False
        state.done = True
        step_button.description, step_button.disabled = label, True
        status.value = (status.value + " " if drawn else "") + html.escape(why)
        return True

    def reset(_=None):
        ids = check_ids(encode(prompt_box.value))
        T, s = read_temperature(), read_seed()
        state.ids, state.start, state.done = list(ids), len(ids), False
        state.T, state.seed, state.rng = T, s, np.random.default_rng(s)
        step_button.description, step_button.disabled = "next token", False
        show_text()
        status.value = f"Seed {s}: press <b>next token</b> to draw one token."
        if finish_if_done(drawn=False):
            marker.set_visible(False)
            chart.ax.title.set_text(f"{text_so_far()}\nnothing to draw: the prompt ends the text")
            chart.show(np.zeros(n))
        else:
            show_next()

    def step(_=None):
        ids = check_ids(encode(prompt_box.value))   # every box is read: a bad one says so
        T, s = read_temperature(), read_seed()
        if ids != state.ids[:state.start] or s != state.seed:
            reset()                                 # a box changed without Enter
        state.T = T
        if state.done:
            return
        # One step of tm.generate's loop, at the temperature set now, drawing from the
        # Generator seeded at reset: clicked through at one temperature, the text is the one
        # tm.generate(prompt, T, seed=seed) writes.
        (drawn,) = _model.generate(state.ids, state.T, seed=state.rng, max_new=1)
        p, nxt = drawn["p"], drawn["next"]
        state.ids.append(nxt)
        k = len(state.ids) - state.start
        marker.xy = (nxt, p[nxt])
        marker.xyann = (0, 18) if p[nxt] < 0.8 else (-32, -12)   # tall bar: beside its top
        marker.set_ha("center" if p[nxt] < 0.8 else "right")
        marker.set_visible(True)
        chart.ax.title.set_text(f"{text_so_far()}\nstep {k}: {token_name(nxt)} drawn from this "
                                f"distribution (T = {plain(state.T)})")
        chart.show(p, highlight=nxt)
        show_text(new=nxt)
        status.value = f"Step {k}: drew <b>{html.escape(token_name(nxt))}</b>, which had p = {fmt(p[nxt])}."
        finish_if_done(drawn=True)

    def on_temperature(_=None):
        state.T = read_temperature()
        show_next()

    step_button.on_click(guarded(area, step, state))
    reset_button.on_click(guarded(area, reset, state))
    on_change(prompt_box, area, state, reset)
    on_change(seed_box, area, state, reset)
    on_change(t_box, area, state, on_temperature)
    guarded(area, reset, state)()
    root = panel("generate-steps", prompt_box, widgets.HBox([t_box, seed_box]),
                 widgets.HBox([step_button, reset_button]), text_view, status, area,
                 chart.fig.canvas)
    root.chart, root.state = chart, state                     # for tests
    return root
