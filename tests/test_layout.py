"""The course's layout: one home per notebook, one definition per name, a model a learner can read.

toy_model reaches the labs' modules and the widget package lazily (a notebook writes
`tm.train(...)` or `tm.logit_playground()`), so a name defined in two of them would
silently resolve to whichever comes first, and a name a notebook uses but nobody defines
would only fail when a learner runs that cell.
"""
import ast
import importlib
import re

import nbformat
import pytest

from browser_harness import REPO_ROOT

import toy_model as tm

MODEL_MODULES = ["toy_model", "toy_checks", "toy_train", "toy_gpt2"]
WIDGET_MODULES = [f"toy_widgets.{name}" for name in importlib.import_module("toy_widgets").MODULES]
NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))


def module_path(name):
    return REPO_ROOT / (name.replace(".", "/") + ".py")


def top_level_definitions(name):
    """The public names a module defines itself (functions, classes, assigned names)."""
    tree = ast.parse(module_path(name).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return {n for n in names if not n.startswith("_")}


def test_no_public_name_is_defined_in_two_modules():
    homes = {}
    for name in MODEL_MODULES + WIDGET_MODULES:
        for defined in top_level_definitions(name):
            homes.setdefault(defined, []).append(name)
    twice = {n: where for n, where in homes.items() if len(where) > 1}
    assert not twice, f"defined in more than one module (tm would find only the first): {twice}"


def names_used_through_tm(source):
    return set(re.findall(r"\btm\.([A-Za-z_]\w*)", source))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_name_a_notebook_uses_through_tm_resolves(path):
    nb = nbformat.read(path, as_version=4)
    used = set().union(*(names_used_through_tm(c.source) for c in nb.cells if c.cell_type == "code"))
    assert used, f"{path.name} uses nothing from toy_model?"
    missing = sorted(n for n in used if not hasattr(tm, n))
    assert not missing, f"{path.name} uses tm.{', tm.'.join(missing)}, which nothing defines"


def test_the_lookup_test_catches_a_missing_name():
    # The check above must fail for a name nobody defines.
    assert names_used_through_tm("x = tm.no_such_function(3)") == {"no_such_function"}
    assert not hasattr(tm, "no_such_function")


def test_toy_model_is_a_short_module_a_learner_reads_top_to_bottom():
    lines = module_path("toy_model").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 600, f"toy_model.py has {len(lines)} lines (at most 600)"
    text = "\n".join(lines)
    # the forward pass comes before the checks of what comes in (those live in toy_checks.py)
    assert text.index("def forward(") < len(text) * 0.75


@pytest.mark.parametrize("path", sorted(REPO_ROOT.glob("*.py")) + sorted(REPO_ROOT.glob("toy_widgets/*.py"))
                         + sorted(REPO_ROOT.glob("tools/*.py")) + sorted(REPO_ROOT.glob("tests/*.py"))
                         + sorted(REPO_ROOT.glob("benchmarks/*.py")), ids=lambda p: p.name)
def test_no_python_file_is_over_700_lines(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= 700, f"{path.relative_to(REPO_ROOT)} has {n} lines: split it by job"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_has_one_widget_module(path):
    number = path.stem[:2]
    homes = [m for m in WIDGET_MODULES if re.search(rf"\.(nb|lab){number}_", m)]
    assert len(homes) == 1, f"{path.name}: its widgets and exercises live in {homes or 'no module'}"
    registered = {key for key in tm.EXERCISES if key.startswith(number + ".")}
    source = module_path(homes[0]).read_text(encoding="utf-8")
    elsewhere = [m for m in WIDGET_MODULES if m != homes[0]
                 and re.search(rf'_exercise\(\s*"{number}\.\d+"', module_path(m).read_text(encoding="utf-8"))]
    assert not elsewhere, f"exercises of {path.name} registered outside {homes[0]}: {elsewhere}"
    for key in registered:
        assert f'"{key}"' in source, f"exercise {key} is not registered in {homes[0]}"
