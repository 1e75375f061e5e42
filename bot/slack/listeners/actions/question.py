"""A click on a button (or the menu) of the model's question back to the person → the
agent's answer, the question updated, the run resumed.

The click carries only "<question id>:<option index>"; the option comes from the stored
question. Only the person asked may answer (anyone else is told so, privately, and nothing
changes); the first answer wins. The answer joins the thread's queue, so it is ordered with
the thread's messages: one that arrived first supersedes the question, and the click is
then told it came too late.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.agent.outcomes import NotYourQuestion, Outcome, Question
from bot.changes.types import AlreadyDecided
from bot.slack import delivery
from bot.slack.blocks import question as question_blocks
from bot.slack.blocks.common import person
from bot.slack.clicks import Click, first_time, refused_when_the_store_fails, tell_clicker
from bot.slack.outcome import answer_in_thread
from bot.slack.services import Services, services_of
from bot.slack.sessions import Thread
from bot.slack.status_line import StatusLine

log = logging.getLogger(__name__)

ALREADY_ANSWERED = (
    "This question was already answered (or a newer message in the thread replaced it); "
    "nothing changed."
)
NOT_AN_OPTION = "That is not one of this question's answers; nothing changed."


def only_asker_may_answer(question: Question) -> str:
    return f"Only {person(question.requester)} can answer this."


def register(app: AsyncApp) -> None:
    app.action(re.compile(question_blocks.OPTION_PATTERN))(handle_answer_question)
    app.action(question_blocks.OPTION_SELECT)(handle_answer_question)


async def handle_answer_question(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("question click without user, message or value ignored")
        return
    await handle_click(services_of(context), click)


@refused_when_the_store_fails
async def handle_click(services: Services, click: Click) -> None:
    """Check the click at once (so a wrong person hears back quickly), then queue the
    answer behind the thread's current work."""
    if not await first_time(services, click):
        return
    parsed = question_blocks.parse_option_value(click.value)
    if parsed is None:
        log.warning("question click by %s without a valid value ignored", click.user)
        await tell_clicker(services, click, NOT_AN_OPTION)
        return
    question_id, index = parsed
    question = await services.agent.question(question_id)
    if question is None:
        await tell_clicker(services, click, ALREADY_ANSWERED)
        return
    if click.user != question.requester:
        log.info("%s tried to answer %s's question", click.user, question.requester)
        await tell_clicker(services, click, only_asker_may_answer(question))
        return
    if not 0 <= index < len(question.options):
        await tell_clicker(services, click, NOT_AN_OPTION)
        return
    thread = Thread.from_session_id(question.session_id)

    async def job() -> None:
        await answer(services, click, thread, question_id, index)

    services.queues.submit(thread.session_id, job)


async def answer(
    services: Services, click: Click, thread: Thread, question_id: str, index: int
) -> None:
    client = services.client
    # Looked up again: a message queued before this click may have replaced the question.
    question = await services.agent.question(question_id)
    if question is None:
        await tell_clicker(services, click, ALREADY_ANSWERED)
        return
    if click.user != question.requester or not 0 <= index < len(question.options):
        return  # told when clicked; the stored question does not change
    asked: Question = question
    option = asked.options[index]
    await services.open_questions.forget(asked.id)
    # The buttons go at once, before the (maybe long) rest of the run.
    answered = question_blocks.answered_question(asked, option.label, click.user)
    await delivery.update(client, click.channel, click.message_ts, answered)
    status = StatusLine(
        client, thread, grace_s=services.status_grace_s, left_open=services.live_messages
    )

    async def run() -> Outcome | None:
        try:
            return await services.agent.answer(
                asked.id,
                user=click.user,
                answer=option.label,
                value=option.value,
                progress=status.step,
            )
        except NotYourQuestion:  # checked before queueing; kept for safety
            await status.clear()
            await tell_clicker(services, click, only_asker_may_answer(asked))
            return None
        except AlreadyDecided:
            await status.clear()
            closed = question_blocks.closed_question(asked)
            await delivery.update(client, click.channel, click.message_ts, closed)
            await tell_clicker(services, click, ALREADY_ANSWERED)
            return None

    await answer_in_thread(services, thread, status, run(), what="answer to a question")
