"""Lab 11, Writes: the model trained live on Shakespeare (curves and samples as it goes), the
stored sweep's curves, the next character's p, attention over a line of text, and the
lab's exercises.
"""
import functools
import html

import ipywidgets as widgets
import numpy as np

import toy_writes as tx
from toy_induction import attention_weights, previous_token_score
from toy_checks import check_params, shown_value
from toy_model import forward, sample

from .draw import BLUE, GREY, HEAT, ORANGE, VERMILION, fmt, new_figure, static
from .kit import live_figure, redraw, shown_running
from .exercises import choice_exercise, code_exercise, number_exercise

_LN_V = float(np.log(tx.N_CHARS))


def _model_of(model, who):
    """(params, n_head) from a run of tx.train_chars, tx.load_char_model(), or one sentence."""
    if not (isinstance(model, dict) and "params" in model and "n_head" in model):
        raise ValueError(f"{who} takes a trained model: the run tx.train_chars returns or "
                         f"tx.load_char_model(), not {shown_value(model)}.")
    return model["params"], check_params(model["params"], model["n_head"])


@functools.cache
def _baselines():
    return tx.baselines(tx.encode_chars(tx.load_text("train")), tx.encode_chars(tx.load_text("heldout")))


def _loss_axes(ax, steps, title):
    """Nats per character against the step; the three baselines' held-out losses as lines."""
    base = _baselines()
    ax.axhline(_LN_V, color=GREY, linestyle="--", linewidth=1,
               label=f"uniform guess, ln {tx.N_CHARS} = {fmt(_LN_V, 2)}")
    ax.axhline(base["unigram"], color=GREY, linestyle=":", linewidth=1.2,
               label=f"unigram, {fmt(base['unigram'], 2)}")
    ax.axhline(base["bigram"], color=VERMILION, linestyle=":", linewidth=1.2,
               label=f"bigram, {fmt(base['bigram'], 2)}")
    ax.set_xlim(0, steps)
    ax.set_ylim(1.2, 4.5)
    ax.set_xlabel("training step")
    ax.set_ylabel("nats per character")
    ax.set_title(title)
    train, = ax.plot([], [], color=BLUE, linewidth=2, label="training batches")
    held, = ax.plot([], [], color=ORANGE, linewidth=2, label="held-out play")
    ax.legend(loc="upper right", fontsize=8)
    return train, held


# --- 1. Training live ----------------------------------------------------------------------

def writes_training(seed=tx.CHAR_SEED, steps=tx.RECIPE["steps"], every=50, sample_every=250):
    """w-writes-training: tx.train_chars(seed, steps) drawing the training and held-out losses as
    it trains, a progress line, and under it a line generated every sample_every steps.
    Returns the run tx.train_chars returns; the stored output is the finished curve. Bad settings
    get their sentence in the progress line, and None is returned."""
    shown_steps = steps if isinstance(steps, (int, np.integer)) and 0 < steps <= 100_000 else 1
    fig, ax = live_figure("writes-training", 7.2, 3.4)
    train_line, held_line = _loss_axes(ax, shown_steps, "Characters of Shakespeare, learnt live")
    root, progress, handle = shown_running("writes-training", fig, [train_line, held_line], shown_steps)
    samples = widgets.HTML("")
    root.children = (*root.children, samples)
    root.progress, root.samples = progress, samples        # for tests
    writes_training.panel = root
    seen = {"steps": [], "train": [], "heldout": []}
    shown = []

    def on_measure(step, train_loss, held_loss, text):
        for key, value in (("steps", step), ("train", train_loss), ("heldout", held_loss)):
            seen[key].append(value)
        progress.value = html.escape(f"step {step} of {steps}: training {fmt(train_loss, 2)}, "
                                     f"held-out {fmt(held_loss, 2)} nats per character")
        train_line.set_data(seen["steps"], seen["train"])
        held_line.set_data(seen["steps"], seen["heldout"])
        redraw(fig)
        if text is not None:
            shown.append(f"<b>--- step {step}</b>\n{html.escape(text)}")
            samples.value = "<pre style='line-height:1.25'>" + "\n\n".join(shown) + "</pre>"

    try:
        run = tx.train_chars(seed, steps, every=every, callback=on_measure, sample_every=sample_every)
    except ValueError as err:
        progress.value = html.escape(str(err))
        return None
    progress.value = html.escape(f"done: {steps} steps; held-out {fmt(run['heldout'][-1], 2)} "
                                 f"nats per character (uniform guess {fmt(_LN_V, 2)})")
    if handle is not None:
        handle.update(root)
    return run


