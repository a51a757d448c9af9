"""The course's plots, widgets and exercises (matplotlib, ipywidgets), one module per notebook.

    draw.py        colours, number formats, tables, figures
    kit.py         the widget kit: panels, state, the feedback guard, live charts (ipympl)
    exercises.py   the exercise engine: registry, typed numbers, the checker box
    nb01_tokens.py ... nb07_generation.py, lab08_training.py, lab09_gpt2.py
                   each notebook's widgets and exercises together

A notebook reaches every public name here through toy_model (tm.logit_playground(),
tm.exercise("06.3")): importing this package imports every module, so that every
exercise is registered, and a name is looked up in the modules in this order.
"""
import importlib

MODULES = ["draw", "kit", "exercises", "nb01_tokens", "nb02_embeddings", "nb03_qkv",
           "nb04_mask_and_heads", "nb05_block", "nb06_output", "nb07_generation",
           "lab08_training", "lab09_gpt2"]
_loaded = [importlib.import_module(f"{__name__}.{name}") for name in MODULES]


def __getattr__(name):
    if not name.startswith("__"):
        for module in _loaded:
            if name in vars(module):
                return vars(module)[name]
    raise AttributeError(f"module 'toy_widgets' has no attribute {name!r}")
