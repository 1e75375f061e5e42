"""The pieces every message is built from: text objects, sections, context lines,
mentions and dates."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.slack import mrkdwn

Block = dict[str, Any]


def plain(text: str, *, emoji: bool = True) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": emoji}


def markdown_section(text: str) -> Block:
    """A section of (already safe) mrkdwn; callers keep it within 3,000 characters."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def code_block(escaped: str) -> str:
    return f"```\n{escaped}\n```"


def slack_date(at: float) -> str:
    """A time Slack renders in each reader's own time zone, with a UTC fallback."""
    fallback = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(at)}^{{date_short_pretty}} at {{time}}|{fallback}>"


def person(user: str) -> str:
    """A Slack user ID as a mention; anything else (a console user) as escaped text."""
    if user[:1] in ("U", "W") and user.isalnum() and user.isupper():
        return f"<@{user}>"
    return mrkdwn.escape(user) or "someone"
