"""Each person reads what their own database role allows, end to end through Slack.

The bot's login holds no data privilege, only two roles: analysts read everything, support
reads orders and two columns of customers. `[databases.access]` maps one user to the
analyst role and a user group to the support role. Roles and the login are server-global
(tests/server_roles.py): their names are unique to this run and they are dropped afterwards.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import FakeSlack
from tests.schemas import run_schema
from tests.server_roles import (
    ANALYST,
    DB,
    SUPPORT,
    mapped_database,
    server_roles,
)
from tests.slack.conftest import APPROVER, BYSTANDER, SlackHarness

SCHEMA = run_schema("dbagent_t_roles")


@pytest.fixture
async def roles(mysql_url: str) -> AsyncIterator[dict[str, str]]:
    async with server_roles(mysql_url, SCHEMA) as names:
        yield names


@pytest.fixture
async def bot(
    slack: FakeSlack,
    model: FakeModelServer,
    mysql_url: str,
    tmp_path: Path,
    roles: dict[str, str],
) -> AsyncIterator[SlackHarness]:
    database = mapped_database(slack, mysql_url, roles, SCHEMA)
    harness = SlackHarness(slack, model, database.url.get_secret_value(), tmp_path / "state")
    harness.settings = harness.settings.model_copy(update={"databases": [database]})
    await harness.start()
    yield harness
    await harness.stop()


async def ask(bot: SlackHarness, user: str, tool: str, **arguments: Any) -> str:
    """One question in its own thread; the tool's result as the model read it."""
    bot.model.script(calls(call(tool, {"database": DB, **arguments})), say("done"))
    await bot.mention(f"{tool} please", user=user)
    await bot.settled()
    return str(bot.model.tool_results(-1)[-1]["content"])


def names(listing: str) -> list[str]:
    return [row[0] for row in json.loads(listing)["rows"]]


async def test_two_people_read_what_their_own_roles_allow(
    bot: SlackHarness, roles: dict[str, str]
) -> None:
    assert names(await ask(bot, ANALYST, "list_tables")) == ["customers", "orders", "salaries"]
    assert names(await ask(bot, SUPPORT, "list_tables")) == ["customers", "orders"]

    same = "SELECT id, total FROM orders ORDER BY id"
    analyst_rows = json.loads(await ask(bot, ANALYST, "execute_query", sql=same))["rows"]
    support_rows = json.loads(await ask(bot, SUPPORT, "execute_query", sql=same))["rows"]
    assert analyst_rows == support_rows == [[10, "20.00"], [11, "5.50"]]

    email = "SELECT email FROM customers"
    assert json.loads(await ask(bot, ANALYST, "execute_query", sql=email))["rows"] == [
        ["ada@example.org"]
    ]
    refused = await ask(bot, SUPPORT, "execute_query", sql=email)
    assert refused.startswith("Blocked:"), refused
    assert f"your database role {roles['support']}" in refused
    assert f"GRANT SELECT (email) ON `{SCHEMA}`.`customers` TO {roles['support']}" in refused
    assert "ada@example.org" not in refused

    salaries = await ask(bot, SUPPORT, "execute_query", sql="SELECT * FROM salaries")
    assert f"GRANT SELECT ON `{SCHEMA}`.`salaries` TO {roles['support']}" in salaries

    assert bot.state is not None
    audit = [r for r in await bot.state.audit.since(None) if r["database"] == DB]
    by_requester = {(r["requester"], r.get("role")) for r in audit}
    assert by_requester == {(ANALYST, roles["analyst"]), (SUPPORT, roles["support"])}


async def test_the_model_cannot_switch_roles(bot: SlackHarness, roles: dict[str, str]) -> None:
    for sql in (
        f"SET ROLE {roles['analyst']}",
        f"SET ROLE {roles['analyst']}; SELECT * FROM salaries",
        "SET ROLE NONE",
        f"SET DEFAULT ROLE {roles['analyst']}",
    ):
        result = await ask(bot, SUPPORT, "execute_query", sql=sql)
        assert result.startswith("Blocked: SET ROLE is refused"), (sql, result)
    assert bot.state is not None
    audit = await bot.state.audit.since(None)
    assert [r["outcome"] for r in audit] == ["refused"] * 4
    assert {r["role"] for r in audit} == {roles["support"]}


async def test_someone_the_access_map_does_not_name_is_refused(bot: SlackHarness) -> None:
    for tool, arguments in (
        ("list_tables", {}),
        ("execute_query", {"sql": "SELECT 1"}),
        ("get_sample_data", {"table": "orders"}),
    ):
        result = await ask(bot, BYSTANDER, tool, **arguments)
        assert result.startswith("Blocked: you have no database role on shop-roles"), result


async def test_a_change_runs_under_the_requesters_role_shown_on_its_card(
    bot: SlackHarness, roles: dict[str, str]
) -> None:
    sql = "UPDATE orders SET total = 21.00 WHERE id = 10"
    bot.model.script(calls(call("execute_query", {"database": DB, "sql": sql})), say("done"))
    thread_ts, _ = await bot.mention("raise order 10", user=ANALYST)
    card = await bot.wait_for_card(thread_ts)
    fields = [f["text"] for block in card.blocks for f in block.get("fields", [])]
    assert f"*Runs as role*\n`{roles['analyst']}`" in fields
    await bot.click("approve_once", card, user=APPROVER)
    await bot.slack.wait_for(lambda: "done" in bot.texts(thread_ts))
    await bot.settled()
    assert bot.state is not None
    executed = [r for r in await bot.state.audit.since(None) if r["outcome"] == "executed"]
    assert [(r["sql"], r.get("role")) for r in executed] == [(sql, roles["analyst"])]
