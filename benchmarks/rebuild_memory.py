"""Does re-running a widget's cell leave anything behind in the kernel? Measured.

Builds every widget builder of the course (and an exercise box) again and again in one
notebook cell, as a teacher re-running that cell would: each copy is displayed (its picture
made, its canvas given it), and each old copy stays referenced, as the kernel's output
history references a displayed one. The heap's growth per builder is measured with
tracemalloc (or, with --rss, the process's resident memory) after warm-up builds.

    python benchmarks/rebuild_memory.py                     # 50 rebuilds of each
    python benchmarks/rebuild_memory.py --rebuilds 5 --json
    python benchmarks/rebuild_memory.py --rebuilds 3 --warmup 1 --settle 0 --rss --counts

Target: under 20 MB in all for 50 rebuilds of every builder. With --counts, each rebuild
also counts what is alive (widgets in ipywidgets' registry, figures in matplotlib's list,
matplotlib artists): after the first, a rebuild that leaves nothing behind leaves the
same counts as the one before. The objects alive after the warm-up are then frozen
(gc.freeze), so that each full collection and each count looks only at what the rebuilds
made, and takes a fraction of the time; the warm-up copies, once replaced, stay in memory,
so with --counts the memory figures are not the kernel's.

    python benchmarks/rebuild_memory.py --check             # what CI runs (.ci/run)

--check runs both, each in a process of its own (a small heap, where a full garbage
collection is cheap), and fails (exit 1) unless every rebuild after the first leaves the
same counts as the one before (every builder, 3 rebuilds), and unless three builders (no
plot, a live chart, an exercise) rebuilt 3 times grow the heap at a rate that stays under
20 MB for 50 rebuilds of all 14 builders (before the fix: over 200 MB). The counts catch a
leak of even one widget or artist per rebuild of every widget.
"""
import argparse
import contextlib
import gc
import io
import json
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


class Kernel:
    """The part of ipykernel the widget kit reads: the request being run, with the id of
    its notebook cell (JupyterLab sends it)."""

    def __init__(self):
        self.parent, self.runs = {}, 0

    def run(self, cell_id):
        self.runs += 1
        self.parent = {"header": {"msg_id": f"run-{self.runs}"}, "metadata": {"cellId": cell_id}}

    def get_parent(self, channel=None):
        return self.parent


