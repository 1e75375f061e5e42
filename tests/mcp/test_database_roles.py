"""An MCP client reads and changes what the database role of the person it acts for allows,
exactly as that person would in Slack.

Three clients over Streamable HTTP: one acting for an analyst, one for a member of the
support user group, one for someone `[databases.access]` does not name. The bot's login holds
no data privilege, only the two roles (tests/server_roles.py: run-unique names, dropped
afterwards).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack
from tests.mcp.support import APPROVAL_CHANNEL, http_session, json_of, text_of
from tests.schemas import run_schema
from tests.server_roles import (
    ANALYST,
    DB,
    SUPPORT,
    mapped_database,
    server_roles,
)
from tests.slack.conftest import APPROVER, BYSTANDER, SlackHarness, run_sql

SCHEMA = run_schema("dbagent_t_mcp_roles")
CLIENTS = {  # client name -> (its token, the Slack user it acts for)
    "analyst-laptop": ("analyst-" + "c3" * 20, ANALYST),
    "support-laptop": ("support-" + "d4" * 20, SUPPORT),
    "stranger-laptop": ("stranger-" + "e5" * 20, BYSTANDER),
}


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
    mcp = {
        "approval_channel": APPROVAL_CHANNEL,
        "clients": [
            {"name": name, "token": token, "user": user} for name, (token, user) in CLIENTS.items()
        ],
    }
    configured = {**harness.settings.model_dump(), "databases": [database.model_dump()]}
    harness.settings = harness.settings.model_validate({**configured, "mcp": mcp})
    await harness.start()
    yield harness
    await harness.stop()


def session_of(bot: SlackHarness, client: str) -> Any:
    return http_session(f"{bot.url}/mcp", token=CLIENTS[client][0])


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    return await session.call_tool(tool, {"database": DB, **arguments})


def names(listing: Any) -> list[str]:
    return [row[0] for row in json_of(listing)["rows"]]


async def test_two_clients_read_what_the_roles_of_their_people_allow(
    bot: SlackHarness, roles: dict[str, str]
) -> None:
    email = "SELECT email FROM customers"
    same = "SELECT id, total FROM orders ORDER BY id"
    async with (
        session_of(bot, "analyst-laptop") as analyst,
        session_of(bot, "support-laptop") as support,
    ):
        assert names(await call(analyst, "list_tables")) == ["customers", "orders", "salaries"]
        assert names(await call(support, "list_tables")) == ["customers", "orders"]

        analyst_rows = json_of(await call(analyst, "execute_query", sql=same))["rows"]
        support_rows = json_of(await call(support, "execute_query", sql=same))["rows"]
        assert analyst_rows == support_rows == [[10, "20.00"], [11, "5.50"]]

        assert json_of(await call(analyst, "execute_query", sql=email))["rows"] == [
            ["ada@example.org"]
        ]
        refused = await call(support, "execute_query", sql=email)
        salaries = await call(support, "execute_query", sql="SELECT * FROM salaries")

    assert refused.is_error and text_of(refused).startswith("Blocked:"), text_of(refused)
    assert f"your database role {roles['support']}" in text_of(refused)
    grant = f"GRANT SELECT (email) ON `{SCHEMA}`.`customers` TO {roles['support']}"
    assert grant in text_of(refused)
    assert "ada@example.org" not in text_of(refused)
    assert salaries.is_error
    assert f"GRANT SELECT ON `{SCHEMA}`.`salaries` TO {roles['support']}" in text_of(salaries)
    assert "100000" not in text_of(salaries)

    assert bot.state is not None
    audit = await bot.state.audit.since(None)
    seen = {(r["requester"], r.get("role"), r.get("origin")) for r in audit}
    assert seen == {
        (ANALYST, roles["analyst"], "mcp:analyst-laptop"),
        (SUPPORT, roles["support"], "mcp:support-laptop"),
    }


async def test_the_role_cannot_be_switched_over_mcp(
    bot: SlackHarness, roles: dict[str, str]
) -> None:
    async with session_of(bot, "support-laptop") as support:
        for sql in (f"SET ROLE {roles['analyst']}", "SET ROLE NONE"):
            result = await call(support, "execute_query", sql=sql)
            assert result.is_error, sql
            assert text_of(result).startswith("Blocked: SET ROLE is refused"), text_of(result)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("list_tables", {}),
        ("get_columns", {"table": "orders"}),
        ("get_sample_data", {"table": "orders"}),
        ("explain_query", {"sql": "SELECT * FROM orders"}),
        ("execute_query", {"sql": "SELECT 1"}),
        ("execute_query", {"sql": "UPDATE orders SET total = 0 WHERE id = 10"}),
    ],
    ids=["list_tables", "get_columns", "sample", "explain", "read", "write"],
)
async def test_a_client_whose_person_has_no_role_is_refused_for_that_database(
    bot: SlackHarness, mysql_url: str, tool: str, arguments: dict[str, Any]
) -> None:
    async with session_of(bot, "stranger-laptop") as stranger:
        result = await call(stranger, tool, **arguments)
    assert result.is_error
    assert text_of(result).startswith(f"Blocked: you have no database role on {DB}")
    assert [m for m in bot.slack.messages if m.channel == APPROVAL_CHANNEL] == []
    rows = await run_sql(mysql_url, [f"SELECT total FROM {SCHEMA}.orders WHERE id = 10"])
    assert str(rows[0][0]) == "20.00"


async def test_an_mcp_change_shows_the_requesters_role_and_runs_under_it(
    bot: SlackHarness, mysql_url: str, roles: dict[str, str]
) -> None:
    sql = "UPDATE orders SET total = 21.00 WHERE id = 10"
    async with session_of(bot, "analyst-laptop") as analyst:
        proposed = json_of(await call(analyst, "execute_query", sql=sql))
        assert proposed["status"] == "pending_approval"
        [card] = [
            m
            for m in bot.slack.messages
            if m.channel == APPROVAL_CHANNEL and m.text.startswith("Approval needed")
        ]
        fields = [f["text"] for block in card.blocks for f in block.get("fields", [])]
        assert f"*Runs as role*\n`{roles['analyst']}`" in fields
        await bot.click("approve_once", copy.deepcopy(card), user=APPROVER)
        await bot.settled()
        done = json_of(
            await analyst.call_tool("get_proposal", {"proposal_id": proposed["proposal_id"]})
        )
    assert done["status"] == "executed", done
    rows = await run_sql(mysql_url, [f"SELECT total FROM {SCHEMA}.orders WHERE id = 10"])
    assert str(rows[0][0]) == "21.00"
    assert bot.state is not None
    executed = [r for r in await bot.state.audit.since(None) if r["outcome"] == "executed"]
    assert [(r["sql"], r.get("role"), r.get("origin")) for r in executed] == [
        (sql, roles["analyst"], "mcp:analyst-laptop")
    ]
    assert (executed[0]["requester"], executed[0]["approver"]) == (ANALYST, APPROVER)
    # The write-ahead record keeps both, for the audit of a run a stop cuts off.
    written = await bot.state.executions.get(executed[0]["execution_id"])
    assert written is not None
    assert (written.origin, written.role) == ("mcp:analyst-laptop", roles["analyst"])
