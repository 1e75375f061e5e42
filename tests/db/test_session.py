"""The server holds read-only runs read-only; timeouts, cancellation and row caps stop the
query on the server, not just in the client."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.db import Database, DbError
from tests.db.support import server_rows, wait_until_gone, wait_until_running

# A statement the classifier misjudged as read-only, sent straight down the read-only path.
# One row per case: (sql, what the server says, why it matters).
REFUSED_WHEN_READ_ONLY = [
    (
        "INSERT INTO products (sku, name, category, price) VALUES ('X-1', 'x', 'x', 1)",
        "READ ONLY",
        "a plain insert",
    ),
    ("UPDATE orders SET status = 'cancelled'", "READ ONLY", "an update of every row"),
    ("DELETE FROM order_items", "READ ONLY", "a delete of every row"),
    (
        "DROP TABLE order_items",
        "READ ONLY",
        "DDL: MariaDB refuses it inside a READ ONLY transaction, before any implicit commit",
    ),
    ("/*!DROP TABLE order_items*/", "READ ONLY", "an executable comment runs on the server"),
    ("/*M!100000 DROP TABLE order_items*/", "READ ONLY", "the MariaDB-only executable comment"),
    ("CREATE TABLE intruder (id INT)", "READ ONLY", "creating a table"),
    ("TRUNCATE TABLE order_items", "READ ONLY", "truncate is DDL"),
    ("ALTER TABLE orders ADD COLUMN hacked INT", "READ ONLY", "altering a table"),
    ("CREATE TEMPORARY TABLE scratchpad (id INT)", "READ ONLY", "even temporary tables"),
    (
        "SELECT 1; DROP TABLE order_items",
        "error 1064",
        "two statements in one string: connections never enable multi-statements",
    ),
]


@pytest.mark.parametrize(
    ("sql", "refusal", "reason"), REFUSED_WHEN_READ_ONLY, ids=[r[2] for r in REFUSED_WHEN_READ_ONLY]
)
async def test_the_server_refuses_writes_on_the_read_only_path(
    shop: Database, shop_url: str, sql: str, refusal: str, reason: str
) -> None:
    before = await server_rows(shop_url, "SELECT COUNT(*) FROM order_items")

    with pytest.raises(DbError) as refused:
        await shop.execute([sql], read_only=True, limit=10)

    assert refusal in refused.value.message
    assert await server_rows(shop_url, "SELECT COUNT(*) FROM order_items") == before
    tables = await server_rows(
        shop_url,
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()",
    )
    assert sorted(name for (name,) in tables) == [
        "customer_order_counts",
        "customers",
        "order_items",
        "orders",
        "products",
    ]
    columns = await server_rows(shop_url, "SHOW COLUMNS FROM orders LIKE 'hacked'")
    assert columns == []


async def test_a_read_only_run_is_one_read_only_transaction(shop: Database) -> None:
    execution = await shop.execute(
        ["SELECT @@in_transaction, @@tx_read_only", "SELECT @@in_transaction"],
        read_only=True,
        limit=10,
    )

    assert [o.result.rows for o in execution.outcomes if o.result] == [((1, 1),), ((1,),)]


async def test_a_statement_that_ends_the_read_only_transaction_stops_the_run(
    shop: Database, shop_url: str
) -> None:
    with pytest.raises(DbError) as stopped:
        await shop.execute(
            ["COMMIT", "SET SESSION TRANSACTION READ WRITE", "DELETE FROM order_items"],
            read_only=True,
            limit=10,
        )

    assert "read-only transaction was ended" in stopped.value.message
    assert [outcome.sql for outcome in stopped.value.outcomes] == ["COMMIT"]
    assert await server_rows(shop_url, "SELECT COUNT(*) > 0 FROM order_items") == [(1,)]


async def test_a_runaway_statement_times_out_and_is_killed_on_the_server(
    shop: Database, shop_url: str
) -> None:
    started = time.perf_counter()
    with pytest.raises(DbError) as timed_out:
        await shop.execute(
            ["SELECT SLEEP(30) AS runaway_sleep"], read_only=True, limit=10, timeout_s=1.0
        )
    elapsed = time.perf_counter() - started

    assert timed_out.value.message == "statement timed out after 1.0 s (killed on the server)"
    assert 0.9 <= elapsed < 1.8
    assert await wait_until_gone(shop_url, "runaway_sleep", within_s=1.0) == []


async def test_the_server_enforces_its_own_statement_limit_too(shop: Database) -> None:
    execution = await shop.execute(
        ["SELECT @@max_statement_time"], read_only=True, limit=1, timeout_s=2.0
    )

    # One second behind the client's own deadline: a backstop if the client never kills.
    assert execution.last_result is not None
    assert execution.last_result.rows == ((3.0,),)


async def test_cancelling_the_task_kills_the_query_on_the_server(
    shop: Database, shop_url: str
) -> None:
    running = asyncio.create_task(
        shop.execute(["SELECT SLEEP(30) AS cancelled_sleep"], read_only=True, limit=10)
    )
    await wait_until_running(shop_url, "cancelled_sleep")

    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    assert await wait_until_gone(shop_url, "cancelled_sleep", within_s=1.0) == []


async def test_a_capped_result_is_not_read_to_its_end(shop: Database, shop_url: str) -> None:
    started = time.perf_counter()
    execution = await shop.execute(
        ["SELECT seq AS endless FROM seq_1_to_1000000000"], read_only=True, limit=10
    )

    result = execution.last_result
    assert result is not None
    assert result.rows == tuple((n,) for n in range(1, 11))
    assert result.truncated
    assert time.perf_counter() - started < 1.0  # a billion rows would take minutes
    # The connection is closed at once; the KILL that makes sure goes out in the background.
    assert await wait_until_gone(shop_url, "endless") == []


@pytest.mark.parametrize(
    ("limit", "truncated"),
    [(4, True), (5, False), (6, False)],
    ids=["fewer than the rows", "exactly the rows", "more than the rows"],
)
async def test_truncated_is_exact(shop: Database, limit: int, truncated: bool) -> None:
    execution = await shop.execute(["SELECT seq FROM seq_1_to_5"], read_only=True, limit=limit)

    result = execution.last_result
    assert result is not None
    assert result.row_count == min(limit, 5)
    assert result.truncated is truncated


async def test_a_capped_statement_mid_run_leaves_the_connection_usable_for_the_next(
    shop: Database, shop_url: str
) -> None:
    execution = await shop.execute(
        [
            "SELECT CONNECTION_ID()",
            "SELECT seq AS mid_run_endless FROM seq_1_to_1000000000",
            "SELECT CONNECTION_ID()",
        ],
        read_only=True,
        limit=3,
    )

    first, capped, last = (outcome.result for outcome in execution.outcomes)
    assert first is not None and capped is not None and last is not None
    assert capped.rows == ((1,), (2,), (3,)) and capped.truncated
    assert first.rows == last.rows  # the same connection, the same transaction
    assert await wait_until_gone(shop_url, "mid_run_endless", within_s=1.0) == []


LEFT_BEHIND_BY_A_READ = [
    # (a statement the classifier misjudged, how to see what it left, reason)
    (
        "SELECT GET_LOCK('dbagent_left_lock', 0)",
        "SELECT IS_USED_LOCK('dbagent_left_lock')",
        "a named lock would block the application's jobs for as long as the connection lives",
    ),
    (
        "SET @dbagent_left = 42",
        "SELECT @dbagent_left",
        "a user variable would leak into the next person's query",
    ),
    (
        "SET SESSION sql_mode = 'ANSI_QUOTES'",
        "SELECT @@session.sql_mode LIKE '%ANSI_QUOTES%'",
        "a session setting would change how the next query parses",
    ),
]


@pytest.mark.parametrize(
    ("statement", "probe", "reason"),
    LEFT_BEHIND_BY_A_READ,
    ids=[row[2].split(" would")[0] for row in LEFT_BEHIND_BY_A_READ],
)
async def test_a_pooled_connection_is_wiped_before_the_next_run(
    shop_url: str, statement: str, probe: str, reason: str
) -> None:
    from bot.config import Limits
    from bot.db import DatabaseRegistry
    from tests.db.support import staging

    registry = DatabaseRegistry([staging(shop_url)], Limits(pool_size=1))
    try:
        shop = registry.get("shop-staging")
        await shop.execute([statement], read_only=True, limit=1)
        after = await shop.execute([probe], read_only=True, limit=1)
        result = after.last_result
        assert result is not None
        assert result.rows[0][0] in (None, 0), reason
    finally:
        await registry.close()
    assert await server_rows(shop_url, "SELECT IS_USED_LOCK('dbagent_left_lock')") == [(None,)]


async def test_an_approved_write_returning_more_rows_than_the_limit_runs_to_its_end(
    scratch: Database, scratch_url: str
) -> None:
    await scratch.execute(
        [
            "CREATE TABLE doomed (id INT PRIMARY KEY, pad CHAR(100) NOT NULL DEFAULT 'x')",
            "INSERT INTO doomed (id) SELECT seq FROM seq_1_to_5000",
        ],
        read_only=False,
        limit=1,
    )
    execution = await scratch.execute(
        ["DELETE FROM doomed RETURNING id, pad"], read_only=False, limit=10
    )
    result = execution.last_result
    assert result is not None and result.row_count == 10 and result.truncated
    assert await server_rows(scratch_url, "SELECT COUNT(*) FROM doomed") == [(0,)]
