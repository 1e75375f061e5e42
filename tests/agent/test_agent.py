"""The Agent's entry points: approval pauses and resumes, deny, refusals, ask mode, restarts,
superseding messages and double clicks — on the real MariaDB, streamed and plain."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.agent import (
    Agent,
    AlreadyDecided,
    Answer,
    ApprovalDecision,
    AwaitingApproval,
    Outcome,
    SessionStatus,
)
from bot.config import Mode
from bot.state.grants import GrantScope
from tests.agent.support import (
    APPROVER,
    PRODUCTION,
    REQUESTER,
    SESSION,
    STAGING,
    AgentFactory,
    query,
)
from tests.fakes.model_server import FakeModelServer, ScriptedCall, Turn, call, calls, say

CANCEL_11 = "UPDATE orders SET status = 'cancelled' WHERE id = 11"
BUMP_10 = "UPDATE orders SET total = total + 1 WHERE id = 10"
STATUS_11 = "SELECT status FROM orders WHERE id = 11"


async def ask(agent: Agent, text: str = "cancel order 11", mode: Mode = Mode.AGENT) -> Outcome:
    return await agent.handle_message(SESSION, text, requester=REQUESTER, mode=mode)


def write(sql: str, database: str = STAGING, *, id: str | None = None) -> ScriptedCall:
    return call("execute_query", {"database": database, "sql": sql}, id=id)


async def audit_outcomes(agent: Agent) -> list[str]:
    return [record["outcome"] for record in await agent.audit.since(None)]


async def status_of_11(shop_url: str) -> str:
    return (await query(shop_url, STATUS_11))[0][0]


async def test_a_write_pauses_for_approval_then_runs_once_and_the_run_resumes(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(CANCEL_11), text="Cancelling order 11."))
    paused = await ask(agent)

    assert isinstance(paused, AwaitingApproval)
    pending = paused.pending
    assert (pending.database, pending.environment, pending.risk, pending.sql) == (
        STAGING,
        "staging",
        "write",
        CANCEL_11,
    )
    assert pending.requester == REQUESTER.user_id
    assert paused.text == "Cancelling order 11."
    assert await agent.pending(pending.id) == pending
    assert await status_of_11(shop_url) == "pending"
    session = await agent.session(SESSION)
    assert session is not None and session.status is SessionStatus.AWAITING_APPROVAL

    decisions: list[tuple[ApprovalDecision, int]] = []

    async def on_decided(decision: ApprovalDecision) -> None:
        decisions.append((decision, len(model_server.requests)))

    model_server.script(say("Order 11 is cancelled."))
    outcome = await agent.approve(
        pending.id, approver=APPROVER, scope=GrantScope.ONCE, on_decided=on_decided
    )

    assert outcome == Answer(text="Order 11 is cancelled.")
    assert await status_of_11(shop_url) == "cancelled"
    ((decision, requests_then),) = decisions
    assert (decision.approved, decision.approver, decision.scope) == (True, APPROVER, "once")
    assert decision.summary == "1 row affected"
    assert requests_then == 1  # told before the model resumed
    assert json.loads(model_server.new_tool_results()[0]) == {"affected_rows": 1}
    assert await agent.pending(pending.id) is None
    assert await audit_outcomes(agent) == ["awaiting_approval", "executing", "executed"]
    executed = (await agent.audit.since(None))[-1]
    assert (executed["approver"], executed["rows"]) == (APPROVER, 1)
    assert not await agent.grants.live(SESSION, STAGING, CANCEL_11)  # the once-grant was spent
    session = await agent.session(SESSION)
    assert session is not None and session.status is SessionStatus.IDLE


async def test_a_denied_write_is_not_executed_and_the_model_hears_who_denied_it(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(CANCEL_11)))
    paused = await ask(agent)
    assert isinstance(paused, AwaitingApproval)

    decisions: list[ApprovalDecision] = []

    async def on_decided(decision: ApprovalDecision) -> None:
        decisions.append(decision)

    model_server.script(say("The change was denied; nothing was changed."))
    outcome = await agent.deny(paused.pending.id, approver=APPROVER, on_decided=on_decided)

    assert outcome == Answer(text="The change was denied; nothing was changed.")
    assert model_server.new_tool_results() == [f"denied by {APPROVER}; not executed"]
    assert decisions[0].approved is False
    assert decisions[0].summary == f"denied by {APPROVER}; not executed"
    assert await status_of_11(shop_url) == "pending"
    assert await audit_outcomes(agent) == ["awaiting_approval", "denied"]


async def test_a_production_write_is_refused_and_nobody_is_asked(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(CANCEL_11, PRODUCTION)), say("Production is read-only."))
    outcome = await ask(agent)
    assert isinstance(outcome, Answer)
    assert model_server.new_tool_results()[0].startswith("Blocked: writes on production")
    assert (await agent.session(SESSION)).pending_id is None
    assert await status_of_11(shop_url) == "pending"
    assert await audit_outcomes(agent) == ["refused"]


async def test_a_transaction_is_refused_and_nobody_is_asked(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(f"START TRANSACTION; {CANCEL_11}; COMMIT")), say("No."))
    outcome = await ask(agent)
    assert isinstance(outcome, Answer)
    assert model_server.new_tool_results()[0].startswith("Blocked: transaction control")
    assert (await agent.session(SESSION)).pending_id is None
    assert await status_of_11(shop_url) == "pending"


async def test_ask_mode_offers_no_data_tools_and_cannot_execute_anything(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(
        calls(write(CANCEL_11), call("get_sample_data", {"database": STAGING, "table": "orders"})),
        say("```sql\nUPDATE orders SET status = 'cancelled' WHERE id = 11;\n```\nNot executed."),
    )
    outcome = await ask(agent, mode=Mode.ASK)
    assert isinstance(outcome, Answer)
    assert set(model_server.tools_offered(0)) == {
        "list_databases",
        "list_tables",
        "get_columns",
        "get_current_time",
        "get_skill",
        "ask_user",  # a question back to the person executes nothing (issue 6)
    }
    assert "Mode: ask" in model_server.requests[0]["messages"][0]["content"]
    blocked = model_server.new_tool_results()
    assert blocked[0].startswith("Blocked: execute_query is not available in ask mode")
    assert blocked[1].startswith("Blocked: get_sample_data is not available in ask mode")
    assert await status_of_11(shop_url) == "pending"
    assert await audit_outcomes(agent) == []


async def test_later_calls_of_the_same_turn_wait_for_the_decision_and_run_after_it(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(
        calls(
            call("get_current_time", id="c1"),
            write(CANCEL_11, id="c2"),
            call("execute_query", {"database": STAGING, "sql": STATUS_11}, id="c3"),
        )
    )
    paused = await ask(agent)
    assert isinstance(paused, AwaitingApproval)
    assert await audit_outcomes(agent) == ["awaiting_approval"]  # c3 has not run

    model_server.script(say("Cancelled, and checked."))
    outcome = await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)

    assert isinstance(outcome, Answer)
    results = model_server.tool_results()
    assert [r["tool_call_id"] for r in results] == ["c1", "c2", "c3"]
    assert json.loads(results[2]["content"])["rows"] == [["cancelled"]]
    (checked,) = outcome.results  # results of this part of the run
    assert checked.rows == (("cancelled",),)


async def test_a_second_write_in_the_same_turn_pauses_again_after_the_first_decision(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(CANCEL_11), write(BUMP_10)))
    first = await ask(agent)
    assert isinstance(first, AwaitingApproval) and first.pending.sql == CANCEL_11

    second = await agent.approve(first.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    assert isinstance(second, AwaitingApproval) and second.pending.sql == BUMP_10
    assert await status_of_11(shop_url) == "cancelled"

    model_server.script(say("Both done."))
    done = await agent.approve(second.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    assert done == Answer(text="Both done.")
    (total,) = (await query(shop_url, "SELECT total FROM orders WHERE id = 10"))[0]
    assert float(total) == 21.0


async def test_a_thread_grant_lets_the_same_statement_run_again_without_asking(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(BUMP_10)))
    paused = await ask(agent, "bump order 10")
    model_server.script(say("Bumped."))
    await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.THREAD)

    model_server.script(calls(write(BUMP_10)), say("Bumped again."))
    outcome = await ask(agent, "once more")
    assert outcome == Answer(text="Bumped again.")
    (total,) = (await query(shop_url, "SELECT total FROM orders WHERE id = 10"))[0]
    assert float(total) == 22.0


async def test_a_restart_while_awaiting_approval_loses_nothing(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    before = await make_agent()
    model_server.script(calls(write(CANCEL_11), text="Needs a click."))
    paused = await ask(before)
    assert isinstance(paused, AwaitingApproval)
    await before.state.close()  # the bot stops

    after = await make_agent()  # a new process on the same state directory
    assert await after.pending(paused.pending.id) == paused.pending
    session = await after.session(SESSION)
    assert session is not None and session.status is SessionStatus.AWAITING_APPROVAL

    model_server.script(say("Done after the restart."))
    outcome = await after.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    assert outcome == Answer(text="Done after the restart.")
    assert await status_of_11(shop_url) == "cancelled"


async def test_a_restart_mid_run_leaves_the_session_interrupted_and_usable(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(calls(call("get_current_time", id="c1")), say("first"))
    await ask(agent)
    session = await agent.session(SESSION)
    assert session is not None
    # As if the process died right after the model asked for a tool.
    session.messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        }
    )
    session.status = SessionStatus.RUNNING
    await agent.sessions.save(session)
    await agent.state.close()

    restarted = await make_agent()
    session = await restarted.session(SESSION)
    assert session is not None and session.status is SessionStatus.INTERRUPTED

    model_server.script(say("back"))
    assert await ask(restarted, "are you there?") == Answer(text="back")
    closed = [m for m in model_server.last_request["messages"] if m.get("tool_call_id") == "c9"]
    assert closed[0]["content"].startswith("not run;")


async def test_a_new_message_supersedes_a_pending_approval(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(CANCEL_11, id="c1"), call("get_current_time", id="c2")))
    paused = await ask(agent)
    assert isinstance(paused, AwaitingApproval)

    model_server.script(say("OK, I will leave order 11 alone."))
    outcome = await ask(agent, "actually, don't")
    assert outcome == Answer(text="OK, I will leave order 11 alone.")
    results = {r["tool_call_id"]: r["content"] for r in model_server.tool_results()}
    assert results == {
        "c1": "not approved; superseded by a new message",
        "c2": "not run; superseded by a new message",
    }
    assert model_server.last_request["messages"][-1] == {
        "role": "user",
        "content": "actually, don't",
    }
    assert await agent.pending(paused.pending.id) is None
    with pytest.raises(AlreadyDecided):
        await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    assert await status_of_11(shop_url) == "pending"
    assert await audit_outcomes(agent) == ["awaiting_approval", "superseded"]


async def test_a_double_approve_runs_the_statement_once_and_the_second_is_already_decided(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(write(BUMP_10)))
    paused = await ask(agent, "bump order 10")
    model_server.script(say("Bumped."), say("Bumped (should never be needed)."))

    first, second = await asyncio.gather(
        agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE),
        agent.approve(paused.pending.id, approver="U0OTHER", scope=GrantScope.ONCE),
        return_exceptions=True,
    )

    outcomes = [first, second]
    assert sum(isinstance(o, AlreadyDecided) for o in outcomes) == 1
    assert Answer(text="Bumped.") in outcomes
    (total,) = (await query(shop_url, "SELECT total FROM orders WHERE id = 10"))[0]
    assert float(total) == 21.0
    assert (await audit_outcomes(agent)).count("executed") == 1


async def test_approving_an_unknown_id_is_already_decided(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    with pytest.raises(AlreadyDecided):
        await agent.deny("no-such-approval", approver=APPROVER)


async def test_runs_of_one_session_never_overlap_while_other_sessions_run_alongside(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    active: dict[str, int] = {}
    overlaps: list[str] = []

    async def responder(body: dict) -> Turn:
        thread = body["messages"][1]["content"].split(":")[0]
        active[thread] = active.get(thread, 0) + 1
        if active[thread] > 1:
            overlaps.append(thread)
        await asyncio.sleep(0.2)
        active[thread] -= 1
        return say(f"answer for {thread}")

    model_server.responder = responder
    started = asyncio.get_running_loop().time()
    outcomes = await asyncio.gather(
        *(
            agent.handle_message(
                f"T1:C1:{thread}", f"{thread}: hi {n}", requester=REQUESTER, mode=Mode.AGENT
            )
            for thread in ("a", "b", "c", "d")
            for n in range(3)
        )
    )
    elapsed = asyncio.get_running_loop().time() - started
    assert overlaps == []
    assert all(isinstance(o, Answer) for o in outcomes)
    assert elapsed < 6 * 0.2  # one after another would take 12 × 0.2 s
