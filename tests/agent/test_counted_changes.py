"""Every row a change writes is counted and bounded, or the change is refused: the card's
number is the total the server writes (the statement, its triggers, its cascades, the stored
functions it runs), and the approved run is held to that total inside its transaction. On
the real MariaDB, through the Agent as the model calls it and an approver clicks."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.agent import Agent, ApprovalDecision, AwaitingApproval, Outcome
from bot.config import Approvals, Mode
from bot.db.impact_types import StatementImpact
from bot.state.grants import GrantScope
from tests.agent.support import (
    APPROVER,
    REQUESTER,
    SCHEMA,
    SESSION,
    STAGING,
    AgentFactory,
    query,
    run_statements,
)
from tests.fakes.model_server import FakeModelServer, call, calls, say

TABLES = ("gc", "c", "p", "t", "big", "log", "shown", "src", "dst")
SETUP = [
    f"CREATE TABLE {SCHEMA}.t (id INT PRIMARY KEY, a INT NOT NULL)",
    f"INSERT INTO {SCHEMA}.t VALUES (1, 0), (2, 0), (3, 0)",
    f"CREATE TABLE {SCHEMA}.big (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.big SELECT seq FROM {SCHEMA}.seq_1_to_2000",
    f"CREATE TABLE {SCHEMA}.log (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
    f"CREATE TABLE {SCHEMA}.p (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.p VALUES (1), (2)",
    f"CREATE TABLE {SCHEMA}.c (id INT PRIMARY KEY, pid INT,"
    f" CONSTRAINT fk_c FOREIGN KEY (pid) REFERENCES {SCHEMA}.p (id) ON DELETE CASCADE)",
    f"INSERT INTO {SCHEMA}.c SELECT seq, 1 FROM {SCHEMA}.seq_1_to_19",
    f"CREATE FUNCTION {SCHEMA}.f_big() RETURNS INT MODIFIES SQL DATA"
    f" BEGIN DELETE FROM {SCHEMA}.big; RETURN 1; END",
    f"CREATE TABLE {SCHEMA}.shown (id INT PRIMARY KEY, a INT, s INT INVISIBLE DEFAULT 7)",
    f"INSERT INTO {SCHEMA}.shown (id, a, s) VALUES (1, 0, 41), (2, 0, 42)",
    f"CREATE TABLE {SCHEMA}.src (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.src VALUES (1), (2), (3)",
    f"CREATE TABLE {SCHEMA}.dst (id INT PRIMARY KEY, n INT NOT NULL DEFAULT 0)",
]
LOG_TRIGGER = (
    f"CREATE TRIGGER {SCHEMA}.t_log AFTER UPDATE ON {SCHEMA}.t FOR EACH ROW"
    f" INSERT INTO {SCHEMA}.log (v) VALUES (NEW.a)"
)


async def drop_all(shop_url: str) -> None:
    await run_statements(
        shop_url,
        [f"DROP FUNCTION IF EXISTS {SCHEMA}.f_big"]
        + [f"DROP TABLE IF EXISTS {SCHEMA}.{name}" for name in TABLES],
    )


@pytest.fixture
async def tables(shop_url: str) -> AsyncIterator[str]:
    await drop_all(shop_url)
    await run_statements(shop_url, SETUP)
    yield shop_url
    await drop_all(shop_url)


async def ask(agent: Agent, model_server: FakeModelServer, sql: str) -> Outcome:
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": sql})), say("ok"))
    return await agent.handle_message(SESSION, "please", requester=REQUESTER, mode=Mode.AGENT)


async def approve(agent: Agent, paused: Outcome) -> ApprovalDecision:
    assert isinstance(paused, AwaitingApproval), paused
    decisions: list[ApprovalDecision] = []

    async def on_decided(decision: ApprovalDecision) -> None:
        decisions.append(decision)

    await agent.approve(
        paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE, on_decided=on_decided
    )
    (decision,) = decisions
    return decision


def stated(paused: Outcome) -> StatementImpact:
    assert isinstance(paused, AwaitingApproval), paused
    assert paused.pending.impact is not None
    (statement,) = paused.pending.impact.statements
    return statement


async def count(url: str, table: str) -> int:
    ((rows,),) = await query(url, f"SELECT COUNT(*) FROM {SCHEMA}.{table}")
    return int(rows)


FUNCTION_CASES = [
    # (sql, why)
    ("UPDATE t SET a = f_big() WHERE id = 1", "a SET that calls a function writing 2,000 rows"),
    ("DO f_big()", "DO changes no row itself, the function 2,000"),
    ("INSERT INTO t VALUES (9, f_big())", "a VALUES that calls it"),
    ("DELETE FROM t WHERE id = 1 AND f_big() = 1", "a WHERE that calls it"),
]


@pytest.mark.parametrize(("sql", "why"), FUNCTION_CASES, ids=[c[1] for c in FUNCTION_CASES])
async def test_a_stored_function_that_writes_rows_is_refused_before_any_card(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str, sql: str, why: str
) -> None:
    agent = await make_agent()

    outcome = await ask(agent, model_server, sql)

    assert not isinstance(outcome, AwaitingApproval), why
    told = model_server.new_tool_results()[0]
    assert told.startswith("Blocked: not every row this change writes can be counted"), told
    assert f"function {SCHEMA}.f_big" in told, told
    assert await count(tables, "big") == 2000


@pytest.mark.parametrize(("sql", "why"), FUNCTION_CASES, ids=[c[1] for c in FUNCTION_CASES])
async def test_allowed_uncounted_the_card_says_so_and_the_run_is_bounded_all_the_same(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str, sql: str, why: str
) -> None:
    agent = await make_agent(approvals=Approvals(allow_uncounted=True, max_rows_unknown=1000))
    paused = await ask(agent, model_server, sql)
    statement = stated(paused)
    assert any(f"function {SCHEMA}.f_big" in part for part in statement.uncounted), why
    assert not statement.undo, why

    decision = await approve(agent, paused)

    # What it counted plus max_rows_unknown for the rest: 2,000 deleted rows are too many.
    assert decision.summary.startswith("rolled back"), (why, decision.summary)
    assert "nothing was changed" in decision.summary
    assert await count(tables, "big") == 2000


async def test_a_cascade_is_counted_on_the_card_and_bounds_the_run(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    agent = await make_agent()
    paused = await ask(agent, model_server, "DELETE FROM p WHERE id = 1")
    statement = stated(paused)
    assert (statement.rows, statement.total) == (1, 20)
    assert statement.written == (f"19 rows of {SCHEMA}.c via fk_c (ON DELETE CASCADE)",)
    assert not statement.undo and "cascade" in statement.undo_reason

    decision = await approve(agent, paused)

    assert decision.summary == "1 row affected"
    assert decision.undo_id is None and decision.undo_reason == statement.undo_reason
    assert (await count(tables, "p"), await count(tables, "c")) == (1, 0)


async def test_a_cascade_grown_behind_the_bots_back_rolls_the_change_back(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    agent = await make_agent()
    paused = await ask(agent, model_server, "DELETE FROM p WHERE id = 1")
    await run_statements(tables, [f"INSERT INTO {SCHEMA}.c VALUES (20, 1)"])

    decision = await approve(agent, paused)

    assert decision.summary.startswith("rolled back: wrote 21 rows"), decision.summary
    assert decision.summary.endswith("approved 20; nothing was changed")
    assert (await count(tables, "p"), await count(tables, "c")) == (2, 20)


async def test_a_trigger_writing_a_log_is_counted_and_bounds_the_run(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    await run_statements(tables, [LOG_TRIGGER])
    agent = await make_agent()
    paused = await ask(agent, model_server, "UPDATE t SET a = 5 WHERE id <= 2")
    statement = stated(paused)
    assert (statement.rows, statement.total) == (2, 4)
    assert statement.written == (f"2 rows by trigger {SCHEMA}.t_log (AFTER UPDATE on {SCHEMA}.t)",)
    assert not statement.undo and "triggers fire" in statement.undo_reason

    decision = await approve(agent, paused)

    assert decision.summary == "2 rows affected"
    assert decision.undo_id is None and decision.undo_reason == statement.undo_reason
    assert await count(tables, "log") == 2


async def test_a_trigger_that_writes_more_after_the_card_rolls_the_change_back(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    await run_statements(tables, [LOG_TRIGGER])
    agent = await make_agent()
    paused = await ask(agent, model_server, "UPDATE t SET a = 5 WHERE id <= 2")
    assert stated(paused).total == 4
    await run_statements(
        tables,
        [
            f"DROP TRIGGER {SCHEMA}.t_log",
            LOG_TRIGGER.replace("VALUES (NEW.a)", "VALUES (NEW.a), (NEW.a), (NEW.a)"),
        ],
    )

    decision = await approve(agent, paused)

    assert decision.summary.startswith("rolled back"), decision.summary
    assert (await count(tables, "log"), await query(tables, f"SELECT SUM(a) FROM {SCHEMA}.t")) == (
        0,
        [(0,)],
    )


async def test_a_card_of_zero_rows_bounds_the_run_at_zero(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    agent = await make_agent()
    paused = await ask(agent, model_server, "UPDATE t SET a = 1 WHERE id = 4")
    assert (stated(paused).rows, stated(paused).total) == (0, 0)
    await run_statements(tables, [f"INSERT INTO {SCHEMA}.t VALUES (4, 0)"])

    decision = await approve(agent, paused)

    assert decision.summary == "rolled back: changed 1 row, approved 0; nothing was changed"
    assert await query(tables, f"SELECT a FROM {SCHEMA}.t WHERE id = 4") == [(0,)]


async def test_up_to_n_bounds_the_inserted_rows_not_twice_n(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    agent = await make_agent()
    sql = "INSERT INTO dst (id) SELECT id FROM src ON DUPLICATE KEY UPDATE n = n + 1"
    paused = await ask(agent, model_server, sql)
    assert stated(paused).rows == 3
    # The source doubles between card and click: six new rows, where the card said up to 3.
    await run_statements(tables, [f"INSERT INTO {SCHEMA}.src VALUES (4), (5), (6)"])

    decision = await approve(agent, paused)

    assert decision.summary.startswith("rolled back: inserted 6 rows, approved 3"), decision
    assert await count(tables, "dst") == 0


async def test_a_table_with_an_invisible_column_gets_an_exact_undo(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    agent = await make_agent()
    before = await query(tables, f"SELECT id, a, s FROM {SCHEMA}.shown ORDER BY id")
    paused = await ask(agent, model_server, "DELETE FROM shown WHERE id = 2")
    assert stated(paused).undo, stated(paused).undo_reason
    decision = await approve(agent, paused)
    assert decision.undo_id is not None, decision.undo_reason

    undo = await agent.undo(decision.undo_id, requester=REQUESTER, session_id=SESSION)
    assert isinstance(undo, AwaitingApproval), undo
    await agent.approve(undo.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    assert await query(tables, f"SELECT id, a, s FROM {SCHEMA}.shown ORDER BY id") == before


async def test_a_plain_insert_is_not_held_to_the_update_triggers_it_does_not_fire(
    make_agent: AgentFactory, model_server: FakeModelServer, tables: str
) -> None:
    # An UPDATE trigger whose rows cannot be counted: an INSERT without ON DUPLICATE KEY
    # UPDATE never fires it, on the card or at the click.
    await run_statements(
        tables,
        [
            f"CREATE TRIGGER {SCHEMA}.t_wipe AFTER UPDATE ON {SCHEMA}.t FOR EACH ROW"
            f" DELETE FROM {SCHEMA}.log"
        ],
    )
    agent = await make_agent()
    paused = await ask(agent, model_server, "INSERT INTO t VALUES (9, 0)")
    assert (stated(paused).total, stated(paused).uncounted) == (1, ())

    decision = await approve(agent, paused)

    assert decision.summary == "1 row affected"