def _sweep_run(sweep, seed, who):
    ok = isinstance(sweep, dict) and isinstance(sweep.get("runs"), list) and sweep["runs"] and all(
        isinstance(r, dict) and {"seed", "steps", "train", "heldout", "samples"} <= r.keys()
        for r in sweep["runs"])
    if not ok:
        raise ValueError(f"{who} takes the sweep tx.load_char_sweep() reads, not {shown_value(sweep)}.")
    found = [r for r in sweep["runs"] if r["seed"] == seed]
    if not found:
        raise ValueError(f"The sweep has no run of seed {shown_value(seed)}: its seeds are "
                         f"{', '.join(str(r['seed']) for r in sweep['runs'])}.")
    return found[0]


def stored_training(sweep, seed=tx.CHAR_SEED):
    """The run of `seed` as the sweep stored it: its two curves (a static picture) and the
    line it wrote every 250 steps: what writes_training shows, without training."""
    r = _sweep_run(sweep, seed, "stored_training")
    fig, ax = new_figure(7.2, 3.4)
    train, held = _loss_axes(ax, r["steps"][-1], f"Seed {seed}'s run, as the sweep stored it")
    train.set_data(r["steps"], r["train"])
    held.set_data(r["steps"], r["heldout"])
    static(fig)
    for step, text in r["samples"].items():
        print(f"--- step {step}\n{text}")


def writes_sweep_curves(sweep, live_seed=tx.CHAR_SEED):
    """The stored sweep's held-out curve for every seed (grey), the live seed's training and
    held-out curves in colour. A static picture."""
    _sweep_run(sweep, live_seed, "writes_sweep_curves")
    fig, ax = new_figure(7.2, 3.4)
    steps = max(r["steps"][-1] for r in sweep["runs"])
    train, held = _loss_axes(ax, steps, f"{len(sweep['runs'])} seeds of the recipe")
    for r in sweep["runs"]:
        if r["seed"] == live_seed:
            train.set_data(r["steps"], r["train"])
            held.set_data(r["steps"], r["heldout"])
        else:
            ax.plot(r["steps"], r["heldout"], color=GREY, linewidth=1, zorder=1)
    train.set_label(f"seed {live_seed}: training batches")
    held.set_label(f"seed {live_seed}: held-out play")
    ax.plot([], [], color=GREY, linewidth=1, label="other seeds: held-out")
    ax.legend(loc="upper right", fontsize=8)
    static(fig)


# --- 2. The next character ---------------------------------------------------------------

def _char_name(c):
    return {"\n": "⏎", " ": "␣"}.get(c, c)


def next_char_plot(model, prompt, top=12):
    """Bars of the `top` likeliest next characters after prompt (tx.next_char_probs)."""
    params, n_head = _model_of(model, "next_char_plot")
    p = tx.next_char_probs(params, n_head, prompt)
    order = np.argsort(-p, kind="stable")[:top]
    fig, ax = new_figure(7.2, 2.8)
    ax.bar(range(top), p[order], color=BLUE)
    ax.set_xticks(range(top), [_char_name(tx.CHARS[i]) for i in order], fontsize=12)
    ax.set_ylabel("p")
    ax.set_ylim(0, 1)
    tail = prompt[-24:].replace("\n", "⏎")
    ax.set_title(f"After “…{tail}”: the {top} likeliest next characters")
    static(fig)


# --- 3. Attention over a line --------------------------------------------------------------

