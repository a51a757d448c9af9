"""What a notebook can show before Run All, read from the stored files (no browser).

The browser's side, the notebooks opened fresh, saved and reopened, is in
tests/test_browser.py, which runs every notebook once in the run's one JupyterLab.
"""

from browser_visit import COURSE_NOTEBOOKS as NOTEBOOKS, widget_outputs


def test_every_notebook_stores_a_picture_or_text_form_for_each_widget():
    """Without a kernel, a widget output can show only what its bundle stores besides the
    widget view: a PNG, or HTML for a widget without a plot (never the answer of a check)."""
    bare = [f"{nb.name}: widget output {i + 1}" for nb in NOTEBOOKS
            for i, o in enumerate(widget_outputs(nb)) if not {"image/png", "text/html"} & set(o)]
    assert not bare, "widget outputs without a picture or an HTML form:\n" + "\n".join(bare)


def test_a_saved_widget_output_whose_model_is_not_stored_keeps_only_its_picture():
    """The course's save hook (tools/lab_settings/course_save_hook.py): JupyterLab stores
    no widget state, so a saved output that points at a model the file does not hold
    would show "model not found" when reopened; the hook leaves it its picture."""
    from course_save_hook import WIDGET_STATE, WIDGET_VIEW, pre_save
    view = {WIDGET_VIEW: {"model_id": "gone"}, "image/png": "iVBO", "text/plain": "[a picture]"}
    kept = {WIDGET_VIEW: {"model_id": "kept"}, "image/png": "iVBO", "text/plain": "[a picture]"}
    bare = {WIDGET_VIEW: {"model_id": "gone"}}
    notebook = {"metadata": {"widgets": {WIDGET_STATE: {"state": {"kept": {}}}}},
                "cells": [{"cell_type": "code", "outputs": [{"data": d} for d in (view, kept, bare)]}]}
    pre_save({"type": "notebook", "content": notebook}, "x.ipynb")
    data = [o["data"] for o in notebook["cells"][0]["outputs"]]
    assert set(data[0]) == {"image/png", "text/plain"}, "an orphaned view is dropped"
    assert WIDGET_VIEW in data[1], "a view whose model is stored is kept"
    assert WIDGET_VIEW in data[2], "a view with nothing else to show is left (the check says so)"
    pre_save({"type": "file", "content": "text"}, "x.txt")          # not a notebook: untouched
