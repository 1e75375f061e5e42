"""A person's message (a mention, a DM, a reply in a thread the bot takes part in) → one
agent run in its thread, one run at a time per thread."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

from bot.agent.outcomes import Outcome
from bot.observability import logs
from bot.slack import delivery, strings
from bot.slack.live import LiveProgress
from bot.slack.outcome import Delivered, answer_in_thread
from bot.slack.services import Services
from bot.slack.sessions import Thread
from bot.slack.streamed import deliver_streamed
from bot.state import StateError

log = logging.getLogger(__name__)

HELP = strings.HELP
QUEUED = strings.QUEUED
WORKING = strings.WORKING

# A message that arrives while the state store is out of reach is kept (in this process)
# and answered once the store is back: its delivery was acknowledged, so Slack will not
# send it again. After `Services.store_wait_s` the person is told to ask again instead.
STORE_RETRY_S = (0.25, 5.0)  # first and longest pause between tries

_LINK = re.compile(r"<((?:https?://|mailto:)[^|>]+)(?:\|[^>]*)?>")


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message from a person, as delivered by the Events API."""

    thread: Thread
    ts: str
    user: str
    text: str
    is_dm: bool
    event_id: str | None

    @classmethod
    def from_event(
        cls, body: dict[str, Any], event: dict[str, Any], *, is_dm: bool
    ) -> Incoming | None:
        """None when the event lacks what a question needs (a user, a channel, a ts)."""
        channel, ts, user = event.get("channel"), event.get("ts"), event.get("user")
        if not (isinstance(channel, str) and isinstance(ts, str) and isinstance(user, str)):
            return None
        team = body.get("team_id") or event.get("team") or "T"
        thread_ts = event.get("thread_ts") or ts
        text = event.get("text")
        return cls(
            thread=Thread(str(team), channel, str(thread_ts)),
            ts=ts,
            user=user,
            text=text if isinstance(text, str) else "",
            is_dm=is_dm,
            event_id=body.get("event_id"),
        )


def mentions(text: str, bot_user_id: str | None) -> bool:
    return bool(bot_user_id) and f"<@{bot_user_id}" in text


def question_text(text: str, bot_user_id: str | None) -> str:
    """What the person asked: the bot's own mention removed, links as plain URLs, and
    Slack's escaping undone (a "<" typed in Slack arrives as "&lt;")."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    text = _LINK.sub(r"\1", text)
    # &amp; last, so "&amp;lt;" (a typed "&lt;") stays "&lt;".
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


async def accept(services: Services, incoming: Incoming, bot_user_id: str | None) -> None:
    """Take a delivered message: drop repeats, answer the trivial at once, queue the rest.

    A queued message is claimed as seen only when its run starts (see sessions.py)."""
    thread, dedupe = incoming.thread, services.dedupe
    delivery_keys = (incoming.event_id, thread.channel, incoming.ts)
    if not dedupe.hold(*delivery_keys):
        log.info("duplicate delivery of %s in %s ignored", incoming.ts, thread.channel)
        return
    if not incoming.is_dm:
        services.known.add(thread.session_id)
    question = question_text(incoming.text, bot_user_id)
    limit = services.settings.limits.max_message_chars
    client = services.client
    if len(question) > limit or not question:
        try:
            if not await _claim(services, incoming):
                return
        finally:
            dedupe.let_go(*delivery_keys)
        if question:
            too_long = strings.TOO_LONG.format(length=len(question), limit=limit)
            await delivery.post_error(client, thread, too_long)
        else:
            await delivery.post_text(client, thread, HELP)
        return
    status = LiveProgress(
        client,
        thread,
        services.capabilities,
        recipient=incoming.user,
        grace_s=services.status_grace_s,
        left_open=services.live_messages,
    )
    status.acknowledge(incoming.ts)  # seen, at once: the first thing the person sees

    async def job() -> None:
        # Held until the run ends, so a repeat that arrives meanwhile is dropped here.
        try:
            if await _claim(services, incoming, status):
                await run_turn(services, incoming, question, status)
            else:
                await status.clear()
        finally:
            dedupe.let_go(*delivery_keys)

    async def dropped() -> None:
        dedupe.let_go(*delivery_keys)
        await status.clear()

    if services.queues.submit(thread.session_id, job, on_drop=dropped):
        await status.show(QUEUED, at_once=True)


async def _claim(
    services: Services, incoming: Incoming, status: LiveProgress | None = None
) -> bool:
    """Mark the delivery seen; False when it was (answered, or being answered, before).

    While the store is out of reach the claim is tried again (the person sees that the
    bot waits for it) for up to `store_wait_s`; then the person is told to ask again. The
    claim is idempotent, so a try whose reply was lost does not count against us."""
    thread = incoming.thread
    loop = asyncio.get_running_loop()
    give_up_at, pause = loop.time() + services.store_wait_s, STORE_RETRY_S[0]
    waiting = False
    while True:
        try:
            first = await services.dedupe.first_delivery(
                incoming.event_id, thread.channel, incoming.ts
            )
            break
        except StateError as exc:
            if loop.time() >= give_up_at:
                minutes = max(1, round(services.store_wait_s / 60))
                told = strings.STORE_GAVE_UP.format(minutes=minutes, error=exc)
                if status is not None:
                    await status.clear()
                await delivery.post_error(services.client, thread, told)
                return False
            if not waiting:
                log.warning("message %s waits for the state store: %s", incoming.ts, exc)
                waiting = True
                if status is not None:
                    await status.show(strings.WAITING_FOR_STORE.format(error=exc), at_once=True)
            try:
                await asyncio.sleep(min(pause, max(0.0, give_up_at - loop.time())))
            except asyncio.CancelledError:  # the bot stops: Slack will not send it again
                if status is not None:
                    await status.clear()
                await delivery.post_error(services.client, thread, strings.STORE_STOPPING)
                raise
            pause = min(pause * 2, STORE_RETRY_S[1])
    if waiting:
        log.info("message %s taken now that the state store is back", incoming.ts)
    if not first:
        log.info("delivery of %s in %s was answered before", incoming.ts, thread.channel)
    return first


async def run_turn(
    services: Services, incoming: Incoming, question: str, status: LiveProgress
) -> None:
    # Every line the turn logs names its thread and Slack event (DBAGENT_LOG_FORMAT=json).
    with logs.bound(event_id=incoming.event_id, session_id=incoming.thread.session_id):
        await _run_turn(services, incoming, question, status)


async def _run_turn(
    services: Services, incoming: Incoming, question: str, status: LiveProgress
) -> None:
    thread = incoming.thread
    await status.show(WORKING)
    services.turns.begin(thread.session_id, incoming.user)
    status.allow_stop()

    async def run() -> Outcome:
        requester = await services.users.requester(incoming.user)
        mode = services.settings.mode_for_channel(thread.channel, is_dm=incoming.is_dm)
        return await services.agent.handle_message(
            thread.session_id,
            question,
            requester=requester,
            mode=mode,
            progress=status,
        )

    async def post(outcome: Outcome) -> Delivered:
        return await deliver_streamed(services, thread, status, outcome)

    try:
        await answer_in_thread(
            services, thread, status, run(), what="run", replier=incoming.user, poster=post
        )
    finally:
        services.turns.end(thread.session_id)
