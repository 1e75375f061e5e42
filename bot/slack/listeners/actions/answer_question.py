"""A button (or the menu) of the model's question back to the person."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import questions
from bot.slack.interactions import Click
from bot.slack.services import services_of

log = logging.getLogger(__name__)


async def handle_answer_question(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("question click without user, message or value ignored")
        return
    await questions.handle_click(services_of(context), click)
