"""Plant known bugs one at a time and check that the suite still catches each.

    python tests/plant_bugs.py [--only WORD] [--jobs 2] [--tests-only]

For each plant: copy the work tree (without .git and .venv) to a scratch folder, apply the
plant's exact-text edits there, run only the tests meant to catch it (plus, where named,
the notebook that shows it under nbval), and report caught (some test failed) or missed.
An edit whose old text is not found is reported as "stale": the code moved, update the
plant. Not collected by pytest (no test_ prefix); run it before trusting a cut of the suite.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The tests that should catch a plant in the model's code and in the training code (a file
# that does not exist in the tree planted into is left out).
MODEL = ["tests/test_toy_model.py", "tests/test_forward_combinations.py"]
TRAINING = ["tests/test_training.py", "tests/test_training_general.py", "tests/test_lab08_stats.py"]

# (description, [(file, exact old text, new text), ...], [tests that should catch it])
PLANTS = [
    ("softmax without the max shift",
     [("toy_model.py", "e = np.exp(z - z.max(axis=axis, keepdims=True))", "e = np.exp(z)")],
     MODEL),
    ("LayerNorm with the sample variance",
     [("toy_model.py", "var = x.var(axis=-1, keepdims=True)", "var = x.var(axis=-1, ddof=1, keepdims=True)")],
     MODEL),
    ("LayerNorm without eps",
     [("toy_model.py", "return g * (x - mean) / np.sqrt(var + eps) + b", "return g * (x - mean) / np.sqrt(var) + b")],
     MODEL),
    ("causal mask off by one (each row sees the next token)",
     [("toy_model.py", "return np.tri(n, dtype=bool)", "return np.tri(n, 1, dtype=bool)")],
     MODEL),
    ("GELU constant wrong",
     [("toy_model.py", "(x + 0.044715 * x * x * x)", "(x + 0.0447 * x * x * x)")],
     MODEL),
    ("attention scaled by d_head instead of its square root",
     [("toy_model.py", "/ q.shape[-1] ** 0.5    # [m, n]", "/ q.shape[-1]    # [m, n]")],
     MODEL),
    ("top-p drops the token that crosses the threshold",
     [("toy_model.py", "before = np.cumsum(p[order]) - p[order]", "before = np.cumsum(p[order])")],
     MODEL),
    ("top-k keeps k + 1 tokens",
     [("toy_model.py", "p[order[int(top_k):]] = 0.0", "p[order[int(top_k) + 1:]] = 0.0")],
     MODEL),
    ("temperature applied after the filters",
     [("toy_model.py", "p = softmax(np.maximum((z - z.max()) / temperature, -1e300))",
       "p = softmax(z - z.max())"),
      ("toy_model.py", "        p = p / p.sum()\n    return p\n",
       "        p = p / p.sum()\n    p = p ** (1 / temperature)\n    return p / p.sum()\n")],
     MODEL),
    ("generate produces one token too many",
     [("toy_model.py", "and len(steps) < max_new:", "and len(steps) <= max_new:")],
     MODEL),
    ("the cached position at 0 (KV cache's position offset ignored)",
     [("toy_model.py", 'params["wte"], params["wpe"], start)', 'params["wte"], params["wpe"], 0)')],
     MODEL),
    ("cross-entropy graded against the input instead of the next token",
     [("toy_train.py", "ids[i, :len(seq) - 1], targets[i, :len(seq) - 1] = seq[:-1], seq[1:]",
       "ids[i, :len(seq) - 1], targets[i, :len(seq) - 1] = seq[:-1], seq[:-1]")],
     TRAINING),
    ("wrong gradient for the tied wte (unembedding's part left out)",
     [("toy_train.py", '"wte": dwte + dw_u.T if tied else dwte', '"wte": dwte')],
     TRAINING),
    ("held-out loss computed on the training text",
     [("toy_train.py", "held_history.append(cross_entropy(forward(held[0], params, n_head), held[1]))",
       "held_history.append(cross_entropy(forward(ids, params, n_head), targets))")],
     TRAINING),
    ("Adam without bias correction",
     [("toy_train.py", "c1, c2 = 1 - b1 ** t, 1 - b2 ** t", "c1, c2 = 1, 1")],
     TRAINING),
    ("per-weight gradient clipping instead of the global norm",
     [("toy_train.py", "return tree_map(lambda g: g * (max_norm / norm), grads), norm",
       "return tree_map(lambda g: g * min(1.0, max_norm / max(float(np.sqrt((g * g).sum())), 1e-30)),"
       " grads), norm")],
     TRAINING),
    ("early stopping returns the last step instead of the best",
     [("toy_train.py", "return (best[2] if early_stopping else params), history", "return params, history")],
     TRAINING),
    ("induction score one position off",
     [("toy_induction.py", "picked = [weights[r, i, i - l + 1]", "picked = [weights[r, i, i - l]")],
     ["tests/test_lab10.py"]),
    ("BPE training's tie rule reversed",
     [("toy_gpt2.py", 'max(pairs if ties == "first" else reversed(pairs), key=pairs.get)',
       'max(reversed(pairs) if ties == "first" else pairs, key=pairs.get)')],
     ["tests/test_gpt2_tokenizer.py", "tests/test_gpt2_lab.py"]),
    ("the logit playground one step behind (draws the state before the move)",
     [("toy_widgets/nb06_output.py",
       "            set_logit(value)\n            state.set(typed, \"\")                # the box is empty or shows what is applied\n            update()",
       "            update()\n            set_logit(value)\n            state.set(typed, \"\")")],
     ["tests/test_nb_06_output.py", "tests/test_widgets_combinations.py"]),
    ("the logit shift draws the unshifted logits",
     [("toy_widgets/nb06_output.py", "        z_chart.set(z, highlight=top)", "        z_chart.set(z0, highlight=top)")],
     ["tests/test_nb_06_output.py", "tests/test_widgets_combinations.py"]),
    # The project's own earlier plant (benchmarks/RESULTS.md, 2026-12-06): the browser
    # edition without matplotlib's font list; caught by the lite test (slow, needs Chromium).
    ("browser edition ships no font list",
     [("tools/build_lite.py", "        files[FONT_LIST] = font_list(runtime, official)", "        pass")],
     ["tests/test_lite.py"]),
]


def scratch_copy(into: Path) -> None:
    shutil.copytree(ROOT, into, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache",
                                                  ".hypothesis"))


def run_plant(plant, only_tests=False):
    description, edits, tests = plant
    with tempfile.TemporaryDirectory(prefix="plant-") as tmp:
        tree = Path(tmp) / "tree"
        scratch_copy(tree)
        for file, old, new in edits:
            path = tree / file
            text = path.read_text()
            if text.count(old) != 1:
                return description, "stale", f"{file}: old text found {text.count(old)} times", 0.0
            path.write_text(text.replace(old, new))
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTEST_XDIST_WORKER", None)
        tests = [t for t in tests if (tree / t.split("::")[0]).exists()]
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "--tb=line", "-p", "no:cacheprovider",
               "-n", "0", *tests]
        t0 = os.times()
        out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
        t1 = os.times()
        cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
        lines = [l for l in out.stdout.splitlines() if l.strip()]
        first = next((l for l in lines if l.startswith("FAILED") or "Error" in l or l.startswith("/")), "")
        if out.returncode == 1:
            return description, "caught", first[:160], cpu
        if out.returncode == 0:
            return description, "MISSED", lines[-1] if lines else "", cpu
        return description, f"error {out.returncode}", (lines[-1] if lines else out.stderr[-300:]), cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="plants whose description contains this")
    parser.add_argument("--skip", help="plants whose description contains this are skipped")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--root", type=Path, help="the tree to plant into (default: this one)")
    args = parser.parse_args()
    global ROOT
    ROOT = args.root.resolve() if args.root else ROOT
    plants = [p for p in PLANTS if (not args.only or args.only in p[0])
              and not (args.skip and args.skip in p[0])]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(run_plant, plants))
    missed = 0
    for description, verdict, detail, cpu in results:
        missed += verdict != "caught"
        print(f"{verdict:8} {cpu:6.1f}s  {description}\n                  {detail}")
    print(f"{len(results) - missed} caught, {missed} not caught, of {len(results)}")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
