"""`dbagent check` for [databases.access]: each mapped role is tried with SET ROLE and its
grants listed; a login holding data privileges of its own is warned about; a role the login
cannot take fails with the fix."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.check.lines import Mark
from bot.check.roles import role_lines
from bot.config import DatabaseConfig, Limits
from tests.schemas import run_schema
from tests.server_roles import login_url, run_statements, server_roles

SCHEMA = run_schema("dbagent_t_check_roles")


@pytest.fixture
async def roles(mysql_url: str) -> AsyncIterator[dict[str, str]]:
    async with server_roles(mysql_url, SCHEMA) as names:
        yield names


def config(mysql_url: str, roles: dict[str, str], access: dict[str, str]) -> DatabaseConfig:
    url = login_url(mysql_url, roles, SCHEMA)
    return DatabaseConfig(name="shop", url=url, environment="staging", access=access)


async def test_each_mapped_role_is_tried_and_its_grants_listed(
    mysql_url: str, roles: dict[str, str]
) -> None:
    access = {"U0ANN": roles["analyst"], "S0SUPPORT": roles["support"], "*": roles["support"]}
    lines = await role_lines(config(mysql_url, roles, access), Limits())
    login, *by_role = lines
    assert login.mark is Mark.PASSED and "no data privilege of its own" in login.detail
    assert [line.subject for line in by_role] == [
        f"role {roles['analyst']} on shop",
        f"role {roles['support']} on shop",
    ]
    analyst, support = by_role
    assert analyst.mark is Mark.PASSED and "SET ROLE works; for U0ANN" in analyst.detail
    assert "SELECT, SHOW VIEW, TRIGGER, UPDATE" in analyst.detail
    assert f"GRANT SELECT, UPDATE, SHOW VIEW, TRIGGER ON `{SCHEMA}`.* TO `{roles['analyst']}`" in (
        analyst.detail
    )
    assert "for *, S0SUPPORT" in support.detail and "SELECT" in support.detail


async def test_a_login_with_data_privileges_and_a_role_it_cannot_take_are_reported(
    mysql_url: str, roles: dict[str, str]
) -> None:
    await run_statements(mysql_url, [f"GRANT SELECT ON {SCHEMA}.* TO '{roles['login']}'@'%'"])
    missing = f"{roles['analyst']}_missing"
    lines = await role_lines(config(mysql_url, roles, {"U0ANN": missing}), Limits())
    login, role = lines
    assert login.mark is Mark.WARNING and f"GRANT SELECT ON `{SCHEMA}`.*" in login.detail
    assert "should hold only the roles" in login.fix
    assert role.mark is Mark.FAILED and f"SET ROLE {missing} refused" in role.detail
    assert f"GRANT {missing} TO the bot's login" in role.fix
