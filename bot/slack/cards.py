"""Approval cards still showing buttons, per thread, so a superseded one can be closed.

A new message in a thread replaces the approval its run was waiting for (the agent drops
the pending record). Its card would otherwise keep live-looking buttons that can only say
"already decided", so after that run the card is updated to say nothing ran. Kept in memory:
after a restart an old card keeps its buttons, and a click on it is answered privately.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import AwaitingApproval, Outcome, PendingApproval
from bot.slack import blocks
from bot.slack.replies import SLACK_ERRORS

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OpenCard:
    pending: PendingApproval
    channel: str
    ts: str


class OpenCards:
    def __init__(self) -> None:
        self._by_session: dict[str, OpenCard] = {}

    def get(self, session: str) -> OpenCard | None:
        return self._by_session.get(session)

    def remember(self, session: str, outcome: Outcome, channel: str, card_ts: str | None) -> None:
        if isinstance(outcome, AwaitingApproval) and card_ts is not None:
            self._by_session[session] = OpenCard(outcome.pending, channel, card_ts)

    def decided(self, session: str, pending_id: str) -> None:
        card = self._by_session.get(session)
        if card is not None and card.pending.id == pending_id:
            del self._by_session[session]

    async def close_if_superseded(
        self, client: AsyncWebClient, session: str, card: OpenCard | None, still_pending: bool
    ) -> None:
        """After a run that started with `card` open: if its approval is gone and no click
        decided it, say so on the card."""
        if card is None or self._by_session.get(session) is not card or still_pending:
            return
        del self._by_session[session]
        try:
            await client.chat_update(
                channel=card.channel, ts=card.ts, **blocks.superseded_card(card.pending)
            )
        except SLACK_ERRORS as exc:
            log.warning("superseded card %s not updated: %s", card.ts, exc)
