"""No Undo is offered that does not come: the card's "Undo" and the run's are decided by one
function (bot/changes/undo_rules.py), so for every kind of change the card and the outcome agree,
with the same reason when there is none. On the real MariaDB, through the Agent."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.agent import ApprovalDecision, AwaitingApproval
from bot.config import Approvals, Mode
from bot.state.grants import GrantScope
from tests.agent.support import (
    APPROVER,
    REQUESTER,
    SCHEMA,
    SESSION,
    STAGING,
    AgentFactory,
    run_statements,
)
from tests.fakes.model_server import FakeModelServer, call, calls, say

SETUP = [
    f"CREATE TABLE {SCHEMA}.u_parent (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.u_parent VALUES (1), (2)",
    f"CREATE TABLE {SCHEMA}.u_child (id INT PRIMARY KEY, pid INT, CONSTRAINT fk_u FOREIGN KEY"
    f" (pid) REFERENCES {SCHEMA}.u_parent (id) ON DELETE CASCADE)",
    f"INSERT INTO {SCHEMA}.u_child VALUES (1, 1)",
    f"CREATE TABLE {SCHEMA}.u_log (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
    f"CREATE TABLE {SCHEMA}.u_trig (id INT PRIMARY KEY, a INT)",
    f"INSERT INTO {SCHEMA}.u_trig VALUES (1, 0)",
    f"CREATE TRIGGER {SCHEMA}.u_trig_log AFTER UPDATE ON {SCHEMA}.u_trig FOR EACH ROW"
    f" INSERT INTO {SCHEMA}.u_log (v) VALUES (NEW.a)",
    f"CREATE TABLE {SCHEMA}.u_shown (id INT PRIMARY KEY, a INT, s INT INVISIBLE DEFAULT 7)",
    f"INSERT INTO {SCHEMA}.u_shown (id, a, s) VALUES (1, 0, 41)",
    f"CREATE TABLE {SCHEMA}.u_keyless (n INT)",
    f"INSERT INTO {SCHEMA}.u_keyless VALUES (1)",
    f"CREATE FUNCTION {SCHEMA}.u_f() RETURNS INT MODIFIES SQL DATA"
    f" BEGIN INSERT INTO {SCHEMA}.u_log (v) VALUES (0); RETURN 1; END",
]
TEARDOWN = [f"DROP FUNCTION IF EXISTS {SCHEMA}.u_f"] + [
    f"DROP TABLE IF EXISTS {SCHEMA}.{name}"
    for name in ("u_child", "u_parent", "u_log", "u_trig", "u_shown", "u_keyless")
]

CHANGES = [
    # (sql, Undo, why)
    ("UPDATE u_shown SET a = 1 WHERE id = 1", True, "an INVISIBLE column is read by name"),
    ("UPDATE orders SET status = 'x' WHERE id = 11", True, "keyed, one table, no triggers"),
    ("INSERT INTO orders VALUES (99, 1, 'new', 1.00)", True, "an INSERT with its keys"),
    ("UPDATE orders o JOIN customers c ON c.id = o.customer_id SET o.total = 0", False, "multi"),
    ("DELETE FROM u_parent WHERE id = 1", False, "a parent its foreign key cascades from"),
    ("UPDATE u_trig SET a = 5 WHERE id = 1", False, "a table with a trigger"),
    ("UPDATE orders SET total = total + u_f() WHERE id = 11", False, "a function writing rows"),
    ("DELETE FROM u_keyless WHERE n = 1", False, "no primary or unique key"),
    ("UPDATE orders SET id = id + 100 WHERE id = 12", False, "it changes the key"),
    ("INSERT INTO orders SELECT id + 100, customer_id, status, total FROM orders", False, "keys"),
    ("DELETE FROM orders WHERE status = 'pending'", False, "more rows than max_undo_rows (1)"),
]


@pytest.fixture
async def tables(shop_url: str) -> AsyncIterator[str]:
    await run_statements(shop_url, TEARDOWN + SETUP)
    yield shop_url
    await run_statements(shop_url, TEARDOWN)


@pytest.mark.parametrize(("sql", "undo", "why"), CHANGES, ids=[c[-1] for c in CHANGES])
async def test_the_card_offers_undo_exactly_when_the_run_keeps_one(
    make_agent: AgentFactory,
    model_server: FakeModelServer,
    tables: str,
    sql: str,
    undo: bool,
    why: str,
) -> None:
    # Counting is not what this is about: a function's rows may go uncounted here.
    approvals = Approvals(allow_uncounted=True, max_undo_rows=1)
    agent = await make_agent(approvals=approvals)
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": sql})), say("ok"))
    paused = await agent.handle_message(SESSION, "please", requester=REQUESTER, mode=Mode.AGENT)
    assert isinstance(paused, AwaitingApproval) and paused.pending.impact is not None, paused
    (card,) = paused.pending.impact.statements
    decisions: list[ApprovalDecision] = []

    async def on_decided(decision: ApprovalDecision) -> None:
        decisions.append(decision)

    await agent.approve(
        paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE, on_decided=on_decided
    )
    (decision,) = decisions

    assert decision.summary.endswith("affected"), (why, decision.summary)
    assert card.undo is undo, (why, card.undo_reason)
    assert (decision.undo_id is not None) is undo, (why, decision.undo_reason)
    if not undo and "max_undo_rows" not in card.undo_reason:
        assert decision.undo_reason == card.undo_reason, why
