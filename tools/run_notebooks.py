"""Run notebooks top to bottom in a fresh kernel and store them with their outputs.

    python tools/run_notebooks.py                  # all of notebooks/
    python tools/run_notebooks.py notebooks/07_generation.ipynb
    python tools/run_notebooks.py --out /tmp/runs notebooks/06_output.ipynb   # leave the stored file alone

Like `jupyter nbconvert --execute --inplace`, except that the file comes out the same
every run: no execution timestamps in the cells' metadata, a cell's printed text stored
as one output however the kernel happened to cut it into messages, and each widget
stored as the picture of its first state (see stored_form), without the random ids of
its models. A rerun then changes the stored file only where what the code computes
changed. Each notebook runs in its own folder, as JupyterLab runs it.

It refuses to store a notebook one of whose figures has a text cut by the figure's frame
(a title, label, tick label, legend entry or note past the picture's edge): every picture
printed and every live figure a cell made is measured in the notebook's own kernel as it
runs (tools/figure_probe.py), and the run fails naming each cut text.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from queue import Empty

import json

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from figure_probe import INSTALL, TAKE

REPO_ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class CutFigure(Exception):
    """A figure of the notebook draws a text past its frame: the notebook is not stored."""


def executed(path: Path) -> str:
    """The notebook at `path`, run top to bottom in a fresh kernel, as the text to store.
    Raises CutFigure if a figure it draws cuts a text, or draws fewer figures than the
    stored cell has pictures (each must have been measured)."""
    notebook = nbformat.read(path, as_version=4)
    cells = notebook.cells
    ran = [i for i, c in enumerate(cells) if c.cell_type == "code" and c.source.strip()]
    notebook.cells = [new_code_cell(INSTALL), *cells, new_code_cell(f"print({TAKE})")]
    Client(notebook, timeout=600, kernel_name="python3", record_timing=False,
           resources={"metadata": {"path": str(path.parent)}}).execute()
    measured = json.loads("".join(o.get("text", "") for o in notebook.cells[-1].outputs))
    notebook.cells = cells
    for cell in cells:                      # the probe's cell took count 1: number from 1
        if cell.get("execution_count"):
            cell.execution_count -= 1
            for output in cell.outputs:
                if output.get("execution_count"):
                    output.execution_count -= 1
    refuse_cut_figures(path, notebook, dict(zip(ran, measured, strict=True)))
    return as_stored(notebook)


def refuse_cut_figures(path: Path, notebook, measured: dict) -> None:
    """Raise CutFigure naming every figure the probe found cut, and every cell whose
    output has more pictures than figures were measured in it."""
    found = []
    for index, cell in measured.items():
        if cell["problem"]:
            found.append(f"cell {index}: the figure probe failed: {cell['problem']}")
        pictures = sum(1 if "image/png" in o.get("data", {}) else
                       "".join(o.get("data", {}).get("text/html", "")).count("data:image/png;base64,")
                       for o in notebook.cells[index].get("outputs", []))
        if len(cell["figures"]) < pictures:
            found.append(f"cell {index} shows {pictures} pictures, {len(cell['figures'])} were measured")
        found += [f"cell {index}, {f['kind']} ({f['size'][0]} × {f['size'][1]} px): {f['cut']}"
                  for f in cell["figures"] if f["cut"]]
    if found:
        raise CutFigure(f"{path.name}: not stored: " + "\n  ".join(found))


class Client(NotebookClient):
    """nbclient's client, looking for the kernel's messages at least once a second.

    nbclient waits for a cell's reply with one poll as long as the cell's timeout. The
    asyncio socket behind it wakes on an edge of the socket's file descriptor, and now and
    then it misses a message that has already arrived: the poll sees it only when it times
    out, and the run stalls for the whole timeout (600 s below) before going on as if
    nothing had happened. Polls of a second at most, repeated until the same deadline,
    find such a message within a second."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        for channel in (kc.shell_channel, kc.iopub_channel):
            channel.get_msg = in_slices(channel.get_msg)
        return kc


def in_slices(get_msg, most: float = 1.0):
    """`get_msg(timeout)` as polls of at most `most` seconds, until the same deadline."""
    async def sliced(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = most if deadline is None else max(0.0, min(most, deadline - time.monotonic()))
            try:
                return await get_msg(timeout=left)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
    return sliced


def as_stored(notebook) -> str:
    """A notebook that nbclient has run (or has been told what a run said), as the text to
    store."""
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)   # timing left by an older run
        if cell.cell_type == "code":
            cell.outputs = joined_streams(cell.outputs)
            for output in cell.outputs:
                stored_form(output.get("data", {}))
    notebook.metadata.pop("widgets", None)
    return nbformat.writes(notebook)


def stored_form(data: dict) -> dict:
    """A widget's output as the file keeps it: the picture of its first state, under the
    line that says how to make it live (its text/html, which holds the picture), and
    nothing else that repeats it. Without a kernel the widget itself cannot be shown, so
    neither its view nor its models' state is stored (a widget with no such form keeps
    only its text); once the cells run, the output is the live widget. Other outputs are
    left as they are."""
    if WIDGET_VIEW in data and len(data) > 1:
        del data[WIDGET_VIEW]
        if "text/html" in data:
            data.pop("image/png", None)         # the same picture is inside the HTML
    return data


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
        try:
            print(f"{path}: ran in {run(path.resolve(), args.out):.1f} s")
        except CutFigure as cut:
            raise SystemExit(str(cut)) from None


if __name__ == "__main__":
    main()
