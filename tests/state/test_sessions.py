"""Sessions are stored, found by id, listed when left running, forgotten when idle; their
history a message at a time, so that a save writes what changed."""

from __future__ import annotations

import json

from bot.config import Retention
from bot.state import State
from bot.state.redis_db import RedisDb
from bot.state.sessions import HistoryUpdate
from tests.state.conftest import Clock, OpenState


def record(session_id: str, status: str = "idle", updated_at: float = 0.0) -> dict[str, object]:
    return {"id": session_id, "status": status, "updated_at": updated_at, "messages": [1, "x"]}


async def test_a_saved_session_comes_back_whole(state: State) -> None:
    await state.sessions.save(record("T:C:1"))
    assert await state.sessions.get("T:C:1") == record("T:C:1")
    assert await state.sessions.get("T:C:2") is None


async def test_a_session_survives_a_restart(open_backend: OpenState) -> None:
    first = await open_backend()
    await first.sessions.save(record("T:C:1"))
    await first.close()
    assert await (await open_backend()).sessions.get("T:C:1") == record("T:C:1")


async def test_existence_is_known_without_the_history(state: State) -> None:
    await state.sessions.save(record("T:C:1"))
    assert await state.sessions.exists("T:C:1")
    assert not await state.sessions.exists("T:C:9")


async def test_running_lists_only_the_sessions_last_saved_running(state: State) -> None:
    await state.sessions.save(record("T:C:1", "running"))
    await state.sessions.save(record("T:C:2", "running"))
    await state.sessions.save(record("T:C:3", "idle"))
    await state.sessions.save(record("T:C:2", "awaiting_approval"))
    assert await state.sessions.running() == ["T:C:1"]


async def test_only_sessions_idle_past_their_retention_are_pruned(
    state: State, clock: Clock
) -> None:
    await state.sessions.save(record("T:C:old", updated_at=clock.now - 31 * 86400))
    await state.sessions.save(record("T:C:new", updated_at=clock.now))
    await state.pruner().prune_pass()
    if not state.shared:  # Redis expires them by itself, 30 days after the save
        assert not await state.sessions.exists("T:C:old")
    assert await state.sessions.exists("T:C:new")


# -- the history, stored a message at a time ----------------------------------------------


def head(session_id: str, status: str = "idle") -> dict[str, object]:
    return {"id": session_id, "status": status, "updated_at": 0.0}


def change(
    version: str, before: tuple[int, int], start: int, end: int, written: dict[int, object]
) -> HistoryUpdate:
    return HistoryUpdate(head("T:C:1"), version, before, start, end, written)


async def test_an_update_writes_new_messages_and_drops_the_oldest(state: State) -> None:
    version = await state.sessions.save({**head("T:C:1"), "messages": ["a", "b", "c", "d"]})
    # Fitting dropped a and b; e was appended, and c replaced by a shorter C.
    after = await state.sessions.update(change(version, (0, 4), 2, 5, {2: "C", 4: "e"}))
    assert after is not None and after != version
    stored = await state.sessions.load("T:C:1")
    assert stored is not None
    assert stored.record == {**head("T:C:1"), "messages": ["C", "d", "e"]}
    assert (stored.start, stored.version, stored.same) == (2, after, False)


async def test_an_update_on_top_of_another_version_writes_nothing(state: State) -> None:
    first = await state.sessions.save({**head("T:C:1"), "messages": ["a"]})
    second = await state.sessions.update(change(first, (0, 1), 0, 2, {1: "b"}))
    assert second is not None
    # A writer that did not see `second` (a save of its own cut off, another process's).
    assert await state.sessions.update(change(first, (0, 1), 0, 2, {1: "stale"})) is None
    assert await state.sessions.get("T:C:1") == {**head("T:C:1"), "messages": ["a", "b"]}
    assert await state.sessions.update(change("", (0, 0), 0, 1, {0: "x"})) is None
    assert (
        await state.sessions.update(HistoryUpdate(head("T:C:9"), second, (0, 0), 0, 1, {0: "x"}))
        is None
    )  # no such session
    assert not await state.sessions.exists("T:C:9")


