"""How long the course's byte-level BPE takes on GPT-2's real vocabulary, by kind of text.

Target (course spec): 100 kB of any text in about a second. Each kind is a text of about
100,000 bytes that stresses the tokenizer differently:

- prose: many short words, most of them repeated (the word cache's case);
- spaces: one run of 100,000 spaces, a single "word" of 100,000 characters;
- CJK: Japanese without spaces, one long word of 3-byte characters;
- digits: one number of 100,000 digits;
- emoji: 25,000 emoji with nothing between them, one long word of 4-byte characters;
- random digits: one number of 100,000 random digits, whose pieces seldom repeat.

A fresh tokenizer for every kind and every run, so that no word is cached from before; the
best of --repeats runs is kept. The ids are checked against Hugging Face's `tokenizers`
(Rust) on the same files, whose time is printed beside for scale. The tokenizer merges with
tg.bpe_fast; --plain adds a column for tg.bpe, the plain loop it stands for (one run each:
on random digits it takes minutes), with a check that it gives the same ids. --cpu times
CPU time instead of the wall clock, which a busy machine disturbs less.

    .venv/bin/python benchmarks/tokenizer.py [--repeats 3] [--kb 100] [--plain] [--cpu]
"""
import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toy_model as tm  # noqa: E402
import toy_gpt2 as tg  # noqa: E402

PROSE = ("The cat climbed the roof, and the dog, which had never climbed anything taller "
         "than the sofa, watched it from the floor. It's 3 o'clock; they'll sleep soon.\n")


def texts(n_bytes):
    def fill(unit):
        return unit * (n_bytes // len(unit.encode("utf-8")))
    return {"prose": fill(PROSE), "spaces": fill(" "), "CJK": fill("日本語のテキストを読む"),
            "digits": "".join(str(i % 10) for i in range(n_bytes)), "emoji": fill("🙂🐈👍🏽🏠"),
            "random digits": "".join(random.Random(0).choices("0123456789", k=n_bytes))}


def plain_encode(text, vocab, merges):
    """The tokenizer's ids with tg.bpe in place of tg.bpe_fast, each distinct word once."""
    ranks = {pair: r for r, pair in enumerate(merges)}
    words = tg.pre_split(text)
    pieces = {w: tg.bpe(tg.byte_chars(w), ranks) for w in set(words)}
    return [vocab[p] for w in words for p in pieces[w]]


def best_time(fn, repeats, clock):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = clock()
        result = fn()
        best = min(best, clock() - start)
    return best, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per text (best kept)")
    parser.add_argument("--kb", type=int, default=100, help="size of each text in kB (1000 bytes)")
    parser.add_argument("--plain", action="store_true", help="time tg.bpe too, the plain loop")
    parser.add_argument("--cpu", action="store_true", help="CPU time, not the wall clock")
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    _, _, vocab, merges = tg.gpt2_tokenizer()
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        theirs = Tokenizer(models.BPE(dict(vocab), list(merges)))
        theirs.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        theirs.decoder = decoders.ByteLevel()
    except ImportError:
        theirs = None
    print(f"GPT-2's vocabulary ({len(vocab):,} tokens, {len(merges):,} merges); "
          f"best of {args.repeats} runs, a fresh tokenizer each time"
          + ("; CPU time" if args.cpu else ""))
    plain_head = f" {'plain bpe':>11}  same ids" if args.plain else ""
    print(f"{'text':13} {'bytes':>8} {'tokens':>8} {'course BPE':>11} {'tokenizers':>11}  same ids"
          + plain_head)
    for kind, text in texts(args.kb * 1000).items():
        seconds, ids = best_time(lambda: tg.bpe_tokenizer(vocab, merges)[0](text), args.repeats, clock)
        if theirs is not None:
            rust, enc = best_time(lambda: theirs.encode(text).ids, args.repeats, clock)
            same, rust = str(enc == ids), f"{rust:10.3f}s"
        else:
            same, rust = "-", "-"
        plain = ""
        if args.plain:
            slow, enc = best_time(lambda: plain_encode(text, vocab, merges), 1, clock)
            plain = f" {slow:10.3f}s  {enc == ids}"
        print(f"{kind:13} {len(text.encode()):>8,} {len(ids):>8,} {seconds:10.3f}s {rust:>11}  {same:8}"
              + plain)


if __name__ == "__main__":
    main()
