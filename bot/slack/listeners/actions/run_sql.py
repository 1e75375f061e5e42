"""Run under a SQL block of an answer: run it as the person who clicked."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import runs
from bot.slack.interactions import Click
from bot.slack.services import services_of

log = logging.getLogger(__name__)


async def handle_run_sql(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("Run click without user, message or value ignored")
        return
    await runs.handle_run_click(services_of(context), click)
