"""Keeping what the model reads small: one tool result, and a session's whole history.

A tool result over the cap keeps its head and its tail (where a compact table states
`row_count` and `truncated`) with a note of what was left out. A history over its token
budget gives up the bodies of its oldest tool results first: they matter least now, and the
assistant messages around them still say what was found.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

CHARS_PER_TOKEN = 4  # a rough estimate, good enough for a budget
_SHRUNK_CHARS = 200  # what an old tool result keeps, head and tail
_SHRUNK_TEXT_CHARS = 1_000  # an old user/assistant text kept in phase two


def omission_note(omitted: int) -> str:
    return f"\n[… {omitted} chars omitted …]\n"


def compact_text(text: str, limit: int) -> str:
    """`text` itself when short enough, else its head and tail around a note; never longer
    than `limit` plus the note."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    head = limit - tail
    return text[:head] + omission_note(len(text) - head - tail) + text[len(text) - tail :]


def estimate_tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return len(text) // CHARS_PER_TOKEN + 1


def _message_tokens(message: dict[str, Any]) -> int:
    return estimate_tokens(message)


def fit_history(messages: list[dict[str, Any]], budget_tokens: int) -> int:
    """Shrink `messages` in place until they fit the budget; returns how many messages were
    shrunk. Tool results go first, oldest first; then long old texts. The last user message
    and everything after it are left alone, and no message is removed, so every tool call
    keeps its result."""
    total = sum(_message_tokens(m) for m in messages)
    if total <= budget_tokens:
        return 0
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
    shrunk = 0
    for phase in ("tool", "text"):
        for message in messages[:last_user]:
            if total <= budget_tokens:
                return shrunk
            before = _message_tokens(message)
            if not _shrink(message, phase):
                continue
            total += _message_tokens(message) - before
            shrunk += 1
    # Still over: the current run's own tool results, oldest first (never the newest one).
    tools = [m for m in messages[last_user:] if m.get("role") == "tool"][:-1]
    for message in tools:
        if total <= budget_tokens:
            break
        before = _message_tokens(message)
        if _shrink(message, "tool"):
            total += _message_tokens(message) - before
            shrunk += 1
    return shrunk


def _shrink(message: dict[str, Any], phase: str) -> bool:
    content = message.get("content")
    if not isinstance(content, str):
        return False
    role = message.get("role")
    if phase == "tool" and role == "tool" and len(content) > _SHRUNK_CHARS + 100:
        message["content"] = compact_text(content, _SHRUNK_CHARS)
        return True
    if phase == "text" and role in ("user", "assistant") and len(content) > _SHRUNK_TEXT_CHARS:
        message["content"] = compact_text(content, _SHRUNK_TEXT_CHARS)
        return True
    return False


def total_tokens(messages: Sequence[dict[str, Any]]) -> int:
    return sum(_message_tokens(m) for m in messages)
