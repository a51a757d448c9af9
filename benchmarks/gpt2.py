"""How fast the course's numpy forward pass runs GPT-2 small, beside PyTorch.

GPT-2 small's shapes (12 blocks, 12 heads, d = 768, 50,257 tokens, 1,024 positions) with
random float32 weights, tied like GPT-2's (tg.gpt2_small_shapes, as lab 09 uses); no download. It measures, with toy_model:

- one forward pass over 5 and over 64 tokens (all the logits, as GPT2LMHeadModel computes);
- greedy generation of 20 tokens after a 5-token prompt, with the KV cache
  (tm.forward with a cache, as tm.generate(..., cache=True) runs it) and without it (every
  step reruns the whole context): tokens per
  second, and the time of each new token as the context grows;
- the memory a forward pass allocates, beside the weights' size (no copies of the weights).

When PyTorch and transformers are installed (a benchmark extra, not a course requirement:
`pip install torch transformers`), the same weights, saved with tg.save_gpt2 and opened by
GPT2LMHeadModel.from_pretrained, are timed the same way on the CPU with the same number of
threads, and the two models' logits are compared.

    .venv/bin/python benchmarks/gpt2.py [--threads 2] [--repeats 7]
"""
import argparse
import os
import sys

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for numpy's BLAS and for PyTorch (default: all cores)")
parser.add_argument("--repeats", type=int, default=5, help="timed runs per figure (the best is kept)")
args = parser.parse_args()
for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = str(args.threads)          # before numpy starts its thread pool

import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toy_model as tm  # noqa: E402
import toy_gpt2 as tg  # noqa: E402

N_NEW = 20
PROMPT = [464, 3797, 19496, 262, 9753]            # any 5 ids below 50,257


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


def best_of(contenders, repeats):
    """Measure each contender in turn, `repeats` rounds, so that all of them meet the same
    load on a shared machine; keep each one's best (step by step for a generation): the
    figure least disturbed by whatever else the machine runs. Before each measurement,
    a pause and one untimed run of the same contender: numpy's and PyTorch's worker
    threads keep spinning for a moment after their work, and would slow the other down."""
    rounds = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, measure in contenders.items():
            time.sleep(0.3)
            measure()
            rounds[name].append(np.atleast_1d(measure()))
    return {name: np.min(results, axis=0) for name, results in rounds.items()}


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
    def step(k, state):
        ids, past = state if state else (torch.tensor([PROMPT]), None)
        with torch.no_grad():
            if cache:
                out = model(ids[:, -1:] if past is not None else ids, past_key_values=past,
                            use_cache=True)
                past = out.past_key_values
            else:
                out = model(ids, use_cache=False)
        ids = torch.cat([ids, out.logits[:, -1:].argmax(-1)], dim=1)
        return ids, past
    return step


def report(name, fwd5, fwd64, cached, uncached):
    print(f"\n{name}")
    print(f"  forward,  5 tokens: {fwd5 * 1e3:7.1f} ms")
    print(f"  forward, 64 tokens: {fwd64 * 1e3:7.1f} ms")
    for label, times in (("with the KV cache", cached), ("without a cache", uncached)):
        total = sum(times)
        per = ", ".join(f"{len(PROMPT) + k}: {times[k] * 1e3:.0f}" for k in (0, 1, 5, 10, 15, 19))
        print(f"  generate {N_NEW}, {label}: {total:5.2f} s, {N_NEW / total:5.1f} tokens/s; "
              f"ms per token by context length: {per}")
    return {"fwd5": fwd5, "fwd64": fwd64, "cached": sum(cached) / N_NEW,
            "uncached": sum(uncached) / N_NEW}


def main():
    print(f"GPT-2 small's shapes, random float32 weights; {args.threads} threads; "
          f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}; best of {args.repeats} runs; load average before: "
          + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    params = tg.gpt2_small_shapes()
    weight_bytes = 4 * tg.count_params(params)
    tracemalloc.start()
    tm.forward(list(range(64)), params, 12)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"weights: {weight_bytes / 2**20:.0f} MiB; one forward pass over 64 tokens allocates "
          f"at most {peak / 2**20:.1f} MiB")

    contenders = {
        "fwd5": lambda: timed(lambda: tm.forward(PROMPT, params, 12)),
        "fwd64": lambda: timed(lambda: tm.forward(list(range(64)), params, 12)),
        "cached": lambda: generation(numpy_steps(params, cache=True), N_NEW),
        "uncached": lambda: generation(numpy_steps(params, cache=False), N_NEW)}
    try:
        import torch
        import transformers
    except ImportError:
        torch = None
        print("\nPyTorch or transformers is not installed: no comparison "
              "(pip install torch transformers to add it).")
    if torch is not None:
        torch.set_num_threads(args.threads)
        folder = tg.save_gpt2(tempfile.mkdtemp(), params, n_head=12)
        transformers.logging.set_verbosity_error()
        model = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
        with torch.no_grad():
            theirs_logits = model(torch.tensor([PROMPT])).logits[0].numpy()
        print(f"largest difference between the two models' logits: "
              f"{np.abs(theirs_logits - tm.forward(PROMPT, params, 12)).max():.1e}")

        def torch_forward(ids):
            with torch.no_grad():
                model(torch.tensor([ids]), use_cache=False)
        contenders.update({
            "torch fwd5": lambda: timed(lambda: torch_forward(PROMPT)),
            "torch fwd64": lambda: timed(lambda: torch_forward(list(range(64)))),
            "torch cached": lambda: generation(torch_steps(model, torch, cache=True), N_NEW),
            "torch uncached": lambda: generation(torch_steps(model, torch, cache=False), N_NEW)})
    best = best_of(contenders, args.repeats)
    ours = report("numpy (toy_model.forward, with and without its cache)", best["fwd5"][0], best["fwd64"][0],
                  best["cached"], best["uncached"])
    if torch is None:
        return
    theirs = report(
        f"PyTorch {torch.__version__} + transformers {transformers.__version__} "
        f"(GPT2LMHeadModel, CPU, {torch.get_num_threads()} threads)",
        best["torch fwd5"][0], best["torch fwd64"][0], best["torch cached"],
        best["torch uncached"])
    print("\nnumpy time / PyTorch time (target: at most 1.5 on each):")
    for key, label in (("fwd5", "forward, 5 tokens"), ("fwd64", "forward, 64 tokens"),
                       ("cached", "generation with the cache, per token"),
                       ("uncached", "generation without a cache, per token")):
        print(f"  {label:38} {ours[key] / theirs[key]:.2f}")
    print("load average after: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
