"""Run notebooks top to bottom in a fresh kernel and store them with their outputs.

    python tools/run_notebooks.py                  # all of notebooks/
    python tools/run_notebooks.py notebooks/07_generation.ipynb
    python tools/run_notebooks.py --out /tmp/runs notebooks/06_output.ipynb   # leave the stored file alone

Like `jupyter nbconvert --execute --inplace`, except that the file comes out the same
every run: no execution timestamps in the cells' metadata, a cell's printed text stored
as one output however the kernel happened to cut it into messages, and the widget
models' random ids replaced by ids derived from the notebook's name and a fixed order.
A rerun then changes the stored file only where what the code computes changed. Each
notebook runs in its own folder, as JupyterLab runs it.
"""

from __future__ import annotations

import hashlib
import json
import argparse
import re
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO_ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
REFERENCE = re.compile(r"IPY_MODEL_([0-9a-f]{32})")


def executed(path: Path) -> str:
    """The notebook at `path`, run top to bottom in a fresh kernel, as the text to store."""
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return as_stored(notebook, path.stem)


def as_stored(notebook, name: str) -> str:
    """A notebook that nbclient has run (or has been told what a run said), as the text to
    store for the notebook called `name`."""
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)   # timing left by an older run
        if cell.cell_type == "code":
            cell.outputs = joined_streams(cell.outputs)
    for model in widget_state(notebook).values():   # what Output widgets captured
        if model.get("model_name") == "OutputModel":
            model["state"]["outputs"] = joined_streams(
                nbformat.from_dict(model["state"].get("outputs", [])))
    return stable_widget_ids(nbformat.writes(notebook), name)


def joined_streams(outputs: list) -> list:
    """One output per run of printed text: how the kernel cut a cell's prints into
    messages depends on timing, not on the code (nbval joins them the same way)."""
    joined: list = []
    for output in outputs:
        last = joined[-1] if joined else None
        if (output.output_type == "stream" and last is not None
                and last.output_type == "stream" and last.name == output.name):
            last.text += output.text
        else:
            joined.append(output)
    return joined


def run(path: Path, out: Path | None = None) -> float:
    """Execute one notebook and store it (in place, or into the folder `out`); return
    the seconds it took."""
    start = time.perf_counter()
    text = executed(path)
    (out / path.name if out else path).write_text(text, encoding="utf-8")
    return time.perf_counter() - start


def widget_state(notebook) -> dict:
    """The stored widget models, by id ({} if the notebook stores none)."""
    return (notebook.metadata.get("widgets", {})
            .get("application/vnd.jupyter.widget-state+json", {}).get("state", {}))


def stable_widget_ids(text: str, name: str) -> str:
    """Rename each widget model after its notebook and its place in a fixed order.

    A model's id is random: it keys the model in the stored widget state, and outputs and
    other models refer to it. The fixed order: models as first reached from the outputs,
    cell by cell, each followed by the models it refers to (in the order its state,
    keys sorted, names them); then any model no output reaches, by content."""
    notebook = nbformat.reads(text, as_version=4)
    state = widget_state(notebook)
    order: list[str] = []

    def visit(model_id: str) -> None:
        if model_id in state and model_id not in order:
            order.append(model_id)
            for ref in REFERENCE.findall(json.dumps(state[model_id], sort_keys=True)):
                visit(ref)

    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view:
                visit(view["model_id"])
    unreached = [m for m in state if m not in order]
    order += sorted(unreached, key=lambda m: REFERENCE.sub("", json.dumps(state[m], sort_keys=True)))
    new_ids = [hashlib.md5(f"{name}/{i}".encode()).hexdigest() for i in range(len(order))]
    for old, new in zip(order, new_ids):
        text = text.replace(old, new)
    if not state:
        return text
    notebook = nbformat.reads(text, as_version=4)      # and store the models in that order
    stored = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]
    stored["state"] = {model_id: stored["state"][model_id] for model_id in new_ids}
    return nbformat.writes(notebook)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to run (default: every notebook in notebooks/)")
    parser.add_argument("--out", type=Path, help="store the executed notebooks in this folder "
                        "instead of in place (to check a notebook without touching it)")
    args = parser.parse_args()
    missing = [str(p) for p in args.notebooks if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    for path in args.notebooks or sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        print(f"{path}: ran in {run(path.resolve(), args.out):.1f} s")


if __name__ == "__main__":
    main()
