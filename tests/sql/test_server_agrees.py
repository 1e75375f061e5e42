"""The classifier's readings checked against a real MariaDB: routine bodies as the server
stores them, quoted system variables and engines as the server reads them, and the tables
that ALTER TABLE … CONVERT moves. Skips (loudly) without a server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncmy
import pytest

from bot.sql import classify, classify_routine_body
from bot.sql.risk import Risk, TableRef
from tests.schemas import run_schema
from tests.sql.support import scratch_cursor

SCHEMA = run_schema("dbagent_t_sql_agree")
OTHER = run_schema("dbagent_t_sql_other")
SERVER = TableRef("*", "*")


@pytest.fixture
async def cursor(mysql_url: str) -> AsyncIterator[asyncmy.cursors.Cursor]:
    async with scratch_cursor(mysql_url, SCHEMA, OTHER) as cur:
        yield cur


async def _stored_body(cur: asyncmy.cursors.Cursor, name: str) -> str:
    await cur.execute(
        "SELECT ROUTINE_DEFINITION FROM information_schema.ROUTINES "
        "WHERE ROUTINE_SCHEMA = %s AND ROUTINE_NAME = %s",
        (SCHEMA, name),
    )
    (row,) = await cur.fetchall()
    return str(row[0])


async def test_a_procedure_body_read_back_from_the_server_is_judged_like_written_out(
    cursor: asyncmy.cursors.Cursor,
) -> None:
    await cursor.execute(f"CREATE TABLE {OTHER}.t (a INT)")
    await cursor.execute(
        "CREATE PROCEDURE helper(s TEXT) BEGIN\n"
        "  DECLARE n INT DEFAULT 0;\n"
        f"  IF (SELECT COUNT(*) FROM {OTHER}.t) > n THEN\n"
        "    EXECUTE IMMEDIATE s;\n"
        "  END IF;\n"
        "END"
    )
    await cursor.execute(f"CREATE PROCEDURE tidy() UPDATE {OTHER}.t SET a = 1")

    helper = classify_routine_body(await _stored_body(cursor, "helper"))
    tidy = classify_routine_body(await _stored_body(cursor, "tidy"))

    assert helper.risk is Risk.TRANSACTION
    assert any(SERVER in statement.targets for statement in helper.statements)
    assert any(TableRef(OTHER, "t") in statement.reads for statement in helper.statements)
    assert tidy.risk is Risk.WRITE
    assert tidy.statements[0].targets == (TableRef(OTHER, "t"),)


@pytest.mark.parametrize(
    "sql",
    [
        "SET `autocommit` = 1",
        "SET @@session.`autocommit` = 1",
        "SET SESSION `tx_read_only` = 0",
        "SET `completion_type` = 0",
    ],
)
async def test_quoted_system_variables_are_the_servers_variables(
    cursor: asyncmy.cursors.Cursor, sql: str
) -> None:
    await cursor.execute(sql)  # the server takes them as the variables they name
    assert classify(sql).risk is Risk.TRANSACTION


async def test_a_quoted_engine_name_is_the_engine(cursor: asyncmy.cursors.Cursor) -> None:
    for engine in ("`MyISAM`", "'MyISAM'"):
        await cursor.execute("DROP TABLE IF EXISTS e")
        await cursor.execute(f"CREATE TABLE e (a INT) ENGINE={engine}")
        await cursor.execute(
            "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = 'e'",
            (SCHEMA,),
        )
        assert await cursor.fetchall() == (("MyISAM",),)


async def test_convert_partition_moves_a_table_into_the_schema_it_names(
    cursor: asyncmy.cursors.Cursor,
) -> None:
    await cursor.execute(
        "CREATE TABLE p (id INT) PARTITION BY RANGE (id) "
        "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))"
    )
    sql = f"ALTER TABLE p CONVERT PARTITION p0 TO TABLE {OTHER}.moved"
    await cursor.execute(sql)
    await cursor.execute(
        "SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_NAME = 'moved' "
        "AND TABLE_SCHEMA IN (%s, %s)",
        (SCHEMA, OTHER),
    )
    assert await cursor.fetchall() == ((OTHER,),)
    assert TableRef(OTHER, "moved") in classify(sql).statements[0].targets
