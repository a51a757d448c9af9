"""Keep a saved notebook showable: no widget output may point at a widget that is gone.

JupyterLab saves a notebook with each widget output pointing at its widget model by id.
When the notebook is opened again, an output whose model is neither running in the
kernel nor stored in the notebook's widget state shows "Error displaying widget: model
not found" instead of anything useful. That is what a teacher met after a rehearsal:
the course's JupyterLab does not store the widgets' state (next-token-course.json:
storing it marks every notebook modified the moment it opens, and a save after the
kernel was shut down stores an empty state), so every output of a run is such an output.

This hook, which the Jupyter server runs before it writes a notebook (the module is a
server extension, enabled by next-token-course-server.json), takes the widget view
out of each output whose model the file does not store. The output keeps what it holds
besides: the picture of the widget (and the line saying to run the cells), which is what
a notebook shows before its cells are run. An output whose model is stored is left alone.
"""

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def stored_models(notebook: dict) -> set:
    """The ids of the widget models stored in the notebook's metadata."""
    widgets = notebook.get("metadata", {}).get("widgets") or {}
    return set((widgets.get(WIDGET_STATE) or {}).get("state") or {})


def drop_views_of_missing_widgets(notebook: dict) -> int:
    """Remove the widget view from each output whose model is not stored (and which has
    something else to show); return how many outputs changed."""
    stored, changed = stored_models(notebook), 0
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs") or []:
            data = output.get("data") or {}
            view = data.get(WIDGET_VIEW)
            if isinstance(view, dict) and view.get("model_id") not in stored and len(data) > 1:
                del data[WIDGET_VIEW]
                changed += 1
    return changed


def pre_save(model, path=None, contents_manager=None, **kwargs):
    """The pre-save hook: the server calls it with the model it is about to write."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        drop_views_of_missing_widgets(model["content"])


def _jupyter_server_extension_points():
    return [{"module": "course_save_hook"}]


def _load_jupyter_server_extension(serverapp):
    serverapp.contents_manager.register_pre_save_hook(pre_save)
