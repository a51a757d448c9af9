"""How fast the course's numpy forward pass runs GPT-2 small, beside PyTorch.

GPT-2 small's shapes (12 blocks, 12 heads, d = 768, 50,257 tokens, 1,024 positions) with
random float32 weights, tied like GPT-2's (tg.gpt2_small_shapes, as lab 09 uses); no download. It measures, with toy_model:

- one forward pass over 5 and over 64 tokens (all the logits, as GPT2LMHeadModel computes),
  with the loader's read-only weights and with the same weights as a plain dict of arrays;
- greedy generation of 20 tokens after a 5-token prompt with the KV cache (tm.forward with a
  cache, as tm.generate(..., cache=True) runs it): the first step runs the prompt, each
  later step one token, the figure called "a cached step" (the median of steps 2 to 20);
- with --uncached, the same generation without a cache (every step reruns the whole context);
- the memory a forward pass allocates, beside the weights' size (no copies of the weights).

When PyTorch and transformers are installed (a benchmark extra, never a course requirement),
transformers' GPT2LMHeadModel is built from a GPT2Config (nothing is downloaded: the hub is
switched off) with the same weights, and timed the same way on the CPU with the same number
of threads, under torch.inference_mode(); the two models' logits are compared. The two take
turns: each round measures every figure of both, after a pause and one untimed run, so both
meet the same load on a shared machine; the figures are medians over the rounds, and the
ratio numpy / PyTorch of each figure is given with its spread over the rounds. Issue 28's
target: at most 1.0 on the forward passes and the cached step. PyTorch in a venv of its own,
outside the repository (the CPU build; plain `pip install torch` brings CUDA's):

    python3 -m venv /work/torchvenv
    /work/torchvenv/bin/pip install torch==2.13.0 numpy==2.4.6 transformers==5.24.0 regex
    PYTHONPATH=. /work/torchvenv/bin/python benchmarks/gpt2.py --threads 2 [--repeats 7]

    .venv/bin/python benchmarks/gpt2.py [--threads 2] [--repeats 7] [--uncached]  # numpy only
"""
import argparse
import os
import sys

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for numpy's BLAS and for PyTorch (default: all cores)")
parser.add_argument("--repeats", type=int, default=7, help="rounds of taking turns (medians are kept)")
parser.add_argument("--uncached", action="store_true", help="also generate without a cache (slow)")
args = parser.parse_args()
for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = str(args.threads)          # before numpy starts its thread pool
os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"   # never the hub

import inspect  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toy_model as tm  # noqa: E402
import toy_gpt2 as tg  # noqa: E402
from hf_gpt2 import hf_model  # noqa: E402

N_NEW = 20
PROMPT = [464, 3797, 19496, 262, 9753]            # any 5 ids below 50,257
FIGURES = {"fwd5": "forward, 5 tokens", "fwd64": "forward, 64 tokens",
           "step": "a cached step (one token)", "uncached": "generation without a cache, per token"}


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def generation(step, n_new):
    """The time of each of the n_new steps of one greedy generation."""
    times, state = [], None
    for k in range(n_new):
        start = time.perf_counter()
        state = step(k, state)
        times.append(time.perf_counter() - start)
    return times


def take_turns(contenders, repeats):
    """Measure each contender in turn, `repeats` rounds, so that all of them meet the same
    load on a shared machine; returns each one's list of results, one per round. Before
    each measurement, a pause and one untimed run of the same contender: numpy's and
    PyTorch's worker threads keep spinning for a moment after their work, and would slow
    the other down."""
    rounds = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, measure in contenders.items():
            time.sleep(0.3)
            measure()
            rounds[name].append(np.atleast_1d(measure()))
    return rounds


def figures(rounds, prefix=""):
    """{figure: its value in each round}: a forward pass's time; a cached step's, the
    median of the generation's steps after the first; a step without a cache, the mean."""
    out = {key: np.array([r[0] for r in rounds[prefix + key]]) for key in ("fwd5", "fwd64")}
    out["first"] = np.array([r[0] for r in rounds[prefix + "cached"]])
    out["step"] = np.array([np.median(r[1:]) for r in rounds[prefix + "cached"]])
    if prefix + "uncached" in rounds:
        out["uncached"] = np.array([np.mean(r) for r in rounds[prefix + "uncached"]])
    return out


def report(name, fig):
    print(f"\n{name}: medians over {len(fig['fwd5'])} rounds (fastest and slowest round)")
    for key, label in (*FIGURES.items(), ("first", "generation's first step (the prompt)")):
        if key in fig:
            ms = fig[key] * 1e3
            print(f"  {label:40} {np.median(ms):7.1f} ms  ({ms.min():.1f} to {ms.max():.1f})")


