"""An approval nobody decided stops working after its lifetime: nothing runs."""

from __future__ import annotations

import pytest

from bot.agent import ApprovalExpired, AwaitingApproval, SessionStatus
from bot.config import Mode
from bot.state.grants import GrantScope
from tests.agent.support import APPROVER, REQUESTER, SESSION, STAGING, AgentFactory, query
from tests.fakes.model_server import FakeModelServer, call, calls, say

CANCEL_12 = "UPDATE orders SET status = 'cancelled' WHERE id = 12"


async def age(agent, pending_id: str, seconds: float) -> None:
    """Make a pending approval look `seconds` older than it is."""

    record = await agent.state.pending.claim(pending_id)
    record["created_at"] -= seconds
    await agent.state.pending.add(record)


async def test_an_expired_approval_runs_nothing_and_the_thread_goes_on(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": CANCEL_12})), say("Later.")
    )
    paused = await agent.handle_message(
        SESSION, "cancel order 12", requester=REQUESTER, mode=Mode.AGENT
    )
    assert isinstance(paused, AwaitingApproval)
    await age(agent, paused.pending.id, agent.settings.limits.approval_ttl_s + 1)

    with pytest.raises(ApprovalExpired):
        await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "pending"
    assert await agent.pending(paused.pending.id) is None
    session = await agent.session(SESSION)
    assert session is not None and session.status is SessionStatus.IDLE
    assert session.messages[-1]["content"] == "not approved; the approval request expired"
    outcomes = [r["outcome"] for r in await agent.audit.since(None)]
    assert outcomes == ["awaiting_approval", "expired"]


async def test_an_expired_run_button_approval_runs_nothing(
    make_agent: AgentFactory, shop_url: str
) -> None:
    agent = await make_agent()
    paused = await agent.run_statement(
        SESSION, database=STAGING, sql=CANCEL_12, requester=REQUESTER
    )
    assert isinstance(paused, AwaitingApproval)
    await age(agent, paused.pending.id, agent.settings.limits.approval_ttl_s + 1)
    with pytest.raises(ApprovalExpired):
        await agent.deny(paused.pending.id, approver=APPROVER)
    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "pending"
