"""A click on an approval card: Approve once, Approve for this thread, or Deny (the action
id says which; `decisions.handle_click` checks who clicked and decides)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import decisions
from bot.slack.services import services_of

log = logging.getLogger(__name__)


async def handle_card_decision(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    await ack()
    click = decisions.Click.from_body(body)
    if click is None:
        log.warning("approval card click without user, card or value ignored")
        return
    await decisions.handle_click(services_of(context), click)
