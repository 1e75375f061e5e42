"""A click on an approval card — Approve once, Approve for this thread, or Deny — becomes
the agent's approve/deny; the card is updated and the run resumed.

The click's payload is trusted only for who clicked and which card: the id in the button's
value names a stored pending approval, and that record (never the payload) says what SQL
runs where. The agent claims the approval atomically, so the first decision wins and a
double click or a replayed payload does nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.agent.outcomes import AwaitingApproval, Outcome
from bot.changes.types import (
    AlreadyDecided,
    ApprovalDecision,
    ApprovalExpired,
    PendingApproval,
    SelfApprovalRefused,
)
from bot.slack import cards, delivery, privacy, strings
from bot.slack.approvers import MembershipUnknown
from bot.slack.blocks import approval_card
from bot.slack.blocks.approval_card import APPROVE_ONCE, APPROVE_THREAD, DENY
from bot.slack.blocks.working import stopped_card
from bot.slack.clicks import Click, refused_when_the_store_fails, tell_clicker
from bot.slack.live import LiveProgress
from bot.slack.open_messages import OpenMessage
from bot.slack.outcome import Delivered, answer_in_thread
from bot.slack.services import Services, services_of
from bot.slack.sessions import Thread
from bot.slack.streamed import deliver_streamed
from bot.state import StateError
from bot.state.grants import GrantScope

log = logging.getLogger(__name__)

NOT_AN_APPROVER = strings.NOT_AN_APPROVER
NO_APPROVERS = strings.NO_APPROVERS
MEMBERSHIP_UNKNOWN = strings.MEMBERSHIP_UNKNOWN
EXPIRED = strings.APPROVAL_EXPIRED
ALREADY_DECIDED = strings.ALREADY_DECIDED
SCOPES = {APPROVE_ONCE: GrantScope.ONCE, APPROVE_THREAD: GrantScope.THREAD}


def register(app: AsyncApp) -> None:
    for decision in (APPROVE_ONCE, APPROVE_THREAD, DENY):
        app.action(decision)(handle_card_decision)


async def handle_card_decision(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("approval card click without user, card or value ignored")
        return
    await handle_click(services_of(context), click)


@refused_when_the_store_fails
async def handle_click(services: Services, click: Click) -> None:
    """Check who clicked, then queue the decision behind the thread's current run."""
    try:
        allowed = await services.approvers.allows(click.user)
    except MembershipUnknown:
        log.warning("approver group of %s unknown; %s refused", click.user, click.action_id)
        await tell_clicker(services, click, MEMBERSHIP_UNKNOWN)
        return
    if not allowed:
        log.info(
            "%s is not an approver; %s on %s refused", click.user, click.action_id, click.value
        )
        refusal = NOT_AN_APPROVER if services.approvers.configured else NO_APPROVERS
        await tell_clicker(services, click, refusal)
        return
    pending = await services.agent.pending(click.value)
    if pending is None:
        await tell_clicker(services, click, ALREADY_DECIDED)
        await close_orphaned_card(services, click)
        return
    thread = Thread.from_session_id(pending.session_id)

    async def job() -> None:
        await decide_click(services, click, thread, pending)

    services.queues.submit(thread.session_id, job)


