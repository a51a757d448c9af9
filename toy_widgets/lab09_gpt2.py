"""Lab 09, GPT-2: the attention map of a loaded model, and the lab's exercises.
"""
import html

import ipywidgets as widgets
import numpy as np

import toy_model as _model
import toy_gpt2
from toy_model import causal_mask, forward

from .draw import fmt, heatmap
from .kit import WidgetState, live_figure, message_area, on_change, panel
from .exercises import code_exercise, count_exercise, number_exercise


LAB_MAX_TOKENS = 12                                  # a longer text makes an unreadable map
LAB_MAX_CHARS = 200                                  # checked before the text is tokenized


def lab_attention(checkpoint, text="the cat climbed the", label=""):
    """A loaded checkpoint's attention (checkpoint = load_gpt2(folder)): pick a layer and a head
    with the sliders, type a text and press Enter; the heat map shows that head's weights,
    one row per token looking, one column per token looked at. label names the model
    that was loaded, such as "[GPT-2 small]", above the map's title. A model of one block
    has no layer to pick: its layer slider is hidden."""
    if not isinstance(checkpoint, dict) or not {"params", "n_head", "encode"} <= checkpoint.keys():
        raise ValueError("lab_attention takes a loaded model, checkpoint = tg.load_gpt2(folder), "
                         f"not {type(checkpoint).__name__}.")
    if not isinstance(text, str):
        raise ValueError(f"lab_attention's text is a string, such as 'the cat climbed the', "
                         f"not {type(text).__name__}.")
    if not isinstance(label, str):
        raise ValueError(f"lab_attention's label is a string naming the model, such as "
                         f"'[GPT-2 small]', not {type(label).__name__}.")
    _model.check_params(checkpoint["params"], checkpoint["n_head"])
    blocks, n_head = checkpoint["params"]["blocks"], checkpoint["n_head"]
    fig, ax = live_figure("lab-attention", 6.4, 4.8)
    layer_box = widgets.IntSlider(value=1, min=1, max=len(blocks), description="layer")
    if len(blocks) == 1:
        layer_box.layout.display = "none"
    head_box = widgets.IntSlider(value=1, min=1, max=n_head, description="head")
    text_box = widgets.Text(value=text, description="text", continuous_update=False,
                            layout=widgets.Layout(width="30em"))
    info, area = widgets.HTML(), message_area()
    state = WidgetState(text=None, trace=None, tokens=None, layer=0, head=0)

    def read(new_text):
        if len(new_text) > LAB_MAX_CHARS:
            raise ValueError(f"The text has {len(new_text):,} characters: type at most "
                             f"{LAB_MAX_TOKENS} tokens (a few words).")
        ids = checkpoint["encode"](new_text)
        if not 0 < len(ids) <= LAB_MAX_TOKENS:
            raise ValueError(f"The text has {len(ids)} tokens: type 1 to {LAB_MAX_TOKENS}, "
                             "so that every cell of the map stays readable.")
        trace = {}
        forward(ids, checkpoint["params"], n_head, trace=trace)
        state.text, state.trace, state.tokens = new_text, trace, toy_gpt2.token_texts(checkpoint, ids)

    def draw(_=None):
        layer, head = layer_box.value - 1, head_box.value - 1
        w = state.trace["blocks"][layer]["heads"][head]["weights"]
        n = len(w)
        ax.clear()
        title = f"layer {layer + 1}, head {head + 1}: attention weights"
        heatmap(ax, np.where(causal_mask(n), w, np.nan), state.tokens, state.tokens,
                f"{label}\n{title}" if label else title)
        ax.set_xlabel("key: the token looked at")
        ax.set_ylabel("query: the token looking")
        fig.canvas.draw_idle()
        state.layer, state.head = layer, head
        j = int(np.argmax(w[-1]))
        info.value = html.escape(f"The last token, {state.tokens[-1]}, puts most of its weight "
                                 f"({fmt(w[-1, j])}) on {state.tokens[j]}.")

    def new_text(value):
        read(value)
        draw()

    read(text)
    draw()
    on_change(layer_box, area, state, draw)
    on_change(head_box, area, state, draw)
    on_change(text_box, area, state, new_text)
    root = panel("lab-attention", widgets.HBox([layer_box, head_box]), text_box, fig.canvas,
                 info, area)
    root.state, root.figure = state, fig                      # for tests
    return root


