"""Stopping a run: the task is cancelled, a running statement is killed on the server, the
session stays consistent, and the model hears who stopped it with the next message."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.agent import Agent, Answer, Outcome, SessionStatus, Stopped
from bot.agent.loop import open_calls
from bot.config import Approvals, Mode
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

STOPPER = "U0STOPPER"


async def nothing_running(url: str) -> bool:
    return not await statement_running(url)


def start(agent: Agent, text: str = "count everything") -> asyncio.Task[Outcome]:
    return asyncio.create_task(
        agent.handle_message(SESSION, text, requester=REQUESTER, mode=Mode.AGENT)
    )


@pytest.fixture(autouse=True)
async def no_slow_read_from_an_earlier_test(shop_url: str) -> None:
    await no_slow_read_left(shop_url)


async def test_stop_kills_the_running_statement_on_the_server_within_two_seconds(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent = await make_agent()
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": SLOW_READ})))
    run = start(agent)
    await wait_for(lambda: statement_running(shop_url))

    stopped_at = time.monotonic()
    assert await agent.stop(SESSION, by=STOPPER) is True
    outcome = await asyncio.wait_for(run, 10)
    await wait_for(lambda: nothing_running(shop_url), timeout_s=2.0)
    assert time.monotonic() - stopped_at < 2.0

    assert isinstance(outcome, Stopped) and outcome.by == STOPPER
    session = await agent.session(SESSION)
    assert session is not None
    assert session.status is SessionStatus.IDLE
    assert open_calls(session.messages) == []  # every call has its result
    assert session.messages[-1]["content"].startswith(f"stopped by {STOPPER}")


async def test_the_model_hears_who_stopped_the_run_with_the_next_message(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    asked, released = asyncio.Event(), asyncio.Event()

    model_server.responder = answer_once_released(say("too late"), released, asked=asked)
    run = start(agent)
    await asyncio.wait_for(asked.wait(), 10)
    assert await agent.stop(SESSION, by=STOPPER)
    assert isinstance(await asyncio.wait_for(run, 5), Stopped)
    released.set()
    model_server.responder = None

    model_server.script(say("Starting again."))
    outcome = await agent.handle_message(SESSION, "try again", requester=REQUESTER, mode=Mode.AGENT)
    assert outcome == Answer(text="Starting again.")
    last = model_server.last_request["messages"][-1]
    assert last["role"] == "user"
    assert last["content"].startswith(f"[The previous request was stopped by {STOPPER}")
    assert last["content"].endswith("try again")
    session = await agent.session(SESSION)
    assert session is not None and session.stopped_by is None


async def test_stop_during_an_approved_change_kills_it_and_leaves_the_thread_usable(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    # Its rows cannot be counted in time (impact_timeout_s): allowed, to get a card at all.
    agent = await make_agent(approvals=Approvals(allow_uncounted=True))
    slow_write = f"UPDATE orders SET total = total + 0 WHERE id IN ({SLOW_READ})"
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": slow_write})))
    outcome = await agent.handle_message(SESSION, "touch", requester=REQUESTER, mode=Mode.AGENT)
    pending = outcome.pending  # type: ignore[union-attr]
    approval = asyncio.create_task(agent.approve(pending.id, approver=APPROVER, scope="once"))
    await wait_for(lambda: statement_running(shop_url))
    assert await agent.stop(SESSION, by=STOPPER)
    assert isinstance(await asyncio.wait_for(approval, 10), Stopped)
    await wait_for(lambda: nothing_running(shop_url), timeout_s=2.0)
    model_server.script(say("ok"))
    after = await agent.handle_message(SESSION, "and now?", requester=REQUESTER, mode=Mode.AGENT)
    assert after == Answer(text="ok")


async def test_stop_with_nothing_running_says_so(agent: Agent) -> None:
    assert await agent.stop(SESSION, by=STOPPER) is False
