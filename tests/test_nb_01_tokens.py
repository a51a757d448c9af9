"""Notebook 01 (Tokens): the tokenizer widget, driven without a browser; the full stop."""
import re

import toy_model as tm
import toy_widgets as tw
from widget_tools import press_enter


def _parts(panel):
    box, chips, id_list, area = panel.children[:4]          # then the course style
    return box, chips, id_list, area


def test_widget_shows_the_example_as_chips_and_ids():
    panel = tw.tokenizer_widget()
    assert "w-tokenizer" in panel._dom_classes
    box, chips, id_list, area = _parts(panel)
    assert box.continuous_update
    assert chips.value.count('class="token-chip"') == 5
    for token in ["the", "␣cat", "␣climb", "ed", "␣the"]:      # ␣ drawn bold, large
        assert f">{tw.token_html(token)}<br>" in chips.value
    assert ">'.'<br>" in tw.token_chips(tm.encode("the roof."))
    assert "[0, 2, 4, 5, 1]" in id_list.value
    assert panel.state.ids == tm.encode("the cat climbed the")
    assert area.value == ""


def test_typing_updates_the_chips_and_ids():
    panel = tw.tokenizer_widget()
    box, chips, id_list, area = _parts(panel)
    box.value = "the dog climbed the wall."
    assert chips.value.count('class="token-chip"') == 7
    assert str(tm.encode("the dog climbed the wall.")) in id_list.value
    box.value = "the cat<|endoftext|>"
    assert "&lt;|endoftext|&gt;<br>11</span>" in chips.value


def test_bad_text_gives_encodes_sentence_and_clears_the_chips_until_good_text():
    panel = tw.tokenizer_widget()
    box, chips, id_list, area = _parts(panel)
    for bad, part in [("the cat jumped", "␣jumped"), ("The cat", "The"), ("the  cat", "␣␣"), ("", "empty")]:
        box.value = bad                          # typed: a quiet note, no error yet
        assert chips.value == "" and id_list.value == ""
        assert ("keep typing" if bad else "box is empty") in area.value and "color:inherit" in area.value
        press_enter(box)                         # finished: encode's sentence
        assert part in area.value and tw.VERMILION in area.value, (bad, area.value)
        press_enter(box)                         # each Enter says it again
        assert part in area.value
    box.value = "the cat"
    assert area.value == ""
    assert chips.value.count('class="token-chip"') == 2


def test_01_roof_with_its_full_stop_is_one_word_and_two_tokens():
    # the toy's first pass keeps the full stop in its word: one piece, spaces cut only
    assert re.findall(r" ?[^\s<]+", " roof.") == [" roof."]
    vocab = list(tm.VOCAB)
    assert tm.encode(" roof.") == [vocab.index(" roof"), vocab.index(".")]
