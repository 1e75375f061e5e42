"""execute_query against what a statement reaches on the real server: procedure bodies,
triggers, cascading foreign keys, the server's case rule, read confinement — and the impact
carried to the approval card."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.datasets import recreate_schema, schema_url
from bot.agent import Agent, AwaitingApproval, Failed, Skills, build_model_client
from bot.agent.tools import ApprovalRequired, ToolContext, ToolReply
from bot.changes.types import PendingApproval
from bot.config import Approvals, DatabaseConfig, Limits, Mode, Settings
from bot.db import DatabaseRegistry
from bot.db.impact_types import RowCount
from bot.state import State, open_state
from bot.state.grants import GrantScope
from tests.agent.support import (
    APPROVER,
    REQUESTER,
    SESSION,
    agent_mode_context,
    call_tool,
    query,
    run_statements,
)
from tests.fakes.model_server import FakeModelServer, call, calls
from tests.schemas import run_schema

HOME = run_schema("dbagent_t_qreach")
AWAY = run_schema("dbagent_t_qreach_away")
ARCHIVE = run_schema("dbagent_t_qreach_arch")
LOWER = run_schema("dbagent_t_qcase")
UPPER = LOWER.upper()  # another database on a server with lower_case_table_names=0

SETUP = [
    f"CREATE TABLE {HOME}.t (id INT PRIMARY KEY, a INT)",
    f"INSERT INTO {HOME}.t SELECT seq, 0 FROM seq_1_to_10",
    f"CREATE TABLE {AWAY}.t (id INT PRIMARY KEY, a INT)",
    f"INSERT INTO {AWAY}.t VALUES (1, 0)",
    f"CREATE TABLE {ARCHIVE}.old (id INT)",
    f"INSERT INTO {ARCHIVE}.old VALUES (7)",
    f"CREATE TABLE {LOWER}.t (id INT PRIMARY KEY, a INT)",
    f"INSERT INTO {LOWER}.t VALUES (1, 0)",
    f"CREATE TABLE {UPPER}.t (id INT PRIMARY KEY, a INT)",
    f"INSERT INTO {UPPER}.t VALUES (1, 0)",
]


@pytest.fixture
async def home(mysql_url: str) -> AsyncIterator[str]:
    # AWAY first: its tables may hold foreign keys into HOME.
    for schema in (AWAY, HOME, ARCHIVE, LOWER, UPPER):
        await recreate_schema(mysql_url, schema)
    await run_statements(mysql_url, SETUP)
    yield schema_url(mysql_url, HOME)
    await run_statements(
        mysql_url, [f"DROP DATABASE IF EXISTS {AWAY}", f"DROP DATABASE IF EXISTS {UPPER}"]
    )


@pytest.fixture
def settings(model_server: FakeModelServer, home: str, mysql_url: str) -> Settings:
    return Settings(
        openai_base_url=model_server.url,
        openai_api_key="test-key",
        openai_model="fake-model",
        databases=[
            DatabaseConfig(name="home", url=home, environment="staging", read_schemas=[ARCHIVE]),
            DatabaseConfig(name="lower", url=schema_url(mysql_url, LOWER), environment="staging"),
        ],
        limits=Limits(model_max_retries=2, statement_timeout_s=10),
        # What a change reaches is judged here; whether its rows are counted, in
        # tests/agent/test_counted_changes.py: a CALL's card is allowed without a count.
        approvals=Approvals(allow_uncounted=True),
    )


@pytest.fixture
async def context(state: State, settings: Settings) -> AsyncIterator[ToolContext]:
    registry = DatabaseRegistry(settings.databases, settings.limits)
    yield agent_mode_context(state, settings, registry)
    await registry.close()


@pytest.fixture
async def agent(settings: Settings, tmp_path: Path) -> AsyncIterator[Agent]:
    store = await open_state(
        settings.model_copy(update={"dbagent_state_dir": tmp_path / "agent-state"})
    )
    registry = DatabaseRegistry(settings.databases, settings.limits)
    model = build_model_client(settings, stream=False)
    yield Agent(
        settings=settings, state=store, databases=registry, model=model, skills=Skills.load()
    )
    await model.close()
    await registry.close()
    await store.close()


async def run(
    context: ToolContext, sql: str, database: str = "home"
) -> ToolReply | ApprovalRequired:
    outcome = await call_tool(context, "execute_query", {"database": database, "sql": sql})
    assert isinstance(outcome, ToolReply | ApprovalRequired)
    return outcome


async def approved(context: ToolContext, sql: str, database: str = "home") -> ToolReply:
    """The same call again after an approver's click."""
    await context.grants.mint(SESSION, database, sql, GrantScope.ONCE, APPROVER)
    outcome = await run(context, sql, database)
    assert isinstance(outcome, ToolReply)
    return outcome


