"""Approved changes run bounded by their card, on the real MariaDB through the Agent: the count
the card stated is what changes; rows added behind the bot's back roll the change back with
nothing changed; several statements stand or fall together; DDL mixed with data changes is
refused before any card."""

from __future__ import annotations

import json
from dataclasses import replace

from bot.agent import Agent, ApprovalDecision, AwaitingApproval, Outcome, PendingApproval
from bot.config import Approvals, Mode
from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.sql.risk import classify
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

CANCEL_PENDING = "UPDATE orders SET status = 'cancelled' WHERE status = 'pending'"
PAY_10 = "UPDATE orders SET status = 'refunded' WHERE id = 10"


async def ask(agent: Agent, model_server: FakeModelServer, sql: str) -> Outcome:
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": sql})))
    return await agent.handle_message(SESSION, "please", requester=REQUESTER, mode=Mode.AGENT)


async def card_states(
    agent: Agent, pending: PendingApproval, rows: list[int | None], count: RowCount
) -> PendingApproval:
    """The impact the card showed (rows per statement); computed before the card is posted."""
    statements = tuple(
        StatementImpact(sql=s.text, kind=s.kind, rows=n, count=count)
        for s, n in zip(classify(pending.sql).statements, rows, strict=True)
    )
    stated = replace(pending, impact=Impact(statements=statements))
    await agent.state.pending.add(stated.to_json())
    return stated


async def approve(agent: Agent, pending: PendingApproval) -> ApprovalDecision:
    decisions: list[ApprovalDecision] = []

    async def on_decided(decision: ApprovalDecision) -> None:
        decisions.append(decision)

    await agent.approve(pending.id, approver=APPROVER, scope=GrantScope.ONCE, on_decided=on_decided)
    (decision,) = decisions
    return decision


async def statuses(shop_url: str) -> list[tuple[int, str]]:
    return [
        tuple(row) for row in await query(shop_url, "SELECT id, status FROM orders ORDER BY id")
    ]


async def add_a_pending_order_behind_the_bots_back(shop_url: str) -> None:
    await run_statements(shop_url, [f"INSERT INTO {SCHEMA}.orders VALUES (14, 2, 'pending', 1)"])