def _gpt2_size(n_layer, d, vocab, n_ctx):
    """How many numbers a GPT-2 holds: embeddings, n_layer blocks (two LayerNorms, c_attn,
    c_proj, an MLP of width 4d, each with its biases), ln_f; the unembedding tied to wte."""
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    return vocab * d + n_ctx * d + n_layer * block + 2 * d


code_exercise(
    "09.1", "Write `gpt2_size(n_layer, d, vocab, n_ctx)`: how many numbers a GPT-2 holds, with an "
            "MLP of width 4d and the unembedding tied to wte. Count every weight and every bias, the "
            "LayerNorms' gains and biases included.",
    reference=_gpt2_size,
    cases=[("GPT-2 small (12, 768, 50257, 1024)", (12, 768, 50257, 1024)),
           ("GPT-2 medium (24, 1024, 50257, 1024)", (24, 1024, 50257, 1024)),
           ("a small one (2, 8, 12, 8)", (2, 8, 12, 8))],
    mistakes=[(lambda L, d, V, n: _gpt2_size(L, d, V, n) + V * d,
               "the unembedding is tied: it is wte itself, so do not count it again."),
              (lambda L, d, V, n: _gpt2_size(L, d, V, n) - L * 9 * d,
               "count the biases too: c_attn has 3d, c_proj d, the MLP 4d and d."),
              (lambda L, d, V, n: _gpt2_size(L, d, V, n) - L * 4 * d - 2 * d,
               "each LayerNorm has a gain and a bias of d numbers: two per block, and ln_f."),
              (lambda L, d, V, n: _gpt2_size(L, d, V, n) - n * d,
               "the position embeddings wpe count too: n_ctx rows of d.")],
    solution="""def gpt2_size(n_layer, d, vocab, n_ctx):
    block = (2 * 2 * d                   # ln_1 and ln_2: gain and bias
             + d * 3 * d + 3 * d         # c_attn: W_Q, W_K, W_V side by side
             + d * d + d                 # attention's c_proj (W_O)
             + d * 4 * d + 4 * d         # the MLP's c_fc
             + 4 * d * d + d)            # the MLP's c_proj
    return vocab * d + n_ctx * d + n_layer * block + 2 * d    # + ln_f

# GPT-2 small: 124,439,808 numbers, a third of them in wte.""")


def _positions(prompt, new, cache):
    """Positions run through the blocks to generate `new` tokens after a prompt."""
    return prompt + new - 1 if cache else sum(prompt + k for k in range(new))


count_exercise(
    "09.2", "Generate 20 tokens after a prompt of 5 tokens, rerunning the whole context at every "
            "step (no cache). How many positions go through the blocks in all?",
    answer=lambda: _positions(5, 20, cache=False),
    hints=lambda: [(_positions(5, 20, cache=True), "That is with the KV cache: without it, step k "
                    "runs all 5 + k - 1 positions again."),
                   (20, "Each step runs the whole context, not only the new token."),
                   (25 * 20, "The context grows from 5 to 24 tokens; it is not 25 at every step.")],
    solution=lambda: (
        f"Step 1 runs the 5 prompt positions, step 2 runs 6, ..., step 20 runs 24: "
        f"5 + 6 + ... + 24 = {_positions(5, 20, cache=False)}. With the KV cache the prompt runs "
        f"once and each later step runs only its new token: 5 + 19 = {_positions(5, 20, cache=True)}."
        "\n\nEach position run costs about 2 operations per weight (a multiplication and an "
        "addition), whatever the weights are; the cache saves recomputing the positions already "
        "run. Reading the weights from memory is another cost: a forward pass reads them once, "
        "however many positions it runs, and a cached step is one read of the weights for one "
        "position."))


