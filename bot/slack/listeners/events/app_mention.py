"""`@dbagent …` in a channel starts or continues the session of its thread."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack.listeners.events import conversation
from bot.slack.services import services_of

log = logging.getLogger(__name__)


async def handle_app_mention(
    body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
) -> None:
    if event.get("bot_id") or event.get("subtype"):
        return
    incoming = conversation.Incoming.from_event(body, event, is_dm=False)
    if incoming is None:
        log.warning("app_mention without user, channel or ts ignored: %s", body.get("event_id"))
        return
    await conversation.accept(services_of(context), incoming, context.bot_user_id)
