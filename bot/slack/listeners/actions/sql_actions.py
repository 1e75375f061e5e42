"""The buttons under the SQL an answer proposes: Run, Edit & run (which opens the editor;
its submission is listeners/views/edit_and_run.py) and the database menu.

The SQL comes from the stored proposal (Run) or from what the person typed in the modal
(Edit & run), never from a button's payload. It runs through `agent.run_statement` as the
person who clicked — the same classifier, guard, grants and audit as the model's
execute_query: reads run at once, changes on non-production databases post the usual
approval card, everything else is refused with the reason. Runs join the thread's queue,
so they never overlap the thread's other work; the person who clicked (or an approver) may
Stop one from its working message, as a model's run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.agent.outcomes import Answer, AwaitingApproval, Failed, Outcome, Stopped
from bot.slack import cards, delivery
from bot.slack.blocks import sql_actions as run_blocks
from bot.slack.blocks.working import stopped_message
from bot.slack.clicks import Click, first_time, refused_when_the_store_fails, tell_clicker
from bot.slack.outcome import UNEXPECTED, Delivered, answer_in_thread
from bot.slack.proposals import Proposal
from bot.slack.services import Services, services_of
from bot.slack.sessions import Thread
from bot.slack.status_line import StatusLine

log = logging.getLogger(__name__)

UNKNOWN_PROPOSAL = (
    "I no longer know the SQL behind this button (it is too old, or not mine); nothing was run."
)
NOT_THIS_THREAD = (
    "These buttons belong to an answer in another conversation; they work only there. "
    "Nothing was run or shown."
)
CHOOSE_FIRST = "Choose the database to run this on from the menu first; nothing was run."
TOO_LONG_TO_EDIT = (
    "This SQL is too long to edit in Slack ({length:,} characters; the editor holds "
    f"{run_blocks.MAX_EDIT_CHARS:,}). Use Run, or copy it; nothing was run."
)
NO_EDITOR = "The editor could not be opened; please try again."


def register(app: AsyncApp) -> None:
    app.action(run_blocks.RUN)(handle_run_sql)
    app.action(run_blocks.EDIT)(handle_edit_sql)
    app.action(run_blocks.CHOOSE_DATABASE)(handle_choose_database)


async def handle_run_sql(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    """Run: the proposal's SQL runs as the person who clicked."""
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("Run click without user, message or value ignored")
        return
    await handle_run_click(services_of(context), click)


async def handle_edit_sql(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    """Edit & run: open the editor modal."""
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("Edit & run click without user, message or value ignored")
        return
    await handle_edit_click(services_of(context), click)


async def handle_choose_database(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    """The database menu under a SQL block whose answer names no database."""
    await ack()
    click = Click.from_body(body)
    if click is not None:
        await handle_database_choice(services_of(context), click)


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
        return None
    if proposal.session_id != click.thread.session_id:
        # A shared or copied message's buttons: its SQL stays in its own conversation.
        log.warning("%s by %s from another thread than its answer's", click.action_id, click.user)
        await tell_clicker(services, click, NOT_THIS_THREAD)
        return None
    return proposal


@refused_when_the_store_fails
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


@refused_when_the_store_fails
async def handle_database_choice(services: Services, click: Click) -> None:
    """A pick in an answer's database menu: remembered with the proposal, so a Run finds
    it even when the click's payload carries no menu state."""
    block_id = click.block_id or ""
    if not block_id.startswith(run_blocks.ACTIONS_PREFIX):
        return
    if services.proposals.known(click.value) is None:
        return
    await services.proposals.choose(block_id.removeprefix(run_blocks.ACTIONS_PREFIX), click.value)


@refused_when_the_store_fails
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
    except delivery.SLACK_ERRORS as exc:
        log.warning("Edit & run modal for %s not opened: %s", click.user, exc)
        await tell_clicker(services, click, NO_EDITOR)


def submit(services: Services, request: RunRequest) -> None:
    async def job() -> None:
        await run(services, request)

    services.queues.submit(request.thread.session_id, job)


async def run(services: Services, request: RunRequest) -> None:
    thread = request.thread
    status = StatusLine(
        services.client,
        thread,
        grace_s=services.status_grace_s,
        stoppable=True,
        left_open=services.live_messages,
    )

    async def statement() -> Outcome:
        requester = await services.users.requester(request.user)
        return await services.agent.run_statement(
            thread.session_id,
            database=request.database,
            sql=request.sql,
            requester=requester,
            progress=status.step,
        )

    async def poster(outcome: Outcome) -> Delivered:
        await post_outcome(services, request, outcome)
        return Delivered()  # nothing a newer message closes (see post_outcome)

    services.turns.begin(thread.session_id, request.user)  # who may Stop it
    try:
        await answer_in_thread(services, thread, status, statement(), what="Run", poster=poster)
    finally:
        services.turns.end(thread.session_id)


async def post_outcome(services: Services, request: RunRequest, outcome: Outcome) -> None:
    client, thread = services.client, request.thread
    if isinstance(outcome, Stopped):
        await delivery.post(client, thread, stopped_message(outcome.by))
    elif isinstance(outcome, Failed):
        message = run_blocks.refused_message(request.user, request.sql, outcome.message)
        await delivery.post(client, thread, message)
    elif isinstance(outcome, AwaitingApproval):
        # The usual card; a click on it runs the change and posts the result (the
        # approval flow in listeners/actions/approval_card.py). No model run waits on it,
        # so a newer message in the thread does not replace it.
        await cards.post_card(services, thread, outcome.pending)
    elif isinstance(outcome, Answer):
        message = run_blocks.ran_message(
            request.user, request.sql, outcome.text, edited=request.edited
        )
        await delivery.post(client, thread, message)
        await delivery.post_results(client, thread, outcome.results)
    else:  # run_statement asks no questions; say so rather than drop it
        await delivery.post_error(client, thread, UNEXPECTED)
