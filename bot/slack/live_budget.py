"""What a run's progress may cost Slack, and what it leaves open for after a crash.

- `Pace`: at most one progress call per `PROGRESS_INTERVAL_S` (updates are coalesced
  meanwhile: each call carries the latest state) and `PROGRESS_CALLS` in all, however long
  the model thinks or however many steps it takes; with the acknowledgement and the closing
  calls, `CALLS_PER_TURN` (docs/operations.md states the budget).
- `KeptOpen`: the run's open stream and working message, remembered in the store as they
  open and forgotten as they close, so whoever takes a crashed run up can close them
  (left_open.py). A store that fails costs only that memory, never the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from bot.slack.sessions import Thread
from bot.state import StateError
from bot.state.live_messages import LiveKind, LiveMessages

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.5  # at most two progress calls a second per run
CALLS_PER_TURN = 30  # every call a run's progress makes, the acknowledgement included
CLOSING_CALLS = 3  # stop the stream, delete the working message, clear the status
PROGRESS_CALLS = CALLS_PER_TURN - CLOSING_CALLS - 1  # the reaction is the one


class Pace:
    """The progress calls of one run: paced, and counted against its budget."""

    def __init__(self, closed: asyncio.Event) -> None:
        self._closed = closed
        self._progress = 0
        self._next_at = 0.0  # loop time
        self.calls = 0  # every Slack call the run's progress made (tests, benchmarks)

    async def turn(self) -> bool:
        """Wait for the next progress call's turn; False once the run ended or its progress
        calls are spent."""
        loop = asyncio.get_running_loop()
        delay = self._next_at - loop.time()
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), delay)
        if self._closed.is_set() or self._progress >= PROGRESS_CALLS:
            return False
        self._progress += 1
        self.calls += 1
        self._next_at = loop.time() + PROGRESS_INTERVAL_S
        return True

    def count(self) -> None:
        """A call outside the paced ones (the acknowledgement, a closing call)."""
        self.calls += 1


class KeptOpen:
    def __init__(self, store: LiveMessages | None, thread: Thread) -> None:
        self._store = store
        self._thread = thread

    async def opened(self, kind: LiveKind, ts: str) -> None:
        if self._store is None:
            return
        thread = self._thread
        try:
            await self._store.opened(kind, thread.session_id, thread.channel, ts)
        except StateError as exc:
            log.warning("the %s message of %s is not remembered: %s", kind, thread, exc)

    async def closed(self, kind: LiveKind, ts: str) -> None:
        if self._store is None:
            return
        try:
            await self._store.closed(kind, self._thread.session_id, ts)
        except StateError as exc:
            log.warning("the %s message of %s is not forgotten: %s", kind, self._thread, exc)