def builders():
    import toy_gpt2 as tg
    import toy_train as tt
    import toy_widgets as tw
    checkpoint = tg.load_gpt2(tg.save_toy_as_gpt2(tempfile.mkdtemp()))
    corpus = tt.load_corpus()
    made = {name: getattr(tw, name) for name in [
        "tokenizer_widget", "embedding_scatter", "query_picker", "mask_and_heads",
        "block_branches", "logit_playground", "logit_shift", "attention_switch", "tying_switch",
        "temperature_explorer", "generation_stepper"]}
    made["lab_attention"] = lambda: tw.lab_attention(checkpoint)
    made["train_live"] = lambda: (tw.train_live(corpus, steps=2, every=1), tw.train_live.panel)[1]
    made["exercise"] = lambda: tw.exercise("06.3")
    return made


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuilds", type=int, default=50, help="rebuilds of each builder")
    parser.add_argument("--warmup", type=int, default=3, help="builds before tracing starts")
    parser.add_argument("--settle", type=int, default=3, help="traced builds before measuring")
    parser.add_argument("--only", default="", help="comma-separated builders (default: all)")
    parser.add_argument("--rss", action="store_true",
                        help="measure the process's resident memory instead (faster, coarser: "
                             "Linux's /proc/self/statm)")
    parser.add_argument("--counts", action="store_true",
                        help="after each measured rebuild, count live widgets, figures and artists")
    parser.add_argument("--json", action="store_true", help="end with one line of JSON")
    parser.add_argument("--check", action="store_true",
                        help="measure as CI does and fail past the thresholds (see above)")
    args = parser.parse_args(argv)
    if args.check:
        sys.exit(check())
    import matplotlib
    matplotlib.use("module://ipympl.backend_nbagg")
    import toy_model as tm
    import toy_gpt2 as tg
    import toy_train as tt
    import toy_widgets as tw
    from toy_widgets import kit
    kernel = Kernel()
    kit.running_kernel = lambda: kernel                        # what the kit asks at each build
    history, grown, counts = [], {}, {}

    def build(name, make):
        kernel.run(f"cell-{name}")
        with contextlib.redirect_stdout(io.StringIO()):       # train_live displays itself
            root = make()
        root._repr_mimebundle_()
        history.append(root)

    made = builders()
    if args.only:
        made = {name: made[name] for name in args.only.split(",")}
    for name, make in made.items():                     # warm-up: matplotlib's caches fill,
        for _ in range(args.warmup):                    # the first copies are replaced
            build(name, make)
    gc.collect()
    if args.counts:     # what is alive now is left out of every later collection and count:
        gc.freeze()     # each full collection then looks only at what the rebuilds made
    if args.rss:
        import os
        page = os.sysconf("SC_PAGE_SIZE")

        def heap():
            with open("/proc/self/statm") as statm:
                return int(statm.read().split()[1]) * page
    else:
        tracemalloc.start()

        def heap():
            return tracemalloc.get_traced_memory()[0]
    for name, make in made.items():
        for _ in range(args.settle):   # the copies that stay live (the last, and for some plots
            build(name, make)      # matplotlib keeps the one before), allocated while traced:
        gc.collect()               # the growth counts what rebuilds add, not these copies
        before = heap()
        for _ in range(args.rebuilds):
            build(name, make)
            if args.counts:
                counts.setdefault(name, []).append(alive())
        gc.collect()
        grown[name] = (heap() - before) / 2 ** 20
        print(f"{name:22s} {grown[name]:8.3f} MiB after {args.rebuilds} rebuilds", flush=True)
    total = sum(grown.values())
    print(f"all builders: {total:.3f} MiB ({total * 1.048576:.2f} MB) after {args.rebuilds} "
          f"rebuilds of each")
    if args.json:
        print(json.dumps({"rebuilds": args.rebuilds, "total_mib": total,
                          "per_builder_mib": {k: round(v, 3) for k, v in grown.items()},
                          "counts": counts}))


def alive():
    """What a rebuild can leave behind: [widgets, figures, matplotlib artists] alive."""
    import matplotlib.pyplot as plt
    from ipywidgets.widgets import widget
    from matplotlib.artist import Artist
    gc.collect()
    return [len(widget._instances), len(plt.get_fignums()),
            sum(isinstance(o, Artist) for o in gc.get_objects())]


LIMIT_MB = 20


def measured(*options):
    """The last line of JSON of a run of this script in a process of its own."""
    out = subprocess.run([sys.executable, __file__, *options, "--json"], capture_output=True,
                         text=True, cwd=REPO, check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def check():
    """0 if no rebuild leaves anything behind and the growth is under LIMIT_MB, else 1."""
    failed = []
    counts = measured("--rebuilds", "3", "--warmup", "1", "--settle", "0", "--rss", "--counts")["counts"]
    for name, alive_after in counts.items():
        if len(alive_after) != 3 or alive_after[1:] != alive_after[:-1]:
            failed.append(f"{name}: [widgets, figures, artists] alive after each rebuild: {alive_after}")
    result = measured("--rebuilds", "3", "--warmup", "1", "--settle", "3",
                      "--only", "tokenizer_widget,logit_playground,exercise")
    grown_mb = result["total_mib"] * 1.048576 * (14 / 3 * 50 / 3)     # 14 builders, 50 rebuilds
    if grown_mb >= LIMIT_MB:
        failed.append(f"3 rebuilds grew the heap by {result['total_mib']:.2f} MiB ({grown_mb:.0f} MB "
                      f"at 50 rebuilds of all 14 builders): {result['per_builder_mib']}")
    print(f"rebuild_memory --check: {len(counts)} builders counted, {grown_mb:.1f} MB of {LIMIT_MB} "
          f"at 50 rebuilds of all 14", flush=True)
    for line in failed:
        print("FAILED", line)
    return 1 if failed else 0


if __name__ == "__main__":
    main()
