"""`app_home_opened` → the Home tab published for the person who opened it, and
`assistant_thread_started` → suggested prompts built from the configured databases.

An approver's Home lists the approvals waiting for them (not their own requests unless
self-approval is allowed); everyone's lists the databases and how to ask.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import privacy, strings
from bot.slack.blocks.home import WaitingCard, home_view, suggested_prompts, thread_link
from bot.slack.delivery import SLACK_ERRORS
from bot.slack.services import Services, services_of
from bot.slack.sessions import Thread

log = logging.getLogger(__name__)


async def handle_app_home_opened(event: dict[str, Any], context: AsyncBoltContext) -> None:
    user = event.get("user")
    if not isinstance(user, str) or event.get("tab", "home") != "home":
        return
    await publish_home(services_of(context), user)


async def publish_home(services: Services, user: str) -> None:
    waiting = None
    if await services.approvers.is_approver(user):
        team_url = await _team_url(services)
        own_ok = services.settings.approvals.allow_self_approval
        waiting = []
        for pending in await services.agent.waiting_approvals():
            if not (own_ok or pending.requester != user):
                continue
            thread = Thread.from_session_id(pending.session_id)
            public = await privacy.is_public(services, thread.channel)
            waiting.append(WaitingCard(pending, thread_link(team_url, thread), public))
    view = home_view(services.settings.databases, waiting)
    try:
        await services.client.views_publish(user_id=user, view=view)
    except SLACK_ERRORS as exc:
        log.warning("Home tab of %s not published: %s", user, exc)


async def _team_url(services: Services) -> str | None:
    """The workspace's URL (for thread links), asked of Slack once."""
    if "url" not in services.workspace:
        try:
            response = await services.client.auth_test()
        except SLACK_ERRORS as exc:
            log.warning("workspace URL unknown (%s): Home shows no thread links", exc)
            return None
        services.workspace["url"] = str(response.get("url") or "")
    return services.workspace["url"] or None


async def handle_assistant_thread_started(event: dict[str, Any], context: AsyncBoltContext) -> None:
    thread = event.get("assistant_thread") or {}
    channel, thread_ts = thread.get("channel_id"), thread.get("thread_ts")
    if not (isinstance(channel, str) and isinstance(thread_ts, str)):
        return
    services = services_of(context)
    try:
        await services.client.assistant_threads_setSuggestedPrompts(
            channel_id=channel,
            thread_ts=thread_ts,
            title=strings.PROMPTS_TITLE,
            prompts=suggested_prompts(services.settings.databases),
        )
    except SLACK_ERRORS as exc:
        log.warning("suggested prompts not set in %s: %s", channel, exc)
