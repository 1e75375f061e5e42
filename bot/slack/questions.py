"""A click on a question's button or menu → the agent's answer, the question updated, the
run resumed.

The click carries only "<question id>:<option index>"; the option comes from the stored
question. Only the person asked may answer (anyone else is told so, privately, and nothing
changes); the first answer wins. The answer joins the thread's queue, so it is ordered with
the thread's messages: one that arrived first supersedes the question, and the click is
then told it came too late.
"""

from __future__ import annotations

import logging

from bot.agent.outcomes import AlreadyDecided, Failed, NotYourQuestion, Outcome, Question
from bot.slack import blocks, question_blocks, replies
from bot.slack.conversations import UNEXPECTED, post_outcome, remember_open
from bot.slack.interactions import Click, first_time, tell_clicker
from bot.slack.services import Services
from bot.slack.sessions import Thread

log = logging.getLogger(__name__)

ALREADY_ANSWERED = (
    "This question was already answered (or a newer message in the thread replaced it); "
    "nothing changed."
)
NOT_AN_OPTION = "That is not one of this question's answers; nothing changed."


def only_asker_may_answer(question: Question) -> str:
    return f"Only {blocks.person(question.requester)} can answer this."


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
    option = question.options[index]
    services.open_questions.forget(thread.session_id, question.id)
    # The buttons go at once, before the (maybe long) rest of the run.
    answered = question_blocks.answered_question(question, option.label, click.user)
    await _update(services, click, answered)
    status = replies.StatusLine(client, thread, grace_s=services.status_grace_s)
    outcome: Outcome
    try:
        outcome = await services.agent.answer(
            question.id,
            user=click.user,
            answer=option.label,
            value=option.value,
            progress=status.step,
        )
    except NotYourQuestion:  # checked before queueing; kept for safety
        await status.clear()
        await tell_clicker(services, click, only_asker_may_answer(question))
        return
    except AlreadyDecided:
        await status.clear()
        await _update(services, click, question_blocks.closed_question(question))
        await tell_clicker(services, click, ALREADY_ANSWERED)
        return
    except Exception:
        log.exception("answer to question %s failed", question.id)
        outcome = Failed(UNEXPECTED)
    delivered = await post_outcome(services, thread, outcome, status)
    remember_open(services, thread, outcome, delivered)


async def _update(services: Services, click: Click, message: dict) -> None:
    try:
        await services.client.chat_update(channel=click.channel, ts=click.message_ts, **message)
    except replies.SLACK_ERRORS as exc:
        log.warning("question message %s not updated: %s", click.message_ts, exc)
