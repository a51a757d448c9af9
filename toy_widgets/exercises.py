"""The exercise engine ("Check yourself"): the registry, the checkers, the checker box.
"""
import html
import re

import ipywidgets as widgets
import numpy as np

from .draw import TOKENS, fmt
from .kit import course_style, message_area, own, say, typed_number


# --- Exercises ("Check yourself") ------------------------------------------------
# A notebook shows an exercise with one line, `tw.exercise("03.1")`; a write-it-yourself
# exercise passes the learner's function too, `tw.exercise("02.4", embed_rows)`.
# Everything else lives here, registered once by key ("NN.k": notebook NN, k-th
# exercise): the question, the answer, the hints and the worked answer. Answers, hints
# and worked answers are functions, called at check time, that compute from the model
# (never from a notebook's variables). Nothing of the answer is on screen, in the widget
# state or in the stored output before the learner asks for it.
#
# Register with one of:
#   number_exercise(key, question, answer, solution, hints=..., decimals=3)
#   count_exercise(key, question, answer, solution, hints=...)       (a whole number)
#   choice_exercise(key, question, options, answer, solution, hints=...)
#   code_exercise(key, question, reference, cases, solution, mistakes=...)
# Another notebook's or lab's section may register its own (keys "08.1", "09.2", ...).

EXERCISES = {}                                      # key -> dict, filled by the *_exercise functions
_KEY = re.compile(r"\d\d\.\d+")
CHECK_NOTE = ("This is the question as stored with the notebook: run the notebook's cells to "
              "check an answer here.")
NOT_DONE = "Not done yet: complete the function above, run its cell, then run this cell again."


def _now(x):
    """A value or a function computing it: exercises compute their facts at check time."""
    return x() if callable(x) else x


def _register(key, kind, question, solution, **facts):
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"An exercise key is a string such as '03.1' (notebook, number), not {key!r}.")
    if key in EXERCISES:
        raise ValueError(f"Exercise {key} is already registered: give this one another key.")
    if not (callable(question) or isinstance(question, str) and question.strip()):
        raise ValueError(f"Exercise {key} needs its question as a non-empty string "
                         "(or a function returning one, for a question that shows computed numbers).")
    if not (isinstance(solution, str) or callable(solution)):
        raise ValueError(f"Exercise {key} needs its worked answer as a string or a function returning one.")
    EXERCISES[key] = dict(key=key, kind=kind, question=question, solution=solution, **facts)


def number_exercise(key, question, answer, solution, hints=(), decimals=3, fractions=False,
                    tolerance=0.0):
    """Register a question answered by a number.

    One rule for every number exercise: the question asks for `decimals` decimals (stated
    under it: "Give 3 decimals."), and a typed value is right when, given to that many
    decimals, it is the answer given to that many decimals: fmt(answer, decimals), the
    value the worked answer prints and the verdict repeats ("Right: 0.263."). A value with
    fewer decimals than asked is right only when it is the answer exactly (0.2 for 1/5),
    else "close" ("Close: give 3 decimals."); one within CLOSE_UNITS of the last decimal
    is "close" too.

    answer: the right value, or a function computing it from the model (called at check
    time). hints: (wrong value, sentence) pairs, or a function returning them: a typed
    value within one unit of the last decimal of a wrong value gets its sentence.
    fractions=True says under the question that a fraction such as 3/4 is accepted too (any
    number field accepts one; the example is no exercise's answer). tolerance: for an
    answer computed from rounded, printed inputs, a typed value is also right when it is
    within `tolerance` of the answer (say 0.001 when the inputs' rounding moves the result
    by up to one unit of its last decimal); 0 (the default) keeps the one rule above. solution: the worked answer (text, `code` in backticks,
    paragraphs split by blank lines), or a function returning it, which prints the answer
    as fmt(answer, decimals); shown only on request or after a right answer."""
    if not (isinstance(decimals, int) and 0 <= decimals <= 6):
        raise ValueError(f"Exercise {key}: decimals must be a whole number from 0 to 6.")
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance < 10 ** -decimals * CLOSE_UNITS):
        raise ValueError(f"Exercise {key}: tolerance must be at least 0 and smaller than the "
                         "close window.")
    _register(key, "number", question, solution, answer=answer, hints=hints, decimals=decimals,
              fractions=fractions, tolerance=float(tolerance))


