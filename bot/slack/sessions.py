"""Slack threads as sessions: ids, deduplication of deliveries, and one run at a time.

A session is a thread: "team:channel:thread_ts". Slack may deliver one message several
times (retries after a slow ack, and a mention arrives as both `app_mention` and
`message`). A delivery is held in memory from its arrival until its run ends (a repeat
meanwhile is dropped), and claimed in the state's seen events under its event id and its
channel+ts when its run starts: only the first claim proceeds, also across restarts — and
a delivery the bot took but never started (it stopped first) is answered when Slack
delivers it again. Clicks and form submissions are claimed there too, so a replayed
payload does nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.state.seen_events import SeenEvents
from bot.state.sessions import Sessions as SessionRecords

log = logging.getLogger(__name__)


def session_id(team: str, channel: str, thread_ts: str) -> str:
    return f"{team}:{channel}:{thread_ts}"


@dataclass(frozen=True, slots=True)
class Thread:
    """Where a session lives in Slack."""

    team: str
    channel: str
    thread_ts: str

    @property
    def session_id(self) -> str:
        return session_id(self.team, self.channel, self.thread_ts)

    @classmethod
    def from_session_id(cls, value: str) -> Thread:
        team, channel, thread_ts = value.split(":", 2)
        return cls(team, channel, thread_ts)


def _delivery_names(event_id: str | None, channel: str, ts: str) -> list[str]:
    names = [f"message:{channel}:{ts}"]
    if event_id:
        names.insert(0, f"event:{event_id}")
    return names


class Dedupe:
    """Seen events are forgotten after `[retention] seen_events_days` (Slack retries for
    about an hour at most)."""

    def __init__(self, seen: SeenEvents) -> None:
        self._seen = seen
        self._held: set[str] = set()  # deliveries taken and not yet done, in this process

    def hold(self, event_id: str | None, channel: str, ts: str) -> bool:
        """Take a delivery for later; False when it is already held here."""
        names = _delivery_names(event_id, channel, ts)
        if any(name in self._held for name in names):
            return False
        self._held.update(names)
        return True

    def let_go(self, event_id: str | None, channel: str, ts: str) -> None:
        """The held delivery was answered, or will not be run here."""
        self._held.difference_update(_delivery_names(event_id, channel, ts))

    async def first_delivery(self, event_id: str | None, channel: str, ts: str) -> bool:
        """Claim a delivery; False when this event, or this message, was seen before."""
        names = _delivery_names(event_id, channel, ts)
        return await self._seen.claim(*names)  # one atomic check-and-mark of both

    async def first_interaction(self, key: str) -> bool:
        """Claim a click or a form submission by its key (Slack's trigger id, the action's
        time, who clicked); False when this very payload was seen before (a replay)."""
        return await self._seen.claim(f"interaction:{key}")


Job = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


class SessionQueues:
    """Runs each session's jobs one at a time, in arrival order; sessions run in parallel.

    Jobs are started here rather than in Bolt's listener, so an event is acknowledged at
    once whatever the work behind it, and `drain()` can wait for everything to finish.
    A job dropped unstarted (the bot stops) runs its `on_drop` instead, to tidy up what it
    showed (a "Queued" line).
    """

    def __init__(self) -> None:
        # jobs not started yet, with what to do if they never start, per busy session
        self._queues: dict[str, deque[tuple[Job, Job]]] = {}
        self._running: set[str] = set()
        self._workers: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def busy(self, session: str) -> bool:
        return session in self._queues

    def submit(self, session: str, job: Job, *, on_drop: Job = _nothing) -> int:
        """Queue a job; returns how many jobs of the session are ahead of it."""
        queue = self._queues.get(session)
        if queue is not None:
            ahead = len(queue) + (session in self._running)
            queue.append((job, on_drop))
            return ahead
        self._queues[session] = deque([(job, on_drop)])
        self._idle.clear()
        worker = asyncio.create_task(self._work(session), name=f"session {session}")
        self._workers.add(worker)
        worker.add_done_callback(self._finished)
        return 0

    async def _work(self, session: str) -> None:
        queue = self._queues[session]
        try:
            while queue:
                job, _ = queue.popleft()
                self._running.add(session)
                try:
                    await job()
                except Exception:
                    # Jobs report their own failures to the person; this is the last net.
                    log.exception("a job of session %s failed", session)
                finally:
                    self._running.discard(session)
        finally:
            del self._queues[session]

    def _finished(self, worker: asyncio.Task[None]) -> None:
        self._workers.discard(worker)
        if not self._workers:
            self._idle.set()

    async def drain(self) -> None:
        """Wait until every queued job has run."""
        await self._idle.wait()

    async def cancel(self, *, within_s: float | None = None) -> None:
        """Stop every running job (cancelled) and drop the queued ones (their `on_drop`
        runs); waits at most `within_s` for them to tidy up."""
        dropped = [on_drop for queue in self._queues.values() for _, on_drop in queue]
        for queue in self._queues.values():
            queue.clear()
        workers = list(self._workers)
        for worker in workers:
            worker.cancel()
        tidying = [asyncio.ensure_future(on_drop()) for on_drop in dropped]
        pending = [*workers, *tidying]
        if pending:
            await asyncio.wait(pending, timeout=within_s)


class KnownSessions:
    """Which threads the bot takes part in, so a reply there needs no new mention.

    Remembered in memory as sessions start here, and looked up among the stored sessions
    for threads from before a restart (or started on another replica).
    """

    def __init__(self, sessions: SessionRecords) -> None:
        self._sessions = sessions
        self._known: set[str] = set()

    def add(self, session: str) -> None:
        self._known.add(session)

    async def contains(self, session: str) -> bool:
        if session in self._known:
            return True
        # A membership test: the session itself (its whole history) is not decoded.
        if await self._sessions.exists(session):
            self._known.add(session)
            return True
        return False
