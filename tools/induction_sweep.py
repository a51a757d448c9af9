"""Lab 10's sweep: many training runs of the copying task, precomputed, so that the lab's
claims (when the second copy's loss drops, that one block fails, which heads matter)
rest on more seeds than its Run All has time to train.

For each seed and setting, a fresh attention-only model is trained on fresh batches
(toy_induction.train, the lab's own function) and measured every 50 steps on rows with
the filler first. The settings: two blocks (the lab's model), one block, and one block
trained on blocks of length 8 only (where "the id l - 1 back" would be a shortcut),
measured on its own rows and on rows of every length. For every run, at the end: each head's
previous-token and induction scores and the second copy's loss with that head switched
off. Everything goes to data/induction_sweep.json, which notebooks/10_induction.ipynb
reads and tests/test_lab10.py checks by training one run again.

    python tools/induction_sweep.py                    # the lab's sweep (some minutes)
    python tools/induction_sweep.py --seeds 2 --steps 200 --out /tmp/small.json
    python tools/induction_sweep.py --checkpoint       # data/induction_model/ only

--checkpoint trains the lab's live run (seed ti.LIVE_SEED) and writes it as a GPT-2
checkpoint of ids alone (config.json and model.safetensors, float32), which the lab
loads when training live is too slow.
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
import toy_induction as ti  # noqa: E402

SETTINGS = {
    "two blocks": {"n_layer": 2},
    "one block": {"n_layer": 1},
    "one block, l = 8 only": {"n_layer": 1, "lengths": (8,)},
}
EVERY = 50
MEASURE_SEED, MEASURE_ROWS = 2024, 512      # the rows every finished model is measured on


def rounded(values, digits=4):
    return [round(float(v), digits) for v in values]


def one_run(seed, setting, steps):
    """Train one model; what the lab needs of it, rounded as stored."""
    options = SETTINGS[setting]
    start = time.perf_counter()
    run = ti.train(seed, steps=steps, every=EVERY, **options)
    rows, where = ti.repeat_rows(MEASURE_SEED, MEASURE_ROWS, filler_first=True)
    scores = ti.head_scores(run["params"], 1, rows, where)
    out = {"seed": seed, "setting": setting, "steps": run["steps"],
           "first": rounded(run["first"]), "second": rounded(run["second"]),
           "drop": ti.drop_step(run["steps"], run["second"]),
           "final_second": round(ti.copy_losses(run["params"], 1, rows, where)[1], 4),
           "previous": [rounded(layer) for layer in scores["previous"]],
           "induction": [rounded(layer) for layer in scores["induction"]],
           "ablated": [rounded(layer) for layer in ti.ablation_losses(run["params"], 1, rows, where)],
           "seconds": round(time.perf_counter() - start, 1)}
    if "lengths" in options:                # measured on its own rows too
        own = ti.repeat_rows(MEASURE_SEED, MEASURE_ROWS, options["lengths"], filler_first=True)
        out["own_second"] = round(ti.copy_losses(run["params"], 1, *own)[1], 4)
    return out


def write_checkpoint(folder=ROOT / "data" / "induction_model"):
    run = ti.train(ti.LIVE_SEED, steps=ti.STEPS)
    return tg.save_gpt2(folder, run["params"], n_head=1, overwrite=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "induction_sweep.json")
    parser.add_argument("--checkpoint", action="store_true", help="write data/induction_model/ only")
    args = parser.parse_args()
    if args.checkpoint:
        print("wrote", write_checkpoint())
        return
    runs = []
    for setting in args.settings:
        for seed in range(args.seeds):
            runs.append(one_run(seed, setting, args.steps))
            r = runs[-1]
            print(f"{setting:>22}  seed {seed}: drop at {r['drop']}, second copy "
                  f"{r['final_second']:.3f}, {r['seconds']:.0f} s", flush=True)
    sweep = {"steps": args.steps, "every": EVERY, "lr": ti.LR, "batch": ti.BATCH, "d": ti.D,
             "vocab": ti.V, "lengths": list(ti.LENGTHS), "seeds": list(range(args.seeds)),
             "settings": {name: {k: list(v) if isinstance(v, tuple) else v for k, v in o.items()}
                          for name, o in SETTINGS.items() if name in args.settings},
             "runs": runs}
    args.out.write_text(json.dumps(sweep, indent=1) + "\n", encoding="utf-8")
    print("wrote", args.out, f"({np.sum([r['seconds'] for r in runs]):.0f} s of training)")


if __name__ == "__main__":
    main()