def count_exercise(key, question, answer, solution, hints=()):
    """Register a question answered by a whole number (a count): anything else typed
    gets "type a whole number"; hints as in number_exercise, matched exactly."""
    _register(key, "count", question, solution, answer=answer, hints=hints, decimals=0,
              fractions=False, tolerance=0.0)


def choice_exercise(key, question, options, answer, solution, hints=None):
    """Register a multiple-choice question (radio buttons).

    options: the option strings (or a function computing them, for options that show
    computed numbers); answer: the right option, or a function computing it from the
    model; hints: {wrong option: sentence} (or a function returning that dict)."""
    if not (callable(options) or (isinstance(options, (list, tuple)) and len(options) >= 2
                                  and all(isinstance(o, str) for o in options))):
        raise ValueError(f"Exercise {key}: options must be a list of at least two strings.")
    _register(key, "choice", question, solution, options=options, answer=answer, hints=hints or {})


def code_exercise(key, question, reference, cases, solution, mistakes=(), reference_is="the model"):
    """Register a write-it-yourself exercise: the learner completes a function in the
    notebook and calls tw.exercise(key, their_function).

    reference: the model's function that the learner's must agree with (called with
    the same arguments). cases: (label, args tuple) pairs, or a function returning them,
    tried in order; the first input where the learner's result differs is named.
    mistakes: (wrong function, sentence) pairs: a result that equals a typical wrong
    function's on that input gets its sentence. solution: a worked solution (code),
    shown only on request. A function whose body is still `...` (it returns None) or
    that raises NotImplementedError is "not done yet". reference_is: what the feedback
    calls the reference's result ("the measurement" for a finite-difference check)."""
    if not callable(reference):
        raise ValueError(f"Exercise {key}: reference must be the model's function to compare with.")
    _register(key, "code", question, solution, reference=reference, cases=cases, mistakes=mistakes,
              reference_is=reference_is)


def _spec(key):
    if not isinstance(key, str) or key not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise ValueError(f"There is no exercise {key!r}; the exercises are: {known}.")
    return EXERCISES[key]


def _precision(spec):
    if spec["kind"] == "count":
        return "Type a whole number."
    if spec["decimals"] == 0:
        return "Type a number; no decimals needed."
    extra = "; a fraction such as 3/4 is accepted too" if spec["fractions"] else ""
    return f"Give {spec['decimals']} decimal{'s' if spec['decimals'] > 1 else ''}{extra}."


CLOSE_UNITS = 3          # this many units of the last decimal asked for from the answer: "close"


def _units(x, decimals):
    """x in units of the last decimal asked for, as fmt rounds it (0.2628 at 3 -> 263)."""
    return round(float(fmt(x, decimals)) * 10 ** decimals)


def _decimals_typed(text):
    s = str(text).strip()
    if "/" in s:
        return 99
    m = re.search(r"\.(\d+)", s)
    return len(m.group(1)) if m else 0


