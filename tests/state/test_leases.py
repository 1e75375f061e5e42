"""Session leases: one holder at a time, across processes on Redis; a dead holder's lease
expires and the next waiter goes on."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.state import State, open_state
from bot.state.leases import RedisLeases
from tests.waiting import until


async def _redis_state(redis_url: str, redis_prefix: str, tmp_path: Path) -> State:
    return await open_state(
        Settings(dbagent_state_url=redis_url, dbagent_state_dir=tmp_path, databases=[]),
        redis_prefix=redis_prefix,
    )


async def test_holders_of_one_session_never_overlap(state: State) -> None:
    inside: list[int] = []
    overlaps = 0

    async def run(n: int) -> None:
        nonlocal overlaps
        async with state.leases.hold("T:C:1"):
            inside.append(n)
            overlaps += len(inside) > 1
            await asyncio.sleep(0)
            inside.remove(n)

    await asyncio.gather(*(run(n) for n in range(20)))
    assert overlaps == 0


async def test_other_sessions_do_not_wait(state: State) -> None:
    async with state.leases.hold("T:C:1"):
        await asyncio.wait_for(_enter_and_leave(state, "T:C:2"), 10)


async def _enter_and_leave(state: State, session_id: str) -> None:
    async with state.leases.hold(session_id):
        pass


COUNT_UNDER_THE_LEASE = """
import asyncio, sys
from bot.config import Settings
from bot.state import open_state

async def main(url, prefix, directory):
    state = await open_state(
        Settings(dbagent_state_url=url, dbagent_state_dir=directory, databases=[]),
        redis_prefix=prefix,
    )
    client, key = state.backend.client, prefix + "test-counter"
    sys.stdin.readline()
    for _ in range(15):
        async with state.leases.hold("T:C:shared"):
            value = int(await client.get(key) or 0)  # read, then write: safe only alone
            await asyncio.sleep(0.001)
            await client.set(key, value + 1)
    await state.close()

asyncio.run(main(*sys.argv[1:]))
"""


async def test_two_processes_take_turns_on_one_session(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    racers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            COUNT_UNDER_THE_LEASE,
            redis_url,
            redis_prefix,
            str(tmp_path),
            stdin=asyncio.subprocess.PIPE,
        )
        for _ in range(2)
    ]
    await asyncio.gather(*(racer.communicate(b"go\n") for racer in racers))
    assert [racer.returncode for racer in racers] == [0, 0]
    state = await _redis_state(redis_url, redis_prefix, tmp_path)
    assert int(await state.backend.client.get(redis_prefix + "test-counter")) == 30
    await state.close()


HOLD_AND_HANG = """
import asyncio, sys
from bot.config import Settings
from bot.state import open_state
from bot.state.leases import RedisLeases

async def main(url, prefix, directory):
    state = await open_state(
        Settings(dbagent_state_url=url, dbagent_state_dir=directory, databases=[]),
        redis_prefix=prefix,
    )
    async with RedisLeases(state.backend, heartbeat_s=0.5).hold("T:C:1"):
        print("holding", flush=True)
        await asyncio.Event().wait()

