"""The course's plots, widgets and exercises (matplotlib, ipywidgets), one module per notebook.

    draw.py        colours, number formats, tables, figures
    kit.py         the widget kit: panels, state, the feedback guard, typed numbers, live charts (ipympl)
    exercises.py   the exercise engine: registry, checkers, the checker box
    nb01_tokens.py ... nb07_generation.py, lab08_training.py ... lab11_writes.py
                   each notebook's widgets and exercises together

A notebook writes `import toy_widgets as tw` and calls what it shows by name:
tw.logit_playground(), tw.exercise("06.3"). Importing the package imports every module,
so that every exercise is registered; the names below are each defined in the module
they are imported from.
"""

MODULES = ["draw", "kit", "exercises", "nb01_tokens", "nb02_embeddings", "nb03_qkv",
           "nb04_mask_and_heads", "nb05_block", "nb06_output", "nb07_generation",
           "lab08_training", "lab09_gpt2", "lab10_induction", "lab11_writes"]

from .draw import (COLUMN_PX, BLUE, GREEN, GREY, ORANGE, TOKENS, VERMILION, fmt, freeze_layout, heatmap,
                   matrix, new_figure, outline_bars, set_heatmap, share_mathtext, source, static,
                   table, tick_label, token_bars, token_html)  # noqa: F401
from .kit import (COURSE_CSS, BarChart, Panel, StyleRule, WidgetState, builder_text, canvas_ready,
                  course_style, guarded, is_live_canvas, live_artists, live_canvases,
                  live_chart, live_figure, message_area, need_live_backend, on_change,
                  on_enter, on_grid, own, page_has_shown, panel, picked, picture, picture_note,
                  plain, redraw, release, say, send_whole_frame, slider_move, store_picture,
                  stored_picture, typed_number)  # noqa: F401
from .exercises import (CLOSE_UNITS, EXERCISES, NOT_DONE, ExerciseBox, answer_choice, answer_code, answer_number,
                        choice_exercise, code_exercise, count_exercise, exercise,
                        number_exercise, worked_answer_html)  # noqa: F401
from .nb01_tokens import (token_chips, tokenizer_widget)  # noqa: F401
from .nb02_embeddings import (embedding_scatter, embedding_scatter_plot, grouped_labels,
                              label_levels, x_rings)  # noqa: F401
from .nb03_qkv import (head_weights, query_picker)  # noqa: F401
from .nb04_mask_and_heads import (future_leak, heads_figure, mask_and_heads, outline_future)  # noqa: F401
from .nb05_block import (block_branches, block_picture, matrix_html, random_toy)  # noqa: F401
from .nb06_output import (attention_switch, logit_playground, logit_shift, p_summary,
                          tying_switch, vector)  # noqa: F401
from .nb07_generation import (generation_stepper, temperature_explorer)  # noqa: F401
from .lab08_training import (backward_picture, loss_axes, loss_curves, recipe_curves, train_live)  # noqa: F401
from .lab09_gpt2 import (lab_attention)  # noqa: F401
from .lab10_induction import (copy_training, head_explorer, head_switches, sweep_curves, training_replay)  # noqa: F401
from .lab11_writes import (attention_maps, head_table, next_char_plot, sample_chars, stored_training,  # noqa: F401
                           writes_sweep_curves, writes_training)
