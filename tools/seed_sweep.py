"""Lab 08's seed sweep: many training runs, precomputed, so that the lab's conclusions rest
on more seeds than its Run All has time to train.

For each seed, the toy is trained on data/corpus.txt with its own unembedding W_U and with
tied weights (W_U = wte^T), under five recipes: a constant learning rate, a warmup and
cosine decay of it, gradient clipping, both, and clipping at a constant rate as low as
the decayed schedule's mean. Each run's loss history on the corpus and
on data/heldout.txt (every step), how many of its steps clipping shortened, and what it
predicts after "the cat climbed the" and "the dog climbed the" go to data/seed_sweep.json,
which notebooks/08_training.ipynb reads and tests/test_training.py checks by training a
few of the runs again. Training is full-batch and deterministic: a seed sets only the
initial weights, and the same command writes the same file.

    python tools/seed_sweep.py                   # the lab's sweep (about 5 minutes)
    python tools/seed_sweep.py --keep            # only the runs the stored file lacks
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


def decayed_mean(steps):
    """The mean learning rate of warmup + decay over a run: a constant rate this low moves
    the weights as far in all, so the last recipe tells a lower rate from the decay."""
    return round(float(np.mean([tt.learning_rate(s, LR, steps, steps // 20, True)
                                for s in range(steps)])), 4)


RECIPES = {                       # name -> train() options, given the number of steps
    "constant lr": lambda steps: {},
    "warmup + decay": lambda steps: {"warmup": steps // 20, "decay": True},
    "clipping": lambda steps: {"clip": 1.0},
    "warmup + decay + clipping": lambda steps: {"warmup": steps // 20, "decay": True, "clip": 1.0},
    "clipping, lr = decay's mean": lambda steps: {"clip": 1.0, "lr": decayed_mean(steps)},
}
ARMS = {"own W_U": False, "tied": True}


def p_roof(params, text):
    """p(␣roof) as the next token after `text`."""
    return float(tm.softmax(tm.forward(tm.encode(text), params))[-1][tm.VOCAB.index(" roof")])


def one_run(corpus, seed, tied, recipe, steps):
    """Train one model; what the lab needs of it, rounded as stored."""
    options, record = {"lr": LR} | RECIPES[recipe](steps), {}
    params, history = tt.train(corpus, steps=steps, seed=seed, tied=tied,
                               heldout=tt.load_heldout(), record=record, **options)
    clip = options.get("clip")
    return {"seed": seed, "arm": "tied" if tied else "own W_U", "recipe": recipe,
            "history": [round(float(h), 4) for h in history],
            "heldout_history": [round(float(h), 4) for h in record["heldout"]],
            "clipped": 0 if clip is None else sum(n > clip for n in record["grad_norm"]),
            "p_roof_cat": round(p_roof(params, "the cat climbed the"), 4),
            "p_roof_dog": round(p_roof(params, "the dog climbed the"), 4),
            "heldout": round(tt.corpus_loss(tt.load_heldout(), params), 4)}


def sweep(seeds, steps, recipes=tuple(RECIPES), arms=tuple(ARMS), kept=()):
    """Every run, in the order recipe, arm, seed; a run found in `kept` (the runs of an
    earlier file with the same seeds and steps) is taken from there: training is
    deterministic, so it would come out the same."""
    corpus = tt.load_corpus()
    old = {(r["seed"], r["arm"], r["recipe"]): r for r in kept}
    return {"lr": LR, "steps": steps, "seeds": list(seeds), "recipes": list(recipes),
            "runs": [old.get((seed, arm, recipe)) or one_run(corpus, seed, ARMS[arm], recipe, steps)
                     for recipe in recipes for arm in arms for seed in seeds]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=16, help="seeds 0 .. N-1 (default 16)")
    parser.add_argument("--steps", type=int, default=600, help="steps per run (default 600)")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "seed_sweep.json")
    parser.add_argument("--keep", action="store_true",
                        help="take the runs --out already holds (same seeds, steps) from it")
    args = parser.parse_args()
    if args.seeds < 1 or args.steps < 1:
        parser.error("--seeds and --steps must be at least 1")
    start = time.time()
    kept = []
    if args.keep and args.out.exists():
        old = tt.load_sweep(args.out)
        if old["seeds"] == list(range(args.seeds)) and old["steps"] == args.steps:
            kept = old["runs"]
    result = sweep(range(args.seeds), args.steps, kept=kept)
    text = json.dumps(result, separators=(",", ":"))
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(args.out)                       # a failure leaves the old file whole
    print(f"{len(result['runs'])} runs of {args.steps} steps in {time.time() - start:.0f} s "
          f"-> {args.out} ({len(text) // 1024} kB)")


if __name__ == "__main__":
    main()
