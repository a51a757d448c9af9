"""Suite-wide rules that pytest's defaults do not give, and the suite's shared browser.

pytest already exits non-zero when a test fails, and with code 5 when it collects no
test at all. It exits 0, though, when every collected test was skipped: a run that
checked nothing must not look like a pass, so that is made a failure here too.

The suite runs in four workers on two cores (`pytest -n 4 --dist loadgroup`, the README's
command): the browser tests' worker and the browser edition's spend much of their time
waiting for Chromium and the kernels, and two more workers keep both cores busy meanwhile.
On a quiet machine three do as well; beside another busy program, the fourth keeps more of
the cores for the run (benchmarks/RESULTS.md has the times). What must stay together is put
in one xdist group here, so no test module has to say it:
- every browser test (marker `browser`) runs in one worker, in one JupyterLab and one
  Chromium for the whole run (the session fixtures `lab` and `browser` below), and the
  scheduler hands that group out first, since it is the longest;
- a notebook's nbval cells run in one worker, in order (each cell needs the ones above),
  followed by the tests that read what that run found (marker `after_nbval`);
- a test module with module-scoped fixtures runs in one worker (they are built once);
- any other test goes wherever a worker is free.

Each process does its linear algebra on one thread: the workers, their kernels and
JupyterLab already share the two cores, and numpy's BLAS starting a second thread in each
of them made a notebook's run up to ten times slower on a busy machine. The variables are
set before any worker, kernel or JupyterLab starts, so they all inherit them.
"""

import os
import sys
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
# The run starts some fifty Pythons (workers, kernels, JupyterLab, scripts), and each imports
# the course's modules: compiled once, they are read back by the others. A machine set not to
# write bytecode (PYTHONDONTWRITEBYTECODE) would have every one compile them again. (The
# installed packages are compiled when the README's command installs them.)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

import pytest

_passed = 0
BROWSER_GROUP = "browser"
LITE_GROUP = "module-test_lite"          # tests/test_lite.py: its fixtures are module-scoped


def pytest_runtest_logreport(report):
    global _passed
    if report.when == "call" and report.passed:
        _passed += 1


def pytest_sessionfinish(session, exitstatus):
    if (exitstatus == pytest.ExitCode.OK and _passed == 0 and not session.config.option.collectonly
            and not hasattr(session.config, "workerinput")):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter:
            reporter.write_sep("!", "no test passed (all skipped?): a run that checks nothing fails",
                               red=True)


def _group(item) -> str | None:
    """The xdist group an item must run in, or None (any worker, on its own)."""
    if item.get_closest_marker("browser"):
        return BROWSER_GROUP
    path = Path(str(item.fspath))
    if path.suffix == ".ipynb":
        return f"nbval-{path.stem}"
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info else ()
    if any(d.scope in ("module", "class", "package") for chain in defs for d in chain):
        return f"module-{path.stem}"
    return None


def pytest_configure(config):
    from nbval_recording import NAME, Recorder
    config.pluginmanager.register(Recorder(), NAME)
    _start_kernels_again_if_one_dies_at_start()


def _start_kernels_again_if_one_dies_at_start(tries=3):
    """A kernel is given free TCP ports by the process that starts it, which then closes
    them; with several workers and JupyterLab starting kernels at the same moment, another
    process can take one in between, and the new kernel dies before it answers ("Kernel
    died before replying to kernel_info", seen once in a run). nbval then fails every cell
    of that notebook. Here nbval starts such a kernel again, on new ports, up to `tries`
    times; a kernel that cannot start at all still fails."""
    import nbval.kernel
    start = nbval.kernel.start_new_kernel

    def start_new_kernel(*args, **kwargs):
        for attempt in range(tries):
            try:
                return start(*args, **kwargs)
            except RuntimeError:
                if attempt == tries - 1:
                    raise
    nbval.kernel.start_new_kernel = start_new_kernel


def pytest_collection_finish(session):
    """What collection made (the modules, some 2,500 test items) lives to the end of the run.
    Frozen, it is left out of every full garbage collection, and collections run less often
    than Python's default (every 700 new objects): a worker's heap is large, and the tests
    made about a tenth less work for the CPU (benchmarks/RESULTS.md). Tests that count what
    is alive collect explicitly first."""
    import gc
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def pytest_unconfigure(config):
    """A worker's heap ends the run holding every test's leftovers, and Python's last
    garbage collections at exit went over all of it: about 5 s, while the run waited for
    the worker to end. Frozen, they are skipped; everything is still freed as usual."""
    if hasattr(config, "workerinput"):
        import atexit
        import gc
        atexit.register(gc.freeze)      # registered last, so it runs first of all at exit


