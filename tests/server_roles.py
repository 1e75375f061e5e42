"""Server-global objects for role tests: a login holding no data privilege, only two roles
(analysts read and update everything in the schema; support reads orders and two columns of
customers). Their names are unique to this run, and they are dropped afterwards."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bench.datasets import connect
from bot.config import ConnectionTarget, DatabaseConfig
from tests.fakes.slack_server import FakeSlack
from tests.schemas import RUN_SUFFIX

DB = "shop-roles"
ANALYST = "U0ANALYST"
SUPPORT_GROUP = "S0SUPPORT"
SUPPORT = "U0SUPPORT"


async def run_statements(url: str, statements: list[str]) -> None:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            for statement in statements:
                await cursor.execute(statement)
    finally:
        connection.close()


@asynccontextmanager
async def server_roles(mysql_url: str, schema: str) -> AsyncIterator[dict[str, str]]:
    unique = f"{RUN_SUFFIX}_{secrets.token_hex(3)}"
    names = {
        "login": f"dbagent_login{unique}",
        "analyst": f"dbagent_analyst{unique}",
        "support": f"dbagent_support{unique}",
        "password": secrets.token_hex(12),
    }
    login, analyst, support = names["login"], names["analyst"], names["support"]
    setup = [
        f"DROP DATABASE IF EXISTS {schema}",
        f"CREATE DATABASE {schema}",
        f"CREATE TABLE {schema}.customers (id INT PRIMARY KEY, name VARCHAR(40), "
        "email VARCHAR(80))",
        f"CREATE TABLE {schema}.orders (id INT PRIMARY KEY, customer_id INT, total DECIMAL(8,2))",
        f"CREATE TABLE {schema}.salaries (id INT PRIMARY KEY, amount INT)",
        f"INSERT INTO {schema}.customers VALUES (1, 'Ada', 'ada@example.org')",
        f"INSERT INTO {schema}.orders VALUES (10, 1, 20.00), (11, 1, 5.50)",
        f"INSERT INTO {schema}.salaries VALUES (1, 100000)",
        f"CREATE ROLE {analyst}",
        f"CREATE ROLE {support}",
        f"GRANT SELECT, UPDATE, SHOW VIEW, TRIGGER ON {schema}.* TO {analyst}",
        f"GRANT REFERENCES ON *.* TO {analyst}",
        f"GRANT SELECT ON {schema}.orders TO {support}",
        f"GRANT SELECT (id, name) ON {schema}.customers TO {support}",
        f"CREATE USER '{login}'@'%' IDENTIFIED BY '{names['password']}'",
        f"GRANT {analyst} TO '{login}'@'%'",
        f"GRANT {support} TO '{login}'@'%'",
    ]
    try:
        await run_statements(mysql_url, setup)
        yield names
    finally:
        await run_statements(
            mysql_url,
            [
                f"DROP USER IF EXISTS '{login}'@'%'",
                f"DROP ROLE IF EXISTS {analyst}",
                f"DROP ROLE IF EXISTS {support}",
            ],
        )


def login_url(mysql_url: str, names: dict[str, str], schema: str) -> str:
    target = ConnectionTarget.parse(mysql_url)
    return f"mysql://{names['login']}:{names['password']}@{target.host}:{target.port}/{schema}"


def mapped_database(
    slack: FakeSlack, mysql_url: str, names: dict[str, str], schema: str
) -> DatabaseConfig:
    """The role tests' database, reached through the login: the analyst mapped by user id, the
    support role by a user group whose member the fake Slack knows."""
    slack.users.update({ANALYST: "UTC", SUPPORT: "UTC"})
    slack.usergroups[SUPPORT_GROUP] = [SUPPORT]
    return DatabaseConfig(
        name=DB,
        url=login_url(mysql_url, names, schema),
        environment="staging",
        access={ANALYST: names["analyst"], SUPPORT_GROUP: names["support"]},
    )