async def away_a(mysql_url: str) -> int:
    return (await query(mysql_url, f"SELECT a FROM {AWAY}.t WHERE id = 1"))[0][0]


async def test_a_procedure_that_runs_its_argument_cannot_write_another_schema(
    context: ToolContext, agent: Agent, home: str, mysql_url: str
) -> None:
    await run_statements(home, ["CREATE PROCEDURE p(s TEXT) EXECUTE IMMEDIATE s"])
    sql = f"CALL p('UPDATE {AWAY}.t SET a = 1')"
    reply = await approved(context, sql)  # even with an approver's click
    assert reply.content.startswith("Blocked:") and "dynamic SQL" in reply.content
    outcome = await agent.run_statement(SESSION, database="home", sql=sql, requester=REQUESTER)
    assert isinstance(outcome, Failed) and f"procedure {HOME}.p" in outcome.message
    assert await away_a(mysql_url) == 0


async def test_a_procedure_that_updates_another_schema_is_refused(
    context: ToolContext, home: str, mysql_url: str
) -> None:
    await run_statements(home, [f"CREATE PROCEDURE helper() UPDATE {AWAY}.t SET a = 2"])
    reply = await approved(context, "CALL helper()")
    assert reply.content.startswith("Blocked:") and f"{AWAY}.t" in reply.content
    assert await away_a(mysql_url) == 0


async def test_a_procedure_that_stays_home_goes_to_approval(
    context: ToolContext, home: str
) -> None:
    await run_statements(home, ["CREATE PROCEDURE bump() UPDATE t SET a = a + 1 WHERE id = 1"])
    outcome = await run(context, "CALL bump()")
    assert isinstance(outcome, ApprovalRequired)
    assert outcome.impact is not None and outcome.impact.statements[0].tables == (f"{HOME}.t",)


async def test_a_trigger_writing_another_schema_makes_an_update_refused(
    context: ToolContext, home: str, mysql_url: str
) -> None:
    await run_statements(
        home,
        [f"CREATE TRIGGER spill AFTER UPDATE ON t FOR EACH ROW UPDATE {AWAY}.t SET a = NEW.a"],
    )
    reply = await approved(context, "UPDATE t SET a = 5 WHERE id = 1")
    assert reply.content.startswith("Blocked:") and f"trigger {HOME}.spill" in reply.content
    assert await away_a(mysql_url) == 0


async def test_a_cascade_into_another_schema_is_refused(
    context: ToolContext, home: str, mysql_url: str
) -> None:
    await run_statements(
        mysql_url,
        [
            f"CREATE TABLE {AWAY}.kid (id INT PRIMARY KEY, t_id INT,"
            f" CONSTRAINT fk_kid FOREIGN KEY (t_id) REFERENCES {HOME}.t (id) ON DELETE CASCADE)",
            f"INSERT INTO {AWAY}.kid VALUES (1, 1)",
        ],
    )
    reply = await approved(context, "DELETE FROM t WHERE id = 1")
    assert reply.content.startswith("Blocked:") and "fk_kid (ON DELETE CASCADE)" in reply.content
    assert await query(mysql_url, f"SELECT COUNT(*) FROM {AWAY}.kid") == [(1,)]


async def test_an_in_schema_cascade_and_trigger_are_shown_on_the_card(
    context: ToolContext, home: str
) -> None:
    await run_statements(
        home,
        [
            "CREATE TABLE kid (id INT PRIMARY KEY, t_id INT,"
            " CONSTRAINT fk_home FOREIGN KEY (t_id) REFERENCES t (id) ON DELETE CASCADE)",
            "CREATE TABLE gone (id INT)",
            "CREATE TRIGGER note AFTER DELETE ON t FOR EACH ROW INSERT INTO gone VALUES (OLD.id)",
        ],
    )
    outcome = await run(context, "DELETE FROM t WHERE id = 2")
    assert isinstance(outcome, ApprovalRequired) and outcome.impact is not None
    (statement,) = outcome.impact.statements
    assert statement.cascades == (f"{HOME}.kid (t_id) via fk_home (ON DELETE CASCADE)",)
    assert statement.triggers == (f"{HOME}.note (AFTER DELETE on {HOME}.t)",)
    assert set(statement.tables) == {f"{HOME}.t", f"{HOME}.kid", f"{HOME}.gone"}


