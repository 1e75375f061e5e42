"""Runs a stopped process left going: resumed when going on cannot repeat a change (it was
reading or thinking), else reported as interrupted with what was running."""

from __future__ import annotations

import asyncio

import pytest

from bot.agent import (
    Agent,
    Answer,
    AwaitingApproval,
    Failed,
    Interrupted,
    RunInterrupted,
    RunResumable,
    SessionStatus,
)
from bot.agent.loop import open_calls
from bot.config import Approvals, Mode
from bot.state.grants import GrantScope
from tests.agent.support import (
    APPROVER,
    REQUESTER,
    SESSION,
    SLOW_READ,
    STAGING,
    AgentFactory,
    no_slow_read_left,
    statement_running,
    wait_for,
)
from tests.fakes.model_server import FakeModelServer, answer_once_released, call, calls, say

SLOW_WRITE = f"UPDATE orders SET total = total + 0 WHERE id IN ({SLOW_READ})"


async def crash(run: asyncio.Task[object]) -> None:
    """The process dies here: nothing of ours runs after this point but what the store
    already holds (the task is cancelled, as the event loop's end would)."""
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)


async def _recorded(agent: Agent) -> bool:
    return bool(await agent.executions.unfinished())


def ask(agent: Agent, text: str) -> asyncio.Task[object]:
    return asyncio.create_task(
        agent.handle_message(SESSION, text, requester=REQUESTER, mode=Mode.AGENT)
    )


@pytest.fixture(autouse=True)
async def no_slow_read_from_an_earlier_test(shop_url: str) -> None:
    await no_slow_read_left(shop_url)


async def test_a_run_that_was_thinking_is_resumed_after_a_restart(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    asked, released = asyncio.Event(), asyncio.Event()

    model_server.responder = answer_once_released(say("too late"), released, asked=asked)
    run = ask(agent, "how many orders?")
    await asyncio.wait_for(asked.wait(), 10)
    await crash(run)
    released.set()
    model_server.responder = None

    restarted = await make_agent(recover=False)
    assert await restarted.recover() == [RunResumable(SESSION, REQUESTER.user_id)]
    model_server.script(say("There are 4 orders."))
    assert await restarted.resume(SESSION) == Answer(text="There are 4 orders.")
    assert model_server.last_request["messages"][-1]["content"] == "how many orders?"
    session = await restarted.session(SESSION)
    assert session is not None and session.status is SessionStatus.IDLE


async def test_a_run_that_was_reading_is_resumed_and_reads_again(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": SLOW_READ})))
    run = ask(agent, "count everything")
    await wait_for(lambda: statement_running(shop_url))
    await crash(run)

    restarted = await make_agent(recover=False)
    (found,) = await restarted.recover()
    assert isinstance(found, RunResumable)
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": "SELECT COUNT(*) FROM orders"})),
        say("4 orders."),
    )
    outcome = await restarted.resume(SESSION)
    assert isinstance(outcome, Answer) and outcome.text == "4 orders."
    assert outcome.results[0].rows == ((4,),)


async def test_a_run_interrupted_during_an_approved_change_is_reported_not_resumed(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    # Its rows cannot be counted in time (impact_timeout_s): allowed, to get a card at all.
    agent = await make_agent(approvals=Approvals(allow_uncounted=True))
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": SLOW_WRITE})))
    outcome = await agent.handle_message(SESSION, "touch", requester=REQUESTER, mode=Mode.AGENT)
    assert isinstance(outcome, AwaitingApproval)
    approval = asyncio.create_task(
        agent.approve(outcome.pending.id, approver=APPROVER, scope="once")  # type: ignore[arg-type]
    )
    await wait_for(lambda: statement_running(shop_url))
    await wait_for(lambda: _recorded(agent))  # the change has begun (its write-ahead record)
    await crash(approval)

    restarted = await make_agent(recover=False)
    # Reported once, by the change's write-ahead record. (Stopped before its record, nothing
    # was sent: the run is resumable, see test_interrupted_changes.py.)
    (found,) = await restarted.recover()
    assert isinstance(found, Interrupted) and found.session_id == SESSION
    assert found.sql == SLOW_WRITE and found.database == STAGING
    session = await restarted.session(SESSION)
    assert session is not None
    assert session.status is SessionStatus.INTERRUPTED
    assert open_calls(session.messages) == []
    assert session.messages[-1]["content"] == f"Error: {found.text}"
    assert isinstance(await restarted.resume(SESSION), Failed)  # never re-run on its own
    assert await restarted.recover() == []  # reported once

    model_server.script(say("Check the totals before asking again."))
    after = await restarted.handle_message(
        SESSION, "did it run?", requester=REQUESTER, mode=Mode.AGENT
    )
    assert after == Answer(text="Check the totals before asking again.")


async def test_sessions_waiting_for_a_person_are_not_runs_to_recover(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    update = "UPDATE orders SET status = 'paid' WHERE id = 11"
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": update})))
    await agent.handle_message(SESSION, "pay 11", requester=REQUESTER, mode=Mode.AGENT)
    restarted = await make_agent(recover=False)
    assert await restarted.recover() == []
    session = await restarted.session(SESSION)
    assert session is not None and session.status is SessionStatus.AWAITING_APPROVAL


async def test_a_change_run_on_a_thread_grant_is_known_outstanding_after_a_crash(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    # An approver allowed this statement for the whole thread earlier on.
    await agent.grants.mint(SESSION, STAGING, SLOW_WRITE, GrantScope.THREAD, APPROVER)
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": SLOW_WRITE})))
    run = ask(agent, "again, please")  # runs at once: the thread grant allows it
    await wait_for(lambda: statement_running(shop_url))
    await crash(run)

    restarted = await make_agent(recover=False)
    (found,) = await restarted.recover()  # reported once, never resumed
    assert isinstance(found, Interrupted | RunInterrupted) and found.sql == SLOW_WRITE
    assert isinstance(await restarted.resume(SESSION), Failed)


async def test_a_change_that_ran_to_its_end_before_its_answer_was_kept_is_reported_as_run(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    """The state a stop leaves between the change's record `finished` and the session's save:
    the call open, its record saying what became of it. Not "may or may not": it ran."""
    agent = await make_agent()
    bump = "UPDATE orders SET total = total + 0 WHERE id = 10"
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": bump})))
    paused = await agent.handle_message(SESSION, "touch", requester=REQUESTER, mode=Mode.AGENT)
    assert isinstance(paused, AwaitingApproval)
    model_server.script(say("Done."))
    await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
    session = await agent.session(SESSION)
    assert session is not None
    call_at = max(i for i, m in enumerate(session.messages) if m.get("tool_calls"))
    session.messages = session.messages[: call_at + 1]  # its answer never kept
    session.status = SessionStatus.RUNNING
    await agent.sessions.save(session)

    restarted = await make_agent(recover=False)
    (found,) = await restarted.recover()
    assert isinstance(found, RunInterrupted) and found.sql == bump
    assert found.outcome and "may or may not" not in found.text
    assert f"ran on {STAGING}" in found.text
    session = await restarted.session(SESSION)
    assert session is not None and "ran to its end" in session.messages[-1]["content"]
