"""What a person sees while a run works: the steps streamed into the answer's message,
the assistant status line, and a working message with a Stop button.

Streaming (`chat.startStream` / `appendStream` / `stopStream`) carries one `task_update`
chunk per step and, at the end, the answer's text, so the answer arrives in the message
that showed the work. Where a workspace refuses streaming (an unknown method, a token type
it does not take, a missing scope) the refusal is remembered for that workspace and the
run falls back to the status message that today's runs show; `assistant.threads.setStatus`
is used only where it applies (assistant threads, direct messages) and also remembered
when refused. Nothing here slows the run: every update is sent in the background.

Within Slack's limits by construction: the mention is acknowledged at once with a
reaction (the first thing a person sees, within a fraction of a second whatever the model
does); the stream or working message follows for runs that take longer than the grace
period. Updates are coalesced and paced, and a run's calls are capped (live_budget.py); a
step is sent again only when it changed, and the end still shows every step. Progress
calls are dropped, not queued, while Slack has said to slow down (web_api.py). The open
stream and working message are kept in the store until closed, for after a crash.

One class, longer than most: the stream, the status line and the working message share one
writer, one pace and one view of what was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import observe
from bot.slack import strings
from bot.slack.blocks.working import working_message
from bot.slack.live_budget import CALLS_PER_TURN, PROGRESS_INTERVAL_S, KeptOpen, Pace
from bot.slack.sessions import Thread
from bot.slack.turns import Capabilities
from bot.slack.web_api import ProgressDropped, progress_calls
from bot.state.live_messages import LiveMessages

__all__ = ["CALLS_PER_TURN", "PROGRESS_INTERVAL_S", "LiveProgress", "Step", "StepEvent"]

log = logging.getLogger(__name__)

STREAM_TEXT_LIMIT = 12_000
_SLACK_ERRORS = (SlackApiError, OSError, TimeoutError)
SEEN_REACTION = "eyes"  # on the person's message, as soon as it is taken


class StepEvent(Protocol):
    """A step of a run as the agent reports it (bot/agent/outcomes.py: Step). Read-only, so
    the agent's frozen dataclass, whose status is a narrower literal, satisfies it."""

    @property
    def id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def status(self) -> str: ...  # in_progress | complete | error

    @property
    def details(self) -> str | None: ...


@dataclass
class Step:
    id: str
    title: str
    status: str = "in_progress"
    details: str | None = None


def _error_of(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or "unknown_error")
    return type(exc).__name__


@dataclass
class _Wanted:
    line: str = strings.WORKING
    note: str = strings.WORKING  # the latest line given to `show`
    steps: dict[str, Step] = field(default_factory=dict)


