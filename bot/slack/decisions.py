"""A click on an approval card → the agent's approve/deny, the card updated, the run resumed.

The click's payload is trusted only for who clicked and which card: the id in the button's
value names a stored pending approval, and that record (never the payload) says what SQL
runs where. The agent claims the approval atomically, so the first decision wins and a
double click or a replayed payload does nothing.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from bot.agent.outcomes import (
    AlreadyDecided,
    ApprovalDecision,
    ApprovalExpired,
    Failed,
    PendingApproval,
)
from bot.slack import blocks, replies
from bot.slack.conversations import UNEXPECTED, post_outcome, remember_open
from bot.slack.services import Services
from bot.slack.sessions import Thread
from bot.state.grants import GrantScope

log = logging.getLogger(__name__)

NOT_AN_APPROVER = "Only the configured approvers can approve or deny changes; nothing was done."
NO_APPROVERS = "No approvers are configured, so nobody can approve changes; nothing was done."
EXPIRED = "This approval request expired before anyone decided; nothing was done."
ALREADY_DECIDED = (
    "This request is no longer pending (it was decided, or a newer message replaced it); "
    "nothing was done."
)
SCOPES = {blocks.APPROVE_ONCE: GrantScope.ONCE, blocks.APPROVE_THREAD: GrantScope.THREAD}


@dataclass(frozen=True, slots=True)
class Click:
    user: str
    action: str  # approve_once | approve_thread | deny
    pending_id: str
    channel: str
    card_ts: str
    thread_ts: str

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Click | None:
        try:
            action = body["actions"][0]
            message = body.get("message") or {}
            card_ts = body["container"]["message_ts"]
            return cls(
                user=body["user"]["id"],
                action=action["action_id"],
                pending_id=action["value"],
                channel=body["channel"]["id"],
                card_ts=card_ts,
                thread_ts=message.get("thread_ts") or card_ts,
            )
        except (KeyError, IndexError, TypeError):
            return None


async def _tell(services: Services, click: Click, text: str) -> None:
    """A message only the clicker sees."""
    try:
        await services.client.chat_postEphemeral(
            channel=click.channel, user=click.user, thread_ts=click.thread_ts, text=text
        )
    except replies.SLACK_ERRORS as exc:
        log.warning("ephemeral message to %s failed: %s", click.user, exc)


async def handle_click(services: Services, click: Click) -> None:
    """Check who clicked, then queue the decision behind the thread's current run."""
    if not await services.approvers.allows(click.user):
        log.info(
            "%s is not an approver; %s on %s refused", click.user, click.action, click.pending_id
        )
        refusal = NOT_AN_APPROVER if services.approvers.configured else NO_APPROVERS
        await _tell(services, click, refusal)
        return
    pending = await services.agent.pending(click.pending_id)
    if pending is None:
        await _tell(services, click, ALREADY_DECIDED)
        return
    thread = Thread.from_session_id(pending.session_id)

    async def job() -> None:
        await decide(services, click, thread, pending)

    services.queues.submit(thread.session_id, job)


async def decide(
    services: Services, click: Click, thread: Thread, pending: PendingApproval
) -> None:
    client = services.client
    status = replies.StatusLine(client, thread, grace_s=services.status_grace_s)

    async def on_decided(decision: ApprovalDecision) -> None:
        services.open_cards.decided(thread.session_id, decision.pending.id)
        try:
            await client.chat_update(
                channel=click.channel, ts=click.card_ts, **blocks.decided_card(decision)
            )
        except replies.SLACK_ERRORS as exc:
            log.error("approval card %s not updated: %s", click.card_ts, exc)
        audit_channel = services.settings.approvals.audit_channel
        if decision.approved and audit_channel:
            try:
                await client.chat_postMessage(
                    channel=audit_channel, text=blocks.audit_line(decision), unfurl_links=False
                )
            except replies.SLACK_ERRORS as exc:
                log.error("audit line for approval %s not posted: %s", decision.pending.id, exc)

    try:
        if click.action == blocks.DENY:
            outcome = await services.agent.deny(
                click.pending_id, approver=click.user, progress=status.step, on_decided=on_decided
            )
        else:
            await status.show("Running the approved change…")
            outcome = await services.agent.approve(
                click.pending_id,
                approver=click.user,
                scope=SCOPES[click.action],
                progress=status.step,
                on_decided=on_decided,
            )
    except ApprovalExpired:
        await status.clear()
        await _tell(services, click, EXPIRED)
        with contextlib.suppress(*replies.SLACK_ERRORS):
            await client.chat_update(
                channel=click.channel,
                ts=click.card_ts,
                **blocks.superseded_card(pending, expired=True),
            )
        return
    except AlreadyDecided:
        await status.clear()
        await _tell(services, click, ALREADY_DECIDED)
        return
    except Exception:
        log.exception("decision on %s failed", click.pending_id)
        outcome = Failed(UNEXPECTED)
    delivered = await post_outcome(services, thread, outcome, status)
    remember_open(services, thread, outcome, delivered)
