"""A click on Stop in a run's working message → the run cancelled, its statement killed.

The asker or any approver may stop a run; anyone else is told, privately, whom to ask.
The button carries the session id only; who asked comes from the running turn. The run's
own ending (conversation.py) says in the thread who stopped it. A click that reaches a
replica other than the one running the turn is forwarded to every replica through the store
(bot/state/stops.py); the one running it acts on it as if clicked there.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import strings
from bot.slack.blocks.common import person
from bot.slack.blocks.working import STOP_RUN
from bot.slack.clicks import Click, first_time, refused_when_the_store_fails, tell_clicker
from bot.slack.services import Services, services_of
from bot.state import StateError

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


@refused_when_the_store_fails
async def stop(services: Services, click: Click) -> None:
    if not await first_time(services, click):
        return
    session_id = click.value
    # The button names its own thread's session: one from elsewhere stops nothing.
    if session_id.split(":")[1:2] != [click.channel]:
        await tell_clicker(services, click, strings.STOP_TOO_LATE)
        return
    if services.turns.asker(session_id) is None and await _forwarded(services, click):
        return  # another replica runs it: that one stops it, or says why not
    await stop_here(services, click)


async def _forwarded(services: Services, click: Click) -> bool:
    """Hand the click to the replica running the session's turn, if another one holds it."""
    state = services.state
    try:
        if not state.shared or not await state.leases.held(click.value):
            return False
        return await state.stops.forward(click.to_json())
    except StateError as exc:
        log.warning("stop of %s not forwarded: %s", click.value, exc)
        return False


async def listen_for_forwarded_stops(services: Services) -> None:
    """Stop clicks other replicas received for runs of this one (runs until cancelled)."""
    stopping: set[asyncio.Task[None]] = set()
    async for request in services.state.stops.incoming():
        click = Click.from_json(request)
        if click is None or services.turns.asker(click.value) is None:
            continue  # not a run of this process
        task = asyncio.create_task(stop_here(services, click))  # it waits for the run's end
        stopping.add(task)
        task.add_done_callback(_stopped_here)
        task.add_done_callback(stopping.discard)


def _stopped_here(task: asyncio.Task[None]) -> None:
    # The listener goes on whatever became of one stop; a failure is logged, not lost.
    if not task.cancelled() and task.exception() is not None:
        log.error("a forwarded stop failed", exc_info=task.exception())


async def stop_here(services: Services, click: Click) -> None:
    """Stop the session's run in this process, if the clicker may."""
    session_id = click.value
    asker = services.turns.asker(session_id)
    if asker is None:
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
