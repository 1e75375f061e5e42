"""Everything the bot posts in a thread: the status line, answers, results, cards, errors.

Posting never raises: a failure to post is logged, and a short note is tried in its place,
so one bad upload cannot swallow the answer it belongs to.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import (
    Answer,
    AwaitingApproval,
    AwaitingReply,
    Failed,
    Outcome,
    PendingApproval,
    QueryResult,
    Step,
    Stopped,
)
from bot.slack import blocks, mrkdwn, question_blocks, results
from bot.slack.sessions import Thread

if TYPE_CHECKING:
    from bot.slack.proposals import Proposals

log = logging.getLogger(__name__)

SLACK_ERRORS = (SlackApiError, SlackClientError, OSError, TimeoutError)
# Results posted per answer; more would bury the thread (the model saw them all).
MAX_RESULTS = 10


# A status line appears only when a run takes longer than this: a quick answer should not
# be preceded by a message that flashes up and is deleted a moment later.
STATUS_GRACE_S = 1.0


class StatusLine:
    """A message in the thread that says what the bot is doing, updated as tools run and
    deleted when the answer is posted.

    `show` returns at once: the latest line is posted in the background, and lines that
    arrive faster than Slack answers are coalesced, so progress never slows the run.
    """

    def __init__(
        self, client: AsyncWebClient, thread: Thread, *, grace_s: float = STATUS_GRACE_S
    ) -> None:
        self._client = client
        self._thread = thread
        self._grace_s = grace_s
        self._ts: str | None = None
        self._wanted: str | None = None
        self._shown: str | None = None
        self._writer: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()

    async def show(self, line: str, *, at_once: bool = False) -> None:
        if self._closed.is_set():
            return
        self._wanted = line
        if at_once:
            self._grace_s = 0.0
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())

    async def step(self, step: Step) -> None:
        """A run's progress callback: each step that starts shows as the line."""
        if step.status == "in_progress":
            await self.show(f"{step.title}…")

    async def _write(self) -> None:
        if self._ts is None and self._grace_s > 0:
            try:
                await asyncio.wait_for(self._closed.wait(), self._grace_s)
                return  # done within the grace period: nothing to show
            except TimeoutError:
                pass
        while self._wanted != self._shown and not self._closed.is_set():
            line = self._wanted or ""
            message = blocks.status_message(line)
            try:
                if self._ts is None:
                    response = await self._client.chat_postMessage(
                        channel=self._thread.channel, thread_ts=self._thread.thread_ts, **message
                    )
                    self._ts = response["ts"]
                else:
                    await self._client.chat_update(
                        channel=self._thread.channel, ts=self._ts, **message
                    )
            except SLACK_ERRORS as exc:
                log.warning("status line not updated: %s", exc)
                return
            self._shown = line

    async def clear(self) -> None:
        """Stop updating and remove the status message."""
        self._closed.set()
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        if self._ts is None:
            return
        try:
            await self._client.chat_delete(channel=self._thread.channel, ts=self._ts)
        except SLACK_ERRORS as exc:
            log.warning("status message not deleted: %s", exc)
        self._ts = None


async def post(client: AsyncWebClient, thread: Thread, message: dict[str, Any]) -> str | None:
    """Post in the thread; returns the message's ts, or None when Slack refused it."""
    try:
        response = await client.chat_postMessage(
            channel=thread.channel, thread_ts=thread.thread_ts, **message
        )
    except SLACK_ERRORS as exc:
        log.error("posting in %s failed: %s", thread.session_id, exc)
        return None
    return response.get("ts")


async def post_text(
    client: AsyncWebClient, thread: Thread, text: str, proposals: Proposals | None = None
) -> bool:
    """Post the model's text as safe mrkdwn, split to fit; False when a piece failed.
    With `proposals`, every SQL block the text proposes gets Run / Edit & run buttons."""
    messages = None
    if proposals is not None:
        try:
            messages = await proposals.messages(thread, text)
        except Exception:
            # The answer matters more than its buttons: post it plain.
            log.exception("buttons for the SQL of an answer in %s failed", thread.session_id)
    if messages is None:
        messages = [blocks.answer_message(p) for p in mrkdwn.split(mrkdwn.to_mrkdwn(text))]
    posted = True
    for message in messages:
        if await post(client, thread, message) is None:
            posted = False
    return posted


async def post_error(client: AsyncWebClient, thread: Thread, message: str) -> None:
    await post(client, thread, blocks.error_message(message))


async def post_results(
    client: AsyncWebClient, thread: Thread, query_results: tuple[QueryResult, ...]
) -> None:
    for result in query_results[:MAX_RESULTS]:
        try:
            await results.post_result(client, thread.channel, thread.thread_ts, result)
        except SLACK_ERRORS as exc:
            log.error("result of %s not attached in %s: %s", result.database, thread, exc)
            # The table at least, without its file.
            await post(client, thread, results.preview_message(result))
            note = f"The rows from {result.database} could not be attached as CSV."
            await post_error(client, thread, note)
    hidden = len(query_results) - MAX_RESULTS
    if hidden > 0:
        await post(client, thread, blocks.answer_message(f"_{hidden} more results not shown._"))


async def post_card(client: AsyncWebClient, thread: Thread, pending: PendingApproval) -> str | None:
    """The approval card (its ts, or None when Slack refused it); SQL too long for the
    card is attached in full as a file."""
    card_ts = await post(client, thread, blocks.approval_card(pending))
    if card_ts is None:
        await post_error(
            client, thread, "The approval card could not be posted; the change was not run."
        )
        return None
    _, cut = blocks.card_sql(pending.sql)
    if not cut:
        return card_ts
    try:
        await client.files_upload_v2(
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            content=pending.sql,
            filename=f"approval-{pending.id}.sql",
            title=f"Full SQL awaiting approval on {pending.database}",
            snippet_type="sql",
        )
    except SLACK_ERRORS as exc:
        log.error("full SQL of approval %s not attached: %s", pending.id, exc)
        await post_error(client, thread, "The full SQL could not be attached to this card.")
    return card_ts


@dataclass(frozen=True, slots=True)
class Delivered:
    """What `deliver` posted that later clicks or messages may need to update."""

    card_ts: str | None = None
    question_ts: str | None = None


async def deliver(
    client: AsyncWebClient,
    thread: Thread,
    outcome: Outcome,
    *,
    proposals: Proposals | None = None,
) -> Delivered:
    """Post a run's outcome in its thread: the text (its SQL blocks with buttons when
    `proposals` is given), the results it rests on, and the approval card or question
    when the run waits for one."""
    if isinstance(outcome, Stopped):
        await post_text(client, thread, f"Stopped by <@{outcome.by}>.")
        await post_results(client, thread, outcome.results)
        return Delivered()
    if isinstance(outcome, Failed):
        await post_error(client, thread, outcome.message)
        await post_results(client, thread, outcome.results)
        return Delivered()
    if outcome.text.strip():
        await post_text(client, thread, outcome.text, proposals)
    elif isinstance(outcome, Answer) and not outcome.results:
        await post_text(client, thread, "Done.")
    await post_results(client, thread, outcome.results)
    if isinstance(outcome, AwaitingReply):
        question_ts = await post(client, thread, question_blocks.question_message(outcome.question))
        return Delivered(question_ts=question_ts)
    if isinstance(outcome, AwaitingApproval):
        return Delivered(card_ts=await post_card(client, thread, outcome.pending))
    return Delivered()
