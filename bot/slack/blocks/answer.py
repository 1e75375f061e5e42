"""The model's answer as a `markdown` block: standard Markdown (headings, lists, tables,
code) renders as the model wrote it, instead of being converted to mrkdwn.

Slack still reads its own control sequences in message text: `<!channel>`, `<!here>`,
`<@U…>`, `<#C…>`. A model repeating what a database row says must not ping a channel, so
each "<" that starts one gets an invisible zero-width space after it; the text reads the
same and code stays byte for byte what the model wrote elsewhere.
"""

from __future__ import annotations

import re
from typing import Any

from bot.slack import mrkdwn

MARKDOWN_BLOCK_CHARS = 12_000  # per block, and per message in all
_CONTROL = re.compile(r"<(?=[!@#])")
_FENCE = "```"
_FENCE_LINE = re.compile(r"^\s*```")


def safe_markdown(text: str) -> str:
    return _CONTROL.sub("<\u200b", text)


def answer_pieces(text: str, limit: int = MARKDOWN_BLOCK_CHARS) -> list[str]:
    """The answer cut into pieces that fit one markdown block each, between lines: a code
    block that spans a cut is closed before it and reopened (with its language) after."""
    text = safe_markdown(text).strip("\n")
    if len(text) <= limit:
        return [text] if text.strip() else []
    pieces: list[str] = []
    lines: list[str] = []
    size = 0
    fence: str | None = None  # the opening line of the code block we are in
    for line in _short_lines(text.split("\n"), limit // 2):
        closing = len(_FENCE) + 1 if fence is not None else 0
        if lines and size + len(line) + 1 + closing > limit:
            pieces.append("\n".join([*lines, _FENCE] if fence is not None else lines))
            lines = [fence] if fence is not None else []
            size = len(fence) + 1 if fence is not None else 0
        lines.append(line)
        size += len(line) + 1
        if _FENCE_LINE.match(line):
            fence = None if fence is not None else line.strip()
    if any(line.strip() for line in lines):
        pieces.append("\n".join(lines))
    return [piece.strip("\n") for piece in pieces if piece.strip()]


def _short_lines(lines: list[str], width: int) -> list[str]:
    """Lines longer than `width` cut into several (a pasted one-line dump)."""
    short: list[str] = []
    for line in lines:
        while len(line) > width:
            short.append(line[:width])
            line = line[width:]
        short.append(line)
    return short


def answer_message(piece: str) -> dict[str, Any]:
    """One piece of an answer: a markdown block, with a plain fallback for notifications."""
    fallback, _ = mrkdwn.truncate(mrkdwn.to_mrkdwn(piece), 3_000)
    return {"text": fallback or " ", "blocks": [{"type": "markdown", "text": piece}]}