def answer_number(key, text):
    """Check a typed answer to a number or count exercise: (right?, one sentence).
    Unreadable input raises ValueError with the sentence to show."""
    spec = _spec(key)
    if spec["kind"] not in ("number", "count"):
        raise ValueError(f"Exercise {key} is a {spec['kind']} exercise, not a number.")
    value = typed_number(text, whole=spec["kind"] == "count")
    if spec["kind"] == "count" and abs(value) > 10**15:
        return False, "Not quite: that whole number is far too large; recompute step by step."
    answer, decimals = float(_now(spec["answer"])), spec["decimals"]
    typed = _decimals_typed(text) if spec["kind"] == "number" else decimals
    if typed >= decimals and (fmt(value, decimals) == fmt(answer, decimals) or abs(
            float(fmt(value, decimals)) - answer) <= spec.get("tolerance", 0.0) + 1e-12):
        return True, f"Right: {fmt(answer, decimals)}."
    if abs(value - answer) <= 1e-12 * max(1.0, abs(answer)):     # fewer decimals, but exact
        return True, f"Right: {fmt(answer, decimals)}."
    if typed < decimals and fmt(value, typed) == fmt(answer, typed):
        return False, f"Close: give {_precision(spec)[5:-1]}."
    off = abs(_units(value, decimals) - _units(answer, decimals))
    for wrong, sentence in _now(spec["hints"]):
        if abs(_units(value, decimals) - _units(wrong, decimals)) <= (spec["kind"] == "number"):
            return False, f"Not quite. {sentence}"
    if spec["kind"] == "number" and off <= CLOSE_UNITS:
        return False, ("Close, but the last decimal is off: keep every decimal in the steps "
                       "in between.")
    return False, "Not quite: recompute step by step and try again."


def answer_choice(key, picked):
    """Check a picked option of a choice exercise: (right?, one sentence)."""
    spec = _spec(key)
    if picked is None:
        raise ValueError("Pick one of the options first.")
    options, answer = list(_now(spec["options"])), _now(spec["answer"])
    if picked not in options:
        raise ValueError(f"{picked!r} is not one of the options.")
    if picked == answer:
        return True, "Right."
    return False, "Not quite. " + _now(spec["hints"]).get(picked, "Think it through once more.")


def _real(x):
    """x as an array of real numbers, or None when it is not one (text, complex numbers,
    parts of different shapes, a generator, ...)."""
    try:
        a = np.asarray(x)
    except Exception:                               # the learner's object: anything may fail
        return None
    return a.astype(float) if a.dtype.kind in "biuf" else None


def _what(x):
    """What a learner's function returned, in a few words, for a sentence."""
    a = _real(x)
    if a is not None and a.ndim == 0:
        return f"{int(a)}" if np.isfinite(a) and float(a).is_integer() else fmt(a)
    if a is not None:
        return f"an array of shape {a.shape}"
    try:
        if np.asarray(x).dtype.kind == "c":
            return "complex numbers (the model's are real)"
    except Exception:
        pass
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of parts of different shapes or kinds"
    text, kind = (repr(x) if isinstance(x, (str, int)) else ""), type(x).__name__
    return (f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
            + (f" ({text[:40]}{'…' if len(text) > 40 else ''})" if text and "\n" not in text else ""))


def _same(got, expected, equal_nan=False):
    """Equal shapes and values (to 1e-6, relative): ±inf match ±inf, NaN only if asked.
    Parts (a tuple of arrays) are compared part by part; text and tokens as values."""
    g, e = _real(got), _real(expected)
    if g is not None and e is not None:
        return g.shape == e.shape and bool(
            np.allclose(g, e, rtol=1e-6, atol=1e-9, equal_nan=equal_nan))
    if isinstance(got, (list, tuple)) and isinstance(expected, (list, tuple)) and len(got) == len(expected) \
            and (g is None or e is None) and any(isinstance(p, np.ndarray) for p in expected):
        return all(_same(a, b, equal_nan) for a, b in zip(got, expected))
    try:                                            # text, or lists of tokens: equal as values
        return g is None and e is None and bool(_plain(got) == _plain(expected))
    except Exception:
        return False


def _plain(x):
    """Lists and tuples as nested tuples, so that [["a", "b"]] equals [("a", "b")]."""
    return tuple(map(_plain, x)) if isinstance(x, (list, tuple)) else x


def _shown(x):
    """A result as a sentence shows it: numbers to 3 decimals, anything else as it is."""
    a = _real(x)
    return np.round(a, 3) if a is not None else repr(_plain(x))[:160]


