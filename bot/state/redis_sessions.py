"""Sessions on Redis: per session a string key (the head) and a hash (the history: a field
per position, and the version), expiring together; and one set of the running ones. See
sessions.py for the layout's reasons; here each save and each load is one Lua script or one
MULTI transaction, so neither sees nor leaves half a save, in any process."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.typing import EncodableT, FieldT

from bot.state.codec import Record, encode
from bot.state.redis_db import RedisDb, texts
from bot.state.sessions import (
    RUNNING,
    Head,
    HistoryUpdate,
    Sessions,
    Stored,
    head_of,
    new_version,
    split,
    stored_session,
)

_BATCH = 1000  # arguments per command inside the script (Lua's stack is limited)

# KEYS: the head, the history, the running set. ARGV: the expected version, the new one,
# the head's text, the lifetime in ms ("" for none), "1" when running, the session id, the
# number n of messages written, n (position, text) pairs, then the positions to delete.
_UPDATE = f"""
if redis.call('HGET', KEYS[2], 'version') ~= ARGV[1] then return 0 end
local lifetime = tonumber(ARGV[4])
if lifetime then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', lifetime)
else
  redis.call('SET', KEYS[1], ARGV[3])
end
redis.call('HSET', KEYS[2], 'version', ARGV[2])
local last = 7 + 2 * tonumber(ARGV[7])
local batch = {{}}
for i = 8, last, 2 do
  batch[#batch + 1] = ARGV[i]
  batch[#batch + 1] = ARGV[i + 1]
  if #batch >= {_BATCH} then redis.call('HSET', KEYS[2], unpack(batch)); batch = {{}} end
end
if #batch > 0 then redis.call('HSET', KEYS[2], unpack(batch)) end
batch = {{}}
for i = last + 1, #ARGV do
  batch[#batch + 1] = ARGV[i]
  if #batch >= {_BATCH} then redis.call('HDEL', KEYS[2], unpack(batch)); batch = {{}} end
end
if #batch > 0 then redis.call('HDEL', KEYS[2], unpack(batch)) end
if lifetime then redis.call('PEXPIRE', KEYS[2], lifetime) else redis.call('PERSIST', KEYS[2]) end
if ARGV[5] == '1' then
  redis.call('SADD', KEYS[3], ARGV[6])
else
  redis.call('SREM', KEYS[3], ARGV[6])
end
return 1
"""
# KEYS: the head, the history. ARGV: the version the caller knows ("" for none). The head
# alone when that is the stored version, else the head and the history's fields and values.
_LOAD = """
local head = redis.call('GET', KEYS[1])
if not head then return false end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[2], 'version') == ARGV[1] then return {head} end
return {head, redis.call('HGETALL', KEYS[2])}
"""
_VERSION = "version"  # the history hash's field that is not a position


class RedisSessions(Sessions):
    """Per session a string key (the head) and a hash (the history: a field per position,
    and the version), expiring together `sessions_days` after the last save; and one set of
    the running ones (small: the runs going on now)."""

    def __init__(self, db: RedisDb, lifetime_s: float | None) -> None:
        self._db = db
        self._lifetime_ms = None if lifetime_s is None else max(1, int(lifetime_s * 1000))
        self._running = db.key("sessions-running")
        self._update = db.client.register_script(_UPDATE)
        self._load = db.client.register_script(_LOAD)

    def _key(self, session_id: str) -> str:
        return self._db.key("session", session_id)

    def _history(self, session_id: str) -> str:
        return self._db.key("session-messages", session_id)

    async def load(self, session_id: str, *, known: str | None = None) -> Stored | None:
        keys = [self._key(session_id), self._history(session_id)]
        found = await self._db.run(lambda c: self._load(keys=keys, args=[known or ""], client=c))
        if not found:
            return None
        if len(found) == 1:
            return stored_session(session_id, found[0], known, None)
        head, fields = found
        history = dict(zip(fields[::2], fields[1::2], strict=True))
        version = history.pop(_VERSION, None)
        entries = [(int(at), text) for at, text in history.items()]
        return stored_session(session_id, head, version, entries)

    async def save(self, record: Record) -> str:
        head_record, messages = split(record)
        head, version = head_of(head_record), new_version()
        fields: dict[FieldT, EncodableT] = {_VERSION: version}
        fields.update((at, encode(message)) for at, message in enumerate(messages))
        key, history = self._key(head.id), self._history(head.id)

        async def write(client: Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set(key, head.text, px=self._lifetime_ms)
                pipe.delete(history)
                pipe.hset(history, mapping=fields)
                if self._lifetime_ms is not None:
                    pipe.pexpire(history, self._lifetime_ms)
                self._mark(pipe, head)
                await pipe.execute()

        await self._db.run(write)
        return version

    async def update(self, change: HistoryUpdate) -> str | None:
        head, version = head_of(change.head), new_version()
        written = [part for at, m in change.written.items() for part in (at, encode(m))]
        first, end = change.before
        dropped = [
            *range(first, min(end, change.start)),
            *range(max(first, change.end), end),
        ]
        keys = [self._key(head.id), self._history(head.id), self._running]
        args = [
            change.version,
            version,
            head.text,
            "" if self._lifetime_ms is None else self._lifetime_ms,
            "1" if head.status == RUNNING else "0",
            head.id,
            len(change.written),
            *written,
            *dropped,
        ]
        done = await self._db.run(lambda c: self._update(keys=keys, args=args, client=c))
        return version if done == 1 else None

    def _mark(self, pipe: Pipeline, head: Head) -> None:
        if head.status == RUNNING:
            pipe.sadd(self._running, head.id)
        else:
            pipe.srem(self._running, head.id)

    async def exists(self, session_id: str) -> bool:
        return bool(await self._db.run(lambda c: c.exists(self._key(session_id)), retry=True))

    async def running(self) -> list[str]:
        members = await self._db.run(lambda c: c.smembers(self._running), retry=True)
        return sorted(texts(members))

    async def prune(self, idle_since: float, limit: int) -> int:
        # Sessions expire by themselves; only drop running marks whose session is gone.
        members = sorted(
            texts(await self._db.run(lambda c: c.smembers(self._running), retry=True))
        )[:limit]
        gone = [m for m in members if not await self.exists(m)]
        if gone:
            await self._db.run(lambda c: c.srem(self._running, *gone))
        return len(gone)