async def test_the_count_the_card_stated_is_the_count_changed(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    paused = await ask(agent, model_server, CANCEL_PENDING)
    assert isinstance(paused, AwaitingApproval)
    pending = await card_states(agent, paused.pending, [2], RowCount.EXACT)
    model_server.script(say("Two orders cancelled."))

    decision = await approve(agent, pending)

    assert decision.summary == "2 rows affected"
    assert [s for _, s in await statuses(shop_url)].count("cancelled") == 2


async def test_rows_added_between_card_and_click_roll_the_change_back(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    paused = await ask(agent, model_server, CANCEL_PENDING)
    assert isinstance(paused, AwaitingApproval)
    pending = await card_states(agent, paused.pending, [2], RowCount.EXACT)
    await add_a_pending_order_behind_the_bots_back(shop_url)
    before = await statuses(shop_url)
    model_server.script(say("It was rolled back."))

    decision = await approve(agent, pending)

    assert decision.summary == "rolled back: changed 3 rows, approved 2; nothing was changed"
    assert await statuses(shop_url) == before
    told = model_server.new_tool_results()[0]
    assert told.startswith("Error: rolled back: changed 3 rows, approved 2")
    records = await agent.audit.since(None)
    assert [r["outcome"] for r in records][-2:] == ["executing", "rolled back"]


async def test_the_row_margin_allows_that_many_more_rows(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent(approvals=Approvals(row_margin=1))
    paused = await ask(agent, model_server, CANCEL_PENDING)
    assert isinstance(paused, AwaitingApproval)
    pending = await card_states(agent, paused.pending, [2], RowCount.EXACT)
    await add_a_pending_order_behind_the_bots_back(shop_url)
    model_server.script(say("Done."))

    decision = await approve(agent, pending)

    assert decision.summary == "3 rows affected"


async def test_an_estimate_allows_the_estimate_and_an_unknown_count_the_configured_most(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent(approvals=Approvals(max_rows_unknown=2))
    paused = await ask(agent, model_server, CANCEL_PENDING)
    assert isinstance(paused, AwaitingApproval)
    pending = await card_states(agent, paused.pending, [3], RowCount.ESTIMATE)
    await add_a_pending_order_behind_the_bots_back(shop_url)
    model_server.script(say("Done."))
    assert (await approve(agent, pending)).summary == "3 rows affected"

    await run_statements(shop_url, [f"UPDATE {SCHEMA}.orders SET status = 'pending'"])
    paused = await ask(agent, model_server, CANCEL_PENDING)
    assert isinstance(paused, AwaitingApproval)
    pending = await card_states(agent, paused.pending, [None], RowCount.UNKNOWN)
    model_server.script(say("Rolled back."))
    decision = await approve(agent, pending)
    assert decision.summary == "rolled back: changed 5 rows, approved 2; nothing was changed"
    assert {s for _, s in await statuses(shop_url)} == {"pending"}


async def test_statements_of_one_call_are_rolled_back_together(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    paused = await ask(agent, model_server, f"{PAY_10}; {CANCEL_PENDING}")
    assert isinstance(paused, AwaitingApproval)
    pending = await card_states(agent, paused.pending, [1, 2], RowCount.EXACT)
    await add_a_pending_order_behind_the_bots_back(shop_url)
    before = await statuses(shop_url)
    model_server.script(say("Rolled back."))

    decision = await approve(agent, pending)

    assert decision.summary.startswith("rolled back: statement 2 of 2: changed 3 rows, approved 2")
    assert await statuses(shop_url) == before  # order 10 was not refunded either


async def test_a_failing_statement_rolls_back_the_ones_before_it(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    # The missing table's rows cannot be counted: allowed, so that the call runs and fails.
    agent = await make_agent(approvals=Approvals(allow_uncounted=True))
    paused = await ask(agent, model_server, f"{PAY_10}; UPDATE no_such_table SET x = 1")
    assert isinstance(paused, AwaitingApproval)
    before = await statuses(shop_url)
    model_server.script(say("Failed."))

    decision = await approve(agent, paused.pending)

    assert decision.summary.startswith("rolled back, nothing was changed: statement 2 of 2")
    assert await statuses(shop_url) == before


async def test_ddl_mixed_with_data_changes_is_refused_before_any_card(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    mixed = f"ALTER TABLE orders ADD COLUMN note VARCHAR(10); {PAY_10}"
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": mixed})), say("Refused.")
    )

    outcome = await agent.handle_message(SESSION, "x", requester=REQUESTER, mode=Mode.AGENT)

    assert not isinstance(outcome, AwaitingApproval)
    told = model_server.new_tool_results()[0]
    assert told.startswith("Blocked: this call mixes DDL (ALTER TABLE) with data changes")
    assert "commit DDL implicitly" in told
    columns = await query(shop_url, "SHOW COLUMNS FROM orders")
    assert "note" not in {row[0] for row in columns}


async def test_a_ddl_call_runs_alone_and_has_no_undo(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    ddl = "CREATE TABLE IF NOT EXISTS scratch_notes (id INT PRIMARY KEY)"
    paused = await ask(agent, model_server, ddl)
    assert isinstance(paused, AwaitingApproval)
    model_server.script(say("Created."))

    decision = await approve(agent, paused.pending)

    assert decision.undo_id is None and "DDL cannot be undone" in decision.undo_reason
    assert json.loads(model_server.new_tool_results()[0]) == {"affected_rows": 0}
    await run_statements(shop_url, [f"DROP TABLE {SCHEMA}.scratch_notes"])


async def test_an_up_to_count_allows_the_servers_double_count_of_an_updated_row(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    upsert = (
        "INSERT INTO orders (id, customer_id, status, total) VALUES (11, 1, 'paid', 5.50) "
        "ON DUPLICATE KEY UPDATE status = 'paid'"
    )
    paused = await ask(agent, model_server, upsert)
    assert isinstance(paused, AwaitingApproval)
    pending = await card_states(agent, paused.pending, [1], RowCount.UP_TO)
    model_server.script(say("Upserted."))

    decision = await approve(agent, pending)

    assert decision.summary == "2 rows affected"  # one row, updated: the server says 2
    assert (11, "paid") in await statuses(shop_url)
