"""Four eyes through the Agent, on the real MariaDB: the person who asked cannot approve their
own change, N distinct approvers are needed before it runs, a deny by any of them ends it,
and two last clicks at once run it once."""

from __future__ import annotations

import asyncio

import pytest

from bot.agent import (
    Agent,
    AlreadyDecided,
    Answer,
    AwaitingApproval,
    Outcome,
    SelfApprovalRefused,
)
from bot.config import Approvals, Environment, Mode
from bot.state.grants import GrantScope
from tests.agent.support import APPROVER, REQUESTER, SESSION, STAGING, AgentFactory, query
from tests.fakes.model_server import FakeModelServer, call, calls, say

CANCEL_11 = "UPDATE orders SET status = 'cancelled' WHERE id = 11"
SECOND = "U0SECOND"


async def ask_for_the_cancel(agent: Agent, model_server: FakeModelServer) -> AwaitingApproval:
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": CANCEL_11})))
    paused = await agent.handle_message(
        SESSION, "cancel order 11", requester=REQUESTER, mode=Mode.AGENT
    )
    assert isinstance(paused, AwaitingApproval)
    return paused


async def status_of_11(shop_url: str) -> str:
    return (await query(shop_url, "SELECT status FROM orders WHERE id = 11"))[0][0]


async def test_the_requester_cannot_approve_their_own_change(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    paused = await ask_for_the_cancel(agent, model_server)

    with pytest.raises(SelfApprovalRefused) as refused:
        await agent.approve(paused.pending.id, approver=REQUESTER.user_id, scope=GrantScope.ONCE)

    assert "cannot approve it yourself" in refused.value.reason
    assert await status_of_11(shop_url) == "pending"
    assert await agent.pending(paused.pending.id) == paused.pending  # still waiting for another


async def test_self_approval_is_allowed_when_configured(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent(approvals=Approvals(allow_self_approval=True))
    paused = await ask_for_the_cancel(agent, model_server)
    model_server.script(say("Cancelled."))

    outcome = await agent.approve(
        paused.pending.id, approver=REQUESTER.user_id, scope=GrantScope.ONCE
    )

    assert outcome == Answer(text="Cancelled.")
    assert await status_of_11(shop_url) == "cancelled"


async def test_the_requester_may_deny_their_own_change(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    paused = await ask_for_the_cancel(agent, model_server)
    model_server.script(say("Left it."))

    await agent.deny(paused.pending.id, approver=REQUESTER.user_id)

    assert await status_of_11(shop_url) == "pending"
    assert await agent.pending(paused.pending.id) is None


async def test_two_required_approvers_are_both_needed_and_one_counts_once(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent(approvals=Approvals(required=2))
    paused = await ask_for_the_cancel(agent, model_server)
    assert paused.pending.required == 2

    first = await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    again = await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    assert isinstance(first, AwaitingApproval) and first.pending.approvals == (APPROVER,)
    assert isinstance(again, AwaitingApproval) and again.pending.approvals == (APPROVER,)
    assert await status_of_11(shop_url) == "pending"

    model_server.script(say("Cancelled, with two approvals."))
    done = await agent.approve(paused.pending.id, approver=SECOND, scope=GrantScope.ONCE)

    assert done == Answer(text="Cancelled, with two approvals.")
    assert await status_of_11(shop_url) == "cancelled"
    assert await agent.pending(paused.pending.id) is None


async def test_the_count_is_per_environment(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    approvals = Approvals(required=1, environments={Environment.STAGING: 3})
    agent = await make_agent(approvals=approvals)
    paused = await ask_for_the_cancel(agent, model_server)

    assert paused.pending.required == 3
    for approver in (APPROVER, SECOND):
        outcome = await agent.approve(paused.pending.id, approver=approver, scope=GrantScope.ONCE)
        assert isinstance(outcome, AwaitingApproval)
    assert await status_of_11(shop_url) == "pending"


async def test_a_deny_by_any_approver_ends_a_change_that_had_approvals(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent(approvals=Approvals(required=2))
    paused = await ask_for_the_cancel(agent, model_server)
    await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    model_server.script(say("Not cancelled."))

    await agent.deny(paused.pending.id, approver=SECOND)

    assert await status_of_11(shop_url) == "pending"
    with pytest.raises(AlreadyDecided):
        await agent.approve(paused.pending.id, approver="U0THIRD", scope=GrantScope.ONCE)


async def test_two_last_clicks_at_once_run_the_change_once(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent(approvals=Approvals(required=2))
    paused = await ask_for_the_cancel(agent, model_server)
    await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    model_server.script(say("Cancelled."))

    async def click(approver: str) -> Outcome | Exception:
        try:
            return await agent.approve(paused.pending.id, approver=approver, scope=GrantScope.ONCE)
        except AlreadyDecided as exc:
            return exc

    results = await asyncio.gather(click(SECOND), click("U0THIRD"))

    assert sorted(type(result).__name__ for result in results) == ["AlreadyDecided", "Answer"]
    outcomes = [record["outcome"] for record in await agent.audit.since(None)]
    assert outcomes.count("executed") == 1


async def test_a_thread_grant_needs_every_approver_to_choose_it(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent(approvals=Approvals(required=2))
    paused = await ask_for_the_cancel(agent, model_server)
    await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    model_server.script(say("Cancelled."))
    await agent.approve(paused.pending.id, approver=SECOND, scope=GrantScope.THREAD)

    # The same SQL again in the thread: a one-time approval was used up, so it asks again.
    again = await ask_for_the_cancel(agent, model_server)
    assert again.pending.sql == CANCEL_11