async def test_a_schema_differing_only_in_case_is_another_schema(
    context: ToolContext, mysql_url: str
) -> None:
    sql = f"UPDATE {UPPER}.t SET a = 1"
    reply = await approved(context, sql, database="lower")
    assert reply.content.startswith("Blocked:") and f"{UPPER}.t" in reply.content
    assert await query(mysql_url, f"SELECT a FROM {UPPER}.t") == [(0,)]
    own = f"UPDATE {LOWER}.t SET a = 1"
    assert isinstance(await run(context, own, database="lower"), ApprovalRequired)
    done = await approved(context, own, database="lower")
    assert json.loads(done.content)["affected_rows"] == 1
    assert await query(mysql_url, f"SELECT a FROM {UPPER}.t") == [(0,)]


async def test_reads_stay_in_the_database_and_its_read_schemas(context: ToolContext) -> None:
    refused = await run(context, "SELECT * FROM mysql.user")
    assert isinstance(refused, ToolReply)
    assert refused.content.startswith("Blocked: the statement reads mysql.user")
    archived = await run(context, f"SELECT id FROM {ARCHIVE}.old")
    assert isinstance(archived, ToolReply) and json.loads(archived.content)["rows"] == [[7]]


async def test_the_count_on_the_card_equals_the_rows_then_changed(context: ToolContext) -> None:
    sql = "UPDATE t SET a = 9 WHERE id <= 3"
    outcome = await run(context, sql)
    assert isinstance(outcome, ApprovalRequired) and outcome.impact is not None
    (statement,) = outcome.impact.statements
    assert (statement.rows, statement.count, statement.undo) == (3, RowCount.EXACT, True)
    assert statement.preview_rows == ((1, 0, 9), (2, 0, 9), (3, 0, 9))
    done = await approved(context, sql)
    assert json.loads(done.content)["affected_rows"] == 3


async def test_the_pending_approval_carries_the_impact_and_the_request_in_its_words(
    agent: Agent, model_server: FakeModelServer
) -> None:
    sql = "DELETE FROM t WHERE id = 10"
    model_server.script(calls(call("execute_query", {"database": "home", "sql": sql})))
    asked = "please remove row 10, it is a duplicate"
    paused = await agent.handle_message(SESSION, asked, requester=REQUESTER, mode=Mode.AGENT)
    assert isinstance(paused, AwaitingApproval)
    pending = paused.pending
    assert pending.request_text == asked
    assert pending.impact is not None and pending.impact.statements[0].rows == 1
    assert await agent.pending(pending.id) == pending  # stored and read back whole


def test_a_pending_approval_stored_before_impacts_existed_still_loads() -> None:
    old = {
        "id": "p1",
        "session_id": SESSION,
        "tool_call_id": "c1",
        "database": "home",
        "environment": "staging",
        "risk": "write",
        "sql": "DELETE FROM t",
        "requester": "U1",
        "created_at": 1.0,
    }
    loaded = PendingApproval.from_json(old)
    assert loaded.impact is None and loaded.request_text == ""
    assert PendingApproval.from_json(json.loads(json.dumps(loaded.to_json()))) == loaded


async def test_a_view_over_another_schema_is_neither_read_nor_written_through(
    context: ToolContext, home: str, mysql_url: str
) -> None:
    await run_statements(home, [f"CREATE VIEW window_away AS SELECT id, a FROM {AWAY}.t"])
    written = await approved(context, "UPDATE window_away SET a = 3")
    assert written.content.startswith("Blocked:") and f"view {HOME}.window_away" in written.content
    read = await run(context, "SELECT * FROM window_away")
    assert isinstance(read, ToolReply) and read.content.startswith("Blocked: the statement reads")
    assert await away_a(mysql_url) == 0


async def test_a_write_is_not_run_when_the_server_cannot_say_what_it_reaches(
    state: State, settings: Settings
) -> None:
    gone = DatabaseConfig(
        name="gone", url="mysql://root@127.0.0.1:1/nowhere", environment="staging"
    )
    registry = DatabaseRegistry([gone], Limits(connect_timeout_s=2))
    context = agent_mode_context(state, settings, registry, executions=False)
    try:
        reply = await run(context, "UPDATE t SET a = 1", database="gone")
    finally:
        await registry.close()
    assert isinstance(reply, ToolReply)
    assert reply.content.startswith("Error: could not read what the statement reaches on gone")


async def test_a_procedure_changed_after_its_card_is_judged_again_at_the_click(
    context: ToolContext, home: str, mysql_url: str
) -> None:
    await run_statements(home, ["CREATE PROCEDURE tidy() UPDATE t SET a = 0 WHERE id = 1"])
    assert isinstance(await run(context, "CALL tidy()"), ApprovalRequired)
    await run_statements(
        home, ["DROP PROCEDURE tidy", f"CREATE PROCEDURE tidy() UPDATE {AWAY}.t SET a = 4"]
    )
    reply = await approved(context, "CALL tidy()")
    assert reply.content.startswith("Blocked:") and f"{AWAY}.t" in reply.content
    assert await away_a(mysql_url) == 0
