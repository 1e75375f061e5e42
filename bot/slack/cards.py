"""An approval card in its thread: posted with its full SQL when the card has to cut it,
announced (the audit channel, the approvers' DMs), and updated as approvals come in.

A card whose SQL is cut is approvable only when the full text is attached: the file is
shared first, and if Slack refuses it the card offers Deny alone.

A card is posted with its buttons or not at all (never as its plain text, which nobody
could approve): when Slack refuses it, the approval is withdrawn (the change is not run,
the run goes on) and the thread is told.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.changes.types import PendingApproval
from bot.slack import delivery, privacy, strings
from bot.slack.blocks import approval_card, undo_card
from bot.slack.blocks.approval_card import CardContext
from bot.slack.sessions import Thread
from bot.state import StateError

if TYPE_CHECKING:
    from bot.slack.services import Services

log = logging.getLogger(__name__)

NOT_POSTED = strings.CARD_NOT_POSTED


def card_message(
    services: Services, pending: PendingApproval, *, approvable: bool = True
) -> dict[str, object]:
    settings = services.settings
    card = CardContext(
        approvers=tuple(settings.approvals.approvers),
        expires_at=pending.created_at + settings.limits.approval_ttl_s,
        approvable=approvable,
    )
    return approval_card.approval_card(pending, card)


async def post_card(services: Services, thread: Thread, pending: PendingApproval) -> str | None:
    """Post the card (its ts, or None when Slack refused it), then tell the audit channel
    and, with `[approvals] dm`, each approver."""
    client = services.client
    approvable = True
    _, cut = approval_card.card_sql(pending.sql)
    if cut or undo_card.attaches_full_sql(pending):
        approvable = await delivery.post_file(
            client,
            thread,
            pending.sql,
            title=f"Full SQL awaiting approval on {pending.database}",
            filename=f"approval-{pending.id}.sql",
        )
    card = card_message(services, pending, approvable=approvable)
    card_ts, refused = await delivery.post_exactly(client, thread, card)
    if card_ts is None:
        await _withdraw(services, thread, pending, refused or "unknown error")
        return None
    await _announce(services, thread, pending, card_ts)
    return card_ts


async def _withdraw(
    services: Services, thread: Thread, pending: PendingApproval, error: str
) -> None:
    """The card could not be posted: nobody can approve the change, so it does not wait."""
    try:
        await services.agent.withdraw(pending.id, strings.CARD_WITHDRAWN_REASON.format(error=error))
    except StateError as exc:  # still pending: it expires by itself
        log.error("approval %s with no card not withdrawn: %s", pending.id, exc)
    await delivery.post_error(services.client, thread, NOT_POSTED.format(error=error))


async def update_card(services: Services, channel: str, ts: str, pending: PendingApproval) -> bool:
    """The card again, as the pending record now stands (approvals so far)."""
    return await delivery.update(services.client, channel, ts, card_message(services, pending))


async def permalink(services: Services, channel: str, ts: str) -> str | None:
    try:
        response = await services.client.chat_getPermalink(channel=channel, message_ts=ts)
    except delivery.SLACK_ERRORS as exc:
        log.warning("no permalink for card %s: %s", ts, exc)
        return None
    link = response.get("permalink")
    return link if isinstance(link, str) else None


async def _announce(
    services: Services, thread: Thread, pending: PendingApproval, card_ts: str
) -> None:
    settings = services.settings.approvals
    if not (settings.audit_channel or settings.dm):
        return
    link = await permalink(services, thread.channel, card_ts)
    client = services.client
    if settings.audit_channel:
        try:
            await client.chat_postMessage(
                channel=settings.audit_channel,
                text=approval_card.posted_line(
                    pending, link, public=await privacy.is_public(services, thread.channel)
                ),
            )
        except delivery.SLACK_ERRORS as exc:
            log.error("audit line for card %s not posted: %s", pending.id, exc)
    if settings.dm:
        message = approval_card.approver_dm(pending, link)
        for user in await services.approvers.everyone():
            if user == pending.requester and not settings.allow_self_approval:
                continue  # they cannot approve it
            try:
                await client.chat_postMessage(channel=user, **message)
            except delivery.SLACK_ERRORS as exc:
                log.warning("DM to approver %s about card %s failed: %s", user, pending.id, exc)
