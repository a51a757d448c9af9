"""How fast does the toy train? Training steps per second, and how the time of one step
grows with the corpus and with the length of the texts.

One step is what tt.train does each time: the loss and every gradient on the whole batch
(tt.loss_and_grads), then one Adam update (tt.adam_step). Times are medians over
repeated steps of this process's CPU time (time.process_time), which a busy machine
disturbs less than the wall clock; the load average is printed with them.

    python benchmarks/training.py                 # all three tables
    python benchmarks/training.py --repeats 50    # more steps per figure

  1. the lab's run: the toy (d = 4, one block, two heads) on data/corpus.txt, as
     notebooks/08_training.ipynb trains it (600 Adam steps, tied, clipping, the held-out
     loss measured at every step);
  2. the corpus copied 1, 2, 4, ... times (the same sentences, a bigger batch B);
  3. longer texts: random token sequences of n = 8 ... 128 tokens (a toy with a longer
     context, 16 texts per batch), where attention's n x n scores start to count.

This is a script, not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toy_model as tm  # noqa: E402
import toy_train as tt  # noqa: E402


def step_time(ids, targets, params, repeats):
    """Median seconds of one training step (loss, gradients, Adam) on this batch."""
    state, times = None, []
    for _ in range(repeats + 2):
        start = time.process_time()
        _, grads = tt.loss_and_grads(ids, targets, params)
        params, state = tt.adam_step(params, grads, state, 0.05)
        times.append(time.process_time() - start)
    return float(np.median(times[2:]))                  # the first two warm up


def table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="steps timed per figure")
    args = parser.parse_args()
    print(f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")

    corpus = tt.load_corpus()
    ids, targets = tt.corpus_batch(corpus)
    start = time.process_time()
    _, history = tt.train(corpus, steps=600, seed=2, lr=0.05, clip=1.0, tied=True,
                          heldout=tt.load_heldout())
    run = time.process_time() - start
    print(f"\n1. The lab's run: {len(corpus)} texts (batch {ids.shape[0]} x {ids.shape[1]}), "
          f"600 Adam steps with the held-out loss at each in {run:.2f} s of CPU = "
          f"{600 / run:.0f} steps/s (loss {history[0]:.3f} -> {history[-1]:.3f})")

    rows, base = [], None
    for copies in [1, 2, 4, 8, 16, 32]:
        big = corpus * copies
        b_ids, b_targets = tt.corpus_batch(big)
        t = step_time(b_ids, b_targets, tt.init_params(0), args.repeats)
        base = base or t
        rows.append([copies, len(big), int((b_targets >= 0).sum()), f"{t * 1e3:.2f}",
                     f"{t / base:.1f}", f"{1 / t:.0f}"])
    print("\n2. A bigger corpus (the same sentences, copied):")
    print(table(rows, ["copies", "texts B", "tokens graded", "CPU ms/step", "x", "steps/s"]))

    rows, base = [], None
    rng = np.random.default_rng(0)
    for n in [8, 16, 32, 64, 128]:
        params = tt.init_params(0, n_ctx=n)
        seqs = rng.integers(0, len(tm.VOCAB), (16, n + 1))
        t = step_time(seqs[:, :-1], seqs[:, 1:], params, args.repeats)
        base = base or t
        rows.append([n, 16 * n, f"{t * 1e3:.2f}", f"{t / base:.1f}", f"{t / (16 * n) * 1e6:.1f}"])
    print("\n3. Longer texts (16 random texts of n tokens, context n):")
    print(table(rows, ["n", "tokens", "CPU ms/step", "x", "us/token"]))


if __name__ == "__main__":
    main()
