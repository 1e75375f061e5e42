"""The plain messages of a thread: a piece of an answer, the status line, an error."""

from __future__ import annotations

from typing import Any

from bot.slack import mrkdwn
from bot.slack.blocks.common import markdown_section


def answer_message(piece: str) -> dict[str, Any]:
    """One piece of an answer (mrkdwn, ≤ 3,000 characters): text for notifications, a
    section for display."""
    return {"text": piece, "blocks": [markdown_section(piece)]}


def error_message(message: str) -> dict[str, Any]:
    text = f":warning: {mrkdwn.escape(message)}"
    return {"text": text, "blocks": [markdown_section(mrkdwn.truncate(text, 2_900)[0])]}
