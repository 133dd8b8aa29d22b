"""Write a copy of LoCoMo in which every turn is sent as a burst of messages, one sentence
each (a sentence under 4 words joins the next), by the same speaker at the same time.

LoCoMo has no two consecutive turns by one speaker; messaging-app chats are full of them
("omg" / "just got the job" / "starting monday"). This copy measures what fragmenting a
thought into a burst costs recall, and what burst-aware retrieval wins back. A question's
evidence becomes every fragment of its evidence turns (recall is then the share of them
found). Usage: python docs/bench/scripts/locomo_bursts.py SRC_DIR OUT_DIR
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from smartsearch_mcp.pipeline.passages import sentence_spans

SESSION = re.compile(r"session_(\d+)")


def fragments(text: str) -> list[str]:
    pieces: list[str] = []
    carry = ""
    for start, end in sentence_spans(text):
        sentence = (carry + text[start:end]).strip()
        if len(sentence.split()) < 4:
            carry = sentence + " "
            continue
        pieces.append(sentence)
        carry = ""
    if carry.strip():
        if pieces:
            pieces[-1] = pieces[-1] + " " + carry.strip()
        else:
            pieces.append(carry.strip())
    return pieces or [text]


def burst_copy(data: dict) -> dict:
    out = dict(data)
    mapping: dict[str, list[str]] = {}
    for key, turns in data.items():
        match = SESSION.fullmatch(key)
        if match is None or not isinstance(turns, list):
            continue
        number = int(match[1])
        new_turns = []
        for turn in turns:
            parts = fragments(turn["text"])
            ids = []
            for index, part in enumerate(parts):
                dia_id = f"D{number}:{len(new_turns) + 1}"
                fragment = {"speaker": turn["speaker"], "dia_id": dia_id, "text": part}
                if index == len(parts) - 1 and turn.get("blip_caption"):
                    fragment["blip_caption"] = turn["blip_caption"]
                new_turns.append(fragment)
                ids.append(dia_id)
            mapping[turn["dia_id"]] = ids
        out[key] = new_turns
    qa = []
    for entry in data.get("qa", []):
        entry = dict(entry)
        evidence = []
        for raw in entry.get("evidence") or []:
            for piece in re.split(r"[;,]\s*", str(raw)):
                evidence.extend(mapping.get(piece.strip(), []))
        entry["evidence"] = evidence
        qa.append(entry)
    out["qa"] = qa
    return out


def main(source: str, target: str) -> None:
    Path(target).mkdir(parents=True, exist_ok=True)
    for file in sorted(Path(source).glob("*.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        (Path(target) / file.name).write_text(json.dumps(burst_copy(data)), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