def _reader_of(item) -> str | None:
    """For a test marked `after_nbval` (it reads what nbval's run of the notebook `path`
    found: tests/nbval_recording.py), the name of that notebook; else None."""
    if item.get_closest_marker("after_nbval") and hasattr(item, "callspec"):
        return Path(item.callspec.params["path"]).stem
    return None


def _notebook_of(item) -> str | None:
    """For an nbval cell, the name of its notebook (else None)."""
    path = Path(str(item.fspath))
    return path.stem if path.suffix == ".ipynb" else None


def _after_its_notebook(items) -> list:
    """The items, each test marked `after_nbval` moved to just after the nbval cells of its
    notebook."""
    last_cell = {_notebook_of(item): item for item in items if _notebook_of(item)}
    moved = {item: _reader_of(item) for item in items if _reader_of(item) in last_cell}
    ordered = []
    for item in items:
        if item not in moved:
            ordered.append(item)
        if last_cell.get(_notebook_of(item)) is item:
            ordered += [fresh for fresh, name in moved.items() if name == _notebook_of(item)]
    return ordered


def pytest_collection_modifyitems(config, items):
    items[:] = _after_its_notebook(items)
    run_by_nbval = {_notebook_of(item) for item in items} - {None}
    groups = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        groups[item] = mark.args[0] if mark and mark.args else _group(item)
        if _reader_of(item) in run_by_nbval:
            groups[item] = f"nbval-{_reader_of(item)}"      # the worker that ran its cells
    if hasattr(config, "workerinput") and config.getvalue("loadgroup"):
        for item in items:
            if groups[item]:
                _join_group(item, groups[item])
    # The two longest groups first, the browser tests and the browser edition's: with
    # --no-loadscope-reorder the scheduler hands groups out in this order, so each starts
    # at once on a worker of its own and the short tests fill in around them, instead of
    # one of them starting last and the run waiting for it.
    items.sort(key=lambda item: (groups[item] != BROWSER_GROUP, groups[item] != LITE_GROUP))


def _join_group(item, group: str) -> None:
    """Give the item the node id "<id>@<group>", by which xdist's loadgroup scheduler
    keeps a group on one worker. (xdist 3.8 does this itself by setting `_nodeid`, which
    pytest 9 no longer reads: its node ids are structured. Without this, no group held.)"""
    if "@" in item.nodeid.rpartition("]")[2] or "@" in item.nodeid.rpartition("::")[2]:
        return                                    # xdist did it
    try:
        from _pytest.nodeid import NodeId         # pytest >= 9
    except ImportError:
        item._nodeid = f"{item.nodeid}@{group}"
    else:
        item._id = NodeId.parse(f"{item.nodeid}@{group}")


@pytest.fixture(scope="session", autouse=True)
def ipympl_backend():
    """Live figures are ipympl canvases (widgets), as in a kernel with %matplotlib widget."""
    import matplotlib
    previous = matplotlib.get_backend()
    matplotlib.use("module://ipympl.backend_nbagg")
    yield
    matplotlib.use(previous)


@pytest.fixture(autouse=True)
def close_figures():
    """Each test's figures are closed after it, so none piles up across tests."""
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


# --------------------------------------------------------------------------- the browser


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """One JupyterLab for every browser test of the run, serving a temporary copy of the
    repository: notebooks/ is a real folder the tests copy notebooks into (so autosave,
    switched on there with a short interval, writes only copies); the rest are links."""
    from browser_harness import AUTOSAVE_INTERVAL, REPO_ROOT, require_browser, running_lab
    require_browser()
    root = tmp_path_factory.mktemp("lab-root")
    for entry in REPO_ROOT.iterdir():
        if entry.name not in ("notebooks", ".git", ".venv", ".ci"):
            (root / entry.name).symlink_to(entry)
    (root / "notebooks").mkdir()
    with running_lab(root, autosave_interval=AUTOSAVE_INTERVAL) as server:
        yield server


@pytest.fixture(scope="session")
def browser(lab):
    """One Chromium for every browser test of the run, with visible scrollbars, as on a
    teacher's desktop (headless Chromium hides them unless told not to)."""
    from browser_harness import running_chromium
    with running_chromium() as chromium:
        yield chromium


# --------------------------------------------------------------------------- the HTML edition

@pytest.fixture(scope="session")
def html_edition(tmp_path_factory) -> list[Path]:
    """The offline HTML edition of every notebook of notebooks/ (tools/export_html.py),
    exported once for the run's tests of it (in the browser tests' xdist group, so in one
    worker: one of them opens the pages in their Chromium); returns the pages, in the
    notebooks' order, index.html beside them."""
    tools = Path(__file__).resolve().parents[1] / "tools"
    if str(tools) not in sys.path:
        sys.path.insert(0, str(tools))
    from export_html import export
    notebooks = sorted((tools.parent / "notebooks").glob("*.ipynb"))
    return export(notebooks, tmp_path_factory.mktemp("html"))
