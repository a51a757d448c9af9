"""How long the course's byte-level BPE takes on GPT-2's real vocabulary, by kind of text.

Target (course spec): 100 kB of any text in about a second. Each kind is a text of about
100,000 bytes that stresses the tokenizer differently:

- prose: many short words, most of them repeated (the word cache's case);
- spaces: one run of 100,000 spaces, a single "word" of 100,000 characters;
- CJK: Japanese without spaces, one long word of 3-byte characters;
- digits: one number of 100,000 digits;
- emoji: 25,000 emoji with nothing between them, one long word of 4-byte characters.

A fresh tokenizer for every kind and every run, so that no word is cached from before; the
best of --repeats runs is kept. The ids are checked against Hugging Face's `tokenizers`
(Rust) on the same files, whose time is printed beside for scale.

    .venv/bin/python benchmarks/tokenizer.py [--repeats 3] [--kb 100]
"""
import argparse
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
            "digits": "".join(str(i % 10) for i in range(n_bytes)), "emoji": fill("🙂🐈👍🏽🏠")}


def best_time(fn, repeats):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per text (best kept)")
    parser.add_argument("--kb", type=int, default=100, help="size of each text in kB (1000 bytes)")
    args = parser.parse_args()
    _, _, vocab, merges = tg.gpt2_tokenizer()
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        ranks = {t: i for t, i in vocab.items()}
        theirs = Tokenizer(models.BPE(ranks, list(merges)))
        theirs.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        theirs.decoder = decoders.ByteLevel()
    except ImportError:
        theirs = None
    print(f"GPT-2's vocabulary ({len(vocab):,} tokens, {len(merges):,} merges); "
          f"best of {args.repeats} runs, a fresh tokenizer each time")
    print(f"{'text':8} {'bytes':>8} {'tokens':>8} {'course BPE':>11} {'tokenizers':>11}  same ids")
    for kind, text in texts(args.kb * 1000).items():
        seconds, ids = best_time(lambda: tg.bpe_tokenizer(vocab, merges)[0](text), args.repeats)
        if theirs is not None:
            rust, enc = best_time(lambda: theirs.encode(text).ids, args.repeats)
            same, rust = str(enc == ids), f"{rust:10.3f}s"
        else:
            same, rust = "-", "-"
        print(f"{kind:8} {len(text.encode()):>8,} {len(ids):>8,} {seconds:10.3f}s {rust:>11}  {same}")


if __name__ == "__main__":
    main()