async def test_an_update_carries_the_status_for_the_running_list(state: State) -> None:
    version = await state.sessions.save({**head("T:C:1"), "messages": []})
    running = HistoryUpdate(head("T:C:1", "running"), version, (0, 0), 0, 1, {0: "go"})
    version = await state.sessions.update(running) or ""
    assert await state.sessions.running() == ["T:C:1"]
    idle = HistoryUpdate(head("T:C:1", "idle"), version, (0, 1), 0, 2, {1: "done"})
    assert await state.sessions.update(idle) is not None
    assert await state.sessions.running() == []


async def test_a_load_that_knows_the_version_reads_only_the_rest_of_the_record(
    state: State,
) -> None:
    version = await state.sessions.save({**head("T:C:1"), "messages": ["a", "b"]})
    same = await state.sessions.load("T:C:1", known=version)
    assert same is not None and same.same and same.version == version
    assert same.record == head("T:C:1")  # no messages: the caller has them
    other = await state.sessions.load("T:C:1", known="another")
    assert other is not None and not other.same
    assert other.record == {**head("T:C:1"), "messages": ["a", "b"]}
    assert await state.sessions.load("T:C:9", known=version) is None


async def test_thousands_of_messages_go_and_come_in_one_update(state: State) -> None:
    version = await state.sessions.save({**head("T:C:1"), "messages": list(range(2_500))})
    written = {at: f"m{at}" for at in range(2_500, 5_000)}
    assert await state.sessions.update(change(version, (0, 2_500), 2_400, 5_000, written))
    stored = await state.sessions.load("T:C:1")
    assert stored is not None and stored.start == 2_400
    assert stored.record["messages"] == [*range(2_400, 2_500), *written.values()]


async def test_a_session_an_earlier_version_stored_whole_still_loads(state: State) -> None:
    whole = {**head("T:C:1"), "messages": ["a", "b"], "tokens_used": 3}
    await store_whole(state, whole)
    stored = await state.sessions.load("T:C:1")
    assert stored is not None
    assert (stored.record, stored.start, stored.version) == (whole, 0, "")
    assert await state.sessions.exists("T:C:1")
    # Its next save stores it in the new layout, as a whole save.
    version = await state.sessions.save({**whole, "messages": ["a", "b", "c"]})
    again = await state.sessions.load("T:C:1")
    assert again is not None and again.version == version
    assert again.record == {**whole, "messages": ["a", "b", "c"]}


async def store_whole(state: State, record: dict[str, object]) -> None:
    """A session as earlier versions stored it: one record, its history inside."""
    text = json.dumps(record)
    if isinstance(state.backend, RedisDb):
        redis_db = state.backend
        await redis_db.run(lambda c: c.set(redis_db.key("session", str(record["id"])), text))
        return
    await state.backend.write(
        lambda c: c.execute(
            "INSERT INTO sessions (id, status, updated_at, data) VALUES (?, ?, ?, ?)",
            (record["id"], record["status"], record["updated_at"], text),
        )
    )


async def saved_with_an_update(state: State, session_id: str) -> None:
    version = await state.sessions.save({**head(session_id), "messages": ["a"]})
    update = HistoryUpdate(head(session_id), version, (0, 1), 0, 2, {1: "b"})
    assert await state.sessions.update(update) is not None


async def lifetimes_ms(redis_db: RedisDb, session_id: str) -> list[int]:
    """PTTL of the session's key and of its history's (-1: none)."""
    keys = [redis_db.key(kind, session_id) for kind in ("session", "session-messages")]
    return [int(await redis_db.run(lambda c, key=key: c.pttl(key))) for key in keys]


async def test_a_sessions_history_expires_with_it_on_redis(open_backend: OpenState) -> None:
    kept = await open_backend(retention=Retention(sessions_days=30))
    if not isinstance(kept.backend, RedisDb):
        return  # embedded: pruned together (test_sqlite_db.py)
    await saved_with_an_update(kept, "T:C:1")
    assert all(ttl > 29 * 86400_000 for ttl in await lifetimes_ms(kept.backend, "T:C:1"))
    forever = await open_backend(retention=Retention(sessions_days=0))
    assert isinstance(forever.backend, RedisDb)
    await saved_with_an_update(forever, "T:C:1")  # the same session, kept forever now
    assert await lifetimes_ms(forever.backend, "T:C:1") == [-1, -1]
