"""Lab 10's sweep: many training runs of the copying task, precomputed, so that the lab's
claims (when the second copy's loss drops, that one block did not learn to copy, which
heads matter) rest on more seeds than its Run All has time to train.

For each seed and setting, a fresh attention-only model is trained with the lab's recipe
(toy_induction.train_copying, the lab's own function) and measured every 50 steps on its rows of
both kinds. The settings: two blocks (the lab's model) on the lab's batches; two blocks
on batches the lab did not draw (other_rows below, an independent generator of the same
task, seeded 1000 + seed); one block; one block with two heads; one block trained on
blocks of length 8 only (where "the id l - 1 back" would be a shortcut), measured on its
own rows and on rows of every length.

Every finished model is measured on held-out rows of other_rows (seeded MEASURE_SEED,
never trained on): the second copy's loss with the filler first, with the block first,
and on both kinds mixed, and, on the mixed rows, each head's previous-token and
induction scores, the second copy's loss with that head switched off, and, for two
blocks, block 1's head written out of block 2's queries, keys or values only, block 1's
head keeping only its weight one back or all but it, and block 2's head's OV circuit.
Everything goes to data/induction_sweep.json, which notebooks/10_induction.ipynb reads
and tests/test_lab10.py checks by training one run again.

    python tools/induction_sweep.py                    # the lab's sweep (some minutes)
    python tools/induction_sweep.py --seeds 2 --steps 200 --out /tmp/small.json
    python tools/induction_sweep.py --checkpoint       # data/induction_model/ only

--checkpoint trains the lab's live run (seed ti.COPY_SEED) and writes it as a GPT-2
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
    "two blocks, other batches": {"n_layer": 2, "other_batches": True},
    "one block": {"n_layer": 1},
    "one block, two heads": {"n_layer": 1, "n_head": 2},
    "one block, l = 8 only": {"n_layer": 1, "lengths": (8,)},
}
EVERY = 50
MEASURE_SEED, MEASURE_ROWS = 2024, 512      # the held-out rows every finished model is measured on
OTHER_SEED = 1000                           # other batches: other_rows(default_rng(1000 + seed))
PLACES = {"filler first": "filler", "block first": "block", "both": "either"}


def other_rows(rng, n_rows, filler="either", lengths=ti.LENGTHS, n=ti.COPY_N_CTX, vocab=ti.COPY_VOCAB):
    """The task drawn by code of its own, not ti.repeat_rows: each row a block of l distinct
    ids (l drawn evenly from lengths), the block again, and the remaining n + 1 - 2 l ids
    as filler, all drawn without replacement; the filler before the copies ("filler"),
    after them ("block") or either, by a coin ("either"). Returns (rows, where) in
    ti.repeat_rows's form: where[r] = (l, start of the first copy, start of the second)."""
    rows, where = np.empty((n_rows, n + 1), dtype=np.int64), []
    for r in range(n_rows):
        l = int(lengths[rng.integers(len(lengths))])
        drawn = rng.choice(vocab, size=n + 1 - l, replace=False)
        block, rest = drawn[:l], drawn[l:]
        first = rng.integers(2) == 1 if filler == "either" else filler == "filler"
        start = len(rest) if first else 0
        rows[r, start:start + l] = block
        rows[r, start + l:start + 2 * l] = block
        rows[r, :start] = rest[:start]
        rows[r, start + 2 * l:] = rest[start:]
        where.append((l, start, start + l))
    return rows, where


def other_batches(seed, size=ti.BATCH, lengths=ti.LENGTHS):
    """A function of the step giving a fresh batch of other_rows, for ti.train_copying's stream."""
    rng = np.random.default_rng(OTHER_SEED + seed)
    return lambda step: ti.as_batch(other_rows(rng, size, lengths=lengths)[0])