def numpy_steps(params, cache):
    def step(k, state):
        ids, kv = state if state else (list(PROMPT), [])
        if cache:
            logits = tm.forward(ids[-1:] if kv else ids, params, 12, cache=kv)
        else:
            logits = tm.forward(ids, params, 12)
        ids.append(int(np.argmax(logits[-1])))
        return ids, kv
    return step


def torch_steps(model, torch, cache):
    kv = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    def step(k, state):
        ids, past = state if state else (torch.tensor([PROMPT]), None)
        with torch.inference_mode():
            if cache:
                out = model(ids[:, -1:] if past is not None else ids, use_cache=True, **{kv: past})
                past = out[kv]
            else:
                out = model(ids, use_cache=False)
            ids = torch.cat([ids, out.logits[:, -1:].argmax(-1)], dim=1)
        return ids, past
    return step


def main():
    print(f"GPT-2 small's shapes, random float32 weights; {args.threads} threads; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}; {args.repeats} rounds; "
          "load average before: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    params = tg.gpt2_small_shapes()
    weight_bytes = 4 * tg.count_params(params)
    tracemalloc.start()
    tm.forward(list(range(64)), params, 12)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"weights: {weight_bytes / 2**20:.0f} MiB; one forward pass over 64 tokens allocates "
          f"at most {peak / 2**20:.1f} MiB")
    full = tm.forward(PROMPT + [1, 2], params, 12)
    kv = []
    tm.forward(PROMPT, params, 12, cache=kv)
    tm.forward([1], params, 12, cache=kv)
    print("numpy, two cached steps against the full pass: largest difference "
          f"{np.abs(tm.forward([2], params, 12, cache=kv)[-1] - full[-1]).max():.1e}")

    plain = tm.tree_map(np.array, params)          # a learner's own dict: writable copies
    contenders = {}
    for prefix, weights in (("", params), ("plain ", plain)):
        contenders.update({
            prefix + "fwd5": lambda w=weights: timed(lambda: tm.forward(PROMPT, w, 12)),
            prefix + "fwd64": lambda w=weights: timed(lambda: tm.forward(list(range(64)), w, 12)),
            prefix + "cached": lambda w=weights: generation(numpy_steps(w, cache=True), N_NEW)})
    if args.uncached:
        contenders["uncached"] = lambda: generation(numpy_steps(params, cache=False), N_NEW)
    try:
        import torch
        import transformers
    except ImportError:
        torch = None
        print("\nPyTorch or transformers is not installed: no comparison (see this script's "
              "docstring for a venv that has them).")
    if torch is not None:
        torch.set_num_threads(args.threads)
        transformers.logging.set_verbosity_error()
        model = hf_model(params, torch, transformers, n_head=12)
        with torch.inference_mode():
            theirs = model(torch.tensor([PROMPT + [1, 2]])).logits[0].numpy()
        print(f"largest difference between the two models' logits: {np.abs(theirs - full).max():.1e}"
              f" (transformers' attention: {model.config._attn_implementation})")

        def torch_forward(ids):
            with torch.inference_mode():
                model(torch.tensor([ids]), use_cache=False)
        contenders.update({
            "torch fwd5": lambda: timed(lambda: torch_forward(PROMPT)),
            "torch fwd64": lambda: timed(lambda: torch_forward(list(range(64)))),
            "torch cached": lambda: generation(torch_steps(model, torch, cache=True), N_NEW)})
        if args.uncached:
            contenders["torch uncached"] = lambda: generation(
                torch_steps(model, torch, cache=False), N_NEW)
    rounds = take_turns(contenders, args.repeats)
    ours, own = figures(rounds), figures(rounds, "plain ")
    report("numpy (toy_model.forward, with and without its cache), the loader's read-only weights", ours)
    report("numpy, the same weights as a plain dict of arrays (a learner's own)", own)
    if torch is None:
        return
    theirs = figures(rounds, "torch ")
    report(f"PyTorch {torch.__version__} + transformers {transformers.__version__} "
           f"(GPT2LMHeadModel, CPU, {torch.get_num_threads()} threads, inference_mode)", theirs)
    print("\nnumpy time / PyTorch time, of the medians (over the rounds: lowest to highest; "
          "the course's target: at most 1.0 on the first three):")
    for weights, mine in (("read-only", ours), ("plain dict", own)):
        for key, label in FIGURES.items():
            if key in mine:
                per_round = mine[key] / theirs[key]
                print(f"  {weights:10} {label:40} {np.median(mine[key]) / np.median(theirs[key]):.2f}  "
                      f"({per_round.min():.2f} to {per_round.max():.2f})")
    print("load average after: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