asyncio.run(main(*sys.argv[1:]))
"""


async def test_a_killed_holders_lease_expires_and_the_next_one_runs(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLD_AND_HANG,
        redis_url,
        redis_prefix,
        str(tmp_path),
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None
    assert (await holder.stdout.readline()).strip() == b"holding"
    holder.send_signal(signal.SIGKILL)
    await holder.wait()
    state = await _redis_state(redis_url, redis_prefix, tmp_path)
    leases = RedisLeases(state.backend, heartbeat_s=0.5)
    async with asyncio.timeout(20):
        async with leases.hold("T:C:1"):
            pass
    await state.close()


async def test_a_lease_is_seen_held_only_while_held(state: State) -> None:
    assert not await state.leases.held("T:C:1")
    async with state.leases.hold("T:C:1"):
        assert await state.leases.held("T:C:1")
    assert not await state.leases.held("T:C:1")


async def test_a_released_lease_on_redis_leaves_no_key_behind(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    state = await _redis_state(redis_url, redis_prefix, tmp_path)
    client = state.backend.client
    try:
        async with state.leases.hold("T:C:1"):
            assert await client.keys(f"{redis_prefix}lease*")  # the queue and the heartbeat
        # The ticket left the queue and the heartbeat ended in one round trip; nothing of
        # either waits for its expiry.
        assert await client.keys(f"{redis_prefix}lease*") == []
    finally:
        await state.close()


# How many tickets in a queue have no live heartbeat, counted atomically.
_ORPHANS = """
local orphans = 0
for _, ticket in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[1] .. ticket) == 0 then orphans = orphans + 1 end
end
return orphans
"""


async def test_a_ticket_is_never_in_a_lease_queue_without_its_heartbeat(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    # A ticket without a heartbeat looks dead: a waiter drops it, and its owner goes to the
    # back of the queue behind later arrivals. Joining and the heartbeat are one step.
    state = await _redis_state(redis_url, redis_prefix, tmp_path)
    orphans = state.backend.client.register_script(_ORPHANS)
    queue, alive = f"{redis_prefix}lease:T:C:1", f"{redis_prefix}lease-alive:"
    all_held = asyncio.Event()
    seen: list[int] = []

    async def watch() -> None:
        while not all_held.is_set():
            seen.append(int(await orphans(keys=[queue], args=[alive])))

    async def take_a_turn() -> None:
        async with state.leases.hold("T:C:1"):
            await asyncio.sleep(0)

    try:
        watcher = asyncio.create_task(watch())
        await asyncio.gather(*(take_a_turn() for _ in range(30)))
        all_held.set()
        await watcher
        assert seen and max(seen) == 0
    finally:
        await state.close()


async def test_a_waiter_dropped_from_the_queue_queues_again_at_its_next_look(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    # Its heartbeat lapsed (its process stalled) and another waiter dropped its ticket: it
    # must not wait for the queue to empty, which under steady traffic may never happen.
    state = await _redis_state(redis_url, redis_prefix, tmp_path)
    client, queue = state.backend.client, f"{redis_prefix}lease:T:C:1"
    leases = RedisLeases(state.backend, heartbeat_s=3.0)
    release, waiter_in = asyncio.Event(), asyncio.Event()

    async def hold_until_told() -> None:
        async with leases.hold("T:C:1"):
            await release.wait()

    async def wait_for_the_lease() -> None:
        async with leases.hold("T:C:1"):
            waiter_in.set()

    try:
        holder = asyncio.create_task(hold_until_told())
        await until(lambda: _length_is(client, queue, 1))
        waiter = asyncio.create_task(wait_for_the_lease())
        await until(lambda: _length_is(client, queue, 2))
        dropped = await client.lindex(queue, 1)
        await client.lrem(queue, 1, dropped)
        await until(lambda: _length_is(client, queue, 2))  # queued again, behind the holder
        assert await client.lindex(queue, 1) == dropped
        assert not waiter_in.is_set()
        release.set()
        await asyncio.wait_for(asyncio.gather(holder, waiter), 10)
        assert waiter_in.is_set()
    finally:
        await state.close()


async def _length_is(client: Any, queue: str, length: int) -> bool:
    return int(await client.llen(queue)) == length


async def test_a_waiter_with_a_short_heartbeat_is_never_dropped_as_dead(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    # A waiter renews its heartbeat each time it looks at the queue: the looks must come
    # within the heartbeat's lifetime, however long the wait.
    state = await _redis_state(redis_url, redis_prefix, tmp_path)
    orphans = state.backend.client.register_script(_ORPHANS)
    queue, alive = f"{redis_prefix}lease:T:C:1", f"{redis_prefix}lease-alive:"
    leases = RedisLeases(state.backend, heartbeat_s=0.3)
    seen: list[int] = []
    watched = asyncio.Event()

    async def hold_while_watched() -> None:
        async with leases.hold("T:C:1"):
            await watched.wait()

    async def wait_for_the_lease() -> None:
        async with leases.hold("T:C:1"):
            pass

    try:
        holder = asyncio.create_task(hold_while_watched())
        waiters = [asyncio.create_task(wait_for_the_lease()) for _ in range(3)]
        began = time.monotonic()
        while time.monotonic() - began < 2.0:  # several heartbeats' lifetimes
            seen.append(int(await orphans(keys=[queue], args=[alive])))
            await asyncio.sleep(0.01)
        watched.set()
        await asyncio.wait_for(asyncio.gather(holder, *waiters), 10)
        assert seen and max(seen) == 0
    finally:
        await state.close()


async def test_a_holder_whose_lease_is_lost_says_so_in_the_log(
    redis_url: str, redis_prefix: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An evicted or flushed queue lets another process take the thread: the run cannot be
    # undone, but the log must say it may overlap another.
    state = await _redis_state(redis_url, redis_prefix, tmp_path)
    client, queue = state.backend.client, f"{redis_prefix}lease:T:C:1"
    leases = RedisLeases(state.backend, heartbeat_s=0.3)

    def lost() -> bool:
        return any("lease" in r.message and "is lost" in r.message for r in caplog.records)

    try:
        async with leases.hold("T:C:1"):
            await client.delete(queue)
            await until(lost)
        assert [r.levelname for r in caplog.records if "is lost" in r.message] == ["ERROR"]
    finally:
        await state.close()
