"""An MCP client's change in Slack: a message in `[mcp] approval_channel` naming the person
and the client, and the usual approval card (impact, reaches, bounds, Undo) in its thread.

The thread is the change's session: a click on the card is handled by whichever process
serves Slack (it shares the state), runs the change once, and posts the outcome there.
"""

from __future__ import annotations

import logging

from bot.agent.outcomes import Requester
from bot.agent.tools import ApprovalRequired
from bot.changes.types import PendingApproval
from bot.config import McpClient
from bot.slack import cards, delivery, mrkdwn
from bot.slack.blocks.common import person
from bot.slack.services import Services
from bot.slack.sessions import Thread
from bot.state import StateError

log = logging.getLogger(__name__)


def opening_line(client: McpClient, change: ApprovalRequired) -> str:
    where = f"*{mrkdwn.escape(change.database)}* ({mrkdwn.escape(change.environment)})"
    return (
        f":electric_plug: A {mrkdwn.escape(change.risk)} on {where}, requested by "
        f"{person(client.user)} via {mrkdwn.escape(client.name)} (MCP). "
        "The approval card is in this thread."
    )


class SlackApprovals:
    """Posts MCP clients' changes for approval in one channel."""

    def __init__(self, services: Services, channel: str) -> None:
        self.services = services
        self.channel = channel
        self._team: str | None = None

    async def requester(self, user: str) -> Requester:
        """The person a client acts for, with their time zone (get_current_time)."""
        return await self.services.users.requester(user)

    async def team(self) -> str | None:
        if self._team is None:
            try:
                identity = await self.services.client.auth_test()
            except delivery.SLACK_ERRORS as exc:
                log.error("auth.test failed; no MCP change can be posted: %s", exc)
                return None
            team = identity.get("team_id")
            self._team = team if isinstance(team, str) and team else None
        return self._team

    async def open_thread(self, client: McpClient, change: ApprovalRequired) -> Thread | None:
        """The message the card goes under; None when Slack did not take it."""
        team = await self.team()
        if team is None:
            return None
        try:
            response = await self.services.client.chat_postMessage(
                channel=self.channel, text=opening_line(client, change), unfurl_links=False
            )
        except delivery.SLACK_ERRORS as exc:
            log.error("MCP change of %s not posted in %s: %s", client.name, self.channel, exc)
            return None
        ts = response.get("ts")
        return Thread(team, self.channel, ts) if isinstance(ts, str) and ts else None

    async def post_card(self, thread: Thread, pending: PendingApproval) -> str | None:
        """Post the card in the thread and keep it open for clicks; its permalink ("" when
        Slack gives none), or None when the card could not be posted."""
        services = self.services
        card_ts = await cards.post_card(services, thread, pending)
        if card_ts is None:
            return None
        try:
            await services.open_cards.remember(thread.session_id, pending, thread.channel, card_ts)
        except StateError as exc:  # the card works; only a newer restart will not find it
            log.error("card of MCP change %s not kept open: %s", pending.id, exc)
        try:
            response = await services.client.chat_getPermalink(
                channel=thread.channel, message_ts=card_ts
            )
        except delivery.SLACK_ERRORS as exc:
            log.warning("no permalink for the card of MCP change %s: %s", pending.id, exc)
            return ""
        link = response.get("permalink")
        return link if isinstance(link, str) else ""
