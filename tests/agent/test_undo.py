"""Undo through the Agent, on the real MariaDB: the before-image read in the change's own
transaction is put back exactly after a second approval; rows changed since are shown and
skipped; where no exact undo exists the decision says why."""

from __future__ import annotations

import pytest

from bot.agent import (
    Agent,
    ApprovalDecision,
    AwaitingApproval,
    Failed,
    PendingApproval,
    SelfApprovalRefused,
)
from bot.config import Mode
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

ORDERS = "SELECT * FROM orders ORDER BY id"
SECOND = "U0SECOND"


async def approved(agent: Agent, model_server: FakeModelServer, sql: str) -> ApprovalDecision:
    """`sql` asked for by the model and approved once; the decision the card would show."""
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": sql})))
    paused = await agent.handle_message(SESSION, "do it", requester=REQUESTER, mode=Mode.AGENT)
    assert isinstance(paused, AwaitingApproval)
    model_server.script(say("Done."))
    return await decide(agent, paused.pending, APPROVER)


async def decide(agent: Agent, pending: PendingApproval, approver: str) -> ApprovalDecision:
    decisions: list[ApprovalDecision] = []

    async def on_decided(decision: ApprovalDecision) -> None:
        decisions.append(decision)

    await agent.approve(pending.id, approver=approver, scope=GrantScope.ONCE, on_decided=on_decided)
    (decision,) = decisions
    return decision


