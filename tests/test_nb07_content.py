"""Notebook 07 (Generation): what its prose, pictures and worked answers claim, checked
against the model and against references written here.

The widgets' mechanics are tested in test_nb_07_generation.py; this file checks the
content: the stepper's first draw, the temperature picture's legend, the crop and the KV
cache as the prose tells them, the worked answer of 07.5 and the sampling-loop exercise.
"""
import html
import inspect
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


def test_the_stepper_picture_shows_the_text_and_what_the_prose_says_of_it():
    """Its stored picture is its first state: the chart's title gives the text so far and
    says the bars are the first token's distribution, nothing is highlighted; after one
    press the title names the text and the drawn token, the one an independent loop draws
    first, and its bar is orange and marked. The prose says both."""
    args = stepper_call()
    root = tw.generation_stepper(**args)
    text_line, bars_line = root.chart.title.split("\n")
    assert text_line == f'"{args["prompt"]}" ({len(tm.encode(args["prompt"]))} of {tm.N_CTX} tokens)'
    assert bars_line == f"the distribution the next token will be drawn from (T = {args['temperature']})"
    assert np.allclose(root.chart.values, p_after(args["prompt"])) and root.chart.highlight == []
    marker = next(t for t in root.chart.ax.texts if t.get_text() == "drawn")
    assert not marker.get_visible()
    first = our_loop(args["prompt"], args["temperature"], args["seed"])[0]
    name = tm.token_name(first)
    next(w for w in walk(root) if type(w).__name__ == "Button").click()
    text_line, draw_line = root.chart.title.split("\n")
    assert text_line == f'"{args["prompt"]}{tm.VOCAB[first]}" (2 of {tm.N_CTX} tokens)'
    assert draw_line.startswith(f"step 1: {name} drawn")
    assert root.chart.highlight == [first] and marker.get_visible() and marker.xy[0] == first
    text_ = prose().replace("\n", " ")
    assert (f"Before the first press, the chart's title gives the text so far, \"{args['prompt']}\", "
            "and the bars the distribution the first token will be drawn from") in text_
    assert "the title names it" in text_ and "marked \"drawn\"" in text_


def test_the_prose_says_which_seed_and_that_most_seeds_go_wrong():
    args = stepper_call()
    assert f"seed {args['seed']}" in prose()
    assert "most seeds do not (try 0)" in prose()
    sensible = [seed for seed in range(100)
                if SENTENCE.fullmatch(tm.decode(tm.encode(args["prompt"]) + [
                    s["next"] for s in tm.generate(args["prompt"], temperature=1, seed=seed)]))]
    assert args["seed"] in sensible and 0 not in sensible
    assert len(sensible) < 50, "most seeds do not write the sentence"


def test_a_drawn_full_stop_is_named_in_quotes():
    root = tw.generation_stepper(prompt="the cat climbed the roof", temperature=0)
    next(w for w in walk(root) if type(w).__name__ == "Button").click()
    status = [text(w) for w in walk(root) if type(w).__name__ == "HTML" and "Step 1" in w.value]
    assert status == ["Step 1: drew '.', which had p = 1.000."]
    assert root.chart.title.split("\n")[1].startswith("step 1: '.' drawn")


# --- the temperature picture ------------------------------------------------------------

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


def test_the_prose_of_the_explorer_matches_its_first_picture():
    """"at first nothing is cut, and each outline sits on its bar": the first state."""
    assert "at first nothing is cut, and each outline sits on its bar" in prose()
    root = tw.temperature_explorer()
    assert np.allclose([b.get_height() for b in root.chart.bars],
                       [b.get_height() for b in root.before.bars])


# --- the crop and the KV cache -----------------------------------------------------------

def headings():
    return [line for c in CELLS if c["cell_type"] == "markdown"
            for line in source(c).splitlines() if line.startswith("## ")]


def test_the_crop_is_a_side_road_after_the_exercises_and_after_the_kv_cache():
    """The crop's passage needs the KV cache: it comes after the section that teaches the
    cache, as the one "Going further" part, after the exercises and before the links."""
    found = headings()
    assert found[-2:] == ["## Check yourself", "## Going further"]
    markdown = [source(c) for c in CELLS if c["cell_type"] == "markdown"]
    going = next(i for i, m in enumerate(markdown) if m.startswith("## Going further"))
    parts = [m.splitlines()[0] for m in markdown[going:] if m.startswith("### ")]
    assert parts == ["### Top-k and top-p together", "### When the context is full"]
    crop = next(m for m in markdown[going:] if m.startswith("### When the context is full"))
    assert markdown[-1].startswith("← ") and "crops" in crop
    taught = next(i for i, m in enumerate(markdown) if "**KV cache**" in m)
    assert taught < going and "KV cache" in "".join(markdown[going:])


