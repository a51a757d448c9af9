"""Lab 11's sweep: the live run's recipe repeated over several seeds, so that what the lab
says about it (where the held-out loss ends, when it passes 2 nats per character) rests on
more runs than the one its Run All trains.

For each seed, a fresh model is trained with toy_writes.train_chars (the lab's own function, the
recipe tx.RECIPE) and measured every 50 steps on 64 fixed held-out windows; at the end, on
the whole held-out play cut into windows of the context's length. Everything goes to
data/writes_sweep.json, which notebooks/11_writes.ipynb reads.

    python tools/writes_sweep.py                       # 5 seeds (minutes each), and the checkpoint
    python tools/writes_sweep.py --seeds 2 --steps 200 --out /tmp/small.json
    python tools/writes_sweep.py --checkpoint          # data/shakespeare/model/ only

The full sweep also writes seed tx.CHAR_SEED's weights as data/shakespeare/model/;
--checkpoint trains that run alone (seed tx.CHAR_SEED) and writes its final weights as a GPT-2
checkpoint of ids alone (config.json and model.safetensors, float32), which the lab loads
when training live is too slow, and from which its page's figures are computed. Run one
process at a time on a quiet machine: each run trains on both cores (tx.training_threads).
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import toy_writes as tx  # noqa: E402

OUT = ROOT / "data" / "writes_sweep.json"
SAMPLE_EVERY = 250          # as the live run: 80 characters after "ROMEO:", temperature 0.8


def rounded(values, digits=4):
    return [round(float(v), digits) for v in values]


def final_heldout(params, n_head):
    """The whole held-out play, in consecutive windows: nats per character."""
    return tx.model_loss(params, n_head, *tx.heldout_windows(tx.encode_chars(tx.load_text("heldout"))))


def one_run(seed, steps, checkpoint=False):
    """Train one seed; what the lab needs of it, rounded as stored. checkpoint: also write
    its weights as the shipped checkpoint (the live run: seed tx.CHAR_SEED, the recipe's steps)."""
    start, wall = time.process_time(), time.perf_counter()
    run = tx.train_chars(seed, steps=steps, sample_every=SAMPLE_EVERY)
    seconds, wall = time.process_time() - start, time.perf_counter() - wall
    if checkpoint:
        print("wrote", tx.save_trained(run, overwrite=True))
    return {"seed": seed, "steps": run["steps"], "train": rounded(run["train"]),
            "heldout": rounded(run["heldout"]),
            "below_2": tx.first_below(run["steps"], run["heldout"], 2.0),
            "final_heldout": round(final_heldout(run["params"], run["n_head"]), 4),
            "samples": {str(step): text for step, text in run["samples"].items()},
            "cpu_seconds": round(seconds, 1), "wall_seconds": round(wall, 1)}


def write_checkpoint(folder=tx.CHAR_CHECKPOINT):
    start = time.perf_counter()
    run = tx.train_chars(tx.CHAR_SEED)
    print(f"trained in {time.perf_counter() - start:.0f} s; held-out "
          f"{final_heldout(run['params'], run['n_head']):.4f} nats/char")
    return tx.save_trained(run, folder, overwrite=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=tx.RECIPE["steps"])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--checkpoint", action="store_true", help="write data/shakespeare/model/ only")
    args = parser.parse_args()
    if args.checkpoint:
        print("wrote", write_checkpoint())
        return
    runs = []
    for seed in range(args.seeds):
        live = seed == tx.CHAR_SEED and args.steps == tx.RECIPE["steps"] and args.out == OUT
        runs.append(one_run(seed, args.steps, checkpoint=live))
        r = runs[-1]
        print(f"seed {seed}: held-out {r['final_heldout']:.3f} nats/char, below 2.0 at step "
              f"{r['below_2']}, {r['wall_seconds']:.0f} s ({r['cpu_seconds']:.0f} s of CPU)", flush=True)
    sweep = {"recipe": tx.RECIPE | {"steps": args.steps}, "vocab": tx.N_CHARS, "every": 50,
             "sample_every": SAMPLE_EVERY,
             "eval_windows": tx.EVAL_WINDOWS, "seeds": list(range(args.seeds)), "runs": runs}
    args.out.write_text(json.dumps(sweep, indent=1) + "\n", encoding="utf-8")
    print("wrote", args.out, f"({np.sum([r['cpu_seconds'] for r in runs]):.0f} s of CPU)")


if __name__ == "__main__":
    main()
