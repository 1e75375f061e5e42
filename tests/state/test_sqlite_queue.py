"""The embedded store's queue: calls made while its thread is busy are run together, in the
order they were made; consecutive writes share one transaction, each in a savepoint of its
own, so each caller still gets its own outcome and a failing write takes nothing else with it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.state.errors import StateError
from bot.state.sqlite_db import STATE_FILE, SqliteDb


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SqliteDb]:
    opened = await SqliteDb.open(tmp_path)
    await opened.write(lambda c: c.execute("CREATE TABLE t (k TEXT PRIMARY KEY)"))
    yield opened
    await opened.close()


def insert(key: str) -> Callable[[sqlite3.Connection], str]:
    def job(connection: sqlite3.Connection) -> str:
        connection.execute("INSERT INTO t (k) VALUES (?)", (key,))
        return key

    return job


async def keys(db: SqliteDb) -> list[str]:
    rows = await db.read(lambda c: c.execute("SELECT k FROM t ORDER BY k").fetchall())
    return [row[0] for row in rows]


class Held:
    """A call that holds the store's thread until released: what is called meanwhile queues."""

    def __init__(self, db: SqliteDb) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.task = asyncio.create_task(db.read(self._hold))

    def _hold(self, _: sqlite3.Connection) -> None:
        self.started.set()
        self.release.wait(10)

    async def __aenter__(self) -> Held:
        await asyncio.to_thread(self.started.wait, 10)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.release.set()
        await self.task


async def test_writes_queued_together_share_one_transaction(db: SqliteDb, tmp_path: Path) -> None:
    def others_see(connection: sqlite3.Connection) -> list[str]:
        # Another connection sees only what is committed: not yet the write before this one.
        other = sqlite3.connect(tmp_path / STATE_FILE)
        try:
            connection.execute("INSERT INTO t (k) VALUES ('b')")
            return [row[0] for row in other.execute("SELECT k FROM t ORDER BY k")]
        finally:
            other.close()

    async with Held(db):
        first = asyncio.ensure_future(db.write(insert("a")))
        second = asyncio.ensure_future(db.write(others_see))
        await asyncio.sleep(0)  # both are queued behind the held call
    assert await first == "a" and await second == []  # "a" was not committed apart
    assert await keys(db) == ["a", "b"]


async def test_a_write_that_raises_is_rolled_back_alone(db: SqliteDb) -> None:
    def half_then_fail(connection: sqlite3.Connection) -> None:
        connection.execute("INSERT INTO t (k) VALUES ('half')")
        raise StateError("a corrupt record")

    async with Held(db):
        calls = [db.write(insert("a")), db.write(half_then_fail), db.write(insert("c"))]
        outcomes = asyncio.gather(*calls, return_exceptions=True)
        await asyncio.sleep(0)
    a, failed, c = await outcomes
    assert (a, c) == ("a", "c") and isinstance(failed, StateError)
    assert await keys(db) == ["a", "c"]
    assert db.healthy  # the job's own error: the store still works


async def test_a_store_error_in_a_shared_transaction_fails_only_its_own_call(db: SqliteDb) -> None:
    await db.write(insert("taken"))
    async with Held(db):
        calls = [db.write(insert("a")), db.write(insert("taken")), db.write(insert("c"))]
        outcomes = asyncio.gather(*calls, return_exceptions=True)
        await asyncio.sleep(0)
    a, failed, c = await outcomes
    # The shared transaction is rolled back whole, then each write runs alone, as it would
    # have without the queue: only the duplicate key fails.
    assert (a, c) == ("a", "c") and isinstance(failed, StateError)
    assert "UNIQUE" in str(failed)
    assert await keys(db) == ["a", "c", "taken"]


async def test_reads_and_writes_run_in_the_order_they_were_made(db: SqliteDb) -> None:
    async with Held(db):
        calls = [
            db.read(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]),
            db.write(insert("a")),
            db.read(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]),
            db.write(insert("b")),
            db.write(insert("c")),
            db.read(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]),
        ]
        outcomes = asyncio.gather(*calls)
        await asyncio.sleep(0)
    assert await outcomes == [0, "a", 1, "b", "c", 3]


async def test_a_write_whose_caller_is_gone_before_it_runs_is_not_run(db: SqliteDb) -> None:
    async with Held(db):
        gone = asyncio.ensure_future(db.write(insert("gone")))
        kept = asyncio.ensure_future(db.write(insert("kept")))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
    assert await kept == "kept" and gone.cancelled()
    assert await keys(db) == ["kept"]


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    db = await SqliteDb.open(tmp_path)
    await db.close()
    with pytest.raises(StateError, match="closed"):
        await db.read(lambda c: None)