async def decide_click(
    services: Services, click: Click, thread: Thread, pending: PendingApproval
) -> None:
    client = services.client
    status = LiveProgress(
        client,
        thread,
        services.capabilities,
        recipient=pending.requester,
        grace_s=services.status_grace_s,
        left_open=services.live_messages,
    )

    decided: list[ApprovalDecision] = []

    async def on_decided(decision: ApprovalDecision) -> None:
        decided.append(decision)
        await services.deciding_cards.forget(decision.pending.id)
        card = approval_card.decided_card(decision)
        if not await delivery.update(client, click.channel, click.message_ts, card):
            # The card still asks for a decision that was made (and maybe ran): say what
            # happened in the thread instead.
            log.error("approval card %s not updated; posting the outcome", click.message_ts)
            await delivery.post(client, thread, approval_card.decided_card(decision))
        audit_channel = services.settings.approvals.audit_channel
        if decision.approved and audit_channel:
            public = await privacy.is_public(services, click.channel)
            link = (
                None if public else await cards.permalink(services, click.channel, click.message_ts)
            )
            try:
                await client.chat_postMessage(
                    channel=audit_channel,
                    text=approval_card.audit_line(decision, public=public, card_link=link),
                    unfurl_links=False,
                )
            except delivery.SLACK_ERRORS as exc:
                log.error("audit line for approval %s not posted: %s", decision.pending.id, exc)

    async def run() -> Outcome | None:
        try:
            if click.action_id == DENY:
                return await services.agent.deny(
                    click.value, approver=click.user, progress=status, on_decided=on_decided
                )
            await status.show("Running the approved change…")
            return await services.agent.approve(
                click.value,
                approver=click.user,
                scope=SCOPES[click.action_id],
                progress=status,
                on_decided=on_decided,
            )
        except ApprovalExpired:
            await status.clear()
            await tell_clicker(services, click, EXPIRED)
            expired = approval_card.superseded_card(pending, expired=True)
            await delivery.update(client, click.channel, click.message_ts, expired)
            return None
        except AlreadyDecided:
            await status.clear()
            await tell_clicker(services, click, ALREADY_DECIDED)
            return None
        except SelfApprovalRefused as refused:
            await status.clear()
            await tell_clicker(services, click, refused.reason)  # four eyes; the card stays
            return None

    async def poster(outcome: Outcome) -> Delivered:
        if isinstance(outcome, AwaitingApproval) and outcome.pending.id == click.value:
            # Counted, but more approvers must click: the same card shows who has.
            await cards.update_card(services, click.channel, click.message_ts, outcome.pending)
            approvals, required = len(outcome.pending.approvals), outcome.pending.required
            await tell_clicker(services, click, counted(approvals, required))
            return Delivered(card_ts=click.message_ts)
        return await deliver_streamed(services, thread, status, outcome)

    services.turns.begin(thread.session_id, pending.requester)
    status.allow_stop()
    await _deciding(services, pending.id)
    cut_off = False
    try:
        await answer_in_thread(services, thread, status, run(), what="decision", poster=poster)
        stopper = services.turns.stopped_by(thread.session_id)
        if stopper is not None and not decided and click.action_id != DENY:
            card = stopped_card(pending, click.user, SCOPES[click.action_id], stopper)
            await delivery.update(client, click.channel, click.message_ts, card)
    except asyncio.CancelledError:
        cut_off = True  # the bot stops: the restart shows on the card what became of it
        raise
    finally:
        services.turns.end(thread.session_id)
        if not cut_off:
            await _decided(services, pending.id)


async def _deciding(services: Services, pending_id: str) -> None:
    """While the decision runs its card is not open: a newer message does not call it
    replaced, a click meanwhile does not close it, and after a crash the restart finds it
    by its approval to show what became of the change."""
    try:
        card = await services.open_cards.take(pending_id)
        if card is not None:
            await services.deciding_cards.remember(
                card.item.session_id, card.item, card.channel, card.ts
            )
    except StateError as exc:
        log.error("card of approval %s not marked deciding: %s", pending_id, exc)


async def _decided(services: Services, pending_id: str) -> None:
    """The decision ended: a card still waiting for approvers (four eyes, a refused self
    approval) is open again; any other was updated by the decision."""
    try:
        card = await services.deciding_cards.take(pending_id)
        if card is None:
            return
        current = await services.agent.pending(pending_id)
        if current is not None:
            await services.open_cards.remember(current.session_id, current, card.channel, card.ts)
    except StateError as exc:
        log.error("card of approval %s not reopened: %s", pending_id, exc)


async def close_orphaned_card(services: Services, click: Click) -> None:
    """A click on a card whose approval is gone while no decision of it runs (the bot
    stopped before it ran, or it was dropped): its buttons go, so nobody clicks again."""
    try:
        card = await services.open_cards.take(click.value)
        if card is None:
            card = await _orphaned_decision(services, click.value)
    except StateError as exc:
        log.error("card of approval %s not closed: %s", click.value, exc)
        return
    if card is not None:
        gone = approval_card.closed_card(card.item)
        await delivery.update(services.client, card.channel, card.ts, gone)


async def _orphaned_decision(
    services: Services, pending_id: str
) -> OpenMessage[PendingApproval] | None:
    deciding = await services.deciding_cards.get(pending_id)
    if deciding is None:
        return None
    session = deciding.item.session_id
    if services.queues.busy(session) or await services.state.leases.held(session):
        return None  # the decision runs now, here or on another replica
    return await services.deciding_cards.take(pending_id)


def counted(approvals: int, required: int) -> str:
    waiting = max(required - approvals, 1)
    more = "another approver approves" if waiting == 1 else f"{waiting} more approvers approve"
    return strings.APPROVAL_COUNTED.format(approvals=approvals, required=required, more=more)