def attention_maps(model, text, heads):
    """Each head of `heads` ((block, head), counted from 0) as a heat map over text: row i,
    the character looking; column j, the character looked at (the future blank). Readable
    for two maps of 20 characters or one of 30."""
    params, n_head = _model_of(model, "attention_maps")
    ok = isinstance(heads, (list, tuple)) and 1 <= len(heads) <= 3 and all(
        isinstance(h, (list, tuple)) and len(h) == 2
        and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in h)
        and 0 <= h[0] < len(params["blocks"]) and 0 <= h[1] < n_head for h in heads)
    if not ok:
        raise ValueError(f"attention_maps takes one to three heads as (block, head) pairs counted "
                         f"from 0, blocks to {len(params['blocks']) - 1} and heads to {n_head - 1}, "
                         f"not {shown_value(heads)}.")
    ids = tx.encode_chars(text)
    if not 2 <= len(ids) <= len(params["wpe"]):
        raise ValueError(f"attention_maps takes a text of 2 to {len(params['wpe'])} characters, "
                         f"not {len(ids)}.")
    weights = attention_weights(params, n_head, ids)
    labels = [_char_name(c) for c in text]
    fig = new_figure(7.2, 3.6)[0]
    fig.clear()
    axes = fig.subplots(1, len(heads))
    for ax, (layer, head) in zip(np.atleast_1d(axes), heads):
        w = weights[layer][head]
        n = len(w)
        image = ax.imshow(np.where(np.tril(np.ones((n, n), dtype=bool)), w, np.nan), cmap=HEAT,
                          vmin=0, vmax=1)
        ax.set_xticks(range(n), labels, fontsize=8)
        ax.set_yticks(range(n), labels, fontsize=8)
        ax.set_title(f"block {layer + 1}, head {head + 1}", fontsize=10)
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight (a row adds up to 1)")
    static(fig)


def head_table(model, text):
    """Each head's previous-character score on text: [(layer, head, score)]."""
    params, n_head = _model_of(model, "head_table")
    weights = attention_weights(params, n_head, tx.encode_chars(text))
    return [(layer, head, previous_token_score(w))
            for layer, heads in enumerate(weights) for head, w in enumerate(heads)]


# --- Exercises -------------------------------------------------------------------------------

@functools.cache
def _counts():
    """From the training plays: (count of "ax", times "a" is followed by anything, count of
    "xe", times "x" is)."""
    counts = tx.bigram_counts(tx.encode_chars(tx.load_text("train")))
    a, x, e = (tx.CHARS.index(c) for c in "axe")
    return int(counts[a, x]), int(counts[a].sum()), int(counts[x, e]), int(counts[x].sum())


def _bigram_loss(add=1, size=tx.N_CHARS, mean=True, log=np.log):
    ax, a, xe, x = _counts()
    losses = [-log((ax + add) / (a + add * size)), -log((xe + add) / (x + add * size))]
    return float(np.mean(losses) if mean else np.sum(losses))


number_exercise(
    "11.1", lambda: (
        "The bigram loss from counts. In the training plays, “a” is followed by a character "
        f"{_counts()[1]:,} times, {_counts()[0]:,} of them by “x”; “x” is followed by a character "
        f"{_counts()[3]:,} times, {_counts()[2]:,} of them by “e”. With add-one smoothing "
        f"over the {tx.N_CHARS} characters, what is the bigram model's mean loss, in nats per "
        "character, on the two predictions of the text “axe” (“x” after “a”, “e” after “x”)?"),
    answer=_bigram_loss,
    hints=lambda: [(_bigram_loss(add=0), "That is without smoothing: add one to each count, "
                    f"and {tx.N_CHARS} to each total (one for every character)."),
                   (_bigram_loss(size=1), f"Add-one smoothing adds one to every one of the {tx.N_CHARS} "
                    f"counts in the row, so the total grows by {tx.N_CHARS}, not by 1."),
                   (_bigram_loss(mean=False), "That is the sum of the two losses; the loss per "
                    "character is their mean."),
                   (_bigram_loss(log=np.log10), "Use the natural logarithm (ln): nats, not digits.")],
    solution=lambda: (
        f"{fmt(_bigram_loss())}. p(x | a) = ({_counts()[0]} + 1) / ({_counts()[1]} + {tx.N_CHARS}), "
        f"p(e | x) = ({_counts()[2]} + 1) / ({_counts()[3]} + {tx.N_CHARS}); the loss is the mean of "
        "−ln p over the two. Smoothing moves a row seen only a few hundred times (x's) more "
        "than a common one. tx.baselines does the same over every character of the held-out play."))


