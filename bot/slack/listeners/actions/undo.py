"""Undo on the outcome of an approved change: the agent builds the inverse statements, and
they are posted as a new approval card in the thread — approved like any other change
(impact, four eyes, bound). Nothing is undone by the click itself."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.agent.outcomes import AwaitingApproval, Failed, Outcome
from bot.slack import cards, delivery, strings
from bot.slack.blocks.approval_card import UNDO
from bot.slack.clicks import Click, first_time, refused_when_the_store_fails, tell_clicker
from bot.slack.outcome import Delivered, answer_in_thread
from bot.slack.services import Services, services_of
from bot.slack.status_line import StatusLine

log = logging.getLogger(__name__)

NO_UNDO = strings.NO_UNDO


def register(app: AsyncApp) -> None:
    app.action(UNDO)(handle_undo)


async def handle_undo(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("Undo click without user, message or value ignored")
        return
    await handle_click(services_of(context), click)


@refused_when_the_store_fails
async def handle_click(services: Services, click: Click) -> None:
    if not await first_time(services, click):
        return
    if not click.value or not hasattr(services.agent, "undo"):
        await tell_clicker(services, click, NO_UNDO)
        return
    thread = click.thread

    async def job() -> None:
        status = StatusLine(
            services.client,
            thread,
            grace_s=services.status_grace_s,
            left_open=services.live_messages,
        )

        async def run() -> Outcome:
            await status.show(strings.UNDO_PREPARING)
            requester = await services.users.requester(click.user)
            return await services.agent.undo(
                click.value, requester=requester, session_id=thread.session_id
            )

        async def poster(outcome: Outcome) -> Delivered:
            if isinstance(outcome, AwaitingApproval):
                if outcome.text.strip():
                    await delivery.post_text(services.client, thread, outcome.text)
                # Like a Run's card, it resumes no model run: a newer message keeps it.
                await cards.post_card(services, thread, outcome.pending)
            elif isinstance(outcome, Failed):
                await delivery.post_error(services.client, thread, outcome.message)
            else:
                await delivery.post_text(services.client, thread, outcome.text or "Done.")
            return Delivered()

        await answer_in_thread(services, thread, status, run(), what="Undo", poster=poster)

    services.queues.submit(thread.session_id, job)
