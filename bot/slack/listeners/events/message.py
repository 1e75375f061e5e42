"""Message events: DMs, and replies in threads the bot already takes part in.

Everything else is acknowledged and dropped: bot messages, edits, deletions and other
subtypes, top-level channel chatter, and replies that mention the bot (their
`app_mention` delivery handles them).
"""

from __future__ import annotations

from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack.listeners.events import conversation
from bot.slack.services import services_of

# Subtypes that are still a person writing: a reply also sent to the channel, a message
# with a file (the file itself is not read).
PERSON_SUBTYPES = frozenset({"thread_broadcast", "file_share"})


async def handle_message(
    body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
) -> None:
    subtype = event.get("subtype")
    if event.get("bot_id") or (subtype is not None and subtype not in PERSON_SUBTYPES):
        return
    is_dm = event.get("channel_type") == "im"
    text = event.get("text") or ""
    if not is_dm and (
        not event.get("thread_ts") or conversation.mentions(text, context.bot_user_id)
    ):
        return
    incoming = conversation.Incoming.from_event(body, event, is_dm=is_dm)
    if incoming is None:
        return
    services = services_of(context)
    if not is_dm and not await services.known.contains(incoming.thread.session_id):
        return
    await conversation.accept(services, incoming, context.bot_user_id)
