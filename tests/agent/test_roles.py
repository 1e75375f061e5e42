"""A Run button's change under [databases.access]: its card records the clicker's role, and
the approved change runs under that role even though the click that approves it carries only
the clicker's user ID (the group that gave the role is not asked again)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agent import Answer, AwaitingApproval, Failed
from bot.agent.outcomes import Requester
from bot.app import App, build_app
from bot.config import DatabaseConfig, Limits, Settings
from bot.state import open_state
from bot.state.grants import GrantScope
from tests.agent.support import APPROVER, SESSION
from tests.fakes.model_server import FakeModelServer
from tests.schemas import run_schema
from tests.server_roles import login_url, server_roles

SCHEMA = run_schema("dbagent_t_agent_roles")
DB = "roles"
ANALYSTS = "S0ANALYSTS"


@pytest.fixture
async def parts(
    mysql_url: str, model_server: FakeModelServer, tmp_path: Path
) -> AsyncIterator[tuple[App, dict[str, str]]]:
    async with server_roles(mysql_url, SCHEMA) as roles:
        database = DatabaseConfig(
            name=DB,
            url=login_url(mysql_url, roles, SCHEMA),
            environment="staging",
            access={ANALYSTS: roles["analyst"], "U0SUPPORT": roles["support"]},
        )
        settings = Settings(
            openai_base_url=model_server.url,
            openai_api_key="test-key",
            openai_model="fake-model",
            databases=[database],
            limits=Limits(statement_timeout_s=10),
            dbagent_state_dir=tmp_path / "state",
        )
        app = await build_app(settings, state=await open_state(settings))
        try:
            yield app, roles
        finally:
            await app.close()


async def test_an_approved_run_button_change_runs_under_the_role_its_card_showed(
    parts: tuple[App, dict[str, str]],
) -> None:
    app, roles = parts
    clicker = Requester("U0ANN", groups=(ANALYSTS,))
    sql = "UPDATE orders SET total = 30.00 WHERE id = 11"
    outcome = await app.agent.run_statement(SESSION, database=DB, sql=sql, requester=clicker)
    assert isinstance(outcome, AwaitingApproval)
    assert outcome.pending.role == roles["analyst"]
    done = await app.agent.approve(outcome.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    assert isinstance(done, Answer) and "1 row affected" in done.text
    executed = [r for r in await app.agent.audit.since(None) if r["outcome"] == "executed"]
    assert [(r["sql"], r["role"]) for r in executed] == [(sql, roles["analyst"])]


async def test_a_role_without_the_privilege_is_told_which_grant_is_missing(
    parts: tuple[App, dict[str, str]],
) -> None:
    app, roles = parts
    outcome = await app.agent.run_statement(
        SESSION,
        database=DB,
        sql="SELECT amount FROM salaries",
        requester=Requester("U0SUPPORT"),
    )
    assert isinstance(outcome, Failed)
    assert f"GRANT SELECT ON `{SCHEMA}`.`salaries` TO {roles['support']}" in outcome.message
