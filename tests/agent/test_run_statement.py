"""A person's Run button: the same classifier, guard, grants and audit as execute_query."""

from __future__ import annotations

import pytest

from bot.agent import AlreadyDecided, Answer, AwaitingApproval, Failed
from bot.agent.outcomes import Requester
from bot.state.grants import GrantScope
from tests.agent.support import APPROVER, PRODUCTION, SESSION, STAGING, AgentFactory, query

CLICKER = Requester(user_id="U0CLICKER", name="Grace")
CANCEL_12 = "UPDATE orders SET status = 'cancelled' WHERE id = 12"


async def test_a_read_runs_at_once_and_is_audited_with_the_clicker(
    make_agent: AgentFactory, shop_url: str
) -> None:
    agent = await make_agent()
    outcome = await agent.run_statement(
        SESSION,
        database=STAGING,
        sql="SELECT id, status FROM orders ORDER BY id",
        requester=CLICKER,
    )
    assert isinstance(outcome, Answer)
    (result,) = outcome.results
    assert result.columns == ("id", "status") and len(result.rows) == 4
    (record,) = await agent.audit.since(None)
    assert record["requester"] == CLICKER.user_id and record["outcome"] == "executed"


async def test_a_write_posts_for_approval_and_runs_once_when_approved(
    make_agent: AgentFactory, shop_url: str
) -> None:
    agent = await make_agent()
    outcome = await agent.run_statement(SESSION, database=STAGING, sql=CANCEL_12, requester=CLICKER)
    assert isinstance(outcome, AwaitingApproval)
    assert outcome.pending.requester == CLICKER.user_id and outcome.pending.sql == CANCEL_12
    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "pending"

    decided = []

    async def on_decided(decision) -> None:
        decided.append(decision)

    done = await agent.approve(
        outcome.pending.id, approver=APPROVER, scope=GrantScope.ONCE, on_decided=on_decided
    )
    assert isinstance(done, Answer) and "1 row affected" in done.text
    assert decided[0].approved and "1 row affected" in decided[0].summary
    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "cancelled"
    with pytest.raises(AlreadyDecided):
        await agent.approve(outcome.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    outcomes = [r["outcome"] for r in await agent.audit.since(None)]
    assert outcomes == ["awaiting_approval", "executing", "executed"]


async def test_a_denied_run_changes_nothing(make_agent: AgentFactory, shop_url: str) -> None:
    agent = await make_agent()
    outcome = await agent.run_statement(SESSION, database=STAGING, sql=CANCEL_12, requester=CLICKER)
    assert isinstance(outcome, AwaitingApproval)
    done = await agent.deny(outcome.pending.id, approver=APPROVER)
    assert isinstance(done, Answer) and "denied by U0APPROVE" in done.text
    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "pending"


REFUSALS = [
    # (database, sql, words in the message, reason)
    (PRODUCTION, CANCEL_12, "Blocked: writes on production", "production is never written"),
    (STAGING, "BEGIN", "Blocked: transaction control", "transaction control is refused"),
    ("nope", "SELECT 1", "unknown database", "an unknown database names itself"),
    (STAGING, "   ", "no SQL statement", "an empty statement runs nothing"),
]


@pytest.mark.parametrize(("database", "sql", "words", "reason"), REFUSALS)
async def test_refusals_come_back_as_failed(
    make_agent: AgentFactory, shop_url: str, database, sql, words, reason
) -> None:
    agent = await make_agent()
    outcome = await agent.run_statement(SESSION, database=database, sql=sql, requester=CLICKER)
    assert isinstance(outcome, Failed), reason
    assert words in outcome.message, reason
    assert await agent.session(SESSION) is None  # nothing paused, nothing stored
