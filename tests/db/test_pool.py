"""Connections: a dead or silent server fails fast and leaves nothing broken; connections are
reused only after clean runs; the pool size bounds concurrency without serialising it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from bot.config import ConnectionTarget, Limits
from bot.db import DatabaseRegistry, DbError
from tests.db.support import SHOP_SCHEMA, Relay, server_rows, staging


@pytest.fixture
async def relay(shop_url: str) -> AsyncIterator[Relay]:
    target = ConnectionTarget.parse(shop_url)
    opened = Relay(target.host, target.port)
    yield opened
    await opened.stop()


async def connection_id(registry: DatabaseRegistry, name: str = "shop-staging") -> int:
    execution = await registry.get(name).execute(
        ["SELECT CONNECTION_ID()"], read_only=True, limit=1
    )
    assert execution.last_result is not None
    value = execution.last_result.rows[0][0]
    assert isinstance(value, int)
    return value


async def test_a_dead_server_fails_fast_with_the_database_name_and_no_password() -> None:
    registry = DatabaseRegistry(
        [staging("mysql://agent:hunter2-secret@127.0.0.1:1/shop")], Limits(connect_timeout_s=2)
    )
    started = time.perf_counter()
    with pytest.raises(DbError) as failed:
        await registry.get("shop-staging").execute(["SELECT 1"], read_only=True, limit=1)

    assert failed.value.message == (
        "cannot connect to shop-staging (connection refused at 127.0.0.1:1)"
    )
    assert time.perf_counter() - started < 2
    await registry.close()


async def test_a_server_that_never_answers_fails_within_the_connect_timeout(
    shop_url: str,
) -> None:
    silent = Relay("127.0.0.1", 1, silent=True)
    port = await silent.start()
    registry = DatabaseRegistry(
        [staging(f"mysql://root@127.0.0.1:{port}/x")], Limits(connect_timeout_s=0.5)
    )
    started = time.perf_counter()
    with pytest.raises(DbError) as failed:
        await registry.get("shop-staging").list_tables()

    assert failed.value.message == (
        f"cannot connect to shop-staging (no answer from 127.0.0.1:{port} within 0.5 s)"
    )
    assert time.perf_counter() - started < 1.5
    await registry.close()
    await silent.stop()


async def test_a_wrong_password_is_reported_without_the_password(shop_url: str) -> None:
    target = ConnectionTarget.parse(shop_url)
    url = f"mysql://{target.user}:wrong-secret-pw@{target.host}:{target.port}/{SHOP_SCHEMA}"
    registry = DatabaseRegistry([staging(url)], Limits())
    with pytest.raises(DbError) as failed:
        await registry.get("shop-staging").execute(["SELECT 1"], read_only=True, limit=1)

    assert failed.value.message.startswith("cannot connect to shop-staging (Access denied")
    assert "wrong-secret-pw" not in failed.value.message
    await registry.close()


async def test_the_next_call_tries_again_once_the_server_is_back(relay: Relay) -> None:
    port = await relay.start()
    await relay.stop()  # nothing listens on the port now
    registry = DatabaseRegistry([staging(f"mysql://root@127.0.0.1:{port}/{SHOP_SCHEMA}")], Limits())

    with pytest.raises(DbError, match="cannot connect to shop-staging"):
        await connection_id(registry)
    await relay.start(port)

    assert await connection_id(registry) > 0
    await registry.close()


async def test_a_clean_read_returns_its_connection_for_reuse(registry: DatabaseRegistry) -> None:
    assert await connection_id(registry) == await connection_id(registry)


async def test_a_connection_that_errored_is_closed_not_reused(
    registry: DatabaseRegistry, shop_url: str
) -> None:
    used = await connection_id(registry)
    with pytest.raises(DbError, match="error 1146"):
        await registry.get("shop-staging").execute(
            ["SELECT * FROM no_such_table"], read_only=True, limit=1
        )

    assert await connection_id(registry) != used
    assert (
        await server_rows(
            shop_url, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = %s", (used,)
        )
        == []
    )


async def test_concurrent_reads_use_separate_connections_up_to_the_pool_size(
    shop_url: str,
) -> None:
    registry = DatabaseRegistry([staging(shop_url)], Limits(pool_size=10))
    shop = registry.get("shop-staging")
    started = time.perf_counter()
    await asyncio.gather(
        *(shop.execute(["SELECT SLEEP(0.3)"], read_only=True, limit=1) for _ in range(10))
    )

    assert time.perf_counter() - started < 0.6  # ten sleeps side by side, not one after another
    await registry.close()


async def test_the_pool_size_bounds_how_many_run_at_once(shop_url: str) -> None:
    registry = DatabaseRegistry([staging(shop_url)], Limits(pool_size=2))
    shop = registry.get("shop-staging")
    started = time.perf_counter()
    await asyncio.gather(
        *(shop.execute(["SELECT SLEEP(0.2)"], read_only=True, limit=1) for _ in range(4))
    )

    assert time.perf_counter() - started >= 0.4  # two at a time
    await registry.close()


async def test_a_full_pool_can_still_kill_a_runaway_statement(shop_url: str) -> None:
    registry = DatabaseRegistry([staging(shop_url)], Limits(pool_size=1))
    with pytest.raises(DbError, match=r"killed on the server"):
        await registry.get("shop-staging").execute(
            ["SELECT SLEEP(30)"], read_only=True, limit=1, timeout_s=0.5
        )
    await registry.close()
