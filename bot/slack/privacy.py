"""Which conversations are public: the rule for what the bot posts outside a thread.

The audit channel and the App Home tab reach people who are not in the conversation a
change was asked in. They show a change's SQL (with its literals) only when that
conversation is a public channel. For a private channel, a DM or a group DM they name the
database, the row count, the requester and a link to the card, which only the
conversation's members can open.

Whether a channel is public is asked of Slack (conversations.info, scope channels:read)
and remembered for REMEMBER_S (a channel made private counts as private within that time).
A DM (D…) or an old-style private channel (G…) is private without asking; when Slack cannot
say (an error, a missing scope, an answer without is_private), the channel counts as
private: fail closed.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from bot.slack import delivery

if TYPE_CHECKING:
    from bot.slack.services import Services

log = logging.getLogger(__name__)

REMEMBER_S = 300.0


async def is_public(services: Services, channel: str) -> bool:
    """Whether ``channel`` is a public channel (everyone in the workspace may read it)."""
    if not channel.startswith("C"):
        return False  # D… (DMs), G… (private channels, group DMs), anything else
    known = services.public_channels.get(channel)
    if known is not None and time.monotonic() - known[1] < REMEMBER_S:
        return known[0]
    try:
        response = await services.client.conversations_info(channel=channel)
    except delivery.SLACK_ERRORS as exc:
        log.warning("whether %s is public is unknown (%s): treated as private", channel, exc)
        return False  # not remembered: the next post asks again
    info = response.get("channel")
    public = (
        isinstance(info, dict)
        and info.get("is_private") is False
        and not info.get("is_im")
        and not info.get("is_mpim")
    )
    services.public_channels[channel] = (public, time.monotonic())
    return public
