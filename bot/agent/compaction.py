"""Keeping what the model reads small: one tool result, and a session's whole history.

A tool result over the cap keeps its head and its tail (where a compact table states
`row_count` and `truncated`) with a note of what was left out.

A history keeps at most KEPT_EXCHANGES exchanges (an exchange is a person's message and
everything up to the next one): every model call carries the history, and so does every save,
so a thread of a thousand questions must cost what a thread of a dozen does — in CPU, and in
tokens paid for. Older exchanges are summarised, one line each, in `earlier`.

Within that, a history over its token budget gives, in this order: the bodies of its oldest
tool results (they matter least now, and the assistant messages around them still say what
was found); long old texts; then whole old exchanges, oldest first, so a tool call and its
result always leave together and no result is ever left without its call. Each dropped
exchange leaves its line (what was asked, what was answered) in `earlier`, which the system
prompt carries. Last, the current run's own tool results shrink (never the newest).

Every message's token estimate is kept in a list beside the messages, computed once when the
message arrives and again only when compaction changes it: fitting a long thread costs a sum
of integers, not an encoding of the whole history on every model call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

CHARS_PER_TOKEN = 4  # a rough estimate, good enough for a budget
_SHRUNK_CHARS = 200  # what an old tool result keeps, head and tail
_SHRUNK_TEXT_CHARS = 1_000  # an old user/assistant text kept in phase two
KEPT_EXCHANGES = 10  # the most recent exchanges a history keeps whole
EARLIER_LINES = 20  # the most recent dropped exchanges the prompt still names
_EARLIER_CHARS = 160  # of the question and of the answer, in each such line

Message = dict[str, Any]


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


def estimates_for(messages: Sequence[Message], known: list[int]) -> list[int]:
    """`known` made to match `messages`: estimates for messages appended since, computed
    once. A list longer than the messages (edited by hand) is recomputed whole."""
    if len(known) > len(messages):
        known.clear()
    known.extend(estimate_tokens(message) for message in messages[len(known) :])
    return known


def fit_history(
    messages: list[Message],
    budget_tokens: int,
    *,
    estimates: list[int] | None = None,
    earlier: list[str] | None = None,
) -> int:
    """Shrink `messages` in place until they fit the budget; returns how many messages were
    shrunk or dropped. `estimates` (one per message, kept up to date here) and `earlier`
    (lines for dropped exchanges) are the session's own, when given."""
    sizes = estimates_for(messages, [] if estimates is None else estimates)
    starts = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    changed = 0
    if len(starts) > KEPT_EXCHANGES:
        changed += _drop_before(starts[-KEPT_EXCHANGES], messages, sizes, earlier)
    total = sum(sizes)
    if total <= budget_tokens:
        return changed
    last_user = _last_user(messages)
    for phase, kept in (("tool", _SHRUNK_CHARS + 100), ("text", _SHRUNK_TEXT_CHARS)):
        for index in range(last_user):
            if total <= budget_tokens:
                return changed
            # Already short (shrunk by an earlier call): skipped without a look.
            if sizes[index] * CHARS_PER_TOKEN > kept and _shrink(messages, index, phase):
                total += _remeasure(messages, sizes, index)
                changed += 1
    while total > budget_tokens and last_user > 0:
        end = _next_user(messages, 1)
        if end > last_user:
            break
        total -= sum(sizes[:end])
        changed += _drop_before(end, messages, sizes, earlier)
        last_user -= end
    # Still over: the current run's own tool results, oldest first (never the newest one).
    tools = [i for i in range(last_user, len(messages)) if messages[i].get("role") == "tool"]
    for index in tools[:-1]:
        if total <= budget_tokens:
            break
        if _shrink(messages, index, "tool"):
            total += _remeasure(messages, sizes, index)
            changed += 1
    return changed


def _drop_before(
    end: int, messages: list[Message], sizes: list[int], earlier: list[str] | None
) -> int:
    """Drop the whole exchanges before `end` (a user message's index), oldest first, each
    leaving its line in `earlier`."""
    if earlier is not None:
        start = 0
        while start < end:
            stop = _next_user(messages, start + 1)
            earlier.append(_remembered(messages[start:stop]))
            start = stop
        del earlier[:-EARLIER_LINES]
    del messages[:end], sizes[:end]
    return end


def _last_user(messages: Sequence[Message]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)


def _next_user(messages: Sequence[Message], start: int) -> int:
    """Index of the first user message at or after `start` (len(messages) when none)."""
    for index in range(start, len(messages)):
        if messages[index].get("role") == "user":
            return index
    return len(messages)


def _remeasure(messages: Sequence[Message], sizes: list[int], index: int) -> int:
    before, sizes[index] = sizes[index], estimate_tokens(messages[index])
    return sizes[index] - before


def _remembered(exchange: Sequence[Message]) -> str:
    """One line for a dropped exchange: the person's words and the final answer, cut."""
    asked = next((m for m in exchange if m.get("role") == "user"), {}).get("content")
    answers = [m.get("content") for m in exchange if m.get("role") == "assistant"]
    answered = next((a for a in reversed(answers) if isinstance(a, str) and a.strip()), "")
    line = f"asked: {_cut(asked)}"
    return f"{line} → answered: {_cut(answered)}" if answered else line


def _cut(text: Any) -> str:
    words = " ".join(str(text or "").split())
    return words if len(words) <= _EARLIER_CHARS else words[: _EARLIER_CHARS - 1] + "…"


def _shrink(messages: list[Message], index: int, phase: str) -> bool:
    """Replace `messages[index]` by a shrunk copy, if this phase shrinks it. A copy: a
    session's save tells the messages it must write by identity (sessions.py)."""
    message = messages[index]
    content = message.get("content")
    if not isinstance(content, str):
        return False
    role = message.get("role")
    if phase == "tool" and role == "tool" and len(content) > _SHRUNK_CHARS + 100:
        messages[index] = {**message, "content": compact_text(content, _SHRUNK_CHARS)}
        return True
    if phase == "text" and role in ("user", "assistant") and len(content) > _SHRUNK_TEXT_CHARS:
        messages[index] = {**message, "content": compact_text(content, _SHRUNK_TEXT_CHARS)}
        return True
    return False


def total_tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(m) for m in messages)
