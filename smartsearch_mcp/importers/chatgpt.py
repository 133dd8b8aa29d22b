"""ChatGPT data export: `conversations.json` (or the export .zip holding it).

Each conversation keeps its messages in a tree (`mapping`: node id -> {message, parent,
children}); edits and regenerations are branches. We import the branch the user last saw: the
path from `current_node` back to the root. System, tool, hidden and empty messages are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_export_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

SESSION_PREFIX = "chatgpt:"
EXPORT_FILE = "conversations.json"
_ROLES = frozenset({"user", "assistant"})
_TEXT_CONTENT_TYPES = frozenset({"text", "multimodal_text"})


def read_chatgpt(path: str | Path) -> Iterator[SessionInput]:
    """Read a ChatGPT export (conversations.json, or the .zip holding it), one session per
    conversation.

    The whole file is checked before the first session is returned; a file that is not a
    ChatGPT export raises InputError.
    """
    path = Path(path)
    data = load_export_json(path, member=EXPORT_FILE, what="a ChatGPT export (conversations.json)")
    return iter(parse_chatgpt_export(data, source=str(path)))


def parse_chatgpt_export(data: Any, *, source: str = "input") -> list[SessionInput]:
    """Sessions from parsed ChatGPT export JSON; conversations with no text are left out."""
    if isinstance(data, dict) and "mapping" in data:
        data = [data]
    if not isinstance(data, list):
        raise _not_chatgpt(source, f"expected a list of conversations, got {describe(data)}")
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
        raise _not_chatgpt(source, f"{where} is {describe(conversation)}, not an object")
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        hint = ""
        if "chat_messages" in conversation:
            hint = " (it looks like a Claude export: use format 'claude')"
        raise _not_chatgpt(source, f"{where} has no 'mapping' object{hint}")
    conversation_id = conversation.get("conversation_id") or conversation.get("id")
    if not isinstance(conversation_id, str) or not conversation_id:
        conversation_id = f"conversation-{index}"
        logger.warning("%s: %s has no id; using %r", source, where, conversation_id)
    title = conversation.get("title") if isinstance(conversation.get("title"), str) else None
    fallback_time = _epoch(conversation.get("create_time"))
    turns = []
    for node in _main_branch(mapping, conversation.get("current_node"), where, source):
        message = node.get("message")
        if isinstance(message, dict):
            turn = _message_turn(message, title=title, fallback_time=fallback_time)
            if turn is not None:
                turns.append(turn)
    return SessionInput(session_id=SESSION_PREFIX + conversation_id, turns=turns)


def _main_branch(
    mapping: dict[str, Any], current_node: object, where: str, source: str
) -> list[dict[str, Any]]:
    """The nodes from the root to `current_node` (or to the newest leaf when it is absent)."""
    if not mapping:
        return []
    node_id = current_node if current_node is not None else _newest_leaf(mapping, where, source)
    if not isinstance(node_id, str) or node_id not in mapping:
        raise _not_chatgpt(source, f"{where}: current_node {node_id!r} is not in its mapping")
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id is not None:
        node = mapping.get(node_id) if isinstance(node_id, str) else None
        if not isinstance(node, dict):
            raise _not_chatgpt(source, f"{where}: node {node_id!r} is missing from its mapping")
        if node_id in seen:
            raise _not_chatgpt(source, f"{where}: node {node_id!r} is its own ancestor")
        seen.add(node_id)
        branch.append(node)
        node_id = node.get("parent") or None
    branch.reverse()
    return branch


def _newest_leaf(mapping: dict[str, Any], where: str, source: str) -> str:
    """Follow the last child from the root: the most recent branch."""
    roots = [
        key for key, node in mapping.items() if isinstance(node, dict) and not node.get("parent")
    ]
    if not roots:
        raise _not_chatgpt(source, f"{where}: its mapping has no root node (parent null)")
    node_id = roots[0]
    for _ in range(len(mapping)):
        node = mapping[node_id]
        children = node.get("children") if isinstance(node, dict) else None
        known = [c for c in children or [] if isinstance(c, str) and c in mapping]
        if not known:
            break
        node_id = known[-1]
    return node_id


def _message_turn(
    message: dict[str, Any], *, title: str | None, fallback_time: str | None
) -> TurnInput | None:
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    meta = message.get("metadata")
    content = message.get("content")
    if (
        role not in _ROLES
        or (isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"))
        or message.get("recipient", "all") not in ("all", None)
        or not isinstance(content, dict)
        or content.get("content_type", "text") not in _TEXT_CONTENT_TYPES
    ):
        return None
    parts = content.get("parts")
    parts = parts if isinstance(parts, list) else []
    text = "\n\n".join(part for part in parts if isinstance(part, str) and part.strip())
    if not text.strip():
        return None
    metadata: dict[str, Any] = {"source": "chatgpt"}
    if title is not None:
        metadata["title"] = title
    if isinstance(message.get("id"), str):
        metadata["message_id"] = message["id"]
    omitted = [_part_kind(part) for part in parts if not isinstance(part, str)]
    if omitted:
        metadata["omitted_parts"] = omitted
    return TurnInput(
        text=text,
        speaker=str(role),
        role=str(role),
        timestamp=_epoch(message.get("create_time")) or fallback_time,
        metadata=metadata,
    )


def _part_kind(part: object) -> str:
    if isinstance(part, dict) and isinstance(part.get("content_type"), str):
        return str(part["content_type"])
    return describe(part)


def _epoch(value: object) -> str | None:
    """ChatGPT times are Unix epoch seconds (float); kept as their number, written as a string."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return repr(value)
    return value if isinstance(value, str) and value.strip() else None


def _not_chatgpt(source: str, problem: str) -> InputError:
    return InputError(f"{source} does not look like a ChatGPT export: {problem}")