def _difference(label, got, expected, source="the model"):
    """One sentence: how the learner's result differs from the reference's (`source`)."""
    g, e = _real(got), _real(expected)
    if e is None:                                   # the reference's is text, tokens or parts
        shapes = []
        for x in (got, expected):
            try:
                shapes.append(np.shape(x))
            except Exception:
                shapes.append(None)
        if None not in shapes and shapes[0] != shapes[1]:
            return (f"Not yet, on {label}: your function returns {_what(got)}; {source}'s has "
                    f"shape {shapes[1]}.")
        return (f"Not yet, on {label}: your function returns {_shown(got)}, {source} gives "
                f"{_shown(expected)}.")
    if g is None or g.shape != e.shape:
        return (f"Not yet, on {label}: your function returns {_what(got)}; {source}'s is "
                f"{_what(expected)}.")
    return (f"Not yet, on {label}: your function returns {_shown(got)}, {source} gives "
            f"{_shown(expected)}.")


def _copy(args):
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def answer_code(key, function):
    """Run the learner's function on the exercise's inputs against the model's:
    (True, ...) when all agree, (None, NOT_DONE) when it is not written yet, otherwise
    (False, one sentence naming the first input that differs and, if it can, a hint)."""
    spec = _spec(key)
    if spec["kind"] != "code":
        raise ValueError(f"Exercise {key} is answered in its box, not by a function: "
                         f"call tw.exercise({key!r}) alone.")
    if not callable(function):
        raise ValueError(f"Exercise {key} checks a function: pass the function itself "
                         f"(its name, without brackets), not {type(function).__name__}.")
    cases = list(_now(spec["cases"]))
    for label, args in cases:
        expected = spec["reference"](*_copy(args))
        try:
            got = function(*_copy(args))
        except NotImplementedError:
            return None, NOT_DONE
        except Exception as err:       # the learner's code: any error becomes one sentence
            words = str(err).splitlines()[0][:160] if str(err) else ""
            return False, (f"On {label}, your function raised {type(err).__name__}"
                           + (f": {words}" if words else "") + ".")
        if got is None or got is Ellipsis:
            return None, NOT_DONE
        if _same(got, expected):
            continue
        for wrong, sentence in _now(spec["mistakes"]):
            try:
                if _same(got, wrong(*_copy(args)), equal_nan=True):
                    return False, f"Not yet, on {label}: {sentence}"
            except Exception:
                continue
        return False, " ".join(_difference(label, got, expected, spec["reference_is"]).split())
    return True, f"Right: your function agrees with {spec['reference_is']} on all {len(cases)} inputs."


