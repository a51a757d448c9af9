"""What nbval's run of a notebook said, kept as a fresh run stores the notebook.

nbval runs each notebook's cells in a kernel of its own and compares the outputs it is
told to. The test that a fresh run stores the same file (tests/test_notebooks.py)
compares everything else too: widget state, pictures, execution counts. Both need the
notebook run top to bottom, and one run serves both: while nbval runs a notebook, every
message its kernel sends about a cell goes also to nbclient's own handler
(NotebookClient.process_message), the one tools/run_notebooks.py stores notebooks with,
and tools/run_notebooks.as_stored turns the result into the text to store.

nbval still reads every message and decides pass or fail by itself; a recording that
went wrong is only unused (the fresh-run test then runs the notebook on its own). One
thing nbval's run cannot say is the execution count: it runs cells without keeping
history, so the kernel numbers each run 1. The recording numbers them 1, 2, 3... in the
order they ran, as a kernel keeping history does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from run_notebooks import as_stored  # noqa: E402  (tools/ is not a package)

NAME = "nbval-recording"


class Recording:
    """One notebook's run by nbval, cell by cell, into a copy of the notebook."""

    def __init__(self, nbfile):
        from nbclient import NotebookClient
        self.path = Path(str(nbfile.fspath))
        self.cells_of_nbval = nbfile.nb.cells
        self.notebook = nbformat.read(self.path, as_version=4)
        self.client = NotebookClient(self.notebook, record_timing=False)
        self.client.kc = nbfile.kernel.kc    # an Output widget answers the kernel, as a page does
        self.parents: dict[str, int] = {}    # message id of a cell's run -> the cell's index
        self.ran: set[int] = set()
        self.current: int | None = None
        self.problem: str | None = None
        self.notebook.metadata["language_info"] = self._language_info(nbfile.kernel.kc)
        run, listen = nbfile.kernel.execute_cell_input, nbfile.get_kernel_message

        def execute_cell_input(source, *args, **kwargs):
            msg_id = run(source, *args, **kwargs)
            if self.current is not None:
                self.parents[msg_id] = self.current
                self.notebook.cells[self.current].outputs = []
                self.client.clear_before_next_output = False
            return msg_id

        def get_kernel_message(*args, **kwargs):
            msg = listen(*args, **kwargs)
            index = self.parents.get(msg.get("parent_header", {}).get("msg_id"))
            if index is not None and self.problem is None:
                self._hear(msg, index)
            return msg

        nbfile.kernel.execute_cell_input = execute_cell_input
        nbfile.get_kernel_message = get_kernel_message

    @staticmethod
    def _language_info(kc) -> dict:
        """What nbclient stores from the kernel's info reply, asked before any cell runs."""
        msg_id = kc.kernel_info()
        while True:
            reply = kc.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]["language_info"]

    def _hear(self, msg: dict, index: int) -> None:
        from nbclient.exceptions import CellExecutionComplete
        try:
            self.client.process_message(msg, self.notebook.cells[index], index)
        except CellExecutionComplete:
            self.ran.add(index)
            # nbval runs cells with store_history=False, so the kernel numbers every run 1
            # (or 0); a run that keeps history numbers them 1, 2, 3... in order.
            cell = self.notebook.cells[index]
            cell.execution_count = len(self.ran)
            for output in cell.outputs:
                if output.output_type == "execute_result":
                    output.execution_count = len(self.ran)
        except Exception as error:      # noqa: BLE001  (the recording is unused, nbval goes on)
            self.problem = f"cell {index}: {type(error).__name__}: {error}"

    def start(self, cell) -> None:
        self.current = next(i for i, c in enumerate(self.cells_of_nbval) if c is cell)

    def text(self) -> str | None:
        """The notebook as a fresh run stores it, or None unless every code cell ran to the
        end (nbval stopped early: a cell failed or timed out). A message nbclient could not
        take is an error of the recording's, raised here."""
        if self.problem:
            raise RuntimeError(f"{self.path.name}: nbval's run could not be recorded: {self.problem}")
        code = {i for i, c in enumerate(self.notebook.cells) if c.cell_type == "code"}
        if self.ran != code:
            return None
        self.client.set_widgets_metadata()
        return as_stored(self.notebook)


class Recorder:
    """The pytest plugin: a Recording for each notebook nbval runs in this process."""

    def __init__(self):
        self.recordings: dict[Path, Recording] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        from nbval.plugin import IPyNbCell
        if isinstance(item, IPyNbCell) and item.parent.kernel is not None:
            path = Path(str(item.parent.fspath))
            recording = self.recordings.get(path)
            if recording is None or recording.cells_of_nbval is not item.parent.nb.cells:
                recording = self.recordings[path] = Recording(item.parent)
            recording.start(item.cell)
            yield
        else:
            yield

    def stored_text(self, path: Path) -> str | None:
        """The file a fresh run stores for the notebook at `path`, from nbval's run of it
        in this process, or None if nbval did not run it all here."""
        recording = self.recordings.get(Path(path))
        return recording.text() if recording else None


def recorder(config) -> Recorder | None:
    return config.pluginmanager.get_plugin(NAME)