async def undo_card(agent: Agent, undo_id: str | None) -> AwaitingApproval:
    assert undo_id is not None
    card = await agent.undo(undo_id, requester=REQUESTER, session_id=SESSION)
    assert isinstance(card, AwaitingApproval), card
    assert card.pending.kind == "undo"
    return card


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE orders SET status = 'cancelled', total = 0 WHERE customer_id = 1",
        "DELETE FROM orders WHERE status = 'pending'",
        "INSERT INTO orders (id, customer_id, status, total) VALUES (20, 1, 'new', 1.25), "
        "(21, 2, 'new', 2.50)",
        "UPDATE orders SET total = total * 2 ORDER BY id DESC LIMIT 2",
    ],
    ids=["update", "delete", "insert", "update-with-limit"],
)
async def test_undo_restores_the_exact_before_image_after_a_second_approval(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str, change: str
) -> None:
    agent = await make_agent()
    before = await query(shop_url, ORDERS)
    decision = await approved(agent, model_server, change)
    assert await query(shop_url, ORDERS) != before
    assert decision.undo_id is not None, decision.undo_reason

    card = await undo_card(agent, decision.undo_id)
    assert await query(shop_url, ORDERS) != before  # nothing runs before it is approved
    undone = await agent.approve(card.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    assert not isinstance(undone, Failed), undone
    assert await query(shop_url, ORDERS) == before


async def test_undo_of_an_auto_increment_insert_deletes_the_rows_it_added(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    await run_statements(
        shop_url,
        [
            f"CREATE TABLE IF NOT EXISTS {SCHEMA}.notes "
            "(id INT AUTO_INCREMENT PRIMARY KEY, body VARCHAR(20))",
            f"DELETE FROM {SCHEMA}.notes",
            f"INSERT INTO {SCHEMA}.notes (body) VALUES ('kept')",
        ],
    )
    agent = await make_agent()
    decision = await approved(
        agent, model_server, "INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')"
    )
    card = await undo_card(agent, decision.undo_id)
    assert [s.rows for s in card.pending.impact.statements] == [1, 1, 1]

    await agent.approve(card.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    assert [row[1] for row in await query(shop_url, "SELECT * FROM notes")] == ["kept"]


async def test_rows_changed_since_are_shown_and_skipped(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    decision = await approved(
        agent, model_server, "UPDATE orders SET status = 'cancelled' WHERE customer_id = 1"
    )
    await run_statements(shop_url, [f"UPDATE {SCHEMA}.orders SET status = 'shipped' WHERE id = 11"])

    card = await undo_card(agent, decision.undo_id)
    assert "Skipped 1 row(s) changed since: orders id = 11: changed since (status)" in card.text
    await agent.approve(card.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    rows = await query(shop_url, "SELECT id, status FROM orders WHERE customer_id = 1 ORDER BY id")
    assert [tuple(row) for row in rows] == [(10, "paid"), (11, "shipped")]


async def test_a_row_changed_after_the_undo_card_is_skipped_when_it_runs(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    decision = await approved(
        agent, model_server, "UPDATE orders SET status = 'cancelled' WHERE customer_id = 1"
    )
    card = await undo_card(agent, decision.undo_id)
    await run_statements(shop_url, [f"UPDATE {SCHEMA}.orders SET status = 'shipped' WHERE id = 11"])

    await agent.approve(card.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    rows = await query(shop_url, "SELECT id, status FROM orders WHERE customer_id = 1 ORDER BY id")
    assert [tuple(row) for row in rows] == [(10, "paid"), (11, "shipped")]


async def test_an_undo_follows_four_eyes_too(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    decision = await approved(agent, model_server, "DELETE FROM orders WHERE id = 13")
    card = await undo_card(agent, decision.undo_id)

    with pytest.raises(SelfApprovalRefused):
        await agent.approve(card.pending.id, approver=REQUESTER.user_id, scope=GrantScope.ONCE)
    assert await query(shop_url, "SELECT id FROM orders WHERE id = 13") == []


@pytest.mark.parametrize(
    ("setup", "change", "reason"),
    [
        (
            f"CREATE TABLE IF NOT EXISTS {SCHEMA}.keyless (n INT)",
            "INSERT INTO keyless VALUES (1)",
            "keyless has no primary or unique key",
        ),
        (
            "",
            "UPDATE orders SET id = id + 100 WHERE id = 10",
            "it changes the table's key",
        ),
        (
            "",
            "UPDATE orders o JOIN customers c ON c.id = o.customer_id SET o.total = 0 "
            "WHERE c.country = 'GB'",
            "a multi-table UPDATE has no exact undo",
        ),
        (
            "",
            "INSERT INTO orders SELECT id + 100, customer_id, status, total FROM orders",
            "the keys of the inserted rows are not known",
        ),
    ],
    ids=["keyless-table", "key-change", "multi-table", "insert-select"],
)
async def test_no_undo_where_it_cannot_be_exact(
    make_agent: AgentFactory,
    model_server: FakeModelServer,
    shop_url: str,
    setup: str,
    change: str,
    reason: str,
) -> None:
    if setup:
        await run_statements(shop_url, [setup])
    agent = await make_agent()

    decision = await approved(agent, model_server, change)

    assert decision.undo_id is None
    assert decision.undo_reason == reason


async def test_more_rows_than_the_undo_limit_have_no_undo(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    from bot.config import Approvals

    agent = await make_agent(approvals=Approvals(max_undo_rows=1))
    decision = await approved(agent, model_server, "DELETE FROM orders WHERE status = 'pending'")
    assert decision.undo_id is None
    assert decision.undo_reason == "it changes more than 1 row (the undo limit)"


async def test_a_run_button_change_has_an_undo_too(make_agent: AgentFactory, shop_url: str) -> None:
    agent = await make_agent()
    before = await query(shop_url, ORDERS)
    card = await agent.run_statement(
        SESSION, database=STAGING, sql="DELETE FROM orders WHERE id = 12", requester=REQUESTER
    )
    assert isinstance(card, AwaitingApproval)
    decision = await decide(agent, card.pending, APPROVER)
    assert decision.summary.startswith("Ran on shop-staging: 1 row affected")

    undo = await undo_card(agent, decision.undo_id)
    await agent.approve(undo.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    assert await query(shop_url, ORDERS) == before


async def test_an_undo_is_offered_only_in_the_conversation_of_its_change(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    decision = await approved(agent, model_server, "DELETE FROM orders WHERE status = 'pending'")
    assert decision.undo_id is not None
    elsewhere = await agent.undo(decision.undo_id, requester=REQUESTER, session_id=SESSION + "x")
    assert isinstance(elsewhere, Failed) and "another conversation" in elsewhere.message
    assert not await agent.waiting_approvals()
    await undo_card(agent, decision.undo_id)  # in its own conversation: offered
