"""At start: every approved change the last process stopped while it ran is told to its
thread, plainly — what was running, where, that it may or may not have been applied, and
how to check (the agent's words) — and the card it was approved on shows the same, without
its buttons. It is never re-run."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bot.agent.outcomes import Interrupted
from bot.slack import delivery, mrkdwn
from bot.slack.blocks import approval_card
from bot.slack.blocks.common import markdown_section
from bot.slack.sessions import Thread
from bot.state import StateError

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
        await close_card(services, item)
        message = interrupted_message(item.text)
        if await delivery.post(services.client, thread, message) is not None:
            told += 1
    return told


async def close_card(services: Services, item: Interrupted) -> None:
    """The card the change was approved on shows what became of it, without buttons."""
    if item.pending_id is None:
        return
    try:
        card = await services.deciding_cards.take(item.pending_id)
        if card is None:
            card = await services.open_cards.take(item.pending_id)
    except StateError as exc:
        log.error("card of interrupted change %s not found: %s", item.execution_id, exc)
        return
    if card is not None:
        account = approval_card.interrupted_card(card.item, item.applied, item.text)
        await delivery.update(services.client, card.channel, card.ts, account)