number_exercise(
    "09.3", "A model that knows nothing gives every one of GPT-2's 50,257 tokens the same p. What "
            "is its loss on any text, in nats? (The toy's was ln 12 = 2.485.)",
    answer=lambda: float(np.log(50257)),
    hints=lambda: [(np.log(12), "That is the toy's 12 tokens; GPT-2 has 50,257."),
                   (1 / 50257, "That is p itself; the loss is -ln p.")],
    solution=lambda: (
        f"Each p is 1/50,257, so the loss is -ln(1/50,257) = ln 50,257 = {fmt(np.log(50257))} "
        "nats, at every position. A trained model's loss below that figure is what it learned."))


# Exercise 09.4: the BPE training loop. The reference is the module's train_bpe, whose
# rule for ties ("first": the pair counted first) is what a learner's max() gives. Each
# typical mistake is train_bpe with one setting or its input changed.

def _train_once_per_word(words, n_merges):
    return toy_gpt2.train_bpe(list(dict.fromkeys(words)), n_merges)


def _train_first_occurrence_only(words, n_merges):
    return toy_gpt2.train_bpe(list(words), n_merges, every=False)


def _train_last_of_ties(words, n_merges):
    return toy_gpt2.train_bpe(list(words), n_merges, ties="last")


def _train_across_words(words, n_merges):
    return toy_gpt2.train_bpe(["".join(words)], n_merges)


_BPE_WORDS = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3


def _bpe_cases():
    from pathlib import Path
    corpus = (Path(__file__).resolve().parents[1] / "data" / "corpus.txt").read_text(encoding="utf-8")
    course = [toy_gpt2.byte_chars(w) for w in toy_gpt2.pre_split(corpus)]
    return [("low ×5, lower ×2, newest ×6, widest ×3, 4 merges", (_BPE_WORDS, 4)),
            ("the words of data/corpus.txt, 12 merges", (course, 12)),
            ("['aaaa'], 3 merges (only 2 are possible)", (["aaaa"], 3)),
            ("['banana', 'bandana'], 5 merges", (["banana", "bandana"], 5))]


code_exercise(
    "09.4", "Write `train_bpe(words, n_merges)`: start from each word as its single characters; "
            "count every pair of neighbours in every word (a word listed 5 times counts 5 times); "
            "append the most frequent pair to the merges (when two are equally frequent, the one "
            "counted first) and glue it wherever it occurs, left to right; repeat n_merges times, "
            "or until no word has two pieces left. Return the merges, a list of pairs.",
    reference=lambda words, n: toy_gpt2.train_bpe(list(words), n),
    cases=_bpe_cases,
    mistakes=[(_train_once_per_word, "count a word as often as it is listed: a word seen 5 "
               "times adds 5 to each of its pairs."),
              (_train_first_occurrence_only, "glue every occurrence of the chosen pair in a word, "
               "left to right, not only the first."),
              (_train_last_of_ties, "of two equally frequent pairs, take the one counted first "
               "(max() over a dict filled in order does)."),
              (_train_across_words, "count pairs inside each word only: a merge never joins the "
               "end of one word to the start of the next.")],
    solution="""def train_bpe(words, n_merges):
    words = [tuple(w) for w in words]          # each word as its pieces: characters at first
    merges = []
    for _ in range(n_merges):
        counts = {}                            # pair -> how often it occurs, in order seen
        for word in words:
            for pair in zip(word, word[1:]):
                counts[pair] = counts.get(pair, 0) + 1
        if not counts:                         # every word is one piece: nothing to merge
            break
        best = max(counts, key=counts.get)     # the most frequent; of equals, the first seen
        merges.append(best)
        # glue best wherever it occurs, left to right: tg.merge_pair is that loop (read it
        # with tg.merge_pair??), the one that tg.bpe encodes with
        words = [tg.merge_pair(word, best) for word in words]
    return merges

# On low ×5, lower ×2, newest ×6, widest ×3: (e, s), (es, t), (l, o), (lo, w).""")
