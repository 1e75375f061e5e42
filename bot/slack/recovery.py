"""At start: every approved change the last process stopped while it ran is told to its
thread, plainly — what was running, where, that it may or may not have been applied, and
how to check (the agent's words). It is never re-run."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bot.agent.outcomes import Interrupted
from bot.slack import delivery, mrkdwn
from bot.slack.blocks.common import markdown_section
from bot.slack.sessions import Thread

if TYPE_CHECKING:
    from bot.slack.services import Services

log = logging.getLogger(__name__)


def interrupted_message(text: str) -> dict[str, Any]:
    body = mrkdwn.truncate(f":warning: {mrkdwn.shown(text)}", 2_900)[0]
    return {"text": body, "blocks": [markdown_section(body)]}


async def tell_interrupted(services: Services, interrupted: Iterable[Interrupted]) -> int:
    """Post each interrupted change's account in its thread; returns how many were told."""
    told = 0
    for item in interrupted:
        try:
            thread = Thread.from_session_id(item.session_id)
        except ValueError:
            log.warning("interrupted change without a Slack thread (%s)", item.session_id)
            continue
        message = interrupted_message(item.text)
        if await delivery.post(services.client, thread, message) is not None:
            told += 1
    return told
