"""Changes asked for from outside a Slack thread (an MCP client): the Agent settles each
request as its approval is decided — executed with its outcome, denied, expired, or failed
when a stop cut it off — so the client can ask after it when the approval itself is gone."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bot.agent import Agent
from bot.agent.tools import ApprovalRequired
from bot.agent.tools.query import QueryParameters, execute_query
from bot.changes.types import ApprovalExpired, PendingApproval, SelfApprovalRefused
from bot.state.executions import ExecutionRecord
from bot.state.grants import GrantScope
from bot.state.requests import RequestStatus
from tests.agent.support import (
    APPROVER,
    REQUESTER,
    SESSION,
    STAGING,
    AgentFactory,
    query,
)

CANCEL_12 = "UPDATE orders SET status = 'cancelled' WHERE id = 12"
ORIGIN = "mcp:alice-laptop"


async def proposed(agent: Agent, sql: str = CANCEL_12) -> PendingApproval:
    """The change as an MCP client's call leaves it: a direct pending approval and a
    request record."""
    context = agent.tool_context("mcp:alice-laptop", REQUESTER, origin=ORIGIN)
    change = await execute_query(context, QueryParameters(database=STAGING, sql=sql))
    assert isinstance(change, ApprovalRequired)
    pending = await agent.propose(SESSION, change, REQUESTER, origin=ORIGIN)
    await agent.state.requests.add(
        {"id": pending.id, "created_at": pending.created_at, "status": "pending"}
    )
    return pending


async def request_of(agent: Agent, pending: PendingApproval) -> dict[str, Any]:
    record = await agent.state.requests.get(pending.id)
    assert record is not None
    return record


async def test_an_approved_request_is_executed_with_its_outcome(
    make_agent: AgentFactory, shop_url: str
) -> None:
    agent = await make_agent()
    pending = await proposed(agent)
    assert pending.origin == ORIGIN and pending.kind == "direct"
    await agent.approve(pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    record = await request_of(agent, pending)
    assert record["status"] == "executed"
    assert '"affected_rows":1' in record["result"]
    assert record["undo_available"] is True
    assert record["approvers"] == [APPROVER]
    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "cancelled"
    origins = {r["outcome"]: r.get("origin") for r in await agent.audit.since(None)}
    assert origins == {"awaiting_approval": ORIGIN, "executing": ORIGIN, "executed": ORIGIN}


async def test_a_denied_request_is_denied(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    pending = await proposed(agent)
    await agent.deny(pending.id, approver=APPROVER)
    record = await request_of(agent, pending)
    assert record["status"] == "denied" and record["decided_by"] == APPROVER


async def test_a_request_past_its_lifetime_expires_and_never_runs(
    make_agent: AgentFactory, shop_url: str
) -> None:
    agent = await make_agent()
    pending = await proposed(agent)
    too_old = time.time() - agent.settings.limits.approval_ttl_s - 1
    await agent.state.pending.update(pending.id, lambda r: ({**r, "created_at": too_old}, None))
    with pytest.raises(ApprovalExpired):
        await agent.approve(pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    assert (await request_of(agent, pending))["status"] == "expired"
    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "pending"


async def test_a_request_whose_run_a_stop_cut_off_is_failed_with_what_is_known(
    make_agent: AgentFactory,
) -> None:
    agent = await make_agent()
    pending = await proposed(agent)
    # What a bot killed while the approved change ran leaves behind.
    await agent.state.requests.settle(
        pending.id, status=RequestStatus.APPROVED, approvers=[APPROVER]
    )
    await agent.state.executions.begin(
        ExecutionRecord(
            id="e1",
            session_id=SESSION,
            database=STAGING,
            environment="staging",
            sql=CANCEL_12,
            requester=REQUESTER.user_id,
            approver=APPROVER,
            grant_id="g1",
            transactional=True,
            started_at=time.time(),
            pending_id=pending.id,
            origin=ORIGIN,
            role="support",
        )
    )
    restarted = await make_agent()
    record = await request_of(restarted, pending)
    assert record["status"] == "failed"
    assert record["applied"] is False  # stopped before COMMIT: rolled back by the server
    assert "it was not applied" in record["summary"]
    # The audit says where the change came from and the role it ran under, as a run does.
    [reported] = [
        r for r in await restarted.audit.since(None) if r["outcome"].startswith("outcome unknown")
    ]
    assert (reported["origin"], reported["role"]) == (ORIGIN, "support")


async def test_the_write_ahead_record_keeps_where_the_change_came_from(
    make_agent: AgentFactory,
) -> None:
    agent = await make_agent()
    pending = await proposed(agent)
    await agent.approve(pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    [executed] = [r for r in await agent.audit.since(None) if r["outcome"] == "executed"]
    written = await agent.state.executions.get(executed["execution_id"])
    assert written is not None
    assert (written.origin, written.role) == (ORIGIN, "")  # no access map: no role


async def test_the_person_behind_the_client_never_approves_even_where_self_approval_is_allowed(
    make_agent: AgentFactory, shop_url: str
) -> None:
    agent = await make_agent()
    agent.settings.approvals.allow_self_approval = True
    pending = await proposed(agent)
    with pytest.raises(SelfApprovalRefused):
        await agent.approve(pending.id, approver=REQUESTER.user_id, scope=GrantScope.ONCE)
    assert (await request_of(agent, pending))["status"] == "pending"
    assert (await query(shop_url, "SELECT status FROM orders WHERE id = 12"))[0][0] == "pending"
