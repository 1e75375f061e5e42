"""The function catalogue against a real MariaDB: how the server resolves each name.

functions.py's lists claim, for MariaDB 10.11, which spellings of ``name(`` reach the built-in
and which reach a stored function of that name in the current schema. Here a stored function
of every listed name is created in a scratch schema (returning 'STORED'), and every claimed
spelling is called: none may return 'STORED'. A few names the catalogue deliberately leaves
out are checked the other way round, to show why. Skips (loudly) without a server.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator

import asyncmy
import pytest

from bot.sql.functions import NEVER_STORED, SAFE_FUNCTIONS, SIDE_EFFECT_FUNCTIONS
from tests.schemas import run_schema
from tests.sql.support import scratch_cursor

SCHEMA = run_schema("dbagent_t_sql_fn")

# Spellings that must reach the built-in (or a syntax error) for every SAFE_FUNCTIONS name:
# "(" right after the name, any argument count, first in the select list or later.
PLAIN = (
    "SELECT {w}()",
    "SELECT {w}(1)",
    "SELECT {w}(1,2)",
    "SELECT {w}(1,2,3)",
    "SELECT 0, {w}(1)",
)
# Spellings with a gap, which must not reach a stored function for NEVER_STORED words.
GAPPED = ("SELECT 0, {w} ()", "SELECT 0, {w} (1)", "SELECT 0, {w} (1,2)", "SELECT {w}/**/(1)")
# Left out on purpose: (name, spelling, reaches the stored function?) — why the lists are so.
LEFT_OUT = (
    ("ANY_VALUE", "SELECT ANY_VALUE(1)", True),  # MySQL's
    ("BIN_TO_UUID", "SELECT BIN_TO_UUID(1)", True),  # MySQL's
    ("TRUNC", "SELECT TRUNC(1)", True),  # not a 10.11 built-in
    ("AGAINST", "SELECT 0, AGAINST(1)", True),  # syntax only after MATCH (…)
    ("COLUMNS", "SELECT 0, COLUMNS(1)", True),  # syntax only inside JSON_TABLE
    ("JSON_TABLE", "SELECT JSON_TABLE(1)", True),  # a table function only in FROM
    ("SQL_CACHE", "SELECT 0, SQL_CACHE(1)", True),  # a SELECT option only after SELECT
    ("POINT", "SELECT POINT(1)", True),  # POINT(x, y) only
    ("POLYGON", "SELECT POLYGON()", True),  # one argument at least
    ("SUM", "SELECT 0, SUM (1)", True),  # a keyword only with "(" right after it
    ("SUM", "SELECT `SUM`(1)", True),  # quoted: an identifier, so the stored function …
    ("CONCAT_WS", "SELECT `CONCAT_WS`(1)", False),  # … unless the name is a native built-in
)


def _is_stored(result: tuple[str, object]) -> bool:
    kind, value = result
    if kind == "ok":
        return value == "STORED"
    message = str(value)
    return "does not exist" in message or "Incorrect number of arguments for FUNCTION" in message


@pytest.fixture
async def cursor(mysql_url: str) -> AsyncIterator[asyncmy.cursors.Cursor]:
    async with scratch_cursor(mysql_url, SCHEMA) as cur:
        yield cur


async def _run(cur: asyncmy.cursors.Cursor, sql: str) -> tuple[str, object]:
    try:
        await cur.execute(sql)
        rows = await cur.fetchall()
    except Exception as error:  # the server's verdict, whatever it is
        return "error", error
    return "ok", rows[0][-1] if rows else None


async def test_the_catalogue_matches_how_mariadb_resolves_names(
    cursor: asyncmy.cursors.Cursor,
) -> None:
    wrong: list[str] = []
    names = sorted(SAFE_FUNCTIONS | NEVER_STORED) + [name for name, *_ in LEFT_OUT]
    assert not set(names) & SIDE_EFFECT_FUNCTIONS.keys()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "… has the same name as a native function"
        for name in dict.fromkeys(names):
            await cursor.execute(
                f"CREATE FUNCTION `{name}`(x INT) RETURNS TEXT DETERMINISTIC RETURN 'STORED'"
            )
            checks = (PLAIN if name in SAFE_FUNCTIONS else ()) + (
                GAPPED if name in NEVER_STORED else ()
            )
            for form in checks:
                sql = form.format(w=name)
                if _is_stored(await _run(cursor, sql)):
                    wrong.append(f"{sql} ran the stored function")
            for left_out, sql, expected in LEFT_OUT:
                if left_out == name and _is_stored(await _run(cursor, sql)) != expected:
                    wrong.append(f"{sql}: the catalogue assumes stored={expected}")
            await cursor.execute(f"DROP FUNCTION `{name}`")
    assert not wrong, "\n".join(wrong)
