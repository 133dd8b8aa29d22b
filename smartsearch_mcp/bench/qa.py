"""Optional QA accuracy, the paper's protocol: an answer model answers from the recalled
context, a judge model compares that answer with the gold answer (CORRECT / WRONG).

Works with any OpenAI-compatible endpoint (POST {base_url}/chat/completions); the API key is
read from an environment variable by the CLI and never written to results.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import anyio.to_thread

from smartsearch_mcp.types import Scored, SmartSearchError

log = logging.getLogger(__name__)

ANSWER_PROMPT = """You are answering a question about past conversations, using only the \
memories below (excerpts grouped by session, with dates).

{context}

Question (asked on {today}): {question}

Answer in a short phrase of a few words. Resolve relative dates ("last week") against the \
session date. If the memories do not contain the answer, say "not mentioned"."""

JUDGE_PROMPT = """Label an answer to a question as CORRECT or WRONG, given the gold answer.
Be generous: the answer is CORRECT if it refers to the same thing as the gold answer, even \
if it is longer, worded differently, or gives a date in another format; it is WRONG if it \
misses or contradicts the gold answer.

Question: {question}
Gold answer: {gold}
Answer to label: {answer}

Reply with one word: CORRECT or WRONG."""

_WRONG = re.compile(r"\b(WRONG|INCORRECT)\b", re.IGNORECASE)
_CORRECT = re.compile(r"\bCORRECT\b", re.IGNORECASE)


class QAError(SmartSearchError):
    """The answer or judge endpoint failed; the message says which and how."""


class ChatClient:
    """A minimal OpenAI-compatible chat-completions client (standard library only)."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float = 120.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.timeout_s = timeout_s

    def complete(self, model: str, prompt: str, max_tokens: int = 200) -> str:
        """The assistant message content for a one-message chat at temperature 0."""
        body = json.dumps(
            {
                "model": model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0,
                "max_tokens": max_tokens,
            }
        ).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                data = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise QAError(
                f"{self.url} answered HTTP {exc.code} for model {model!r}: {detail}; "
                "check --base-url, the model name and the API key variable"
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise QAError(f"could not reach {self.url}: {exc}; check --base-url") from exc
        except json.JSONDecodeError as exc:
            raise QAError(f"{self.url} did not answer with JSON: {exc}") from exc
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise QAError(f"{self.url}: unexpected response shape {str(data)[:200]}") from exc
        return str(content or "").strip()


def format_context(passages: Sequence[Scored]) -> str:
    """Recalled passages grouped by session (sessions in time order), each with its date."""
    if not passages:
        return "(no memories recalled)"
    groups: dict[str, list[Scored]] = {}
    for scored in passages:
        groups.setdefault(scored.candidate.passage.turn.session_id, []).append(scored)
    ordered = sorted(
        groups.items(),
        key=lambda item: min(s.candidate.passage.turn.timestamp or "" for s in item[1]),
    )
    lines: list[str] = []
    for session_id, items in ordered:
        dates = sorted({(s.candidate.passage.turn.timestamp or "")[:10] for s in items} - {""})
        lines.append(f"Session {session_id} ({', '.join(dates) or 'undated'}):")
        for scored in sorted(
            items, key=lambda s: (s.candidate.passage.turn.position, s.candidate.passage.start)
        ):
            turn = scored.candidate.passage.turn
            lines.append(f"  {turn.speaker or turn.role}: {scored.candidate.passage.text.strip()}")
    return "\n".join(lines)


def parse_judgment(text: str) -> bool | None:
    """True for CORRECT, False for WRONG / INCORRECT, None when the judge said neither."""
    if _WRONG.search(text):
        return False
    if _CORRECT.search(text):
        return True
    return None


@dataclass(frozen=True)
class QAEvaluator:
    """Answers from recalled context and judges the answer against the gold answer."""

    client: ChatClient
    answer_model: str
    judge_model: str

    async def evaluate(
        self,
        question: str,
        gold_answer: str,
        passages: Sequence[Scored],
        reference: datetime | None,
    ) -> dict[str, Any]:
        """{"answer", "judgment", "correct"} for one question (calls run in a worker thread)."""
        return await anyio.to_thread.run_sync(
            partial(self.evaluate_sync, question, gold_answer, passages, reference)
        )

    def evaluate_sync(
        self,
        question: str,
        gold_answer: str,
        passages: Sequence[Scored],
        reference: datetime | None,
    ) -> dict[str, Any]:
        """The blocking form of `evaluate`."""
        today = reference.strftime("%d %B %Y") if reference else "an unknown date"
        prompt = ANSWER_PROMPT.format(
            context=format_context(passages), question=question, today=today
        )
        answer = self.client.complete(self.answer_model, prompt)
        judgment = self.client.complete(
            self.judge_model,
            JUDGE_PROMPT.format(question=question, gold=gold_answer, answer=answer),
            max_tokens=10,
        )
        verdict = parse_judgment(judgment)
        if verdict is None:
            log.warning("judge gave no verdict for %r: %r (counted wrong)", question, judgment)
        return {"answer": answer, "judgment": judgment, "correct": bool(verdict)}
