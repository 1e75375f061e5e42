"""The database menu under a SQL block whose answer names no database."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import runs
from bot.slack.interactions import Click
from bot.slack.services import services_of


async def handle_choose_database(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    await ack()
    click = Click.from_body(body)
    if click is not None:
        await runs.handle_database_choice(services_of(context), click)
