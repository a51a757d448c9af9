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
     context, 16 texts per batch), where attention's n x n scores start to count;
  4. lab 11's shapes (toy_writes.RECIPE: d 64, 4 blocks of 4 heads, MLP 256, context 64,
     63 characters, batches of 32 windows, float32): the course's step beside PyTorch's
     step of the same model (the same weights and batch; loss, backward, torch.optim.Adam),
     taking turns, one thread each. PyTorch is not a dependency of the course: run this
     file with a Python that has both (a venv outside the repository), e.g.

         python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
         OPENBLAS_NUM_THREADS=1 PYTHONPATH=. /tmp/torchvenv/bin/python benchmarks/training.py --lab11

     Without torch the table gives numpy's column alone. --lab11 runs table 4 only.

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
import toy_writes as tx  # noqa: E402


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


def torch_model(params, torch, n_head):
    """The same GPT-2 in PyTorch, from the course's weights (copied): a function of (ids,
    targets) giving the loss, and the list of leaf tensors Adam moves."""
    F = torch.nn.functional
    leaves = {name: torch.tensor(np.array(tm.get_weight(params, name)), requires_grad=True)
              for name in tm.weight_names(params)}

    def ln(x, prefix):
        return F.layer_norm(x, x.shape[-1:], leaves[f"{prefix}.g"], leaves[f"{prefix}.b"], 1e-5)

    def loss(ids, targets):
        B, n = ids.shape
        x = leaves["wte"][ids] + leaves["wpe"][:n]
        for i in range(len(params["blocks"])):
            p = f"blocks.{i}"
            a = ln(x, f"{p}.ln_1")
            q, k, v = (a @ leaves[f"{p}.attn.c_attn.w"] + leaves[f"{p}.attn.c_attn.b"]).split(x.shape[-1], -1)
            q, k, v = (t.view(B, n, n_head, -1).transpose(1, 2) for t in (q, k, v))
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            att = att.transpose(1, 2).reshape(B, n, -1)
            x = x + att @ leaves[f"{p}.attn.c_proj.w"] + leaves[f"{p}.attn.c_proj.b"]
            u = ln(x, f"{p}.ln_2")
            h = F.gelu(u @ leaves[f"{p}.mlp.c_fc.w"] + leaves[f"{p}.mlp.c_fc.b"], approximate="tanh")
            x = x + h @ leaves[f"{p}.mlp.c_proj.w"] + leaves[f"{p}.mlp.c_proj.b"]
        logits = ln(x, "ln_f") @ leaves["w_u"]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return loss, list(leaves.values())


def lab11_table(repeats, rounds=5):
    """Table 4: one training step on lab 11's shapes, numpy beside PyTorch, taking turns."""
    recipe = tx.RECIPE
    params = tx.new_char_model(0)
    ids = np.random.default_rng(0).integers(0, tx.N_CHARS, (recipe["batch"], recipe["n_ctx"] + 1))
    x, y = ids[:, :-1], ids[:, 1:]
    try:
        import torch
    except ImportError:
        torch = None
    ours, theirs = [], []
    state = {"np": (params, None)}

    def numpy_steps():
        p, s = state["np"]
        times = []
        for i in range(repeats):
            start = time.process_time()
            _, grads = tt.loss_and_grads(x, y, p, recipe["n_head"])
            p, s = tt.adam_step(p, grads, s, 1e-3)
            times.append(time.process_time() - start)
        state["np"] = (p, s)
        return float(np.median(times))

    if torch is not None:
        torch.set_num_threads(1)
        loss_fn, leaves = torch_model(params, torch, recipe["n_head"])
        opt = torch.optim.Adam(leaves, lr=1e-3)
        tx_ids, ty = torch.tensor(x), torch.tensor(y)
        ours_first = tt.loss_and_grads(x, y, params, recipe["n_head"])[0]
        theirs_first = float(loss_fn(tx_ids, ty).detach())
        print(f"\n   the first step's loss: numpy {ours_first:.6f}, PyTorch {theirs_first:.6f} "
              f"(torch {torch.__version__}, {torch.get_num_threads()} thread)")

        def torch_steps():
            times = []
            for _ in range(repeats):
                start = time.process_time()
                opt.zero_grad(set_to_none=True)
                loss_fn(tx_ids, ty).backward()
                opt.step()
                times.append(time.process_time() - start)
            return float(np.median(times))

    numpy_steps()                                        # warm up both
    if torch is not None:
        torch_steps()
    for _ in range(rounds):
        ours.append(numpy_steps())
        if torch is not None:
            theirs.append(torch_steps())
    tokens = recipe["batch"] * recipe["n_ctx"]
    print(f"\n4. Lab 11's shapes: {sum(np.size(tm.get_weight(params, n)) for n in tm.weight_names(params)):,} weights, batch {recipe['batch']} x "
          f"{recipe['n_ctx']} = {tokens:,} characters, float32, one thread, CPU time, "
          f"median of {repeats} steps, {rounds} rounds taking turns, load average "
          f"{os.getloadavg()[0]:.1f}:")
    rows = [["numpy (the course)", f"{np.median(ours) * 1e3:.1f}", f"{min(ours) * 1e3:.1f}-{max(ours) * 1e3:.1f}",
             f"{recipe['steps'] * np.median(ours):.0f}"]]
    if theirs:
        rows.append(["PyTorch", f"{np.median(theirs) * 1e3:.1f}",
                     f"{min(theirs) * 1e3:.1f}-{max(theirs) * 1e3:.1f}", f"{recipe['steps'] * np.median(theirs):.0f}"])
        ratio = np.array(ours) / np.array(theirs)
        print(table(rows, ["step", "CPU ms/step", "rounds", f"s for {recipe['steps']} steps"]))
        print(f"   numpy / PyTorch: {np.median(ratio):.2f} (rounds {ratio.min():.2f}-{ratio.max():.2f})")
    else:
        print(table(rows, ["step", "CPU ms/step", "rounds", f"s for {recipe['steps']} steps"]))
        print("   PyTorch is not installed in this Python: see the docstring.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="steps timed per figure")
    parser.add_argument("--lab11", action="store_true", help="table 4 only (lab 11's shapes)")
    args = parser.parse_args()
    print(f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if args.lab11:
        lab11_table(args.repeats)
        return

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
    lab11_table(args.repeats)


if __name__ == "__main__":
    main()
