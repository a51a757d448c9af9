"""Lab 09: GPT-2 small's tokenizer and checkpoint, for the course's own forward pass.

toy_model's functions run GPT-2 small as they are; what GPT-2 adds is its byte-level
BPE tokenizer and its weights' file format. Both are here: the tokenizer written out
(bytes_to_unicode, pre_split, bpe), and the checkpoint read and written in Hugging
Face's layout (load_gpt2, save_gpt2). Generation, with or without a KV cache, is
toy_model's one loop: generate(ids, params=..., cache=True).
"""
import json
import os
import re
from pathlib import Path

import numpy as np
import regex

from toy_model import N_HEAD, PARAMS, VOCAB, show

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

# GPT-2 cuts text into words before BPE with this pattern, copied from its encoder.py: an
# apostrophe ending ('s 't 're 've 'm 'll 'd), else letters (\p{L}), digits (\p{N}) or other
# symbols, each with at most one space in front, else a run of spaces (leaving the last
# space to the word that follows). Python's own re lacks \p{L} and \p{N}; the regex
# package has them, as GPT-2 itself used it.
WORDS = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def pre_split(text):
    """Text -> the words BPE works on, spaces kept in front:
    "the cat's 2 hats" -> ["the", " cat", "'s", " 2", " hats"]."""
    return WORDS.findall(text)


def bpe(word, ranks, steps=None):
    """One word, written in the byte characters, -> its tokens. Start from single characters;
    merge the neighbouring pair learned first (the lowest rank in merges.txt); repeat until
    no neighbouring pair is in the list. steps: a list that receives every stage."""
    parts = list(word)
    while len(parts) > 1:
        rank, i = min((ranks.get(pair, float("inf")), i)
                      for i, pair in enumerate(zip(parts, parts[1:])))
        if rank == float("inf"):
            break
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
        if steps is not None:
            steps.append(list(parts))
    return parts


def bpe_tokenizer(vocab, merges):
    """encode(text) -> ids and decode(ids) -> text for a byte-level BPE.
    vocab: token (in byte characters) -> id; merges: the pairs in the order learned."""
    ranks = {tuple(pair): rank for rank, pair in enumerate(merges)}
    tokens = {i: t for t, i in vocab.items()}

    def encode(text):
        if not isinstance(text, str):
            raise ValueError(f"encode needs a string of text, not {type(text).__name__}.")
        ids = []
        for piece in re.split(f"({re.escape(ENDOFTEXT)})", text):
            if piece == ENDOFTEXT and piece in vocab:
                ids.append(vocab[piece])                # the special token, kept whole
                continue
            for word in pre_split(piece):
                chars = "".join(BYTE_TO_CHAR[b] for b in word.encode("utf-8"))
                parts = bpe(chars, ranks)
                unknown = [show(as_text(t)) for t in parts if t not in vocab]
                if unknown:
                    raise ValueError(
                        f"This vocabulary cannot cover {show(word)!r}: its merges leave "
                        f"{' '.join(show(as_text(t)) for t in parts)}, and {unknown[0]!r} "
                        f"is not one of its {len(vocab)} tokens.")
                ids += [vocab[t] for t in parts]
        return ids

    def decode(ids):
        ids = [int(i) for i in ids]
        bad = [i for i in ids if i not in tokens]
        if bad:
            raise ValueError(f"Token id {bad[0]} does not exist: "
                             f"ids run from 0 to {len(vocab) - 1}.")
        return as_text("".join(tokens[i] for i in ids))

    return encode, decode


def as_text(chars):
    """Byte characters -> text: back to bytes, read as UTF-8 (a character cut in the middle
    of its bytes shows as �)."""
    return bytes(CHAR_TO_BYTE[c] for c in chars).decode("utf-8", errors="replace")


