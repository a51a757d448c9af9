"""The project's set-up: the README's commands, CI, and what the notebooks can import."""

import asyncio
import concurrent.futures
import re
import subprocess
import sys
import time
from queue import Empty

import pytest

from browser_harness import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
from run_notebooks import Client, in_slices  # noqa: E402  (tools/ is not a package)

README = (REPO_ROOT / "README.md").read_text()


def _fenced_commands() -> list[str]:
    """The one-line shell commands in the README's ```sh blocks."""
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S)]


def test_readme_gives_two_one_line_commands_that_do_all_the_set_up():
    commands = _fenced_commands()
    assert len(commands) == 2, commands
    for command in commands:
        assert "\n" not in command, f"not one line: {command!r}"
    # The course installs with requirements.txt's lower bounds; the tests with the pins of
    # constraints.txt, which the stored outputs were made with.
    assert commands[0] == ("python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && "
                           ".venv/bin/jupyter lab notebooks/")
    assert commands[1] == ("python3 -m venv --without-pip .venv && "
                           "python3 -m pip --python .venv/bin/python install -c constraints.txt uv && "
                           ".venv/bin/uv pip install --compile-bytecode --python .venv/bin/python "
                           "-r requirements.txt "
                           "-c constraints.txt && .venv/bin/python -m pytest -n 4 --dist loadgroup "
                           "--no-loadscope-reorder")


def _requirements():
    """name -> lower bound, from requirements.txt's lines "name>=version"."""
    text = (REPO_ROOT / "requirements.txt").read_text()
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)>=([^\s#]+)", text, flags=re.M))


def test_constraints_pin_every_requirement_at_or_above_its_lower_bound():
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (REPO_ROOT / "constraints.txt").read_text(),
                           flags=re.M))
    pins = {name.lower().replace("_", "-"): v for name, v in pins.items()}

    def version(v):
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])
    for name, low in _requirements().items():
        pinned = pins.get(name.lower().replace("_", "-"))
        assert pinned, f"constraints.txt pins no version of {name}"
        assert version(pinned) >= version(low), f"{name}: pinned {pinned} is below {low}"


def test_ci_runs_the_readme_test_command():
    printed = subprocess.run(
        ["bash", ".ci/run", "--print-test-command"], cwd=REPO_ROOT,
        capture_output=True, text=True, check=True).stdout.strip()
    assert printed == _fenced_commands()[1]


def test_there_are_notebooks_for_nbval_to_check():
    # nbval collects nothing, silently, from an empty or misplaced notebooks/ folder.
    assert sorted((REPO_ROOT / "notebooks").glob("*.ipynb")), "no notebooks/*.ipynb"


def test_toy_model_imports_where_kernels_run_with_numpy_alone(tmp_path):
    # JupyterLab and nbval start kernels in notebooks/, not at the repository root, so the
    # course must import from any folder (`pip install -r requirements.txt` installs it,
    # editable). toy_model.py is the model a learner reads: it imports numpy alone; the
    # plots and widgets live in toy_widgets/, which a notebook imports itself.
    code = ("import sys, toy_model as tm; heavy = ('matplotlib', 'ipywidgets', 'IPython', 'toy_widgets');"
            "print(tm.__file__); print(sorted(m for m in sys.modules if m.split('.')[0] in heavy));"
            "import toy_widgets as tw; tw.logit_playground; print(tw.__file__);"
            "print('matplotlib' in sys.modules, 'ipywidgets' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, (
        "the course is not importable outside the repository root; run "
        f"`pip install -r requirements.txt` (it has `-e .`):\n{result.stderr}")
    model, before, widgets, after = result.stdout.splitlines()
    assert model == str(REPO_ROOT / "toy_model.py") and widgets == str(REPO_ROOT / "toy_widgets" / "__init__.py")
    assert before == "[]", f"importing toy_model pulled in {before}"
    assert after == "True True", "importing toy_widgets did not load matplotlib and ipywidgets"


def test_toy_model_says_which_names_it_lacks():
    import toy_model as tm
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        tm.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'logit_playground'"):
        tm.logit_playground  # noqa: B018   (a widget: tw.logit_playground)


def test_a_widget_cell_runs_on_its_own_in_a_fresh_kernel():
    # A learner who opens a notebook and runs a widget's cell before the cells above: the
    # course's kernel defaults (tools/lab_settings) have already run the first cell.
    import nbformat
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import matplotlib\nprint(matplotlib.get_backend(), type(tw.logit_playground()).__name__)")])
    Client(notebook, timeout=60, kernel_name="python3").execute()
    assert notebook.cells[0].outputs[0]["text"].split() == ["widget", "Panel"]


def _run(coroutine):
    """Run a coroutine in a thread of its own: this thread may already have a running
    event loop (Playwright's sync API, nbclient), in which asyncio.run refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_a_reply_the_socket_missed_is_found_within_a_second_not_at_the_timeout():
    # A stand-in for the channel's get_msg: the message is there, but its poll finds it
    # only when it times out (what a missed wake-up of the asyncio socket does).
    waits, message = [], {"msg_type": "execute_reply"}

    async def get_msg(timeout=None):
        waits.append(timeout)
        await asyncio.sleep(timeout)
        return message

    found = asyncio.wait_for(in_slices(get_msg, most=0.2)(timeout=600), 2)   # not 600 s
    assert _run(found) is message and waits == [0.2]

    async def never(timeout=None):                    # nothing comes: Empty at the deadline
        await asyncio.sleep(timeout)
        raise Empty

    start = time.monotonic()
    with pytest.raises(Empty):
        _run(in_slices(never, most=0.2)(timeout=0.5))
    assert 0.5 <= time.monotonic() - start < 0.8
