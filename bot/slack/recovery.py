"""After a restart, every run the last process left going is taken up in its thread: resumed
when going on cannot repeat a change (it was reading or thinking), or the thread is told it
was interrupted, what was running and what to do (an approved change cut off while it ran:
what its write-ahead record says of its outcome). Each goes through the thread's queue, so a
message that arrives meanwhile waits its turn."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.agent.outcomes import Interrupted, Recovered, RunInterrupted, RunResumable
from bot.slack import delivery, mrkdwn
from bot.slack.blocks.messages import answer_message
from bot.slack.sessions import Job, Thread
from bot.slack.status_line import StatusLine

if TYPE_CHECKING:
    from bot.slack.services import Services

log = logging.getLogger(__name__)

_SQL_CHARS = 2_400  # of the statement shown; a section holds 3,000


def interrupted_message(item: RunInterrupted) -> str:
    sql, _ = mrkdwn.truncate(mrkdwn.code_text(item.sql), _SQL_CHARS)
    asker = f"<@{mrkdwn.escape(item.requester)}> " if item.requester else ""
    return (
        f"{asker}I restarted while this statement was running on "
        f"*{mrkdwn.escape(item.database)}*. It may or may not have been applied: check the "
        f"data before you ask for it again.\n```{sql}```"
    )


def take_up(services: Services, recovered: Sequence[Recovered]) -> None:
    """Queue each recovered run in its thread (runs of other adapters are left alone)."""
    for item in recovered:
        try:
            thread = Thread.from_session_id(item.session_id)
        except ValueError:
            continue  # not a Slack thread (a console session)
        if isinstance(item, RunInterrupted):
            message = interrupted_message(item)
            services.queues.submit(thread.session_id, _tell(services, thread, message))
        elif isinstance(item, Interrupted):
            message = change_message(item)
            services.queues.submit(thread.session_id, _tell(services, thread, message))
        elif isinstance(item, RunResumable):
            services.queues.submit(thread.session_id, _resume(services, thread))
    if recovered:
        log.info("taking up %d interrupted run(s)", len(recovered))


def change_message(item: Interrupted) -> str:
    text, _ = mrkdwn.truncate(mrkdwn.escape(item.text), _SQL_CHARS + 500)
    asker = f"<@{mrkdwn.escape(item.requester)}> " if item.requester else ""
    return f"{asker}{text}"


def _tell(services: Services, thread: Thread, text: str) -> Job:
    async def job() -> None:
        await delivery.post(services.client, thread, answer_message(text))

    return job


def _resume(services: Services, thread: Thread) -> Job:
    async def job() -> None:
        status = StatusLine(services.client, thread, grace_s=services.status_grace_s)
        run = services.agent.resume(thread.session_id, progress=status.step)
        await delivery.answer_in_thread(services, thread, status, run, what="resumed run")

    return job
