"""The line in a thread that says what the bot is doing while a run takes time."""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import Step
from bot.slack.blocks.working import working_message
from bot.slack.delivery import SLACK_ERRORS
from bot.slack.live_budget import KeptOpen
from bot.slack.sessions import Thread
from bot.slack.web_api import ProgressDropped, progress_calls
from bot.state.live_messages import LiveMessages

log = logging.getLogger(__name__)

# A status line appears only when a run takes longer than this: a quick answer should not
# be preceded by a message that flashes up and is deleted a moment later.
STATUS_GRACE_S = 1.0


class StatusLine:
    """A message in the thread that says what the bot is doing (with Stop, when
    `stoppable`), updated as tools run and deleted when the answer is posted.

    `show` returns at once: the latest line is posted in the background, and lines that
    arrive faster than Slack answers are coalesced, so progress never slows the run.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        thread: Thread,
        *,
        grace_s: float = STATUS_GRACE_S,
        stoppable: bool = False,
        left_open: LiveMessages | None = None,
    ) -> None:
        self._client = client
        self._thread = thread
        self._stop_for = thread.session_id if stoppable else None  # Stop's value
        self._grace_s = grace_s
        self._kept = KeptOpen(left_open, thread)  # the open message, for after a crash
        self._ts: str | None = None
        self._wanted: str | None = None
        self._shown: str | None = None
        self._writer: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()

    async def step(self, step: Step) -> None:
        """A run's progress callback: each step that starts shows as the line."""
        if step.status == "in_progress":
            await self.show(f"{step.title}…")

    async def show(self, line: str, *, at_once: bool = False) -> None:
        if self._closed.is_set():
            return
        self._wanted = line
        if at_once:
            self._grace_s = 0.0
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())

    async def _write(self) -> None:
        progress_calls()  # this task's calls are progress: dropped when Slack is behind
        if self._ts is None and self._grace_s > 0:
            try:
                await asyncio.wait_for(self._closed.wait(), self._grace_s)
                return  # done within the grace period: nothing to show
            except TimeoutError:
                pass
        while self._wanted != self._shown and not self._closed.is_set():
            line = self._wanted or ""
            message = working_message(line, self._stop_for)
            try:
                if self._ts is None:
                    response = await self._client.chat_postMessage(
                        channel=self._thread.channel, thread_ts=self._thread.thread_ts, **message
                    )
                    self._ts = str(response["ts"])
                    await self._kept.opened("working", self._ts)
                else:
                    await self._client.chat_update(
                        channel=self._thread.channel, ts=self._ts, **message
                    )
            except ProgressDropped:
                return  # Slack is behind: the next line is shown, if there is one
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
        await self._kept.closed("working", self._ts)
        self._ts = None