BREA = "ROMEO:\nWhat light through yonder window brea"          # section 5's prompt


@functools.cache
def _brea():
    """p of "t" and of "k" after section 5's prompt, at T = 1, to 3 decimals as the question
    gives them."""
    model = _trained()
    p = tx.next_char_probs(model["params"], model["n_head"], BREA)
    return round(float(p[tx.CHARS.index("t")]), 3), round(float(p[tx.CHARS.index("k")]), 3)


def _ratio(T=0.5, power=None):
    """How many times as likely as k is t at temperature T: p_t / p_k = e^((z_t - z_k) / T),
    that is (p_t / p_k at T = 1) to the power 1 / T."""
    t, k = _brea()
    return float((t / k) ** (1 / T if power is None else power))


number_exercise(
    "11.2", lambda: (
        "Temperature and the gap. After section 5's prompt “…window brea”, the model gives, at "
        f"T = 1, “t” p = {fmt(_brea()[0])} and “k” p = {fmt(_brea()[1])}. At T = 0.5, how many "
        "times as likely as “k” is “t”?"),
    answer=_ratio, decimals=2,
    hints=lambda: [(_ratio(power=1), "That is the ratio at T = 1. Temperature divides both logits "
                    "by 0.5, so the gap between them doubles."),
                   (2 * _ratio(power=1), "Doubling the gap does not double the ratio: the ratio is "
                    "e^gap, and e^(2 × gap) is (e^gap)², the ratio squared."),
                   (_ratio(power=0.5), "That is T = 2, which halves the gap; T = 0.5 doubles it."),
                   (_ratio(power=1) / 2, "Temperature divides the logits, not the probabilities: "
                    "work with the gap between the two logits.")],
    solution=lambda: (
        f"{fmt(_ratio(), 2)}. The ratio of two probabilities depends only on the gap between "
        f"their logits: p_t / p_k = e^(z_t − z_k), so at T = 1 the gap is ln({fmt(_brea()[0])} / "
        f"{fmt(_brea()[1])}) = {fmt(np.log(_ratio(power=1)))}. At T = 0.5 each logit is "
        f"divided by 0.5, the gap doubles to {fmt(2 * np.log(_ratio(power=1)))}, and the ratio "
        f"is e^{fmt(2 * np.log(_ratio(power=1)))} = ({fmt(_brea()[0])} / {fmt(_brea()[1])})² = "
        f"{fmt(_ratio(), 2)}: the likelier character pulls further ahead, which is why the samples "
        "at T = 0.5 keep to common words. At T = 2 the gap halves and the ratio is its square "
        f"root, {fmt(_ratio(T=2), 2)}: p flattens."))


def sample_chars(p_of, ids, n_new, seed, n_ctx=tx.RECIPE["n_ctx"]):
    """The course's sampling loop, by hand: p_of(ids) gives the next id's distribution;
    crop to the last n_ctx - 1 ids, draw with tm.sample, append, repeat."""
    rng = np.random.default_rng(seed)
    ids = list(ids)
    for _ in range(n_new):
        ids.append(sample(p_of(ids[-(n_ctx - 1):]), rng))
    return ids


def _bigram_p_of():
    p = tx.smoothed(tx.bigram_counts(tx.encode_chars(tx.load_text("heldout"))))

    def p_of(ids):
        if len(ids) > tx.RECIPE["n_ctx"] - 1:
            raise ValueError(f"This model reads at most {tx.RECIPE['n_ctx'] - 1} ids; crop first.")
        return p[ids[-1]]
    return p_of


def _sample_cases():
    p_of = _bigram_p_of()
    start = list(tx.encode_chars("ROMEO:\n"))
    long = list(tx.encode_chars(tx.load_text("heldout")[:80]))
    return [("20 characters after “ROMEO:⏎”, seed 0 (a bigram model as p_of)", (p_of, start, 20, 0)),
            ("5 characters, seed 3", (p_of, start, 5, 3)),
            ("40 characters after a prompt of 80 (longer than the context)", (p_of, long, 40, 1))]


