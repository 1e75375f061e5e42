"""What runs is byte for byte what was judged, hashed and shown: statements are cut and
trimmed by the server's rules in one place (bot.sql.lexical.statement_texts)."""

from __future__ import annotations

from bot.db import Database
from bot.sql import classify
from bot.state.grants import sql_digest
from tests.db.support import server_rows

NBSP = "\u00a0"
TABLES = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"


async def test_a_trailing_no_break_space_is_part_of_the_table_that_is_dropped(
    scratch: Database, scratch_url: str
) -> None:
    await scratch.execute(
        ["CREATE TABLE rt_x (a INT)", f"CREATE TABLE rt_x{NBSP} (a INT)"],
        read_only=False,
        limit=10,
    )
    sql = f"DROP TABLE rt_x{NBSP}"
    texts = [statement.text for statement in classify(sql).statements]
    assert texts == [sql]

    run = await scratch.execute(texts, read_only=False, limit=10)

    assert [outcome.sql for outcome in run.outcomes] == [sql]
    assert await server_rows(scratch_url, TABLES) == [("rt_x",)]


async def test_the_executor_trims_only_the_servers_whitespace_and_the_separator(
    scratch: Database, scratch_url: str
) -> None:
    await scratch.execute(
        ["CREATE TABLE rt_x (a INT)", f"CREATE TABLE rt_x{NBSP} (a INT)"],
        read_only=False,
        limit=10,
    )
    run = await scratch.execute([f" \t\nDROP TABLE rt_x{NBSP};\r\n"], read_only=False, limit=10)

    assert [outcome.sql for outcome in run.outcomes] == [f"DROP TABLE rt_x{NBSP}"]
    assert await server_rows(scratch_url, TABLES) == [("rt_x",)]


def test_the_grant_digest_tells_a_no_break_space_from_none() -> None:
    assert sql_digest(f"DROP TABLE rt_x{NBSP}") != sql_digest("DROP TABLE rt_x")
    assert sql_digest(" DROP TABLE rt_x\n") == sql_digest("DROP TABLE rt_x")
