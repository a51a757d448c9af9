"""The course's layout: one home per notebook, one definition per name, a model a learner can read.

A notebook imports each module where it lives (`import toy_model as tm`, `import
toy_widgets as tw`, the labs `import toy_train as tt`, `import toy_gpt2 as tg`, `import
toy_induction as ti` and `import toy_writes as tx`), so a name it uses through one of them
must be there, and a name defined in two modules would leave a reader unsure which one runs.
"""
import ast
import importlib
import re

import nbformat

from browser_harness import REPO_ROOT

import toy_model as tm
import toy_train as tt
import toy_widgets as tw

MODEL_MODULES = ["toy_model", "toy_tree", "toy_checks", "toy_train", "toy_train_checks", "toy_gpt2",
                 "toy_induction", "toy_writes"]
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
    assert not twice, f"defined in more than one module: {twice}"


def test_the_one_definition_test_reads_every_module():
    # Every module of the course is read, and a name defined twice is caught.
    modules = {p.stem for p in REPO_ROOT.glob("toy_*.py")}
    assert modules == set(MODEL_MODULES), f"not read by the test above: {modules ^ set(MODEL_MODULES)}"
    assert set(WIDGET_MODULES) == {f"toy_widgets.{p.stem}" for p in REPO_ROOT.glob("toy_widgets/*.py")
                                   if p.stem != "__init__"}
    assert "forward" in top_level_definitions("toy_model") and "train" in top_level_definitions("toy_train")


ALIASES = {"tm": "toy_model", "tw": "toy_widgets", "tt": "toy_train", "tg": "toy_gpt2",
           "ti": "toy_induction", "tx": "toy_writes"}


def names_used(source):
    """{(alias, name)} for every alias.name the source uses, alias one of ALIASES."""
    return set(re.findall(rf"\b({'|'.join(ALIASES)})\.([A-Za-z_]\w*)", source))


def test_every_name_a_notebook_uses_resolves_in_the_module_it_names():
    for path in NOTEBOOKS:
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        used = set().union(*map(names_used, code))
        assert used, f"{path.name} uses nothing from the course's modules?"
        for alias in {a for a, _ in used}:
            assert f"import {ALIASES[alias]} as {alias}" in code[0], \
                f"{path.name} uses {alias}. but its first cell does not import {ALIASES[alias]} as {alias}"
        missing = sorted(f"{a}.{n}" for a, n in used if not hasattr(importlib.import_module(ALIASES[a]), n))
        assert not missing, f"{path.name} uses {', '.join(missing)}, which the module it names lacks"


def test_the_lookup_test_catches_a_missing_name():
    # The check above must fail for a name nobody defines, and for one in another module.
    assert names_used("x = tm.no_such_function(3)") == {("tm", "no_such_function")}
    assert not hasattr(tm, "no_such_function")
    assert not hasattr(tm, "logit_playground") and not hasattr(tm, "train")


def test_no_module_reaches_its_names_lazily():
    for name in MODEL_MODULES + ["toy_widgets"] + WIDGET_MODULES:
        assert "__getattr__" not in vars(importlib.import_module(name)), f"{name} has a lazy __getattr__"


def test_toy_model_is_a_short_module_a_learner_reads_top_to_bottom():
    lines = module_path("toy_model").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 600, f"toy_model.py has {len(lines)} lines (at most 600)"
    text = "\n".join(lines)
    # the forward pass comes before the checks of what comes in (those live in toy_checks.py)
    assert text.index("def forward(") < len(text) * 0.75


def test_no_python_file_is_over_700_lines():
    paths = [p for folder in ("", "toy_widgets/", "tools/", "tests/", "benchmarks/")
             for p in sorted(REPO_ROOT.glob(f"{folder}*.py"))]
    long = {str(p.relative_to(REPO_ROOT)): n for p in paths
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700}
    assert len(paths) > 50 and not long, f"over 700 lines, split each by job: {long}"


def test_each_notebook_has_one_widget_module():
    for path in NOTEBOOKS:
        number = path.stem[:2]
        homes = [m for m in WIDGET_MODULES if re.search(rf"\.(nb|lab){number}_", m)]
        assert len(homes) == 1, f"{path.name}: its widgets and exercises live in {homes or 'no module'}"
        source = module_path(homes[0]).read_text(encoding="utf-8")
        elsewhere = [m for m in WIDGET_MODULES if m != homes[0] and re.search(
            rf'_exercise\(\s*"{number}\.\d+"', module_path(m).read_text(encoding="utf-8"))]
        assert not elsewhere, f"exercises of {path.name} registered outside {homes[0]}: {elsewhere}"
        for key in (k for k in tw.EXERCISES if k.startswith(number + ".")):
            assert f'"{key}"' in source, f"exercise {key} is not registered in {homes[0]}"
