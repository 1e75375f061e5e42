"""A click on Stop in a run's working message → the run cancelled, its statement killed.

The asker or any approver may stop a run; anyone else is told, privately, whom to ask.
The button carries the session id only; who asked comes from the running turn. The run's
own ending (conversation.py) says in the thread who stopped it.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import strings
from bot.slack.blocks.common import person
from bot.slack.blocks.working import STOP_RUN
from bot.slack.clicks import Click, first_time, tell_clicker
from bot.slack.services import Services, services_of

log = logging.getLogger(__name__)


def register(app: AsyncApp) -> None:
    app.action(STOP_RUN)(handle_stop_run)


async def handle_stop_run(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    await ack()
    click = Click.from_body(body)
    if click is None:
        log.warning("Stop click without user, message or value ignored")
        return
    await stop(services_of(context), click)


async def stop(services: Services, click: Click) -> None:
    if not await first_time(services, click):
        return
    session_id = click.value
    asker = services.turns.asker(session_id)
    # The button names its own thread's session: one from elsewhere stops nothing.
    in_this_channel = session_id.split(":")[1:2] == [click.channel]
    if asker is None or not in_this_channel:
        await tell_clicker(services, click, strings.STOP_TOO_LATE)
        return
    if click.user != asker and not await services.approvers.is_approver(click.user):
        await tell_clicker(services, click, strings.STOP_NOT_YOURS.format(asker=person(asker)))
        return
    services.turns.mark_stopped(session_id, click.user)
    if not await services.agent.stop(session_id, by=click.user):
        services.turns.mark_stopped(session_id, None)
        await tell_clicker(services, click, strings.STOP_TOO_LATE)
        return
    log.info("run of %s stopped by %s", session_id, click.user)