code_exercise(
    "11.3", "Write `sample_chars(p_of, ids, n_new, seed)`: p_of(ids) gives the next "
            "character's distribution p for a list of at most 63 ids. Start a generator "
            "rng = np.random.default_rng(seed) once; then n_new times: crop ids to their last "
            "63, draw the next id with tm.sample(p, rng), append it. Return the whole list of ids.",
    reference=sample_chars, cases=_sample_cases,
    mistakes=[(lambda p_of, ids, n, seed: _greedy(p_of, ids, n),
               "that is greedy decoding (always the likeliest): draw from p with tm.sample instead."),
              (lambda p_of, ids, n, seed: _fresh_rng(p_of, ids, n, seed),
               "make the generator once, before the loop: a new one from the same seed at each "
               "step draws the same random number every time."),
              (lambda p_of, ids, n, seed: sample_chars(p_of, ids, n, seed)[len(ids):],
               "return the whole list: the ids you were given, then the new ones.")],
    solution='''def sample_chars(p_of, ids, n_new, seed):
    rng = np.random.default_rng(seed)          # once: its draws go on from step to step
    ids = list(ids)
    for _ in range(n_new):
        p = p_of(ids[-63:])                    # the model sees at most its context
        ids.append(tm.sample(p, rng))
    return ids''')


def _greedy(p_of, ids, n):
    ids = list(ids)
    for _ in range(n):
        ids.append(int(np.argmax(p_of(ids[-63:]))))
    return ids


def _fresh_rng(p_of, ids, n, seed):
    ids = list(ids)
    for _ in range(n):
        ids.append(sample(p_of(ids[-63:]), np.random.default_rng(seed)))
    return ids


READ_TEXT = "Now is the winter of our"        # not section 6's line: its map is not on the page above


@functools.cache
def _trained():
    return tx.load_char_model()


def _shares(layer, head):
    """Averaged over the rows of READ_TEXT's map of (layer, head), from row 2 on: the weight on
    the character one back, on itself, on the first character, and what an even spread
    over the earlier characters would put on any one of them."""
    model = _trained()
    w = attention_weights(model["params"], model["n_head"], tx.encode_chars(READ_TEXT))[layer][head]
    n = len(w)
    return (float(np.mean([w[i, i - 1] for i in range(1, n)])), float(np.diagonal(w)[1:].mean()),
            float(w[1:, 0].mean()), float(np.mean([1 / (i + 1) for i in range(1, n)])))


@functools.cache
def _read_head():
    """The head whose map the exercise reads: the one that puts the most weight on itself over
    READ_TEXT."""
    model = _trained()
    heads = [(layer, head) for layer in range(len(model["params"]["blocks"]))
             for head in range(model["n_head"])]
    return max(heads, key=lambda h: _shares(*h)[1])


def read_map(model):
    """The map exercise 11.4 asks about: its head over READ_TEXT."""
    attention_maps(model, READ_TEXT, [_read_head()])


_READ = ["the character just before it (one back)", "itself", "the first character of the text",
         "every earlier character about equally"]


def _read_answer():
    return max(zip(_shares(*_read_head()), _READ))[1]


choice_exercise(
    "11.4", lambda: (f"Read a head's map. The map above is block {_read_head()[0] + 1}, head "
                     f"{_read_head()[1] + 1}, over the start of another line, “{READ_TEXT}”. "
                     "Averaged over the rows, where does the largest share of a row's weight go?"),
    options=_READ, answer=_read_answer,
    hints=lambda: {o: ("Look at where the bright cells lie in each row: on the diagonal (itself), "
                       "just left of it (one back), in the first column, or spread out.")
                   for o in _READ},
    solution=lambda: (
        f"{_read_answer()[0].upper() + _read_answer()[1:]}. Averaged over the rows, the weight "
        f"on itself is {fmt(_shares(*_read_head())[1], 2)}, on the character one back "
        f"{fmt(_shares(*_read_head())[0], 2)}, on the first character "
        f"{fmt(_shares(*_read_head())[2], 2)}, and an even spread would give each earlier "
        f"character {fmt(_shares(*_read_head())[3], 2)}: in the map, the brightest cells lie on "
        "the diagonal. Why the head reads its own position, the map does not say."))
