"""The approval card: asking for a decision, after it, and when nobody can decide any more;
and the audit channel's line for an executed write.

The buttons carry only the pending approval's id: the SQL to run always comes from the
stored approval, never from a click's payload.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.changes.types import ApprovalDecision, PendingApproval
from bot.db.impact_types import Impact
from bot.slack import mrkdwn, strings
from bot.slack.blocks import undo_card
from bot.slack.blocks.common import (
    Block,
    code_block,
    context,
    markdown_section,
    person,
    plain,
    slack_date,
)
from bot.slack.blocks.impact import impact_blocks, rows_summary
from bot.sql.lexical import trim_sql

APPROVE_ONCE = "approve_once"
APPROVE_THREAD = "approve_thread"
DENY = "deny"
UNDO = "undo"

# SQL shown in a card: the section holding it may have 3,000 characters, fences included.
CARD_SQL_CHARS = 2_800
_ENVIRONMENT_ICONS = {"production": ":red_circle:", "staging": ":large_yellow_circle:"}


def card_sql(sql: str) -> tuple[str, bool]:
    """The SQL as shown in a card (escaped, cut to fit); True when it was cut."""
    return mrkdwn.truncate(mrkdwn.code_text(trim_sql(sql)), CARD_SQL_CHARS)


def requested_by(pending: PendingApproval) -> str:
    """The person who asked, and the MCP client they asked through: "<@U…> via laptop"."""
    who = person(pending.requester)
    client = pending.origin.removeprefix("mcp:") if pending.origin.startswith("mcp:") else ""
    return f"{who} via {mrkdwn.escape(client)}" if client else who


def _facts(pending: PendingApproval) -> Block:
    icon = _ENVIRONMENT_ICONS.get(pending.environment, ":large_green_circle:")
    return {
        "type": "section",
        "fields": [
            {"type": "mrkdwn", "text": f"*Database*\n{mrkdwn.escape(pending.database)}"},
            {
                "type": "mrkdwn",
                "text": f"*Environment*\n{icon} {mrkdwn.escape(pending.environment)}",
            },
            {"type": "mrkdwn", "text": f"*Risk*\n{mrkdwn.escape(pending.risk)}"},
            {"type": "mrkdwn", "text": f"*Requested by*\n{requested_by(pending)}"},
            # The database role the change runs under ([databases.access]).
            *(
                [{"type": "mrkdwn", "text": f"*Runs as role*\n`{mrkdwn.escape(pending.role)}`"}]
                if pending.role
                else []
            ),
        ],
    }


@dataclass(frozen=True, slots=True)
class CardContext:
    """What the card says beyond the pending record: who may approve, until when, and
    whether it can be approved here at all."""

    approvers: Sequence[str] = ()  # user IDs (U…, W…) and user-group IDs (S…)
    expires_at: float | None = None
    # False when the SQL is cut on the card and its full text could not be attached:
    # nobody may approve what they cannot read.
    approvable: bool = True


def _header(title: str, pending: PendingApproval) -> str:
    """A header names the database too; Slack allows a header 150 characters."""
    text = f"{title} on {pending.database}"
    return text if len(text) <= 150 else text[:149] + "…"


def _one_line(text: str) -> str:
    """Runs of ASCII whitespace as one space; any other space stays, to be marked."""
    return re.sub(r"[ \t\r\n\f\v]+", " ", text).strip(" ")


def mention(approver: str) -> str:
    """A configured approver as Slack notifies them: a user, or a user group."""
    if approver.startswith("S"):
        return f"<!subteam^{approver}>"
    return person(approver)


def expiry(at: float) -> str:
    fallback = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(at)}^{{date_short_pretty}} {{time}}|{fallback}>"


def _impact(pending: PendingApproval) -> Impact | None:
    return pending.impact


def _approvals(pending: PendingApproval) -> tuple[tuple[str, ...], int]:
    """Who has approved so far, and how many must."""
    approvals, required = pending.approvals, max(pending.required, 1)
    return approvals, required


def _asked(pending: PendingApproval) -> Block | None:
    words = pending.request_text.strip()
    if not words:
        return None
    quoted = mrkdwn.truncate(mrkdwn.shown(_one_line(words)), 1_500)[0]
    return context(f"{person(pending.requester)} asked: “{quoted}”")


def _who_may_approve(pending: PendingApproval, card: CardContext) -> Block:
    approvals, required = _approvals(pending)
    parts = []
    if card.approvers:
        parts.append("*Approvers:* " + " ".join(mention(a) for a in card.approvers))
    else:
        parts.append("*Approvers:* none configured")
    so_far = f"*Approvals:* {len(approvals)} of {required}"
    if approvals:
        so_far += " (" + ", ".join(person(a) for a in approvals) + ")"
    parts.append(so_far)
    if card.expires_at is not None:
        parts.append(f"*Expires:* {expiry(card.expires_at)}")
    return markdown_section("\n".join(parts))


def _sql_blocks(pending: PendingApproval) -> list[Block]:
    shown, cut = card_sql(pending.sql)
    blocks = [markdown_section(code_block(shown))]
    if cut:
        blocks.append(
            context(
                f"The SQL is cut here ({len(trim_sql(pending.sql)):,} characters); "
                "the full text is attached in this thread."
            )
        )
    return blocks


def _confirm(title: str, text: str, confirm: str) -> dict[str, Any]:
    return {
        "title": plain(title),
        "text": {"type": "mrkdwn", "text": text},
        "confirm": plain(confirm),
        "deny": plain("Cancel"),
    }


def approval_buttons(pending: PendingApproval, *, approvable: bool = True) -> Block:
    """Approve once, Approve for this thread and Deny; Deny alone when it cannot be
    approved here."""
    where = f"*{mrkdwn.escape(pending.database)}* ({mrkdwn.escape(pending.environment)})"
    approve_once = {
        "type": "button",
        "action_id": APPROVE_ONCE,
        "text": plain("Approve once"),
        "style": "primary",
        "value": pending.id,
        "confirm": _confirm("Run this change?", f"Run this SQL once on {where}.", "Run it"),
    }
    approve_thread = {
        "type": "button",
        "action_id": APPROVE_THREAD,
        "text": plain("Approve for this thread"),
        "value": pending.id,
        "confirm": _confirm(
            "Approve for this thread?",
            f"Run this SQL on {where}, and let this thread run the same SQL again "
            "without asking until the grant expires.",
            "Approve",
        ),
    }
    deny = {
        "type": "button",
        "action_id": DENY,
        "text": plain("Deny"),
        "style": "danger",
        "value": pending.id,
    }
    # An MCP client's change is approved once: a thread grant would let anyone who writes in
    # the card's thread run the same SQL again unasked, and the client is not in it.
    once_only = bool(pending.origin)
    elements = (
        [approve_once, deny]
        if approvable and once_only
        else [approve_once, approve_thread, deny]
        if approvable
        else [deny]
    )
    return {"type": "actions", "block_id": "approval", "elements": elements}


def approval_card(pending: PendingApproval, card: CardContext | None = None) -> dict[str, Any]:
    """The card asking an approver to allow one change: the facts, who asked in their
    words, the exact SQL, its impact, who may approve and until when, and the buttons.

    Its text (what notifications show) mentions the approvers, so Slack notifies them."""
    card = card or CardContext()
    impact = _impact(pending)
    approvals, required = _approvals(pending)
    undo = undo_card.is_undo(pending)
    summary = (
        mrkdwn.escape(
            f"Approval needed: {pending.risk} on {pending.database} ({pending.environment}), "
            f"{rows_summary(impact)}, "
        )
        + f"requested by {requested_by(pending)}"
    )
    if undo:
        summary = f"{undo_card.notification(pending)}, requested by {requested_by(pending)}"
    if card.approvers:
        summary += ". Approvers: " + " ".join(mention(a) for a in card.approvers)
    if approvals:
        summary += f". Approved {len(approvals)} of {required}"
    if card.expires_at is not None:
        summary += f". Expires {expiry(card.expires_at)}"
    title = undo_card.TITLE if undo else f":lock: Approval needed: {pending.risk}"
    blocks: list[Block] = [{"type": "header", "text": plain(_header(title, pending))}]
    if undo:  # what it is, first
        blocks.append(markdown_section(undo_card.heading(pending)))
    blocks.append(_facts(pending))
    asked = _asked(pending)
    if asked is not None:
        blocks.append(asked)
    if undo:
        blocks.extend(undo_card.statement_blocks(pending))
    else:
        blocks.extend(_sql_blocks(pending))
        blocks.extend(impact_blocks(impact))
    if pending.reason:
        blocks.append(context(mrkdwn.truncate(mrkdwn.shown(pending.reason), 1_000)[0]))
    blocks.append(_who_may_approve(pending, card))
    if not card.approvable:
        blocks.append(markdown_section(strings.CARD_NOT_APPROVABLE))
    blocks.append(approval_buttons(pending, approvable=card.approvable))
    return {"text": mrkdwn.truncate(summary, 3_000)[0], "blocks": blocks}


def superseded_card(pending: PendingApproval, *, expired: bool = False) -> dict[str, Any]:
    """The card of an approval nobody can decide any more — a newer message in the thread
    replaced it, or it expired: nothing ran."""
    why = (
        "this request expired before anyone decided; ask again if it is still wanted."
        if expired
        else "a newer message in this thread replaced this request."
    )
    blocks = [
        {"type": "header", "text": plain(":heavy_minus_sign: No longer pending")},
        _facts(pending),
        *_sql_blocks(pending),
        markdown_section(f":heavy_minus_sign: *Not run:* {why}"),
    ]
    return {"text": f"No longer pending: {why}", "blocks": blocks}


def closed_card(pending: PendingApproval) -> dict[str, Any]:
    """The card of an approval that is gone though the card never showed a decision: the
    bot stopped while it was being decided, or the request was dropped. Whether its change
    ran is not known here, so the card does not say it did not."""
    why = strings.CARD_CLOSED
    blocks = [
        {"type": "header", "text": plain(":heavy_minus_sign: No longer pending")},
        _facts(pending),
        *_sql_blocks(pending),
        markdown_section(f":heavy_minus_sign: *No longer pending:* {why}"),
    ]
    return {"text": f"No longer pending: {why}", "blocks": blocks}


def interrupted_card(
    pending: PendingApproval, applied: bool | None, account: str
) -> dict[str, Any]:
    """The card of an approved change the bot stopped while it ran, once the restart knows
    what can be known (`account`, the agent's words); no buttons: it is never re-run."""
    if applied is None:
        icon, title = ":warning:", "Outcome unknown"
    elif applied:
        icon, title = ":white_check_mark:", "Applied (the bot stopped while it ran)"
    else:
        icon, title = ":heavy_minus_sign:", "Not applied (the bot stopped while it ran)"
    body, _ = mrkdwn.truncate(mrkdwn.shown(account), 2_900)
    blocks = [
        {"type": "header", "text": plain(f"{icon} {title}")},
        _facts(pending),
        *_sql_blocks(pending),
        markdown_section(body),
    ]
    return {
        # Short: the account itself is told in the thread (and shown in the blocks).
        "text": mrkdwn.escape(f"{title}: {pending.risk} on {pending.database}"),
        "blocks": blocks,
    }


def decided_card(decision: ApprovalDecision) -> dict[str, Any]:
    """The card after the decision: who, when, the outcome; no approval buttons. A change
    that can be undone exactly carries an Undo button (its value: the undo record's id);
    one that cannot says why."""
    pending = decision.pending
    who = person(decision.approver)
    when = slack_date(decision.decided_at)
    if decision.approved:
        icon, verb = ":white_check_mark:", "Approved"
        how = " for this thread" if decision.scope == "thread" else " once"
    else:
        icon, verb, how = ":no_entry_sign:", "Denied", ""
    line = f"{icon} *{verb}{how}* by {who} {when}"
    approvals, _ = _approvals(pending)
    earlier = [a for a in approvals if a != decision.approver]
    if decision.approved and earlier:
        line += " (also approved by " + ", ".join(person(a) for a in earlier) + ")"
    outcome, _ = mrkdwn.truncate(strings.mention_ids(decision.summary), 2_000)
    blocks = [
        {"type": "header", "text": plain(f"{icon} {verb}")},
        _facts(pending),
        *_sql_blocks(pending),
        markdown_section(f"{line}\n*Outcome:* {outcome}"),
    ]
    undo_id, undo_reason = decision.undo_id, decision.undo_reason
    if decision.approved and undo_id:
        blocks.append(undo_button(undo_id))
    elif decision.approved and undo_reason:
        blocks.append(context(f"No Undo: {mrkdwn.shown(undo_reason)}"))
    text = f"{verb} by {who}: {outcome}"
    return {"text": text, "blocks": blocks}


def undo_button(undo_id: str) -> Block:
    """Undo: a click posts the inverse change as a new card, approved like any other."""
    return {
        "type": "actions",
        "block_id": "undo",
        "elements": [
            {
                "type": "button",
                "action_id": UNDO,
                "text": plain("Undo"),
                "value": undo_id,
            }
        ],
    }


def posted_line(pending: PendingApproval, card_link: str | None, *, public: bool = False) -> str:
    """The audit channel's line when a card is posted: who asks for what, where. Its SQL
    only when the card is in a public channel (bot.slack.privacy); else the link to it."""
    where = f"*{mrkdwn.escape(pending.database)}* ({mrkdwn.escape(pending.environment)})"
    link = f" <{card_link}|card>" if card_link else ""
    head = (
        f":lock: {requested_by(pending)} asks for a {mrkdwn.escape(pending.risk)} on "
        f"{where}, {mrkdwn.escape(rows_summary(_impact(pending)))}:{link}"
    )
    if not public:
        return f"{head} {strings.PRIVATE_SQL}"
    return f"{head} {_sql_line(pending.sql)}"


def _sql_line(text: str) -> str:
    return mrkdwn.sql_inline(text, 300)


def approver_dm(pending: PendingApproval, card_link: str | None) -> dict[str, Any]:
    """The DM each approver gets when `[approvals] dm` is on: what waits, and where."""
    where = f"*{mrkdwn.escape(pending.database)}* ({mrkdwn.escape(pending.environment)})"
    link = f"<{card_link}|Open the card>" if card_link else "The card is in the thread."
    text = (
        f":lock: {requested_by(pending)} asks for a {mrkdwn.escape(pending.risk)} on "
        f"{where} ({mrkdwn.escape(rows_summary(_impact(pending)))}) and needs an approver. "
        f"{link}"
    )
    return {"text": text, "blocks": [markdown_section(text)]}


def audit_line(
    decision: ApprovalDecision, *, public: bool = False, card_link: str | None = None
) -> str:
    """One line for the audit channel per executed write: its SQL and outcome only when the
    card is in a public channel (bot.slack.privacy); else the row count and the link."""
    pending = decision.pending
    head = (
        f"{requested_by(pending)} asked, {person(decision.approver)} approved "
        f"({decision.scope or 'once'}) a {mrkdwn.escape(pending.risk)} on "
        f"*{mrkdwn.escape(pending.database)}* ({mrkdwn.escape(pending.environment)})"
    )
    if not public:
        link = f" <{card_link}|card>" if card_link else ""
        rows = mrkdwn.escape(rows_summary(_impact(pending)))
        return f"{head}, {rows}:{link} {strings.PRIVATE_SQL}"
    outcome, _ = mrkdwn.truncate(strings.mention_ids(decision.summary), 500)
    return f"{head}: {outcome} — {_sql_line(pending.sql)}"
