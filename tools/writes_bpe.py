"""Lab 11's Going further: the same model and recipe on tokens of the course's own BPE.

The lab's model reads characters. This tool learns byte-level BPE merges from the nine
training plays with toy_gpt2.train_bpe (lab 09's trainer, GPT-2's pre-split), builds a
vocabulary of the 63 characters plus the merges, and trains the lab's recipe (tx.RECIPE:
sizes, batch, steps, Adam, schedule, seed tx.CHAR_SEED) on those tokens instead. Then it
measures the whole held-out play, cut into consecutive windows of n_ctx tokens, in two
units: nats per token, and nats per character (the same total of nats shared out over
the characters the predicted tokens spell), so that the two models can be compared fairly.
Everything goes to data/writes_bpe.json, which notebooks/11_writes.ipynb reads.

    python tools/writes_bpe.py                 # 200 merges, minutes
    python tools/writes_bpe.py --merges 50 --steps 100 --out /tmp/bpe.json   # a quick try
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import toy_gpt2 as tg  # noqa: E402
import toy_model as tm  # noqa: E402
import toy_train as tt  # noqa: E402
import toy_writes as tx  # noqa: E402

OUT = ROOT / "data" / "writes_bpe.json"


def tokenizer(merges):
    """encode, decode and the vocabulary for the 63 characters plus the merges, in order."""
    vocab = {tg.byte_chars(c): i for i, c in enumerate(tx.CHARS)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    encode, decode = tg.bpe_tokenizer(vocab, [list(m) for m in merges])
    return encode, decode, vocab


def token_windows(ids, starts, n_ctx):
    rows = ids[np.asarray(starts)[:, None] + np.arange(n_ctx + 1)]
    return rows[:, :-1], rows[:, 1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--merges", type=int, default=200)
    parser.add_argument("--steps", type=int, default=tx.RECIPE["steps"])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    recipe = dict(tx.RECIPE, steps=args.steps)
    train_text, held_text = tx.load_text("train"), tx.load_text("heldout")

    start = time.process_time()
    merges = tg.train_bpe([tg.byte_chars(w) for w in tg.pre_split(train_text)], args.merges)
    bpe_seconds = time.process_time() - start
    encode, decode, vocab = tokenizer(merges)
    train_ids, held_ids = np.array(encode(train_text)), np.array(encode(held_text))
    print(f"{len(merges)} merges in {bpe_seconds:.0f} s; {len(vocab)} tokens; "
          f"{len(train_text) / len(train_ids):.2f} characters per token in training")

    n_ctx, n_head = recipe["n_ctx"], recipe["n_head"]
    params = tt.init_params(tx.CHAR_SEED, tied=False, d=recipe["d"], d_mlp=recipe["d_mlp"],
                            n_layer=recipe["n_layer"], n_vocab=len(vocab), n_ctx=n_ctx)
    params = tm.tree_map(lambda w: np.asarray(w, dtype=np.float32), params)
    rng = np.random.default_rng(tx.CHAR_SEED)

    def batch(step):
        return token_windows(train_ids, rng.integers(0, len(train_ids) - n_ctx, recipe["batch"]), n_ctx)

    held = token_windows(held_ids, np.random.default_rng(tx.HELD_SEED).integers(
        0, len(held_ids) - n_ctx, tx.EVAL_WINDOWS), n_ctx)
    curve, record = {"steps": [], "heldout_per_token": []}, {}

    def on_step(step, loss):
        if step % 250 == 0 or step == recipe["steps"]:
            curve["steps"].append(step)
            curve["heldout_per_token"].append(round(tx.model_loss(record["params"], n_head, *held), 4))
            print(f"step {step}: held-out {curve['heldout_per_token'][-1]:.3f} nats per token", flush=True)

    start = time.process_time()
    params, _ = tx.adam_run(batch, params, recipe["steps"], recipe["lr"],
                            min(recipe["warmup"], recipe["steps"] // 10), n_head, on_step, record)
    train_seconds = time.process_time() - start

    inputs, targets = token_windows(held_ids, np.arange(0, len(held_ids) - n_ctx, n_ctx), n_ctx)
    per_token = tx.model_loss(params, n_head, inputs, targets)
    chars = len(decode(targets.reshape(-1).tolist()))      # the characters the targets spell
    per_char = per_token * targets.size / chars
    rng_sample = np.random.default_rng(0)
    ids = encode("ROMEO:\n")
    for _ in range(40):                                     # a sample, cropped as tx.generate_chars does
        p = tm.next_token_probs(tm.forward(ids[-n_ctx:], params, n_head)[-1], 0.8)
        ids.append(tm.sample(p, rng_sample))
    out = {"merges": [" ".join(m) for m in merges], "vocab": len(vocab), "recipe": recipe,
           "seed": tx.CHAR_SEED,
           "chars_per_token_train": round(len(train_text) / len(train_ids), 4),
           "chars_per_token_heldout": round(len(held_text) / len(held_ids), 4),
           "heldout_per_token": round(per_token, 4), "heldout_per_char": round(per_char, 4),
           "heldout_tokens": int(targets.size), "heldout_chars": chars, "curve": curve,
           "sample": decode(ids), "cpu_seconds": {"bpe": round(bpe_seconds), "training": round(train_seconds)}}
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"held-out: {per_token:.3f} nats per token, {per_char:.3f} per character; wrote {args.out}")


if __name__ == "__main__":
    main()
