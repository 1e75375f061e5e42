"""Session leases: a session's runs never overlap, first come first served.

Embedded, one process serves: an asyncio.Lock per session (it wakes waiters in order).
On Redis, several processes may serve one thread, so the lease lives there: each holder or
waiter has a ticket in the session's queue (a list, in arrival order) and keeps a heartbeat
key alive while it holds or waits; the head of the queue holds the lease. A process that
dies stops its heartbeat, and the next waiter drops its ticket once the heartbeat expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Literal

import redis.asyncio as redis

from bot.observability import observe
from bot.state.errors import StateError
from bot.state.redis_db import RedisDb, text

log = logging.getLogger(__name__)


class SessionLeases(ABC):
    # Whether other processes see these leases (a fleet on Redis): only then can a lease
    # expire while this process runs, and another's runs be taken up (bot/slack/recovery.py).
    shared: bool = False

    @abstractmethod
    def hold(self, session_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the session's lease for the block; waits behind earlier holders."""

    @abstractmethod
    async def held(self, session_id: str) -> bool:
        """Whether a live process holds the session's lease now (a restart leaves the
        runs of other replicas alone)."""


class LocalLeases(SessionLeases):
    """One asyncio.Lock per session id, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        self._users[session_id] = self._users.get(session_id, 0) + 1
        try:
            async with lock:
                with observe.lease_held():
                    yield
        finally:
            self._users[session_id] -= 1
            if not self._users[session_id]:
                del self._users[session_id]
                del self._locks[session_id]

    async def held(self, session_id: str) -> bool:
        lock = self._locks.get(session_id)
        return lock is not None and lock.locked()


# KEYS[1]: the session's queue; ARGV: ticket, heartbeat key prefix, heartbeat ms, and how
# the caller stands: "join" (queue the ticket), "wait" (queue it again if it is no longer
# there: its heartbeat lapsed and a waiter dropped it, or the queue expired) or "hold" (the
# holder's renewal, which never queues). Refreshes the caller's heartbeat, drops dead tickets
# at the head, and says whether the caller's ticket is the head now: 1 yes, 0 not yet, -1 the
# queue is gone (only a holder sees that: its lease is lost).
_TURN = """
local function queued()
  for _, ticket in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
    if ticket == ARGV[1] then return true end
  end
  return false
end
if ARGV[4] == 'join' or (ARGV[4] == 'wait' and not queued()) then
  redis.call('RPUSH', KEYS[1], ARGV[1])
end
redis.call('SET', ARGV[2] .. ARGV[1], '1', 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 20)
while true do
  local head = redis.call('LINDEX', KEYS[1], 0)
  if not head then return -1 end
  if head == ARGV[1] then return 1 end
  if redis.call('EXISTS', ARGV[2] .. head) == 1 then return 0 end
  redis.call('LPOP', KEYS[1])
end
"""


_Stand = Literal["join", "wait", "hold"]


class RedisLeases(SessionLeases):
    shared = True

    def __init__(self, db: RedisDb, *, heartbeat_s: float = 15.0, poll_s: float = 0.02) -> None:
        self._db = db
        self._heartbeat_ms = int(heartbeat_s * 1000)
        self._poll_s = poll_s
        self._turn = db.client.register_script(_TURN)

    async def _my_turn(self, queue: str, ticket: str, stand: _Stand) -> int:
        alive = self._db.key("lease-alive", "")
        args: list[str | int] = [ticket, alive, self._heartbeat_ms, stand]
        return int(await self._db.run(lambda c: self._turn(keys=[queue], args=args, client=c)))

    async def _beat(self, queue: str, ticket: str) -> None:
        """Keep the heartbeat alive while the lease is held (a third of its lifetime)."""
        lost = False
        while True:
            await asyncio.sleep(self._heartbeat_ms / 3000)
            try:
                turn = await self._my_turn(queue, ticket, "hold")
            except StateError as exc:
                log.warning("cannot renew the lease of %s: %s", queue, exc)
                continue
            if turn != 1 and not lost:
                lost = True  # said once: the run goes on, and may overlap another's
                log.error(
                    "the lease of %s is lost (its queue in Redis is gone or another process "
                    "holds it): this run may overlap another; run Redis with "
                    "maxmemory-policy noeviction",
                    queue,
                )

    async def held(self, session_id: str) -> bool:
        queue = self._db.key("lease", session_id)
        head = await self._db.run(lambda c: c.lindex(queue, 0), retry=True)
        if head is None:
            return False
        alive = self._db.key("lease-alive", text(head))
        return bool(await self._db.run(lambda c: c.exists(alive), retry=True))

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        queue = self._db.key("lease", session_id)
        ticket = uuid.uuid4().hex
        beat: asyncio.Task[None] | None = None
        try:
            # Joining the queue and the first look at its head are one round trip.
            turn = await self._my_turn(queue, ticket, "join")
            if turn != 1:
                await self._wait_turn(queue, ticket)
            beat = asyncio.create_task(self._beat(queue, ticket), name=f"lease {session_id}")
            with observe.lease_held():
                yield
        finally:
            if beat is not None:
                beat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await beat
            alive = self._db.key("lease-alive", ticket)
            with contextlib.suppress(StateError):  # a lost release expires by itself
                await self._db.run(lambda c: _release(c, queue, ticket, alive))

    async def _wait_turn(self, queue: str, ticket: str) -> None:
        # Each look renews the waiter's heartbeat: looks come well within its lifetime, or
        # another waiter would drop the ticket as dead.
        delay, longest = self._poll_s, min(0.5, self._heartbeat_ms / 3000)
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, longest)
            if await self._my_turn(queue, ticket, "wait") == 1:
                return


async def _release(client: redis.Redis, queue: str, ticket: str, alive: str) -> None:
    """Leave the queue and end the heartbeat, in one round trip."""
    async with client.pipeline(transaction=False) as pipe:
        pipe.lrem(queue, 1, ticket)
        pipe.delete(alive)
        await pipe.execute()
