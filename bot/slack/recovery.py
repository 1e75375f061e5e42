"""At start, what the last process left going is taken up in its thread, plainly.

- An approved change it stopped while it ran (`Interrupted`): what was running, where, that
  it may or may not have been applied, and how to check (the agent's words); the card it
  was approved on shows the same, without its buttons. Never re-run.
- A run cut off while it was reading or thinking, or with a change it had not recorded
  (and so not sent: before its card, or between the Approve click and its write-ahead
  record) (`RunResumable`): resumed in its thread; the change goes on from where it was.
- A run cut off while a change it had recorded was outstanding (`RunInterrupted`): what
  was running, and its outcome when its record has one. Never re-run.

Either way a card clicked in the cut-off run, whose decision never reached it, loses its
buttons (`close_deciding_cards`): its approval was taken already.

Resumed runs and reports of cut-off runs go through the thread's queue, so a message that
arrives meanwhile waits its turn. What the cut-off run left open in its thread (its stream,
its working message) is closed first, with what happened (left_open.py).

On a fleet (leases in Redis) a replica that dies is not necessarily restarted: every replica
watches for runs whose session lease expired (`watch_expired_leases`, every
`LEASE_WATCH_S`) and takes them up the same way, so the thread is told within that time
after the lease expires (a lease lives 15 s without its holder's heartbeat)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from bot.agent.outcomes import Interrupted, Recovered, RunInterrupted, RunResumable
from bot.slack import delivery, mrkdwn, outcome, strings
from bot.slack.blocks import approval_card
from bot.slack.blocks.common import markdown_section
from bot.slack.blocks.messages import answer_message
from bot.slack.left_open import close_left_open
from bot.slack.sessions import Job, Thread
from bot.slack.status_line import StatusLine
from bot.state import StateError

if TYPE_CHECKING:
    from bot.slack.services import Services

log = logging.getLogger(__name__)

_SQL_CHARS = 2_400  # of the statement shown; a section holds 3,000


def interrupted_message(text: str) -> dict[str, Any]:
    body = mrkdwn.truncate(f":warning: {mrkdwn.shown(text)}", 2_900)[0]
    return {"text": body, "blocks": [markdown_section(body)]}


async def tell_interrupted(services: Services, interrupted: Iterable[Recovered]) -> int:
    """Post each interrupted change's account in its thread; returns how many were told."""
    told = 0
    for item in interrupted:
        if not isinstance(item, Interrupted):
            continue  # runs cut off: `take_up`
        try:
            thread = Thread.from_session_id(item.session_id)
        except ValueError:
            log.warning("interrupted change without a Slack thread (%s)", item.session_id)
            continue
        await close_left_open(services, thread, strings.CUT_OFF_TOLD)
        await close_card(services, item)
        message = interrupted_message(item.text)
        if await delivery.post(services.client, thread, message) is not None:
            told += 1
    return told


async def close_card(services: Services, item: Interrupted) -> None:
    """The card the change was approved on shows what became of it, without buttons."""
    if item.pending_id is None:
        return
    try:
        card = await services.deciding_cards.take(item.pending_id)
        if card is None:
            card = await services.open_cards.take(item.pending_id)
    except StateError as exc:
        log.error("card of interrupted change %s not found: %s", item.execution_id, exc)
        return
    if card is not None:
        account = approval_card.interrupted_card(card.item, item.applied, item.text)
        await delivery.update(services.client, card.channel, card.ts, account)


async def close_deciding_cards(services: Services, thread: Thread) -> None:
    """A card clicked in the cut-off run, whose decision never reached it (the bot stopped
    between the click and the change's record): its buttons go, so it does not ask for an
    approval already taken. The run taken up says in the thread what became of the change."""
    try:
        cards = await services.deciding_cards.open_in(thread.session_id)
        taken = [await services.deciding_cards.take(card.item.id) for card in cards]
    except StateError as exc:
        log.error("cards being decided in %s not closed: %s", thread.session_id, exc)
        return
    for card in taken:
        if card is not None:  # else another replica took it
            closed = approval_card.closed_card(card.item)
            await delivery.update(services.client, card.channel, card.ts, closed)


def run_interrupted_message(item: RunInterrupted) -> str:
    sql, _ = mrkdwn.truncate(mrkdwn.code_text(item.sql), _SQL_CHARS)
    asker = f"<@{mrkdwn.escape(item.requester)}> " if item.requester else ""
    if item.outcome:  # its write-ahead record finished: what became of it is known
        return (
            f"{asker}I restarted after this statement ran on *{mrkdwn.escape(item.database)}* "
            f"({mrkdwn.escape(item.outcome)}), before I could answer:\n```{sql}```"
        )
    return (
        f"{asker}I restarted while this statement was running on "
        f"*{mrkdwn.escape(item.database)}*. It may or may not have been applied: check the "
        f"data before you ask for it again.\n```{sql}```"
    )


def take_up(services: Services, recovered: Sequence[Recovered]) -> None:
    """Queue each run cut off in its thread: resumed, or reported (runs of other adapters,
    and the changes `tell_interrupted` tells, are left alone)."""
    for item in recovered:
        if isinstance(item, Interrupted):
            continue
        try:
            thread = Thread.from_session_id(item.session_id)
        except ValueError:
            continue  # not a Slack thread (a console session)
        if isinstance(item, RunInterrupted):
            job = _tell(services, thread, run_interrupted_message(item))
            services.queues.submit(thread.session_id, job)
        elif isinstance(item, RunResumable):
            services.queues.submit(thread.session_id, _resume(services, thread))


def _tell(services: Services, thread: Thread, text: str) -> Job:
    async def job() -> None:
        await close_left_open(services, thread, strings.CUT_OFF_TOLD)
        await close_deciding_cards(services, thread)
        await delivery.post(services.client, thread, answer_message(text))

    return job


def _resume(services: Services, thread: Thread) -> Job:
    async def job() -> None:
        await close_left_open(services, thread, strings.CUT_OFF_RESUMED)
        await close_deciding_cards(services, thread)
        status = StatusLine(
            services.client,
            thread,
            grace_s=services.status_grace_s,
            left_open=services.live_messages,
        )
        run = services.agent.resume(thread.session_id, progress=status.step)
        await outcome.answer_in_thread(services, thread, status, run, what="resumed run")

    return job


LEASE_WATCH_S = 10.0


async def watch_expired_leases(services: Services, every_s: float = LEASE_WATCH_S) -> None:
    """On a fleet, take up the runs of replicas that died: every `every_s`, the runs left
    `running` whose session lease nobody holds any more (and approved changes cut off)
    are reported or resumed in their threads, as at a restart. Whichever replica looks
    first takes each up (under the session's lease); the others find it settled."""
    if not services.state.leases.shared:
        return  # one process: its restart takes its runs up
    while True:
        await asyncio.sleep(every_s)
        try:
            found = await services.agent.recover(at_start=False)
        except StateError as exc:
            log.warning("runs of stopped replicas not looked for: %s", exc)
            continue
        except Exception:  # the watch goes on: the next look may succeed
            log.exception("runs of stopped replicas not taken up")
            continue
        if found:
            log.warning("taking up %d run(s) of a replica that stopped", len(found))
            await tell_interrupted(services, found)
            take_up(services, found)