def read_bpe(folder):
    """vocab.json and merges.txt -> (vocab, merges)."""
    folder = Path(folder)
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    lines = (folder / "merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    return vocab, merges


def save_bpe(folder, vocab, merges):
    """Write vocab.json and merges.txt in GPT-2's format."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")


def toy_bpe(vocab=VOCAB):
    """The toy's tokens as a byte-level BPE: vocab.json with the ids of VOCAB, and for each
    token in turn the merges that glue its characters, appended after those before it.
    It cuts the toy's texts as encode does: " climbed" -> " climb" + "ed"."""
    table = {"".join(BYTE_TO_CHAR[b] for b in token.encode("utf-8")): i
             for i, token in enumerate(vocab)}
    merges = []
    for token in table:
        if token == ENDOFTEXT:
            continue
        while len(parts := bpe(token, {pair: r for r, pair in enumerate(merges)})) > 1:
            merges.append((parts[0], parts[1]))
    return table, merges


# The checkpoint. Hugging Face's names, and how they map onto PARAMS:
#   [transformer.]wte.weight, wpe.weight            wte [V, d], wpe [n_ctx, d]
#   [transformer.]h.{i}.ln_1.weight / .bias         blocks[i]["ln_1"]["g"] / ["b"]
#   [transformer.]h.{i}.attn.c_attn.weight / .bias  blocks[i]["attn"]["c_attn"]["w"] / ["b"]
#   ... attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj the same way, then ln_f
#   lm_head.weight [V, d]                           w_u = its transpose; absent: tied, wte^T
# GPT-2's linear layers ("Conv1D") store w as [d_in, d_out], as the course does, so no
# weight is transposed. The buffers attn.bias and attn.masked_bias (a stored causal mask)
# are not weights and are skipped.

def _layers(n_layer):
    """(name in the checkpoint, path in PARAMS) for every weight but wte, wpe and lm_head."""
    pairs = [(f"h.{i}.{part}.{kind}", ("blocks", i, *part.split("."), key))
             for i in range(n_layer)
             for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj")
             for kind, key in (("weight", "g" if part.startswith("ln") else "w"), ("bias", "b"))]
    return pairs + [("ln_f.weight", ("ln_f", "g")), ("ln_f.bias", ("ln_f", "b"))]


def load_gpt2(folder):
    """Read a GPT-2 checkpoint folder (the four files of GPT2_FILES) into the course's layout.

    Returns a dict: params (PARAMS' layout, float32; w_u is wte^T itself when the checkpoint
    has no lm_head), n_head, encode, decode, config, tied, eot (the id of <|endoftext|>),
    vocab and merges. Then forward(ids, lab["params"], lab["n_head"]) runs the model."""
    from safetensors.numpy import load_file
    folder = Path(folder)
    missing = [name for name in GPT2_FILES if not (folder / name).is_file()]
    if missing:
        raise ValueError(f"The folder {folder.name!r} lacks {', '.join(missing)}: a GPT-2 "
                         f"checkpoint is the four files {', '.join(GPT2_FILES)}.")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError("This checkpoint's MLP uses another activation than GELU's tanh form.")
    if config.get("layer_norm_epsilon", 1e-5) != 1e-5:
        raise ValueError("This checkpoint's LayerNorm uses another epsilon than GPT-2's 1e-5.")
    stored = {name.removeprefix("transformer."): w
              for name, w in load_file(folder / "model.safetensors").items()}

    def weight(name):
        if name not in stored:
            raise ValueError(f"model.safetensors has no weight {name!r}: not a GPT-2 checkpoint.")
        return np.asarray(stored[name], dtype=np.float32)     # no copy if already float32

    blocks = [{"ln_1": {}, "attn": {"c_attn": {}, "c_proj": {}}, "ln_2": {},
               "mlp": {"c_fc": {}, "c_proj": {}}} for _ in range(config["n_layer"])]
    params = {"wte": weight("wte.weight"), "wpe": weight("wpe.weight"), "blocks": blocks,
              "ln_f": {}}
    for name, path in _layers(config["n_layer"]):
        *where, key = path
        node = params
        for step in where:
            node = node[step]
        node[key] = weight(name)
    tied = config.get("tie_word_embeddings", True) or "lm_head.weight" not in stored
    params["w_u"] = (params["wte"] if tied else weight("lm_head.weight")).T    # [d, V], a view
    vocab, merges = read_bpe(folder)
    if len(vocab) > len(params["wte"]):
        raise ValueError(f"vocab.json has {len(vocab)} tokens, "
                         f"but wte has only {len(params['wte'])} rows.")
    encode, decode = bpe_tokenizer(vocab, merges)
    return {"params": params, "n_head": config["n_head"], "encode": encode, "decode": decode,
            "config": config, "tied": tied, "eot": vocab.get(ENDOFTEXT), "vocab": vocab,
            "merges": merges}


def save_gpt2(folder, params=PARAMS, n_head=N_HEAD):
    """Write params as a GPT-2 checkpoint: config.json and model.safetensors, with Hugging
    Face's names, so GPT-2 tools open it (transformers' GPT2LMHeadModel.from_pretrained).
    An untied w_u is stored as lm_head.weight. Returns the folder."""
    from safetensors.numpy import save_file
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab_size, d = np.shape(params["wte"])
    tied = "w_u" not in params or np.array_equal(params["w_u"], np.transpose(params["wte"]))
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": vocab_size, "n_positions": len(params["wpe"]), "n_embd": d,
        "n_layer": len(params["blocks"]), "n_head": n_head,
        "n_inner": np.shape(params["blocks"][0]["mlp"]["c_fc"]["w"])[1],   # the MLP's width
        "activation_function": "gelu_new",            # GELU's tanh form
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": bool(tied),
        "bos_token_id": vocab_size - 1, "eos_token_id": vocab_size - 1,   # <|endoftext|>: last id
    }
    tensors = {"wte.weight": params["wte"], "wpe.weight": params["wpe"]}
    for name, path in _layers(len(params["blocks"])):
        node = params
        for step in path:
            node = node[step]
        tensors[name] = node
    tensors = {f"transformer.{name}": w for name, w in tensors.items()}
    if not tied:
        tensors["lm_head.weight"] = np.transpose(params["w_u"])              # [V, d]
    save_file({name: np.ascontiguousarray(w, dtype=np.float32) for name, w in tensors.items()},
              folder / "model.safetensors", metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return folder


def save_toy_as_gpt2(folder):
    """The toy as a GPT-2 folder: its weights (save_gpt2) and its tokens as a BPE (toy_bpe)."""
    save_gpt2(folder)
    save_bpe(folder, *toy_bpe())
    return Path(folder)


def find_gpt2(variable="GPT2_DIR"):
    """(folder, sentence): the folder named by the environment variable GPT2_DIR when it
    holds GPT-2's four files, else None; the sentence says what was found."""
    name = os.environ.get(variable, "")
    if not name:
        return None, (f"No GPT-2 weights here ({variable} is not set): this run uses the toy, "
                      "saved in GPT-2's format.")
    missing = [f for f in GPT2_FILES if not (Path(name) / f).is_file()]
    if missing:
        return None, (f"{variable} names a folder without {', '.join(missing)}: this run uses "
                      "the toy, saved in GPT-2's format.")
    return Path(name), f"GPT-2 weights found in {variable}: this run uses GPT-2 small."


def download_gpt2(folder="gpt2", repo=GPT2_REPO):
    """Fetch GPT-2 small's four files (about 550 MB) from the Hugging Face Hub into folder.
    Needs internet; returns the folder, or None after one sentence saying what to do."""
    folder = Path(folder)
    try:
        from huggingface_hub import hf_hub_download
        for name in GPT2_FILES:
            hf_hub_download(repo, name, local_dir=folder)
    except Exception as err:      # no package, no network, the Hub unreachable
        print(f"Could not download {repo} ({type(err).__name__}): without internet, copy its "
              f"{', '.join(GPT2_FILES)} from a machine that has them into {folder} by hand, "
              f"then set GPT2_DIR to that folder.")
        return None
    return folder


def count_params(params):
    """How many numbers the weights hold (w_u only when it is not wte^T itself)."""
    if isinstance(params, dict):
        w_u = params.get("w_u")
        shared = w_u is not None and "wte" in params and np.shares_memory(w_u, params["wte"])
        return sum(count_params(v) for k, v in params.items() if not (k == "w_u" and shared))
    if isinstance(params, list):
        return sum(count_params(v) for v in params)
    return int(np.size(params))


def token_texts(lab, ids):
    """Each id's token as the course prints it: "␣" for a space, and an escape such as
    "\\n" for a character that does not print."""
    def printable(c):
        return c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
    return ["".join(map(printable, show(lab["decode"]([i])))) for i in ids]