def held_out(kind, lengths=ti.LENGTHS):
    """The held-out rows of one kind ("filler", "block" or "either"), never trained on."""
    return other_rows(np.random.default_rng(MEASURE_SEED), MEASURE_ROWS, kind, lengths)


def rounded(values, digits=4):
    return [round(float(v), digits) for v in values]


def one_run(seed, setting, steps):
    """Train one model; what the lab needs of it, rounded as stored."""
    options = dict(SETTINGS[setting])
    stream = other_batches(seed, lengths=options.get("lengths", ti.LENGTHS)) \
        if options.pop("other_batches", False) else None
    n_head = options.get("n_head", 1)
    start = time.perf_counter()
    run = ti.train_copying(seed, steps=steps, every=EVERY, stream=stream, **options)
    seconds = time.perf_counter() - start
    params = run["params"]
    finals = {place: round(ti.copy_losses(params, n_head, *held_out(kind))[1], 4)
              for place, kind in PLACES.items()}
    rows, where = held_out("either")
    scores = ti.head_scores(params, n_head, rows, where)
    out = {"seed": seed, "setting": setting, "steps": run["steps"],
           "first": rounded(run["first"]), "second": rounded(run["second"]),
           "drop": ti.drop_step(run["steps"], run["second"]),
           "fall": ti.drop_step(run["steps"], run["second"], level=ti.FALL_LEVEL),
           "final": finals, "final_second": finals["both"],
           "final_first": round(ti.copy_losses(params, n_head, rows, where)[0], 4),
           "previous": [rounded(layer) for layer in scores["previous"]],
           "induction": [rounded(layer) for layer in scores["induction"]],
           "ablated": [rounded(layer) for layer in ti.ablation_losses(params, n_head, rows, where)],
           "seconds": round(seconds, 1)}
    weights = ti.attention_weights(params, n_head, ti.as_batch(rows)[0])
    out["offsets"] = rounded(ti.attention_by_offset(weights[0][0])[:6], 3)    # block 1, head 1
    if options.get("n_layer") == 2:
        out["composition"] = {k: rounded(v) for k, v in ti.composition_losses(params, rows, where).items()}
        out["ov"] = {k: round(v, 4) for k, v in ti.ov_copying(params, rows, where).items()}
        out["one_back"] = {k: rounded(v) for k, v in ti.one_back_losses(params, rows, where).items()}
    if "lengths" in options:                # measured on its own rows too
        out["own_second"] = round(ti.copy_losses(params, n_head, *held_out("either", options["lengths"]))[1], 4)
    return out


def write_checkpoint(folder=ROOT / "data" / "induction_model"):
    run = ti.train_copying(ti.COPY_SEED, steps=ti.STEPS)
    return tg.save_gpt2(folder, run["params"], n_head=1, overwrite=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=ti.STEPS)
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
            print(f"{setting:>26}  seed {seed}: drop at {r['drop']}, second copy "
                  + ", ".join(f"{k} {v:.3f}" for k, v in r["final"].items())
                  + f", {r['seconds']:.1f} s", flush=True)
    sweep = {"steps": args.steps, "every": EVERY, "lr": ti.LR, "batch": ti.BATCH, "d": ti.D,
             "warmup": args.steps // 20, "decay": "cosine to lr / 10", "clip": ti.CLIP,
             "vocab": ti.COPY_VOCAB, "lengths": list(ti.LENGTHS), "seeds": list(range(args.seeds)),
             "measure": {"seed": MEASURE_SEED, "rows": MEASURE_ROWS, "generator": "other_rows"},
             "settings": {name: {k: list(v) if isinstance(v, tuple) else v for k, v in o.items()}
                          for name, o in SETTINGS.items() if name in args.settings},
             "runs": runs}
    args.out.write_text(json.dumps(sweep, indent=1) + "\n", encoding="utf-8")
    print("wrote", args.out, f"({np.sum([r['seconds'] for r in runs]):.0f} s of training)")


if __name__ == "__main__":
    main()
