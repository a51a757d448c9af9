"""Lab 08's seed sweep: many training runs, precomputed, so that the lab's conclusions rest
on more seeds than its Run All has time to train.

For each seed, the toy is trained on data/corpus.txt with its own unembedding W_U and with
tied weights (W_U = wte^T), under four recipes: a constant learning rate, a warmup and
cosine decay of it, gradient clipping, and both. Each run's loss history on the corpus and
on data/heldout.txt (every step), how many of its steps clipping shortened, and what it
predicts after "the cat climbed the" and "the dog climbed the" go to data/seed_sweep.json,
which notebooks/08_training.ipynb reads and tests/test_training.py checks by training a
few of the runs again. Training is full-batch and deterministic: a seed sets only the
initial weights, and the same command writes the same file.

    python tools/seed_sweep.py                   # the lab's sweep (about 4 minutes)
    python tools/seed_sweep.py --seeds 3 --steps 100 --out /tmp/small.json
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import toy_model as tm  # noqa: E402
import toy_train as tt  # noqa: E402

LR = 0.05
RECIPES = {                       # name -> train() options, given the number of steps
    "constant lr": lambda steps: {},
    "warmup + decay": lambda steps: {"warmup": steps // 20, "decay": True},
    "clipping": lambda steps: {"clip": 1.0},
    "warmup + decay + clipping": lambda steps: {"warmup": steps // 20, "decay": True, "clip": 1.0},
}
ARMS = {"own W_U": False, "tied": True}


def p_roof(params, text):
    """p(␣roof) as the next token after `text`."""
    return float(tm.softmax(tm.forward(tm.encode(text), params))[-1][tm.VOCAB.index(" roof")])


def one_run(corpus, seed, tied, recipe, steps):
    """Train one model; what the lab needs of it, rounded as stored."""
    options, record = RECIPES[recipe](steps), {}
    params, history = tt.train(corpus, steps=steps, lr=LR, seed=seed, tied=tied,
                               heldout=tt.load_heldout(), record=record, **options)
    clip = options.get("clip")
    return {"seed": seed, "arm": "tied" if tied else "own W_U", "recipe": recipe,
            "history": [round(float(h), 4) for h in history],
            "heldout_history": [round(float(h), 4) for h in record["heldout"]],
            "clipped": 0 if clip is None else sum(n > clip for n in record["grad_norm"]),
            "p_roof_cat": round(p_roof(params, "the cat climbed the"), 4),
            "p_roof_dog": round(p_roof(params, "the dog climbed the"), 4),
            "heldout": round(tt.corpus_loss(tt.load_heldout(), params), 4)}


def sweep(seeds, steps, recipes=tuple(RECIPES), arms=tuple(ARMS)):
    corpus = tt.load_corpus()
    return {"lr": LR, "steps": steps, "seeds": list(seeds), "recipes": list(recipes),
            "runs": [one_run(corpus, seed, ARMS[arm], recipe, steps)
                     for recipe in recipes for arm in arms for seed in seeds]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=16, help="seeds 0 .. N-1 (default 16)")
    parser.add_argument("--steps", type=int, default=600, help="steps per run (default 600)")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "seed_sweep.json")
    args = parser.parse_args()
    if args.seeds < 1 or args.steps < 1:
        parser.error("--seeds and --steps must be at least 1")
    start = time.time()
    result = sweep(range(args.seeds), args.steps)
    text = json.dumps(result, separators=(",", ":"))
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(args.out)                       # a failure leaves the old file whole
    print(f"{len(result['runs'])} runs of {args.steps} steps in {time.time() - start:.0f} s "
          f"-> {args.out} ({len(text) // 1024} kB)")


if __name__ == "__main__":
    main()
