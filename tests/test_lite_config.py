"""The browser edition's two modes, without building it (tests/test_lite.py builds the offline
site and runs it): what the kernel is told and where Pyodide's packages are looked for.

- CDN mode (the default, for a published site): each of Pyodide's packages is named by its
  URL on the CDN of exactly the Pyodide the edition is tested with, and keeps Pyodide's own
  sha256, so the browser checks what it loads against the tested file;
- offline mode: no URL anywhere, every file in the site's own pyodide/ folder;
- either way the kernel loads Pyodide's runtime from the site, not from the CDN, and the
  Pyodide pinned here is the one the installed kernel was made for (same minor version).
"""

import json
import re
import sys
from pathlib import Path

import pytest

from browser_harness import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
import build_lite as bl  # noqa: E402

# A lock file in Pyodide's layout, written here: two packages, one depending on the other.
OFFICIAL = {
    "info": {"version": "0.27.7", "python": "3.12.7"},
    "packages": {
        "numpy": {"name": "numpy", "version": "2.0.2", "file_name": "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl",
                  "sha256": "a" * 64, "depends": []},
        "matplotlib": {"name": "matplotlib", "version": "3.8.4",
                       "file_name": "matplotlib-3.8.4-cp312-cp312-pyodide_2024_0_wasm32.whl",
                       "sha256": "b" * 64, "depends": ["numpy"]},
        "unused": {"name": "unused", "version": "1", "file_name": "unused-1-py3-none-any.whl",
                   "sha256": "c" * 64, "depends": []},
    },
}


def test_cdn_mode_names_each_package_on_the_cdn_of_the_tested_pyodide():
    lock = bl.narrowed_lock(OFFICIAL, {"numpy", "matplotlib"}, offline=False)
    assert set(lock["packages"]) == {"numpy", "matplotlib"}
    for name, entry in lock["packages"].items():
        official = OFFICIAL["packages"][name]
        assert entry["file_name"] == (f"https://cdn.jsdelivr.net/pyodide/v{bl.PYODIDE_VERSION}/full/"
                                      + official["file_name"])
        assert entry["sha256"] == official["sha256"]
        assert {k: v for k, v in entry.items() if k != "file_name"} == \
            {k: v for k, v in official.items() if k != "file_name"}
    assert lock["info"] == OFFICIAL["info"]


def test_offline_mode_names_no_url():
    lock = bl.narrowed_lock(OFFICIAL, {"numpy", "matplotlib"}, offline=True)
    assert "://" not in json.dumps(lock)
    assert {e["file_name"] for e in lock["packages"].values()} == \
        {OFFICIAL["packages"][n]["file_name"] for n in ("numpy", "matplotlib")}


@pytest.mark.parametrize("offline", [False, True])
def test_the_kernel_loads_pyodide_from_the_site_in_either_mode(offline):
    config = bl.site_config(offline, bl.PRELOAD)
    kernel = config["jupyter-config-data"]["litePluginSettings"][
        "@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./pyodide/pyodide.js"
    assert kernel["disablePyPIFallback"] is True
    assert "://" not in json.dumps(kernel)
    assert kernel["loadPyodideOptions"]["packages"][-1] == "next-token-course"
    assert "ipykernel" in kernel["loadPyodideOptions"]["packages"]


def test_the_pinned_pyodide_is_the_one_the_kernel_was_made_for():
    """The installed kernel extension names, as its default, the Pyodide it was built
    against; the edition's pin must be that Pyodide, up to the patch number."""
    from importlib.metadata import version
    assert version(bl.KERNEL_PACKAGE[0]) == bl.KERNEL_PACKAGE[1]
    folder = Path(sys.prefix) / "share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension"
    found = {m for path in folder.rglob("*.js")
             for m in re.findall(r"cdn\.jsdelivr\.net/pyodide/v(\d+\.\d+)\.\d+/full/",
                                 path.read_text(encoding="utf-8", errors="replace"))}
    assert found, "the kernel extension names no default Pyodide"
    assert found == {bl.PYODIDE_VERSION.rsplit(".", 1)[0]}
    assert bl.CDN == f"https://cdn.jsdelivr.net/pyodide/v{bl.PYODIDE_VERSION}/full/"


def test_what_the_first_cell_needs_is_preloaded():
    """`%matplotlib widget` and `import toy_model` in the first cell need ipympl, ipywidgets,
    matplotlib and numpy installed before any cell runs: the preload brings them in through
    the course's own package and the lock file's `depends`."""
    lock = {"packages": {name: {"depends": deps} for name, deps in bl.DEPENDS.items()}}
    for name in [*bl.PRELOAD, *(d for deps in bl.DEPENDS.values() for d in deps)]:
        lock["packages"].setdefault(bl.normal(name), {"depends": []})   # Pyodide's own: leaves here
    loaded = bl.closure(lock, [bl.normal(name) for name in bl.PRELOAD])
    assert {"ipympl", "ipywidgets", "matplotlib", "numpy", "next-token-course"} <= loaded
