"""Four eyes for every kind of card: a change the model asked for, a Run button's statement
and an Undo, each clicked by the person who asked and by someone else, with self-approval
off and on. One row per combination, the reason in the row."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.agent import Agent, AwaitingApproval, SelfApprovalRefused
from bot.config import Approvals, Mode
from bot.state.grants import GrantScope
from tests.agent.support import APPROVER, REQUESTER, SESSION, STAGING, AgentFactory, query
from tests.fakes.model_server import FakeModelServer, call, calls, say

CANCEL_11 = "UPDATE orders SET status = 'cancelled' WHERE id = 11"
Card = Callable[[Agent, FakeModelServer], Awaitable[AwaitingApproval]]


async def change_card(agent: Agent, model_server: FakeModelServer) -> AwaitingApproval:
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": CANCEL_11})), say("Done.")
    )
    paused = await agent.handle_message(SESSION, "cancel 11", requester=REQUESTER, mode=Mode.AGENT)
    assert isinstance(paused, AwaitingApproval), paused
    return paused


async def run_button_card(agent: Agent, model_server: FakeModelServer) -> AwaitingApproval:
    card = await agent.run_statement(SESSION, database=STAGING, sql=CANCEL_11, requester=REQUESTER)
    assert isinstance(card, AwaitingApproval), card
    return card


async def undo_card(agent: Agent, model_server: FakeModelServer) -> AwaitingApproval:
    """The Undo of a cancel another approver approved, asked for by the requester: when it
    runs, order 11 is pending again."""
    first = await run_button_card(agent, model_server)
    decisions = []

    async def on_decided(decision: object) -> None:
        decisions.append(decision)

    await agent.approve(
        first.pending.id, approver=APPROVER, scope=GrantScope.ONCE, on_decided=on_decided
    )
    (decision,) = decisions
    assert decision.undo_id is not None, decision.undo_reason
    undo = await agent.undo(decision.undo_id, requester=REQUESTER, session_id=SESSION)
    assert isinstance(undo, AwaitingApproval), undo
    return undo


CARDS: list[tuple[str, Card, str, str]] = [
    # (kind, card, status once the card's change ran, status while it waits)
    ("change", change_card, "cancelled", "pending"),
    ("run button", run_button_card, "cancelled", "pending"),
    ("undo", undo_card, "pending", "cancelled"),
]
CLICKS = [
    # (who clicks, allow_self_approval, it runs, why)
    (REQUESTER.user_id, False, False, "the person who asked may not approve their own card"),
    (REQUESTER.user_id, True, True, "unless self-approval is configured"),
    (APPROVER, False, True, "another approver may"),
]
COMBINATIONS = [
    (kind, card, ran, waiting, who, allowed, runs, why)
    for kind, card, ran, waiting in CARDS
    for who, allowed, runs, why in CLICKS
]


@pytest.mark.parametrize(
    ("kind", "card", "ran", "waiting", "who", "allowed", "runs", "why"),
    COMBINATIONS,
    ids=[f"{c[0]}: {c[-1]}" for c in COMBINATIONS],
)
async def test_who_may_approve_each_kind_of_card(
    make_agent: AgentFactory,
    model_server: FakeModelServer,
    shop_url: str,
    kind: str,
    card: Card,
    ran: str,
    waiting: str,
    who: str,
    allowed: bool,
    runs: bool,
    why: str,
) -> None:
    agent = await make_agent(approvals=Approvals(allow_self_approval=allowed))
    paused = await card(agent, model_server)
    model_server.script(say("Done."))

    if runs:
        await agent.approve(paused.pending.id, approver=who, scope=GrantScope.ONCE)
    else:
        with pytest.raises(SelfApprovalRefused):
            await agent.approve(paused.pending.id, approver=who, scope=GrantScope.ONCE)

    status = (await query(shop_url, "SELECT status FROM orders WHERE id = 11"))[0][0]
    assert status == (ran if runs else waiting), f"{kind}: {why}"
