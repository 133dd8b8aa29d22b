"""QMSum benchmark meetings: multi-party meeting transcripts and query-focused questions.

One meeting per file: `{topic_list, general_query_list, specific_query_list,
meeting_transcripts: [{speaker, content}]}`. A specific query's gold is the turns of its
`relevant_text_span`: inclusive [start, end] index pairs (strings) into `meeting_transcripts`.
General queries (summaries of the whole meeting) have no span and are only counted. Files are
read from a folder of meetings, a folder of split folders (train/, val/, ...), or one file;
each meeting keeps the name of the folder it was read from as its split.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

_WHAT = "QMSum data (a meeting with meeting_transcripts and specific_query_list)"
# Meeting sources by file name: AMI product design (ES/IS/TS), parliamentary committees,
# and ICSI academic meetings (the rest: Bed, Bmr, Bro, ...).
_PRODUCT_PREFIXES = ("ES", "IS", "TS")
_COMMITTEE_PREFIXES = ("covid_", "education_")


@dataclass(frozen=True, slots=True)
class QMSumQuery:
    """A specific query: `gold` the transcript indices its spans cover (turns with text),
    `unresolved` the spans that could not be read or fall outside the transcript."""

    query: str
    answer: str
    spans: list[tuple[int, int]]
    gold: list[int]
    unresolved: list[str]
    empty_gold: int = 0  # covered turns without text (stored as nothing, so not gold)


@dataclass(frozen=True, slots=True)
class QMSumMeeting:
    """One meeting: its transcript as one session (each turn's index in its metadata), its
    specific queries, and how many general queries it has."""

    name: str
    split: str
    domain: str
    session: SessionInput
    queries: list[QMSumQuery]
    general_queries: int
    empty_turns: int


def load_qmsum(path: str | Path) -> list[QMSumMeeting]:
    """Load QMSum meetings: split folders in name order, then the meetings of each in name
    order. Raises InputError naming the file when its structure is not QMSum's."""
    path = Path(path)
    if path.is_dir():
        splits = sorted(child for child in path.iterdir() if child.is_dir())
        files = sorted(path.glob("*.json")) + [f for s in splits for f in sorted(s.glob("*.json"))]
        if not files:
            raise InputError(f"{path} holds no .json files (nor split folders); expected {_WHAT}")
    else:
        files = [path]
    return [_meeting(load_json(file, what=_WHAT), file) for file in files]


def meeting_domain(name: str) -> str:
    """ "product", "committee" or "academic", from a QMSum meeting's file name."""
    if name.startswith(_PRODUCT_PREFIXES) and name[2:3].isdigit():
        return "product"
    if name.startswith(_COMMITTEE_PREFIXES):
        return "committee"
    return "academic"


def parse_span(span: object, length: int) -> tuple[int, int] | None:
    """An inclusive [start, end] pair of transcript indices (strings or ints), or None when
    it is not one or falls outside a transcript of `length` turns."""
    if not isinstance(span, list | tuple) or len(span) != 2:
        return None
    try:
        start, end = (int(str(value).strip()) for value in span)
    except ValueError:
        return None
    if not 0 <= start <= end < length:
        return None
    return start, end


def _meeting(data: Any, file: Path) -> QMSumMeeting:
    if not isinstance(data, dict) or not isinstance(data.get("meeting_transcripts"), list):
        raise InputError(f"{file}: got {describe(data)}; expected {_WHAT}")
    transcript = data["meeting_transcripts"]
    turns: list[TurnInput] = []
    texts: set[int] = set()
    for index, entry in enumerate(transcript):
        if not isinstance(entry, dict):
            raise InputError(f"{file}, transcript turn {index} is {describe(entry)}")
        content = entry.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        speaker = entry.get("speaker")
        turns.append(
            TurnInput(
                text=content,
                speaker=str(speaker) if speaker else None,
                role="other",
                metadata={"index": index},
            )
        )
        texts.add(index)
    queries = [
        _query(entry, len(transcript), texts, f"{file}, specific query {i}")
        for i, entry in enumerate(data.get("specific_query_list") or [])
    ]
    general = data.get("general_query_list") or []
    meeting = QMSumMeeting(
        name=file.stem,
        split=file.parent.name,
        domain=meeting_domain(file.stem),
        session=SessionInput(session_id=f"qmsum-{file.stem}", turns=turns),
        queries=queries,
        general_queries=len(general) if isinstance(general, list) else 0,
        empty_turns=len(transcript) - len(turns),
    )
    unresolved = sum(len(q.unresolved) for q in queries)
    if unresolved:
        logger.info("%s: %d spans could not be resolved", file, unresolved)
    return meeting


def _query(entry: object, length: int, texts: set[int], where: str) -> QMSumQuery:
    if not isinstance(entry, dict) or not isinstance(entry.get("query"), str):
        raise InputError(f"{where}: a query needs a string 'query'")
    spans: list[tuple[int, int]] = []
    unresolved: list[str] = []
    raw = entry.get("relevant_text_span") or []
    for span in raw if isinstance(raw, list) else [raw]:
        parsed = parse_span(span, length)
        if parsed is None:
            unresolved.append(str(span))
        else:
            spans.append(parsed)
    covered = list(dict.fromkeys(i for start, end in spans for i in range(start, end + 1)))
    answer = entry.get("answer")
    return QMSumQuery(
        query=entry["query"],
        answer="" if answer is None else str(answer),
        spans=spans,
        gold=[i for i in covered if i in texts],
        unresolved=unresolved,
        empty_gold=sum(i not in texts for i in covered),
    )