def _inline(text):
    """Question text -> HTML: escaped, `code` in backticks."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text.strip()))


def _rich(text):
    """Worked-answer text -> HTML: paragraphs at blank lines, `code` in backticks."""
    return "".join(f"<p>{_inline(p)}</p>" for p in text.strip().split("\n\n") if p.strip())


def worked_answer_html(key):
    """Exercise `key`'s worked answer as HTML, exactly as its "Show the answer" button
    shows it (a code exercise's solution as a code block); the HTML edition folds it."""
    spec = _spec(key)
    text = _now(spec["solution"])
    return f"<pre>{html.escape(text.strip())}</pre>" if spec["kind"] == "code" else _rich(text)


class ExerciseBox(widgets.VBox):
    """An exercise's root widget (CSS classes course-widget w-check).

    Outside a live kernel (a notebook opened before Run All, on GitHub or nbviewer) its
    stored text/plain and text/html forms show the question, never the answer.
    For tests and scripts: try_answer(value) types (or picks) a value and presses Check
    and returns the sentence shown; show_answer() presses the answer button; .message
    and .right hold the last sentence and verdict (True, False, None: not checked)."""

    def __init__(self, key, plain, rich):
        super().__init__([])
        self.add_class("course-widget")
        self.add_class("w-check")
        self.key, self._plain, self._html = key, plain, rich
        self.message, self.right, self.answer_shown = "", None, False

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = self._plain
        data["text/html"] = (f'<div class="course-widget w-check">{self._html}'
                             f'<p style="font-style:italic">{html.escape(CHECK_NOTE)}</p></div>')
        return data


def exercise(key, function=None):
    """Show exercise `key` ("03.1"): its question, an answer box (or options) with a
    Check button, and a button that shows the worked answer (also shown after a right
    answer). For a write-it-yourself exercise pass the learner's function: it is
    checked at once against the model, and the result is shown under the question."""
    spec = _spec(key)
    kind, question = spec["kind"], _now(spec["question"])
    if kind == "code" and function is None:
        raise ValueError(f"Exercise {key} checks a function you write: call "
                         f"tw.exercise({key!r}, your_function).")
    if kind != "code" and function is not None:
        raise ValueError(f"Exercise {key} is answered in its box: call tw.exercise({key!r}) alone.")
    area = message_area()
    title = widgets.HTML(f"<b>{_inline(question)}</b>")
    worked = widgets.HTML(value="")                 # empty until the learner asks
    reveal = widgets.Button(description="Show a solution" if kind == "code" else "Show the answer")

    def show_answer(_=None):
        worked.value = worked_answer_html(key)
        reveal.disabled, box.answer_shown = True, True

    def report(ok, sentence):
        box.message, box.right = sentence, ok
        say(area, sentence, ok=False if ok is None and kind != "code" else ok, code=True)
        if ok:
            show_answer()

    if kind == "code":
        ok, sentence = answer_code(key, function)
        box = ExerciseBox(key, f"Check yourself {key}: {question}\n{sentence}",
                          f"<p><b>{_inline(question)}</b></p><p>{html.escape(sentence)}</p>")
        box.children = [title, area, reveal, worked, course_style()]
        report(ok, sentence)
    else:
        check = widgets.Button(description="Check", button_style="info")
        if kind == "choice":
            options = list(_now(spec["options"]))
            if _now(spec["answer"]) not in options or len(set(options)) != len(options):
                raise ValueError(f"Exercise {key}: its answer must be exactly one of its distinct options.")
            field = widgets.RadioButtons(options=options, value=None, layout=widgets.Layout(width="auto"))
            box = ExerciseBox(key, f"Check yourself {key}: {question}\n"
                              + "\n".join(f"  ( ) {o}" for o in options),
                              f"<p><b>{_inline(question)}</b></p><ul>"
                              + "".join(f"<li>{html.escape(o)}</li>" for o in options) + "</ul>")
            box.children = [title, field, widgets.HBox([check, reveal]), area, worked, course_style()]
            judge = answer_choice
        else:
            precision = _precision(spec)
            field = widgets.Text(placeholder="your answer", layout=widgets.Layout(width="12em"))
            box = ExerciseBox(key, f"Check yourself {key}: {question}\n({precision})",
                              f"<p><b>{_inline(question)}</b> <i>{html.escape(precision)}</i></p>")
            title.value += f" <i>{html.escape(precision)}</i>"
            box.children = [title, widgets.HBox([field, check, reveal]), area, worked, course_style()]
            judge = answer_number
            field.on_msg(lambda _w, content, _b: attempt() if content.get("event") == "submit" else None)

        def attempt(_=None):
            try:
                report(*judge(key, field.value))
            except ValueError as err:               # unreadable input: one sentence, try again
                report(None, str(err))

        def try_answer(value):
            field.value = value if kind == "choice" else str(value)
            attempt()
            return box.message

        check.on_click(attempt)
        box.try_answer = try_answer
    reveal.on_click(show_answer)
    box.show_answer = show_answer
    return own(box)


# The exercises of notebooks 01-07. Each fact is computed from the model when it is
# needed; `_model` is toy_model itself (its functions, not a notebook's variables).

EXAMPLE_TEXT = "the cat climbed the"


def token_id(name):
    """The id of a token given in show's form (␣cat, ed)."""
    return TOKENS.index(name)
