"""What a run left open in its thread when its process stopped — a streamed message still
streaming, a working message with a Stop button that stops nothing — closed with what
happened, by whichever process takes the run up: exactly once (the store's claim)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from bot.slack import strings
from bot.slack.blocks.common import context
from bot.slack.delivery import SLACK_ERRORS
from bot.slack.sessions import Thread
from bot.state import StateError

if TYPE_CHECKING:
    from bot.slack.services import Services

log = logging.getLogger(__name__)


async def close_left_open(services: Services, thread: Thread, account: str) -> int:
    """Stop the thread's left-open stream with `account` as its failed step, and remove its
    working message (or, without a stream, show `account` in it, without buttons). Returns
    how many messages this process closed."""
    live = services.live_messages
    try:
        found = await live.left_open(thread.session_id)
    except StateError as exc:
        log.warning("what %s left open is not known: %s", thread, exc)
        return 0
    streamed = any(message.kind == "stream" for message in found)
    closed = 0
    for message in found:
        try:
            if not await live.take(message):
                continue  # another process closes it
        except StateError as exc:
            log.warning("the %s message of %s is not claimed: %s", message.kind, thread, exc)
            continue
        try:
            if message.kind == "stream":
                await services.client.chat_stopStream(
                    channel=message.channel, ts=message.ts, chunks=[_cut_off_step(account)]
                )
            elif streamed:
                await services.client.chat_delete(channel=message.channel, ts=message.ts)
            else:
                text = f":warning: {account}"
                await services.client.chat_update(
                    channel=message.channel, ts=message.ts, text=text, blocks=[context(text)]
                )
        except SLACK_ERRORS as exc:
            log.warning("the %s message of %s is not closed: %s", message.kind, thread, exc)
            continue
        closed += 1
    if closed:
        log.info("closed %d message(s) %s left open", closed, thread.session_id)
    return closed


def _cut_off_step(account: str) -> dict[str, Any]:
    return {
        "type": "task_update",
        "id": "cut-off",
        "title": strings.STEP_CUT_OFF,
        "status": "error",
        "details": account,
    }
