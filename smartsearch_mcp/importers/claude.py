"""Claude.ai data export: `conversations.json` (or the export .zip holding it).

A list of conversations `{uuid, name, created_at, chat_messages: [{uuid, sender, text,
content?, created_at, attachments?, files?}]}`; `sender` is "human" or "assistant".
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_export_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

SESSION_PREFIX = "claude:"
EXPORT_FILE = "conversations.json"
_ROLE_OF_SENDER = {"human": "user", "user": "user", "assistant": "assistant"}


def read_claude(path: str | Path) -> Iterator[SessionInput]:
    """Read a Claude.ai export (conversations.json, or the .zip holding it), one session per
    conversation.

    The whole file is checked before the first session is returned; a file that is not a
    Claude export raises InputError.
    """
    path = Path(path)
    data = load_export_json(path, member=EXPORT_FILE, what="a Claude export (conversations.json)")
    return iter(parse_claude_export(data, source=str(path)))


def parse_claude_export(data: Any, *, source: str = "input") -> list[SessionInput]:
    """Sessions from parsed Claude export JSON; conversations with no text are left out."""
    if isinstance(data, dict) and "chat_messages" in data:
        data = [data]
    if not isinstance(data, list):
        raise _not_claude(source, f"expected a list of conversations, got {describe(data)}")
    sessions = []
    for index, conversation in enumerate(data):
        session = _conversation_session(conversation, index, source)
        if session.turns:
            sessions.append(session)
        else:
            logger.debug("%s: conversation %s has no text messages", source, session.session_id)
    return sessions


def _conversation_session(conversation: object, index: int, source: str) -> SessionInput:
    where = f"conversation {index}"
    if not isinstance(conversation, dict):
        raise _not_claude(source, f"{where} is {describe(conversation)}, not an object")
    messages = conversation.get("chat_messages")
    if not isinstance(messages, list):
        hint = ""
        if "mapping" in conversation:
            hint = " (it looks like a ChatGPT export: use format 'chatgpt')"
        raise _not_claude(source, f"{where} has no 'chat_messages' list{hint}")
    conversation_id = conversation.get("uuid")
    if not isinstance(conversation_id, str) or not conversation_id:
        conversation_id = f"conversation-{index}"
        logger.warning("%s: %s has no uuid; using %r", source, where, conversation_id)
    name = conversation.get("name")
    title = name if isinstance(name, str) and name else None
    fallback_time = _time(conversation.get("created_at"))
    turns = []
    for position, message in enumerate(messages):
        turn = _message_turn(
            message,
            f"{where}, message {position}",
            source,
            title=title,
            fallback_time=fallback_time,
        )
        if turn is not None:
            turns.append(turn)
    return SessionInput(session_id=SESSION_PREFIX + conversation_id, turns=turns)


def _message_turn(
    message: object, where: str, source: str, *, title: str | None, fallback_time: str | None
) -> TurnInput | None:
    if not isinstance(message, dict):
        raise _not_claude(source, f"{where} is {describe(message)}, not an object")
    sender = message.get("sender")
    if not isinstance(sender, str) or not sender:
        raise _not_claude(source, f"{where} has no 'sender'")
    text = _message_text(message)
    if not text.strip():
        return None
    metadata: dict[str, Any] = {"source": "claude"}
    if title is not None:
        metadata["title"] = title
    if isinstance(message.get("uuid"), str):
        metadata["message_id"] = message["uuid"]
    attachments = _attachment_names(message)
    if attachments:
        metadata["attachments"] = attachments
    role = _ROLE_OF_SENDER.get(sender, "other")
    return TurnInput(
        text=text,
        speaker=role if role != "other" else sender,
        role=role,
        timestamp=_time(message.get("created_at")) or fallback_time,
        metadata=metadata,
    )


def _message_text(message: dict[str, Any]) -> str:
    """`text`, or the message's text content blocks joined when `text` is empty."""
    text = message.get("text")
    if isinstance(text, str) and text.strip():
        return text
    content = message.get("content")
    return content_text(content) if isinstance(content, list) else ""


def content_text(content: Any) -> str:
    """The text of a message's `content`: the string itself, or its non-empty text blocks
    joined (Claude.ai exports and Claude Code transcripts share this shape)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n\n".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and block["text"].strip()
    )


def _attachment_names(message: dict[str, Any]) -> list[str]:
    names = []
    for key in ("attachments", "files"):
        items = message.get(key)
        for item in items if isinstance(items, list) else []:
            name = item.get("file_name") if isinstance(item, dict) else None
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


def _time(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _not_claude(source: str, problem: str) -> InputError:
    return InputError(f"{source} does not look like a Claude export: {problem}")