class LiveProgress:
    """The progress callback of one run, and what it leaves in the thread.

    Call it with a line (str) or a step; `finish(text)` ends the stream with the answer's
    text and says whether that text was delivered (else the caller posts it); `close()`
    removes the working message.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        thread: Thread,
        capabilities: Capabilities,
        *,
        recipient: str,
        stoppable: bool = False,
        grace_s: float = 1.0,
        left_open: LiveMessages | None = None,
    ) -> None:
        self._client = client
        self._thread = thread
        self._caps = capabilities
        self._recipient = recipient
        self._stoppable = stoppable
        self._grace_s = grace_s
        self._kept = KeptOpen(left_open, thread)  # the open stream and working message
        self._assistant = thread.channel.startswith("D")
        self._wanted = _Wanted()
        self._sent_steps: dict[str, tuple[str, str, str | None]] = {}
        self._shown_line: tuple[str, bool] | None = None  # the line, and whether Stop was on it
        self._status_line: str | None = None
        self._stream_ts: str | None = None
        self._streaming = capabilities.streams(thread.team)
        self._working_ts: str | None = None
        self._writer: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        self._sequence = 0
        self._acknowledger: asyncio.Task[None] | None = None
        self._pace = Pace(self._closed)
        self._first_shown = observe.FirstProgress()

    @property
    def calls(self) -> int:
        """Every Slack call this run's progress made (for tests and benchmarks)."""
        return self._pace.calls

    def acknowledge(self, message_ts: str) -> None:
        """Say at once that the message was seen: a reaction on it, sent in the background
        (a progress call: dropped while Slack has said to slow down)."""
        if self._acknowledger is None and self._caps.reacts(self._thread.team):
            self._acknowledger = asyncio.create_task(self._react(message_ts))

    async def _react(self, message_ts: str) -> None:
        progress_calls()
        self._pace.count()
        try:
            await self._client.reactions_add(
                channel=self._thread.channel, timestamp=message_ts, name=SEEN_REACTION
            )
        except ProgressDropped:
            log.info("no reaction on %s: Slack is behind", self._thread.session_id)
        except _SLACK_ERRORS as exc:
            self._caps.refuse_reaction(self._thread.team, _error_of(exc))
        else:
            self._first_shown.shown()

    # -- the callback -------------------------------------------------------------------
    async def __call__(self, event: str | StepEvent) -> None:
        if self._closed.is_set():
            return
        if isinstance(event, str):
            self._line_as_step(event)
        else:
            self._wanted.steps[event.id] = Step(event.id, event.title, event.status, event.details)
            if event.status == "in_progress":
                self._wanted.line = event.title
        self._kick()

    async def show(self, line: str, *, at_once: bool = False) -> None:
        """A line for the working message only ("Queued: …"), not a step."""
        self._wanted.line = line
        self._wanted.note = line
        if at_once:
            self._grace_s = 0.0
        self._kick()

    def allow_stop(self) -> None:
        """The run has started: from now on the working message carries Stop (a queued
        request's would stop the run before it)."""
        self._stoppable = True
        self._kick()

    def _line_as_step(self, line: str) -> None:
        """A plain progress line ("Running query on shop-staging…") is the next step: the
        one before it is done."""
        title = line.strip().rstrip("…").rstrip(".").strip()
        if not title:
            return
        for step in self._wanted.steps.values():
            if step.status == "in_progress":
                step.status = "complete"
        self._sequence += 1
        step_id = f"step-{self._sequence}"
        self._wanted.steps[step_id] = Step(step_id, title)
        self._wanted.line = line

    def _kick(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())

    # -- writing ------------------------------------------------------------------------
    async def _write(self) -> None:
        progress_calls()  # this task's calls are progress: dropped when Slack is behind
        if self._working_ts is None and self._stream_ts is None and self._grace_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), self._grace_s)
                return  # done within the grace period: nothing to show
        while not self._closed.is_set():
            changed = False
            if self._streaming and self._pending_chunks():
                if not await self._pace.turn():
                    return
                await self._stream_steps()
                changed = True
            line = self._wanted.line
            if self._assistant and line != self._status_line and await self._pace.turn():
                await self._set_status(line)
                changed = True
            # Streamed, the steps are in the stream: the working message keeps the words
            # given to `show` ("Queued: …", "Working on it…") and its Stop button.
            shown = self._wanted.note if self._streaming else line
            # Streamed, a working message is only worth posting for Stop or a note.
            wanted = self._stoppable or not self._streaming or shown != strings.WORKING
            if (
                (self._working_ts is None and wanted)
                or (self._working_ts is not None and (shown, self._stoppable) != self._shown_line)
            ) and await self._pace.turn():
                await self._post_working(shown)
                changed = True
            if not changed:
                return
            self._first_shown.shown()

    def _pending_chunks(self) -> list[dict[str, Any]]:
        chunks = []
        for step in self._wanted.steps.values():
            sent = (step.title, step.status, step.details or None)
            if self._sent_steps.get(step.id) != sent:
                chunk = {"type": "task_update", "id": step.id, "title": step.title}
                chunk["status"] = step.status
                if step.details:
                    chunk["details"] = step.details
                chunks.append(chunk)
        return chunks

    def _mark_sent(self, chunks: list[dict[str, Any]]) -> None:
        for chunk in chunks:
            self._sent_steps[chunk["id"]] = (
                chunk["title"],
                chunk["status"],
                chunk.get("details") or None,
            )

    async def _stream_steps(self) -> None:
        chunks = self._pending_chunks()
        try:
            if self._stream_ts is None:
                response = await self._client.chat_startStream(
                    channel=self._thread.channel,
                    thread_ts=self._thread.thread_ts,
                    recipient_team_id=self._thread.team,
                    recipient_user_id=self._recipient,
                    task_display_mode="timeline",
                    chunks=chunks,
                )
                self._stream_ts = str(response["ts"])
                await self._kept.opened("stream", self._stream_ts)
            else:
                await self._client.chat_appendStream(
                    channel=self._thread.channel, ts=self._stream_ts, chunks=chunks
                )
        except ProgressDropped:
            return  # Slack is behind: the next call carries these steps too
        except _SLACK_ERRORS as exc:
            error = _error_of(exc)
            log.warning("streaming in %s stopped: %s", self._thread.session_id, error)
            if self._stream_ts is None:
                self._caps.refuse_stream(self._thread.team, error)
            self._streaming = False  # the rest of this run uses the status message
            return
        self._mark_sent(chunks)

    async def _set_status(self, line: str) -> None:
        self._status_line = line
        if not self._caps.shows_status(self._thread.team):
            return
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=self._thread.channel, thread_ts=self._thread.thread_ts, status=line
            )
        except ProgressDropped:
            self._status_line = None  # shown later, if there is a later
        except _SLACK_ERRORS as exc:
            self._caps.refuse_status(self._thread.team, _error_of(exc))

    async def _post_working(self, line: str) -> None:
        message = working_message(line, self._thread.session_id if self._stoppable else None)
        try:
            if self._working_ts is None:
                response = await self._client.chat_postMessage(
                    channel=self._thread.channel, thread_ts=self._thread.thread_ts, **message
                )
                self._working_ts = str(response["ts"])
                await self._kept.opened("working", self._working_ts)
            else:
                await self._client.chat_update(
                    channel=self._thread.channel, ts=self._working_ts, **message
                )
        except ProgressDropped:
            return  # Slack is behind: tried again with the next change
        except _SLACK_ERRORS as exc:
            log.warning("working message not updated: %s", exc)
        self._shown_line = (line, self._stoppable)

    # -- the end ------------------------------------------------------------------------
    async def finish(self, text: str = "", *, waiting: str | None = None) -> bool:
        """Stop the stream: the open steps done (or `waiting`, e.g. for approval, left
        pending) and `text` as the message's answer. True when `text` was delivered in
        the stream; False when there is no stream (the caller posts it)."""
        self._closed.set()
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        if self._stream_ts is None:
            return False
        for step in self._wanted.steps.values():
            if step.status == "in_progress":
                step.status = "complete"
        if waiting is not None:
            self._sequence += 1
            step_id = f"step-{self._sequence}"
            self._wanted.steps[step_id] = Step(step_id, waiting, "pending")
        chunks = self._pending_chunks()
        fits = bool(text.strip()) and len(text) <= STREAM_TEXT_LIMIT
        if fits:
            chunks.append({"type": "markdown_text", "text": text})
        try:
            self._pace.count()
            await self._client.chat_stopStream(
                channel=self._thread.channel, ts=self._stream_ts, chunks=chunks
            )
        except _SLACK_ERRORS as exc:
            log.warning("stream of %s not stopped: %s", self._thread.session_id, exc)
            return False
        finally:
            await self._kept.closed("stream", self._stream_ts)
        return fits

    async def fail(self, reason: str) -> None:
        """End the stream with the open step marked as failed (a stop, an error)."""
        self._closed.set()
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        if self._stream_ts is None:
            return
        for step in self._wanted.steps.values():
            if step.status == "in_progress":
                step.status = "error"
                step.details = reason
        self._pace.count()
        with contextlib.suppress(*_SLACK_ERRORS):
            await self._client.chat_stopStream(
                channel=self._thread.channel, ts=self._stream_ts, chunks=self._pending_chunks()
            )
        await self._kept.closed("stream", self._stream_ts)

    async def clear(self) -> None:
        await self.close()

    async def close(self) -> None:
        """Remove the working message (and its Stop button); clear the status line."""
        self._closed.set()
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        if self._working_ts is not None:
            self._pace.count()
            try:
                await self._client.chat_delete(channel=self._thread.channel, ts=self._working_ts)
            except _SLACK_ERRORS as exc:
                log.warning("working message not deleted: %s", exc)
            await self._kept.closed("working", self._working_ts)
            self._working_ts = None
        if self._assistant and self._status_line and self._caps.shows_status(self._thread.team):
            self._pace.count()
            with contextlib.suppress(*_SLACK_ERRORS):
                await self._client.assistant_threads_setStatus(
                    channel_id=self._thread.channel, thread_ts=self._thread.thread_ts, status=""
                )
