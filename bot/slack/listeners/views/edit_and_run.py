"""The Edit & run modal submitted: problems are shown in the modal; otherwise it closes
and the edited SQL runs in the answer's thread, exactly as Run does."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack.blocks import sql_actions as run_blocks
from bot.slack.listeners.actions.sql_actions import RunRequest, submit
from bot.slack.services import Services, services_of

log = logging.getLogger(__name__)

EMPTY_SQL = "Enter the SQL to run."
UNKNOWN_DATABASE = "Choose one of the configured databases."
GONE_FROM_VIEW = "I no longer know the answer this SQL came from; nothing can run from here."


def register(app: AsyncApp) -> None:
    app.view(run_blocks.EDIT_VIEW)(handle_edit_submission)


async def handle_edit_submission(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    submission = Submission.from_body(body)
    if submission is None:
        log.warning("Edit & run submission without user or values closed")
        await ack()
        return
    services = services_of(context)
    errors = await check_submission(services, submission)
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    await ack()
    await run_submission(services, submission)


@dataclass(frozen=True, slots=True)
class Submission:
    user: str
    view_id: str
    proposal_id: str | None
    sql: str
    database: str | None

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Submission | None:
        try:
            view = body["view"]
            user = body["user"]["id"]
            values = view["state"]["values"]
        except (KeyError, TypeError):
            return None
        sql_input = (values.get(run_blocks.SQL_BLOCK) or {}).get(run_blocks.SQL_INPUT) or {}
        menu = (values.get(run_blocks.DATABASE_BLOCK) or {}).get(run_blocks.DATABASE_INPUT) or {}
        database = (menu.get("selected_option") or {}).get("value")
        sql = sql_input.get("value")
        return cls(
            user=str(user),
            view_id=str(view.get("id") or view.get("hash") or ""),
            proposal_id=run_blocks.proposal_of_view(view),
            sql=sql if isinstance(sql, str) else "",
            database=database if isinstance(database, str) else None,
        )


async def check_submission(services: Services, submission: Submission) -> dict[str, str]:
    """Errors to show in the modal, by block id; empty when the edit may run."""
    errors: dict[str, str] = {}
    proposal = (
        await services.proposals.get(submission.proposal_id) if submission.proposal_id else None
    )
    if proposal is None:
        errors[run_blocks.SQL_BLOCK] = GONE_FROM_VIEW
    elif not submission.sql.strip():
        errors[run_blocks.SQL_BLOCK] = EMPTY_SQL
    if services.proposals.known(submission.database) is None:
        errors[run_blocks.DATABASE_BLOCK] = UNKNOWN_DATABASE
    return errors


async def run_submission(services: Services, submission: Submission) -> None:
    """After the modal closed: run the edited text as Run does, in the answer's thread."""
    if not submission.view_id or not await services.dedupe.first_interaction(
        f"view:{submission.view_id}"
    ):
        log.info("replayed Edit & run submission by %s ignored", submission.user)
        return
    proposal = await services.proposals.get(submission.proposal_id or "")
    database = services.proposals.known(submission.database)
    if proposal is None or database is None:  # checked before the ack; gone since
        return
    request = RunRequest(proposal.thread, submission.user, database, submission.sql, edited=True)
    submit(services, request)
