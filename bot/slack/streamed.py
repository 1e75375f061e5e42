"""How a run that showed live progress ends in its thread: the stream closed with the
answer's text, then the rest (results, the card or question) posted as usual."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.agent.outcomes import AwaitingApproval, Failed, Outcome
from bot.ask.sql_blocks import find_sql_blocks_off_loop
from bot.slack import delivery, strings
from bot.slack.blocks.common import person
from bot.slack.blocks.working import stopped_message
from bot.slack.live import LiveProgress
from bot.slack.outcome import Delivered, deliver
from bot.slack.sessions import Thread

if TYPE_CHECKING:
    from bot.slack.services import Services


async def deliver_streamed(
    services: Services, thread: Thread, status: LiveProgress, outcome: Outcome
) -> Delivered:
    """End the run's stream with the answer's text (unless its SQL blocks need Run
    buttons, which only a posted message carries), then post the rest as usual. A
    stopped run says who stopped it, and nothing else."""
    stopped_by = services.turns.stopped_by(thread.session_id)
    if stopped_by is not None:
        await status.fail(strings.STOPPED_BY.format(who=person(stopped_by)))
        await delivery.post(services.client, thread, stopped_message(stopped_by))
        if isinstance(outcome, Failed):  # the rows fetched before the stop are still shown
            await delivery.post_results(
                services.client, thread, outcome.results, services.settings.slack.preview_rows
            )
        return Delivered()
    if isinstance(outcome, Failed):
        await status.fail(outcome.message)
        shown = False
    else:
        found = await find_sql_blocks_off_loop(
            outcome.text, services.proposals.names, max_sql_chars=services.proposals.max_sql_chars
        )
        proposes_sql = bool(found)
        waiting = strings.STEP_APPROVAL if isinstance(outcome, AwaitingApproval) else None
        # Text with Run buttons, or longer than an answer may be, is posted by deliver.
        too_long = len(outcome.text) > services.settings.slack.max_answer_chars
        streamed = "" if proposes_sql or too_long else outcome.text
        shown = await status.finish(streamed, waiting=waiting)
    return await deliver(services, thread, outcome, text_shown=shown)
