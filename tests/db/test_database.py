"""Database.execute: approved writes, statement-by-statement runs, replicas and row limits."""

from __future__ import annotations

import pytest

from bot.config import Limits
from bot.db import Database, DatabaseRegistry, DbError
from tests.db.support import SHOP_SCHEMA, server_rows, staging

CREATE_NOTES = "CREATE TABLE notes (id INT AUTO_INCREMENT PRIMARY KEY, body VARCHAR(50))"


async def test_an_approved_write_reports_affected_rows_and_the_last_insert_id(
    scratch: Database,
) -> None:
    execution = await scratch.execute(
        [CREATE_NOTES, "INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')"],
        read_only=False,
        limit=10,
    )
    update = await scratch.execute(
        ["UPDATE notes SET body = 'z' WHERE id > 1"], read_only=False, limit=10
    )

    created, inserted = execution.outcomes
    assert created.result is None
    assert (inserted.affected_rows, inserted.last_insert_id) == (3, 1)
    assert update.outcomes[0].affected_rows == 2
    assert update.outcomes[0].last_insert_id is None


async def test_statements_run_in_order_on_one_connection_and_each_is_reported(
    scratch: Database,
) -> None:
    execution = await scratch.execute(
        [
            CREATE_NOTES,
            "SET @marker = CONNECTION_ID()",
            "INSERT INTO notes (body) VALUES ('first')",
            "SELECT body, @marker = CONNECTION_ID() AS same_connection FROM notes",
        ],
        read_only=False,
        limit=10,
    )

    assert [outcome.sql for outcome in execution.outcomes] == [
        CREATE_NOTES,
        "SET @marker = CONNECTION_ID()",
        "INSERT INTO notes (body) VALUES ('first')",
        "SELECT body, @marker = CONNECTION_ID() AS same_connection FROM notes",
    ]
    assert execution.last_result is not None
    assert execution.last_result.rows == (("first", 1),)
    assert all(outcome.duration_ms >= 0 for outcome in execution.outcomes)


async def test_a_failing_statement_stops_the_run_and_reports_what_finished(
    scratch: Database, scratch_url: str
) -> None:
    with pytest.raises(DbError) as failed:
        await scratch.execute(
            [
                CREATE_NOTES,
                "INSERT INTO notes (body) VALUES ('kept')",
                "INSERT INTO no_such_table VALUES (1)",
                "INSERT INTO notes (body) VALUES ('never')",
            ],
            read_only=False,
            limit=10,
        )

    assert failed.value.message.startswith("statement 3 of 4 failed: MariaDB error 1146:")
    assert [outcome.sql for outcome in failed.value.outcomes] == [
        CREATE_NOTES,
        "INSERT INTO notes (body) VALUES ('kept')",
    ]
    assert await server_rows(scratch_url, "SELECT body FROM notes") == [("kept",)]


async def test_session_changes_made_by_an_approved_write_do_not_reach_later_runs(
    scratch: Database,
) -> None:
    await scratch.execute(["SET @leak = 42"], read_only=False, limit=1)

    execution = await scratch.execute(["SELECT @leak"], read_only=True, limit=1)

    assert execution.last_result is not None
    assert execution.last_result.rows == ((None,),)


async def test_reads_go_to_the_replica_and_to_the_primary_while_it_cannot_be_reached(
    shop_url: str,
) -> None:
    registry = DatabaseRegistry(
        [staging(shop_url, read_url=f"mysql://reader@127.0.0.1:1/{SHOP_SCHEMA}")], Limits()
    )
    shop = registry.get("shop-staging")

    read = await shop.execute(["SELECT 1"], read_only=True, limit=1, use_replica=True)
    assert read.last_result is not None and read.last_result.rows == ((1,),)
    assert read.note is not None and "read on the primary" in read.note
    assert "cannot connect to shop-staging (replica)" in read.note  # it was tried first
    assert (await shop.list_tables()).rows  # catalog reads too
    assert await shop.probe() == (None, read.note.split("(", 1)[1].rsplit(")", 1)[0])
    primary = await shop.execute(["SELECT 1"], read_only=True, limit=1)
    assert primary.last_result is not None and primary.note is None
    await registry.close()


async def test_use_replica_without_a_replica_reads_the_primary(shop: Database) -> None:
    execution = await shop.execute(["SELECT 1"], read_only=True, limit=1, use_replica=True)

    assert execution.last_result is not None
    assert execution.last_result.rows == ((1,),)


async def test_writes_never_go_to_the_replica(shop: Database) -> None:
    with pytest.raises(DbError, match="writes never run on the replica"):
        await shop.execute(["DELETE FROM orders"], read_only=False, limit=1, use_replica=True)


async def test_the_row_limit_is_capped_by_the_configured_maximum(shop_url: str) -> None:
    registry = DatabaseRegistry([staging(shop_url)], Limits(max_rows=7))

    execution = await registry.get("shop-staging").execute(
        ["SELECT id FROM customers ORDER BY id"], read_only=True, limit=500
    )

    assert execution.last_result is not None
    assert execution.last_result.row_count == 7
    assert execution.last_result.truncated
    await registry.close()


async def test_blank_statements_and_trailing_semicolons_are_dropped(shop: Database) -> None:
    execution = await shop.execute(["  SELECT 1 ;", "   "], read_only=True, limit=1)

    assert [outcome.sql for outcome in execution.outcomes] == ["SELECT 1"]


async def test_nothing_to_run_is_an_error(shop: Database) -> None:
    with pytest.raises(DbError, match="no SQL statement to run"):
        await shop.execute([" ; "], read_only=True, limit=1)


async def test_the_execution_names_its_database(shop: Database) -> None:
    execution = await shop.execute(["SELECT 1"], read_only=True, limit=1)

    assert execution.database == "shop-staging"
