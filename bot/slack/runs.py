"""Run and Edit & run on the SQL an answer proposes.

The SQL comes from the stored proposal (Run) or from what the person typed in the modal
(Edit & run), never from a button's payload. It runs through `agent.run_statement` as the
person who clicked — the same classifier, guard, grants and audit as the model's
execute_query: reads run at once, changes on non-production databases post the usual
approval card, everything else is refused with the reason. Runs join the thread's queue,
so they never overlap the thread's other work.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from bot.agent.outcomes import Answer, AwaitingApproval, Failed, Outcome
from bot.slack import replies, run_blocks
from bot.slack.conversations import UNEXPECTED
from bot.slack.interactions import Click, first_time, tell_clicker
from bot.slack.proposals import Proposal
from bot.slack.services import Services
from bot.slack.sessions import Thread

log = logging.getLogger(__name__)

UNKNOWN_PROPOSAL = (
    "I no longer know the SQL behind this button (it is too old, or not mine); nothing was run."
)
CHOOSE_FIRST = "Choose the database to run this on from the menu first; nothing was run."
TOO_LONG_TO_EDIT = (
    "This SQL is too long to edit in Slack ({length:,} characters; the editor holds "
    f"{run_blocks.MAX_EDIT_CHARS:,}). Use Run, or copy it; nothing was run."
)
NO_EDITOR = "The editor could not be opened; please try again."
EMPTY_SQL = "Enter the SQL to run."
UNKNOWN_DATABASE = "Choose one of the configured databases."
GONE_FROM_VIEW = "I no longer know the answer this SQL came from; nothing can run from here."


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One statement to run for a person, in the thread of the answer it came from."""

    thread: Thread
    user: str
    database: str
    sql: str
    edited: bool


def _database(services: Services, proposal: Proposal, click: Click | None) -> str | None:
    """The answer's database; else the one the clicker picked in the message's menu (their
    payload), else the last one picked and stored."""
    known = services.proposals.known
    if proposal.database is not None:
        return known(proposal.database)
    picked = None
    if click is not None:
        block_id = f"{run_blocks.ACTIONS_PREFIX}{proposal.id}"
        picked = click.selected(block_id, run_blocks.CHOOSE_DATABASE)
    return known(picked) or known(proposal.chosen)


async def _proposal_for(services: Services, click: Click) -> Proposal | None:
    proposal = await services.proposals.get(click.value)
    if proposal is None:
        log.info("%s by %s names no known proposal", click.action_id, click.user)
        await tell_clicker(services, click, UNKNOWN_PROPOSAL)
    return proposal


async def handle_run_click(services: Services, click: Click) -> None:
    if not await first_time(services, click):
        return
    proposal = await _proposal_for(services, click)
    if proposal is None:
        return
    database = _database(services, proposal, click)
    if database is None:
        await tell_clicker(services, click, CHOOSE_FIRST)
        return
    submit(services, RunRequest(proposal.thread, click.user, database, proposal.sql, edited=False))


async def handle_database_choice(services: Services, click: Click) -> None:
    """A pick in an answer's database menu: remembered with the proposal, so a Run finds
    it even when the click's payload carries no menu state."""
    block_id = click.block_id or ""
    if not block_id.startswith(run_blocks.ACTIONS_PREFIX):
        return
    if services.proposals.known(click.value) is None:
        return
    await services.proposals.choose(block_id.removeprefix(run_blocks.ACTIONS_PREFIX), click.value)


async def handle_edit_click(services: Services, click: Click) -> None:
    if not await first_time(services, click):
        return
    proposal = await _proposal_for(services, click)
    if proposal is None:
        return
    if len(proposal.sql) > run_blocks.MAX_EDIT_CHARS:
        await tell_clicker(services, click, TOO_LONG_TO_EDIT.format(length=len(proposal.sql)))
        return
    if click.trigger_id is None:
        await tell_clicker(services, click, NO_EDITOR)
        return
    database = _database(services, proposal, click)
    view = run_blocks.edit_view(proposal.id, proposal.sql, services.proposals.databases, database)
    try:
        await services.client.views_open(trigger_id=click.trigger_id, view=view)
    except replies.SLACK_ERRORS as exc:
        log.warning("Edit & run modal for %s not opened: %s", click.user, exc)
        await tell_clicker(services, click, NO_EDITOR)


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


def submit(services: Services, request: RunRequest) -> None:
    async def job() -> None:
        await run(services, request)

    services.queues.submit(request.thread.session_id, job)


async def run(services: Services, request: RunRequest) -> None:
    client, thread = services.client, request.thread
    status = replies.StatusLine(client, thread, grace_s=services.status_grace_s)
    try:
        requester = await services.users.requester(request.user)
        outcome: Outcome = await services.agent.run_statement(
            thread.session_id,
            database=request.database,
            sql=request.sql,
            requester=requester,
            progress=status.step,
        )
    except Exception:
        log.exception("Run in %s failed", thread.session_id)
        outcome = Failed(UNEXPECTED)
    await post_outcome(services, request, outcome)
    await status.clear()


async def post_outcome(services: Services, request: RunRequest, outcome: Outcome) -> None:
    client, thread = services.client, request.thread
    if isinstance(outcome, Failed):
        message = run_blocks.refused_message(request.user, request.sql, outcome.message)
        await replies.post(client, thread, message)
    elif isinstance(outcome, AwaitingApproval):
        # The usual card; a click on it runs the change and posts the result (the
        # approval flow in decisions.py). No model run waits on it, so a newer message
        # in the thread does not replace it.
        await replies.post_card(client, thread, outcome.pending)
    elif isinstance(outcome, Answer):
        message = run_blocks.ran_message(
            request.user, request.sql, outcome.text, edited=request.edited
        )
        await replies.post(client, thread, message)
        await replies.post_results(client, thread, outcome.results)
    else:  # run_statement asks no questions; say so rather than drop it
        await replies.post_error(client, thread, UNEXPECTED)