def test_every_term_of_the_cache_is_taught_before_it_is_used():
    text_ = prose()
    assert text_.index("KV cache") == text_.index("**KV cache**") + 2


def ln_by_hand(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def test_the_cached_keys_are_both_heads_side_by_side_as_the_prose_says():
    """The keys kept are one row per position, head 1's two columns then head 2's: computed
    here from the weights (ln_1, then c_attn's key columns), without forward."""
    ids = tm.encode("the cat climbed the")
    P_ = tm.PARAMS
    blk = P_["blocks"][0]
    x = np.asarray(P_["wte"])[ids] + np.asarray(P_["wpe"])[:len(ids)]
    a = ln_by_hand(x) * blk["ln_1"]["g"] + blk["ln_1"]["b"]
    d = x.shape[1]
    k = a @ np.asarray(blk["attn"]["c_attn"]["w"])[:, d:2 * d] + np.asarray(blk["attn"]["c_attn"]["b"])[d:2 * d]
    cache = []
    tm.forward(ids, cache=cache)
    assert len(cache) == 1 and np.allclose(cache[0]["k"], k)
    half = d // tm.N_HEAD
    (cell,) = [c for c in CELLS if c["cell_type"] == "code" and "cache=cache)" in source(c)
               and "keys kept" in source(c)]
    assert f"keys kept: {k.shape}" in outputs(cell) and f"keys kept: {(len(ids) + 1, d)}" in outputs(cell)
    assert half * tm.N_HEAD == d
    assert "both heads' side by side as notebook 4 laid them out, 4 columns in all" in prose()
    assert "head 1's keys, columns" not in json.dumps(CELLS, ensure_ascii=False), \
        "the heads' columns are more than the main path needs"

def test_the_crop_moves_the_start_mark_onto_cat():
    """Only position 1 has a non-zero position embedding, and the stored crop loop shows
    ␣cat at position 1 once the window slides, as the prose says."""
    wpe = tm.PARAMS["wpe"]
    assert np.any(wpe[0]) and not np.any(wpe[1:])
    (cell,) = [c for c in CELLS if source(c).startswith('ids = tm.encode("the cat climbed the")\nfor step')]
    firsts = re.findall(r"reads (\d) tokens, (\S+)\s+at position 1", outputs(cell))
    ids = tm.encode("the cat climbed the")
    for n, first in firsts:                                  # the same loop, here
        window = ids[-tm.N_CTX:]
        assert (int(n), first) == (len(window), tm.token_name(window[0]))
        ids.append(int(np.argmax(p_after(tm.decode(window)))))
    assert ("8", "␣cat") in firsts
    assert "lands on ␣cat" in prose()
    assert "Hugging Face's `generate` does not crop" in prose()


@pytest.mark.parametrize("prompt, options", [
    ("the cat climbed the", dict(temperature=0)),
    ("the", dict(temperature=0)),
    ("the", dict(temperature=1, seed=18)),
    ("the dog", dict(temperature=1.5, top_k=4, seed=3)),
    ("the cat", dict(temperature=0.8, top_p=0.9, seed=1)),
])
def test_the_cached_loop_gives_the_same_tokens_and_distributions(prompt, options):
    plain, cached = tm.generate(prompt, **options), tm.generate(prompt, cache=True, **options)
    assert [s["next"] for s in cached] == [s["next"] for s in plain]
    assert [s["ids"] for s in cached] == [s["ids"] for s in plain]
    for a, b in zip(plain, cached, strict=True):
        assert np.allclose(a["p"], b["p"], atol=1e-12)


def test_the_cache_runs_one_new_row_per_step():
    """With a cache, forward on the newest token alone computes one row, equal to the full
    run's last row, and the cache grows by one key per step."""
    ids, cache = tm.encode("the cat climbed the roof"), []
    assert tm.forward(ids[:-1], cache=cache).shape == (len(ids) - 1, len(tm.VOCAB))
    row = tm.forward(ids[-1:], cache=cache)
    assert row.shape == (1, len(tm.VOCAB)) and cache[0]["k"].shape[0] == len(ids)
    assert np.allclose(row[-1], tm.forward(ids)[-1], atol=1e-12)


def test_the_notebook_generates_with_the_cache_option():
    assert any("tm.generate(" in s and "cache=True" in s for s in code_cells())
    assert "`tm.generate(prompt, ..., cache=True)`" in prose()
    (cell,) = [c for c in CELLS if c["cell_type"] == "code" and "tm.generate(" in source(c)
               and "cache=True" in source(c)]
    assert "largest difference in p from the loop without a cache: 0.000" in outputs(cell)


# --- 07.5's worked answer ------------------------------------------------------------------

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


def test_the_dog_answer_is_not_on_the_page():
    page = html.unescape(json.dumps(CELLS, ensure_ascii=False))
    assert "just ahead of" not in page


# --- 07.7, the sampling loop ---------------------------------------------------------------

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


def test_top_k_claims_only_what_the_page_shows_and_the_full_context_error_per_device():
    """Top-k 3 after "the cat climbed the" drops ␣floor, nearly as likely as ␣sofa; no toy
    prompt here has one token with nearly all the mass, so the page makes no claim about it.
    Past GPT-2's 1,024 positions the lookup fails as an IndexError on the CPU, a device-side
    assert on a GPU."""
    q = tm.softmax(tm.forward(tm.encode("the cat climbed the"))[-1])
    order = [tw.TOKENS[i] for i in np.argsort(-q)]
    assert order[2:4] == ["␣sofa", "␣floor"]
    assert q[tm.VOCAB.index(" floor")] > 0.8 * q[tm.VOCAB.index(" sofa")]
    text_ = re.sub(r"\s+", " ", prose())
    assert "keeps two that should never be drawn" not in text_
    assert "nearly all the mass" not in text_
    assert "on the main processor (the CPU) Python's IndexError" in text_
    assert "on a graphics card (a GPU, where such models usually run) a \"device-side assert\"" in text_
    with pytest.raises(IndexError):
        np.zeros((1024, 2))[np.array([1024])]                   # numpy's (and PyTorch CPU's) lookup


# --- what the pictures and worked answers point at ------------------------------------------

def test_07_4s_worked_answer_reads_a_number_the_explorer_shows():
    """At top-k = 2 the explorer's line names the leader, ␣roof, with its p; ␣wall's p is the
    rest. The worked answer quotes both as the widget and the model give them."""
    solution = tw.exercises._now(tw.EXERCISES["07.4"]["solution"])
    z = tm.forward(tm.encode("the cat climbed the"))[-1]
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    roof, wall = tm.VOCAB.index(" roof"), tm.VOCAB.index(" wall")
    kept = p[roof] / (p[roof] + p[wall])
    root = tw.temperature_explorer()
    next(w for w in walk(root) if getattr(w, "description", None) == "exact k").value = 2
    line = next(text(w) for w in walk(root) if type(w).__name__ == "HTML" and "kept" in w.value)
    assert f"most likely ␣roof with p = {tw.fmt(kept)}" in line
    assert f"the line under the boxes gives the leader, ␣roof, with {tw.fmt(kept)}" in solution
    assert f"␣wall has the rest, 1 − {tw.fmt(kept)}" in solution
    assert "read it on the line" not in solution


@pytest.mark.parametrize("settings", [dict(T=1.0, k=12, p=1.0), dict(T=0.5, k=3, p=0.9)])
def test_the_explorers_title_gives_its_settings(settings):
    root = tw.temperature_explorer()
    boxes = {w.description: w for w in walk(root) if getattr(w, "description", "").startswith("exact")}
    boxes["exact T"].value, boxes["exact k"].value = settings["T"], settings["k"]
    boxes["exact p"].value = settings["p"]
    assert root.chart.ax.get_title() == (f'p after "the cat climbed the" at T = {settings["T"]:g}, '
                                         f'top-k = {settings["k"]}, top-p = {settings["p"]:g}')


def test_the_stepper_at_its_fifth_press_is_drawn_as_the_prose_says():
    """The static picture after the stepper: the fifth press of the notebook's stepper, whose
    drawn token is not the most likely one, as the prose says; the widget draws the same."""
    args = stepper_call()
    (cell,) = [c for c in CELLS if c.get("id") == "stepper-step"]
    assert 'tm.generate("the", temperature=1, seed=18)' in source(cell)
    assert (args["prompt"], args["temperature"], args["seed"]) == ("the", 1, 18)
    new = our_loop(args["prompt"], args["temperature"], args["seed"])
    ids = tm.encode(args["prompt"]) + new[:4]
    p = p_after(tm.decode(ids))
    drawn = new[4]
    assert drawn != int(np.argmax(p))
    assert (f"step 5: drew {tm.token_name(drawn)}, which had p = {tw.fmt(p[drawn])}; the most likely was "
            f"{tm.token_name(int(np.argmax(p)))}") in outputs(cell)
    assert any(o.get("data", {}).get("image/png") for o in cell["outputs"])
    root = tw.generation_stepper(**args)
    button = next(w for w in walk(root) if type(w).__name__ == "Button")
    for _ in range(5):
        button.click()
    assert root.state.ids[-1] == drawn and root.chart.highlight == [drawn]
    assert "it is not the most likely one" in prose()


def test_the_main_path_keeps_one_sentence_on_top_k_with_top_p():
    """The libraries' order is a side road; the example it quotes is printed in Going further."""
    markdown = [source(c) for c in CELLS if c["cell_type"] == "markdown"]
    going = next(i for i, m in enumerate(markdown) if m.startswith("## Going further"))
    main = "\n".join(markdown[:going])
    for side in ("vLLM", "llama.cpp", "Hugging Face transformers"):
        assert side not in main
    assert ("the usual order is top-k first: its survivors are renormalised, and top-p counts its "
            "threshold on them alone") in main


def test_the_cache_claims_say_what_it_saves_and_both_reasons_a_crop_breaks_it():
    text_ = re.sub(r"\s+", " ", prose())
    assert "usable and unusable" not in text_
    assert "runs the model's weight matrices on 1 position instead of n" in text_
    assert "from block 2 on, each kept key and value was computed with the dropped tokens in view" in text_
    assert "T often stands for" not in text_          # the main path keeps to temperature


# --- what a fresh reader can check on the page --------------------------------------------

def test_the_cached_step_knows_its_position_from_the_cache():
    """forward with a cache of 5 positions puts the new token at position 6: its row equals
    the full run's sixth row, and differs from the same token read at another position."""
    ids, cache = tm.encode("the cat climbed the roof"), []
    tm.forward(ids[:-1], cache=cache)
    row = tm.forward(ids[-1:], cache=cache)[-1]
    assert np.allclose(row, tm.forward(ids)[5])
    assert not np.allclose(row, tm.forward(ids[-1:])[0])
    text_ = re.sub(r"\s+", " ", prose())
    assert ("How does `forward` know that ␣roof is the sixth token, so that it adds position 6's row of "
            "the position table? From the cache: it already holds 5 positions") in text_


def test_no_greedy_call_names_the_temperature_before_check_yourself_1_is_asked():
    """Before the prediction 07.1 (temperature toward 0), no cell shows temperature=0 as greedy."""
    asked = next(i for i, c in enumerate(CELLS) if source(c).strip() == 'tw.exercise("07.1")')
    assert not any("temperature=0" in source(c) or "temperature 0" in source(c) for c in CELLS[:asked])
    assert tm.generate("the cat climbed the")[0]["next"] == tm.VOCAB.index(" roof")
    assert inspect.signature(tm.generate).parameters["temperature"].default == 0


def test_07_5_asks_only_what_its_checker_checks():
    cell = next(source(c) for c in CELLS if source(c).startswith("### 5. How long is the greedy answer?"))
    assert "why does it stop" not in cell.lower()


def test_the_toys_positions_are_said_to_be_set_by_hand():
    text_ = re.sub(r"\s+", " ", prose())
    assert "GPT-2 and the toy learn one embedding per position" not in text_
    assert "GPT-2 learned its own; the toy's were set by hand" in text_


def test_the_closing_links_name_every_lab_of_the_map():
    first, last = source(CELLS[0]), source(CELLS[-1])
    labs = re.findall(r"\[(Lab: [^\]]+)\]\((\d\d_\w+\.ipynb)\)", first)
    assert len(labs) == 4
    assert all(f"[{name}]({path})" in last for name, path in labs)
    assert "Four labs follow" in last


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


def test_07_says_which_settings_keep_climb_and_which_libraries_order_top_k_first():
    """After ␣roof, top-k 3 (at T = 1 and at 1.5, the table's setting) and top-p 0.9 at T = 1
    both keep ␣climb: the kept sets worked out here by hand from the logits."""
    z = tm.forward(tm.encode("the cat climbed the roof"))[-1]
    climb = tm.VOCAB.index(" climb")
    for T in (1.0, 1.5):
        assert climb in np.argsort(-z / T)[:3]
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    order = np.argsort(-p)
    kept = order[: int(np.searchsorted(np.cumsum(p[order]), 0.9)) + 1]
    assert climb in kept
    text_ = " ".join(prose().split())
    assert ("with top-k 3 (at T = 1 or 1.5) and top-p 0.9, the settings used below, both keep "
            "␣climb there") in text_
    table = next(source(c) for c in CELLS if "settings = {" in source(c))
    assert "temperature=1.5, top_k=3" in table and "temperature=1, top_p=0.9" in table
    assert ("the usual order is top-k first: its survivors are renormalised, and top-p counts its "
            "threshold on them alone") in text_ and "llama.cpp" in text_
    assert "greedy is also `tm.generate`'s default" in text_ and "and why it is" not in text_
