"""Write a copy of LoCoMo with typing errors: words of at least 5 letters are misspelled, each
with probability TURNS (in the turns) or QUESTIONS (in the questions), by one edit of the kinds
people make on a phone — a letter left out, two neighbouring letters swapped, a letter
doubled, or a letter replaced by its neighbour on the keyboard. The first letter is kept.

LoCoMo is written without typos; messaging-app chats are not. This copy measures what typos
cost recall and what reading misspellings (`retrieval.misspellings`) wins back. The errors are
drawn from a generator seeded by the file, the turn and the word's place, so the copy is the
same on every run. Evidence ids are unchanged.
Usage: python docs/bench/scripts/locomo_typos.py SRC_DIR OUT_DIR [TURNS [QUESTIONS]]
(defaults 0.1 and 0).
"""

from __future__ import annotations

import json
import random
import re
import sys
import zlib
from pathlib import Path

SESSION = re.compile(r"session_\d+")
WORD = re.compile(r"[A-Za-z]{5,}")
ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
NEIGHBOURS = {
    key: "".join(
        ROWS[r][c]
        for r in range(max(0, row - 1), min(3, row + 2))
        for c in range(max(0, col - 1), min(len(ROWS[r]), col + 2))
        if (r, c) != (row, col)
    )
    for row, keys in enumerate(ROWS)
    for col, key in enumerate(keys)
}


def misspell(word: str, rng: random.Random) -> str:
    """`word` with one typing error, its first letter kept."""
    i = rng.randrange(1, len(word))
    kind = rng.choice(("drop", "swap", "double", "neighbour"))
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    if kind == "swap" and i < len(word) - 1 and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "double":
        return word[: i + 1] + word[i] + word[i + 1 :]
    near = NEIGHBOURS.get(word[i].lower(), "")
    if not near:
        return word[:i] + word[i + 1 :]
    letter = rng.choice(near)
    return word[:i] + (letter.upper() if word[i].isupper() else letter) + word[i + 1 :]


def with_typos(text: str, rate: float, seed: str) -> str:
    rng = random.Random(zlib.crc32(seed.encode()))

    def replace(match: re.Match[str]) -> str:
        return misspell(match.group(), rng) if rng.random() < rate else match.group()

    return WORD.sub(replace, text)


def typo_copy(data: dict, name: str, turns: float, questions: float) -> dict:
    out = dict(data)
    for key, session in data.items():
        if SESSION.fullmatch(key) and isinstance(session, list):
            out[key] = [
                {**turn, "text": with_typos(turn["text"], turns, f"{name}/{turn['dia_id']}")}
                for turn in session
            ]
    out["qa"] = [
        {**entry, "question": with_typos(entry["question"], questions, f"{name}/q{index}")}
        for index, entry in enumerate(data.get("qa", []))
    ]
    return out


def main(source: str, target: str, turns: float = 0.1, questions: float = 0.0) -> None:
    Path(target).mkdir(parents=True, exist_ok=True)
    for file in sorted(Path(source).glob("*.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        copy = typo_copy(data, file.stem, turns, questions)
        (Path(target) / file.name).write_text(json.dumps(copy), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(float(value) for value in sys.argv[3:5]))
