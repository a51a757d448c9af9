"""Notebook 01, Tokens: its exercises and its widget (text -> token chips and ids).
"""
import ipywidgets as widgets

import toy_model as _model
from toy_model import VOCAB, encode, token_name

from .draw import MONOSPACE, ORANGE, SKY, token_html
from .kit import builder_text
from .kit import WidgetState, guarded, message_area, on_change, panel, say
from .exercises import choice_exercise, count_exercise


_S1 = "the dog climbed the wall."



count_exercise(
    "01.1", f'How many tokens does "{_S1}" have?',
    answer=lambda: len(encode(_S1)),
    hints=lambda: [(len(_S1.split()), "That is the number of words: ' climbed' is two tokens, "
                    "and '.' is one more."),
                   (len(_S1.split()) + 1, "Close: count both the extra piece of ' climbed' and the '.'.")],
    solution=lambda: (f"{len(encode(_S1))}: " + ", ".join(f"`{token_name(i)}`" for i in encode(_S1))
                      + f". `len(tm.encode({_S1!r}))` computes it. Words are not tokens: `climbed` "
                      "is two, and the full stop, `'.'`, is a token of its own."))

choice_exercise(
    "01.2", 'Which ids does the text "the roof" give? Work it out from the vocabulary table.',
    options=["[1, 6]", "[0, 6]", "[0, 1, 6]", "[6]"],
    answer=lambda: str(encode("the roof")),
    hints={"[1, 6]": "The text starts with 'the', with no space in front: that is not ␣the.",
           "[0, 1, 6]": "The space belongs to the word after it: ' roof' is one token.",
           "[6]": "'the' is a token too: the tokenizer drops nothing."},
    solution=lambda: (f"`{encode('the roof')}`: `the` (no space in front, id {VOCAB.index('the')}) and "
                      f"`␣roof` (id {VOCAB.index(' roof')}). `tm.encode(\"the roof\")` prints it."))

_IDS3 = [5, 1, 2, 0]
choice_exercise(
    "01.3", f"Decode the ids {_IDS3} by hand, with the vocabulary table: which text do they give?",
    options=['"ed the cat the"', '"edthecatthe"', '"ed the catthe"', '" ed the cat the"'],
    answer=lambda: f'"{_model.decode(_IDS3)}"',
    hints={'"ed the cat the"': "Look at id 0 again: 'the' has no space in front, and decoding "
                               "only joins the tokens' own text, adding no space of its own.",
           '"edthecatthe"': "The spaces are part of the tokens: id 1 is ␣the and id 2 is ␣cat.",
           '" ed the cat the"': "Id 5 is 'ed', with no space in front: the text starts with it."},
    solution=lambda: (
        "Look each id up and join the strings: "
        + " + ".join(f"{i} → `{token_name(i)}`" for i in _IDS3)
        + f' gives "{_model.decode(_IDS3)}". The space in front of a word belongs to that word\'s '
        "token, so `the` (id 0), which has none, sticks to the word before it. That is why a "
        "text's first word and the same word later are two different tokens: inside a text a "
        "word follows a space, at the very start it does not."))


CHIP_COLOURS = [SKY, ORANGE]                        # alternating chip backgrounds (black text)


def token_chips(ids):
    """Token ids -> HTML: one coloured chip per token (␣ for the space), its id beneath."""
    chips = []
    for n, i in enumerate(ids):
        colour = CHIP_COLOURS[n % len(CHIP_COLOURS)]
        chips.append(
            f'<span class="token-chip" style="display:inline-block;margin:2px;padding:2px 6px;'
            f'border-radius:4px;background:{colour};color:black;text-align:center;'
            f'font-family:{MONOSPACE};line-height:1.3">{token_html(i)}'
            f'<br>{i}</span>')
    return "".join(chips)


def tokenizer_widget(text="the cat climbed the"):
    """Type text, see its tokens as chips and its ids, at every key. Text the vocabulary
    cannot cover gets encode's sentence naming the part that failed once it is finished
    (Enter); while a word is half typed, a quiet note only, and an empty box says so."""
    text = builder_text(text, "tokenizer_widget", runnable=False)   # one sentence for a wrong text
    box = widgets.Text(value=text, description="text:", continuous_update=True,
                       layout=widgets.Layout(width="32em"))
    chips = widgets.HTML()
    id_list = widgets.HTML()
    area = message_area()
    state = WidgetState(ids=[])

    def update(value, finished=False):
        try:
            state.ids = encode(value)
        except ValueError:
            state.ids = []
            chips.value = id_list.value = ""
            if finished:
                raise
            say(area, "The box is empty: type a text to see its tokens." if value == "" else
                "Not all of it is in the vocabulary yet: keep typing, or press Enter to see why.")
            return
        chips.value = token_chips(state.ids)
        id_list.value = f"<code>ids = {state.ids}</code> ({len(state.ids)} tokens)"

    def submitted(_widget, content, _buffers):
        if content.get("event") == "submit":
            update(box.value, finished=True)

    on_change(box, area, state, update)
    box.on_msg(guarded(area, submitted, state))
    guarded(area, update, state)(text, finished=True)
    root = panel("tokenizer", box, chips, id_list, area)
    root.state = state                                        # for tests
    return root
