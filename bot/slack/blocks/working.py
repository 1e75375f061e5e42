"""The working message of a run: what it is doing, and a Stop button while it can stop."""

from __future__ import annotations

import time
from typing import Any

from bot.changes.types import ApprovalDecision, PendingApproval
from bot.slack import mrkdwn, strings
from bot.slack.blocks import approval_card
from bot.slack.blocks.common import person

STOP_RUN = "stop_run"


def stop_button(session_id: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": STOP_RUN,
        "text": {"type": "plain_text", "text": strings.STOP_BUTTON, "emoji": True},
        "style": "danger",
        "value": session_id,
        "confirm": {
            "title": {"type": "plain_text", "text": strings.STOP_CONFIRM_TITLE},
            "text": {"type": "mrkdwn", "text": strings.STOP_CONFIRM_TEXT},
            "confirm": {"type": "plain_text", "text": strings.STOP_BUTTON},
            "deny": {"type": "plain_text", "text": strings.STOP_KEEP_GOING},
        },
    }


def working_message(line: str, session_id: str | None) -> dict[str, Any]:
    """The status message: what the run is doing and, while it can be stopped, Stop."""
    text = f":hourglass_flowing_sand: {mrkdwn.escape(line)}"
    blocks: list[dict[str, Any]] = [
        {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}
    ]
    if session_id is not None:
        blocks.append(
            {"type": "actions", "block_id": "working", "elements": [stop_button(session_id)]}
        )
    return {"text": text, "blocks": blocks}


def stopped_message(by: str) -> dict[str, Any]:
    """The thread's note that a run was stopped, and by whom (a mention)."""
    text = f":octagonal_sign: {strings.STOPPED_BY.format(who=person(by))}"
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


def stopped_card(
    pending: PendingApproval, approver: str, scope: str, stopped_by: str
) -> dict[str, Any]:
    """The approval card of a change someone stopped while it ran: approved, then
    stopped, by whom, and what that means for the data."""
    said = strings.STOPPED_WHILE_RUNNING.format(who=stopped_by)  # a bare ID: made a mention
    decision = ApprovalDecision(pending, approver, True, str(scope), said, time.time())
    return approval_card.decided_card(decision)
