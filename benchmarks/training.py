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
     63 characters, batches of 32 windows, float32): the course's step beside two PyTorch
     steps of the same model (the same weights and batch; loss, backward, torch.optim.Adam):
     transformers' GPT2LMHeadModel (as benchmarks/gpt2.py compares the forward pass) and a
     lean hand-written one (F.scaled_dot_product_attention, fused GELU). They take turns,
     with --threads threads each (default: every core, as the lab runs), timed by the wall
     clock; toy_writes.keep_freed_memory() is on for all three (one process), unless
     --freeing. PyTorch is not a dependency of the course: run this file with a Python that
     has torch and transformers (a venv outside the repository), e.g.

         python3 -m venv /work/torchvenv
         /work/torchvenv/bin/pip install torch==2.13.0 numpy==2.4.6 transformers==5.24.0
         PYTHONPATH=. /work/torchvenv/bin/python benchmarks/training.py --lab11 --threads 2

     Without torch the table gives numpy's column alone. --lab11 runs table 4 only.

This is a script, not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--repeats", type=int, default=30, help="steps timed per figure")
parser.add_argument("--lab11", action="store_true", help="table 4 only (lab 11's shapes)")
parser.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for numpy's BLAS and for PyTorch (default: all cores)")
parser.add_argument("--freeing", action="store_true",
                    help="table 4: leave glibc's default (freed memory goes back at once)")
args = parser.parse_args()
for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = str(args.threads)              # before numpy starts its thread pool
os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"   # never the hub

import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toy_model as tm  # noqa: E402
import toy_train as tt  # noqa: E402
import toy_writes as tx  # noqa: E402
from hf_gpt2 import hf_model  # noqa: E402


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


def lab11_table(repeats, threads, keep, rounds=5):
    """Table 4: one training step on lab 11's shapes, numpy beside PyTorch, taking turns."""
    recipe, n_head = tx.RECIPE, tx.RECIPE["n_head"]
    if keep:
        tx.keep_freed_memory()
    params = tx.new_char_model(0)
    ids = np.random.default_rng(0).integers(0, tx.N_CHARS, (recipe["batch"], recipe["n_ctx"] + 1))
    x, y = ids[:, :-1], ids[:, 1:]
    try:
        import torch
        import transformers
    except ImportError:
        torch = None
    state = {"np": (params, None)}

    def timed(step):
        if step in (halves_step,):                      # its threads, for these steps only
            with tx.training_threads() as state["pool"]:
                return timed_steps(step)
        return timed_steps(step)

    def timed_steps(step):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    def numpy_step():
        p, s = state["np"]
        _, grads = tt.loss_and_grads(x, y, p, n_head)
        state["np"] = tt.adam_step(p, grads, s, 1e-3)

    def fast_step():
        p, s = state["fast"]
        _, grads = tx.fast_loss_and_grads(x, y, p, n_head)
        state["fast"] = tt.adam_step(p, grads, s, 1e-3)

    def halves_step():                              # as tx.adam_run: Adam on one vector
        w, p, s = state["halves"]
        _, grads = tx.halves_loss_and_grads(x, y, p, n_head, state["pool"])
        state["halves"] = w, p, tx.adam_in_place(w, tx.as_vector(grads, p), s, 1e-3)

    state["fast"] = (params, None)
    w = tx.as_vector(params, params)
    state["halves"] = (w, tx.from_vector(w, params), None)
    contenders = {"numpy, lab 11's step (tx.halves_loss_and_grads, tx.adam_in_place)": halves_step,
                  "numpy, lab 11's step unsplit (tx.fast_loss_and_grads)": fast_step,
                  "numpy, lab 08's functions (tt.loss_and_grads)": numpy_step}
    first = [f"numpy {tt.loss_and_grads(x, y, params, n_head)[0]:.6f}",
             f"fast {tx.fast_loss_and_grads(x, y, params, n_head)[0]:.6f}"]
    if torch is not None:
        torch.set_num_threads(threads)
        transformers.logging.set_verbosity_error()
        F = torch.nn.functional
        tx_ids, ty = torch.tensor(x), torch.tensor(y)
        hf = hf_model(params, torch, transformers, n_head).train()     # dropout is 0
        lean_loss, lean_leaves = torch_model(params, torch, n_head)

        def hf_loss(ids, targets):
            logits = hf(ids, use_cache=False).logits
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

        for name, loss_fn, leaves in (
                ("PyTorch, transformers' GPT2LMHeadModel", hf_loss, list(hf.parameters())),
                ("PyTorch, hand-written (SDPA and fused GELU)", lean_loss, lean_leaves)):
            opt = torch.optim.Adam(leaves, lr=1e-3)

            def torch_step(loss_fn=loss_fn, opt=opt):
                opt.zero_grad(set_to_none=True)
                loss_fn(tx_ids, ty).backward()
                opt.step()
            contenders[name] = torch_step
            first.append(f"{name.split(', ')[1]} {float(loss_fn(tx_ids, ty).detach()):.6f}")
        print(f"\n   the first step's loss: {'; '.join(first)} (torch {torch.__version__}, "
              f"transformers {transformers.__version__}, {torch.get_num_threads()} threads)")
    for step in contenders.values():                     # warm up every contender
        timed(step)
    figures = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, step in contenders.items():
            figures[name].append(timed(step))
    tokens = recipe["batch"] * recipe["n_ctx"]
    weights = sum(np.size(tm.get_weight(params, n)) for n in tm.weight_names(params))
    print(f"\n4. Lab 11's shapes: {weights:,} weights, batch {recipe['batch']} x {recipe['n_ctx']} = "
          f"{tokens:,} characters, float32, {threads} thread(s), wall-clock time, median of "
          f"{repeats} steps, {rounds} rounds taking turns, freed memory "
          f"{'kept' if keep else 'given back (glibc default)'}, load average {os.getloadavg()[0]:.1f}:")
    rows = [[name, f"{np.median(t) * 1e3:.1f}", f"{min(t) * 1e3:.1f}-{max(t) * 1e3:.1f}",
             f"{recipe['steps'] * np.median(t):.0f}"] for name, t in figures.items()]
    print(table(rows, ["step", "ms/step", "rounds", f"s for {recipe['steps']} steps"]))
    names = list(figures)
    for mine in names[:3]:
        for theirs in names[3:]:
            ratio = np.array(figures[mine]) / np.array(figures[theirs])
            print(f"   {mine.split(' (')[0]} / {theirs.split(' (')[0]}: {np.median(ratio):.2f} "
                  f"(rounds {ratio.min():.2f}-{ratio.max():.2f})")
    if torch is None:
        print("   PyTorch or transformers is not installed in this Python: see the docstring.")


def main():
    print(f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if args.lab11:
        lab11_table(args.repeats, args.threads, not args.freeing)
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
    lab11_table(args.repeats, args.threads, not args.freeing)


if __name__ == "__main__":
    main()
