"""`dbagent check` names what will fail for lack of a privilege, against real MariaDB accounts
(run-unique, dropped after): one row per account, the privileges it lacks and what the check
must say about it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from bench.datasets import connect
from bot.check.database import database_lines
from bot.check.lines import Line, Mark
from bot.config import ConnectionTarget, DatabaseConfig, Limits
from tests.schemas import RUN_SUFFIX, run_schema

SCHEMA = run_schema("dbagent_t_priv")
PASSWORD = "check-pw"
SHOP = [
    f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.orders (id INT PRIMARY KEY, status VARCHAR(20))",
    f"CREATE OR REPLACE VIEW {SCHEMA}.open_orders AS SELECT id FROM {SCHEMA}.orders",
    f"CREATE OR REPLACE PROCEDURE {SCHEMA}.close_all() UPDATE {SCHEMA}.orders SET status = 'x'",
]
# Everything an approved change needs; each row takes something away.
READ = f"SELECT, SHOW VIEW ON `{SCHEMA}`.*"
WRITE = "INSERT, UPDATE, DELETE"
KEYS = "REFERENCES ON *.*"  # a table privilege held globally: every foreign key is listed
BODIES = "SELECT ON mysql.proc"  # MariaDB before 11.3 shows routine bodies to holders of it


@dataclass(frozen=True)
class Row:
    grants: tuple[str, ...]
    failed: tuple[str, ...]  # words of each ✗ line expected
    warned: tuple[str, ...]  # words of each ! line expected
    reason: str


def full(*but: str) -> tuple[str, ...]:
    privileges = ["SELECT", "SHOW VIEW", "INSERT", "UPDATE", "DELETE", "TRIGGER", "EXECUTE"]
    kept = ", ".join(p for p in privileges if p not in but)
    extra = [grant for grant in (KEYS, BODIES) if grant not in but]
    return (f"{kept} ON `{SCHEMA}`.*", *extra)


ROWS = [
    Row(full(), (), (), "everything an approved change needs: no ✗, no !"),
    Row(
        (READ,),
        (
            "every approved change would fail",
            "without TRIGGER",
            "foreign keys other schemas hold",
        ),
        # The procedure is not even listed to it; a CALL fails all the same.
        ("without EXECUTE an approved CALL",),
        "a read-only account on a writable database: every write would fail",
    ),
    Row(full("DELETE"), (), ("without DELETE, approved DELETEs fail",), "no DELETE"),
    Row(full("UPDATE", "INSERT"), (), ("without UPDATE", "without INSERT"), "no UPDATE or INSERT"),
    Row(full("TRIGGER"), ("without TRIGGER",), (), "no TRIGGER: the guard refuses every write"),
    Row(full(KEYS), ("foreign keys other schemas hold",), (), "no global table privilege"),
    Row(full("SHOW VIEW"), (), ("definition of open_orders",), "no SHOW VIEW"),
    Row(full("EXECUTE"), (), ("without EXECUTE an approved CALL of close_all",), "no EXECUTE"),
    Row(full(BODIES), (), ("cannot read the body of close_all",), "routine bodies unreadable"),
]


async def run_sql(url: str, statements: list[str]) -> None:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            for statement in statements:
                await cursor.execute(statement)
    finally:
        connection.close()


@pytest.fixture
async def shop(mysql_url: str) -> AsyncIterator[str]:
    await run_sql(mysql_url, SHOP)
    yield mysql_url
    await run_sql(mysql_url, [f"DROP DATABASE IF EXISTS {SCHEMA}"])


async def lines_for(admin_url: str, user: str, grants: tuple[str, ...]) -> list[Line]:
    target = ConnectionTarget.parse(admin_url)
    account = f"'{user}'@'{target.host}'"
    await run_sql(
        admin_url,
        [
            f"DROP USER IF EXISTS {account}",
            f"CREATE USER {account} IDENTIFIED BY '{PASSWORD}'",
            *(f"GRANT {grant} TO {account}" for grant in grants),
        ],
    )
    try:
        url = f"mysql://{user}:{PASSWORD}@{target.host}:{target.port}/{SCHEMA}"
        config = DatabaseConfig(name="shop", url=url, environment="staging")
        return await database_lines(config, Limits())
    finally:
        await run_sql(admin_url, [f"DROP USER IF EXISTS {account}"])


@pytest.mark.parametrize("row", ROWS, ids=[row.reason for row in ROWS])
async def test_check_names_what_a_missing_privilege_breaks(shop: str, row: Row) -> None:
    user = f"dbagent_t_ck{ROWS.index(row)}{RUN_SUFFIX}"[:80]
    lines = await lines_for(shop, user, row.grants)
    failures = [line.detail for line in lines if line.mark is Mark.FAILED]
    warnings = [line.detail for line in lines if line.mark is Mark.WARNING]
    assert len(failures) == len(row.failed), failures
    for words in row.failed:
        assert any(words in detail for detail in failures), (words, failures)
    for words in row.warned:
        assert any(words in detail for detail in warnings), (words, warnings)
    if not row.failed and not row.warned:
        assert warnings == []
        assert any(line.subject == "changes on shop" for line in lines)


async def test_a_production_account_is_not_asked_for_write_privileges(shop: str) -> None:
    target = ConnectionTarget.parse(shop)
    user = f"dbagent_t_ckprod{RUN_SUFFIX}"
    account = f"'{user}'@'{target.host}'"
    await run_sql(
        shop,
        [
            f"DROP USER IF EXISTS {account}",
            f"CREATE USER {account} IDENTIFIED BY '{PASSWORD}'",
            f"GRANT {READ} TO {account}",
        ],
    )
    try:
        url = f"mysql://{user}:{PASSWORD}@{target.host}:{target.port}/{SCHEMA}"
        config = DatabaseConfig(name="shop", url=url, environment="production")
        lines = await database_lines(config, Limits())
    finally:
        await run_sql(shop, [f"DROP USER IF EXISTS {account}"])
    assert [line.mark for line in lines] == [Mark.PASSED]
