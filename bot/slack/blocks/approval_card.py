"""The approval card: asking for a decision, after it, and when nobody can decide any more;
and the audit channel's line for an executed write.

The buttons carry only the pending approval's id: the SQL to run always comes from the
stored approval, never from a click's payload.
"""

from __future__ import annotations

from typing import Any

from bot.agent.outcomes import ApprovalDecision, PendingApproval
from bot.slack import mrkdwn, strings
from bot.slack.blocks.common import (
    Block,
    code_block,
    context,
    markdown_section,
    person,
    plain,
    slack_date,
)
from bot.state.grants import SQL_WHITESPACE

APPROVE_ONCE = "approve_once"
APPROVE_THREAD = "approve_thread"
DENY = "deny"

# SQL shown in a card: the section holding it may have 3,000 characters, fences included.
CARD_SQL_CHARS = 2_800
_ENVIRONMENT_ICONS = {"production": ":red_circle:", "staging": ":large_yellow_circle:"}


def card_sql(sql: str) -> tuple[str, bool]:
    """The SQL as shown in a card (escaped, cut to fit); True when it was cut."""
    return mrkdwn.truncate(mrkdwn.code_text(sql.strip(SQL_WHITESPACE)), CARD_SQL_CHARS)


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
            {"type": "mrkdwn", "text": f"*Requested by*\n{person(pending.requester)}"},
        ],
    }


def _sql_blocks(pending: PendingApproval) -> list[Block]:
    shown, cut = card_sql(pending.sql)
    blocks = [markdown_section(code_block(shown))]
    if cut:
        blocks.append(
            context(
                f"The SQL is cut here ({len(pending.sql.strip()):,} characters); "
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


def approval_buttons(pending: PendingApproval) -> Block:
    where = f"*{mrkdwn.escape(pending.database)}* ({mrkdwn.escape(pending.environment)})"
    return {
        "type": "actions",
        "block_id": "approval",
        "elements": [
            {
                "type": "button",
                "action_id": APPROVE_ONCE,
                "text": plain("Approve once"),
                "style": "primary",
                "value": pending.id,
                "confirm": _confirm("Run this change?", f"Run this SQL once on {where}.", "Run it"),
            },
            {
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
            },
            {
                "type": "button",
                "action_id": DENY,
                "text": plain("Deny"),
                "style": "danger",
                "value": pending.id,
            },
        ],
    }


def approval_card(pending: PendingApproval) -> dict[str, Any]:
    """The card asking an approver to allow one statement: the facts, the exact SQL and
    the three buttons."""
    summary = (
        mrkdwn.escape(
            f"Approval needed: {pending.risk} on {pending.database} ({pending.environment}), "
        )
        + f"requested by {person(pending.requester)}"
    )
    blocks = [
        {"type": "header", "text": plain(f":lock: Approval needed: {pending.risk}")},
        _facts(pending),
        *_sql_blocks(pending),
    ]
    if pending.reason:
        blocks.append(context(mrkdwn.truncate(mrkdwn.escape(pending.reason), 1_000)[0]))
    blocks.append(approval_buttons(pending))
    return {"text": summary, "blocks": blocks}


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


def decided_card(decision: ApprovalDecision) -> dict[str, Any]:
    """The card after the first decision: who, when, the outcome; no buttons."""
    pending = decision.pending
    who = person(decision.approver)
    when = slack_date(decision.decided_at)
    if decision.approved:
        icon, verb = ":white_check_mark:", "Approved"
        how = " for this thread" if decision.scope == "thread" else " once"
    else:
        icon, verb, how = ":no_entry_sign:", "Denied", ""
    line = f"{icon} *{verb}{how}* by {who} {when}"
    outcome, _ = mrkdwn.truncate(strings.mention_ids(decision.summary), 2_000)
    blocks = [
        {"type": "header", "text": plain(f"{icon} {verb}")},
        _facts(pending),
        *_sql_blocks(pending),
        markdown_section(f"{line}\n*Outcome:* {outcome}"),
    ]
    text = f"{verb} by {who}: {outcome}"
    return {"text": text, "blocks": blocks}


def audit_line(decision: ApprovalDecision) -> str:
    """One line for the audit channel per executed write."""
    pending = decision.pending
    sql = " ".join(pending.sql.split())
    sql, _ = mrkdwn.truncate(mrkdwn.escape(sql).replace("`", "'"), 300)
    outcome, _ = mrkdwn.truncate(strings.mention_ids(decision.summary), 500)
    return (
        f"{person(pending.requester)} asked, {person(decision.approver)} approved "
        f"({decision.scope or 'once'}) a {mrkdwn.escape(pending.risk)} on "
        f"*{mrkdwn.escape(pending.database)}* ({mrkdwn.escape(pending.environment)}): "
        f"{outcome} — `{sql}`"
    )
