"""Two bot processes sharing one Redis state, as two replicas behind one Slack app: an
approval clicked on both runs the change once, and the thread's history stays whole."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agent import Agent, AlreadyDecided, Answer, AwaitingApproval, Skills, build_model_client
from bot.agent.sessions import SessionStatus
from bot.config import Mode
from bot.db import DatabaseRegistry
from bot.state import GrantScope, open_state
from bot.state.executions import ExecutionRecord
from tests.agent.support import APPROVER, REQUESTER, SESSION, STAGING, make_settings, query
from tests.fakes.model_server import FakeModelServer, call, calls, say

BUMP_10 = "UPDATE orders SET total = total + 1 WHERE id = 10"
TOTAL_10 = "SELECT total FROM orders WHERE id = 10"


@pytest.fixture
async def replicas(
    model_server: FakeModelServer,
    shop_url: str,
    redis_url: str,
    redis_prefix: str,
    tmp_path: Path,
) -> AsyncIterator[list[Agent]]:
    agents: list[Agent] = []
    closers = []
    for n in range(2):
        settings = make_settings(model_server, shop_url).model_copy(
            update={"dbagent_state_url": redis_url, "dbagent_state_dir": tmp_path / f"r{n}"}
        )
        state = await open_state(settings, redis_prefix=redis_prefix)
        registry = DatabaseRegistry(settings.databases, settings.limits)
        model = build_model_client(settings)
        agents.append(
            Agent(
                settings=settings,
                state=state,
                databases=registry,
                model=model,
                skills=Skills.load(),
            )
        )
        closers += [model.close, registry.close, state.close]
    yield agents
    for close in closers:
        await close()


async def test_an_approval_clicked_on_two_replicas_at_once_runs_once(
    replicas: list[Agent], model_server: FakeModelServer, shop_url: str
) -> None:
    first, second = replicas
    (before,) = (await query(shop_url, TOTAL_10))[0]
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": BUMP_10})), say("Bumped.")
    )
    paused = await first.handle_message(SESSION, "bump 10", requester=REQUESTER, mode=Mode.AGENT)
    assert isinstance(paused, AwaitingApproval)

    async def click(agent: Agent) -> object:
        try:
            return await agent.approve(paused.pending.id, approver=APPROVER, scope=GrantScope.ONCE)
        except AlreadyDecided as exc:
            return exc

    outcomes = await asyncio.gather(click(first), click(second))
    assert sorted(type(o).__name__ for o in outcomes) == ["AlreadyDecided", "Answer"]
    (after,) = (await query(shop_url, TOTAL_10))[0]
    assert after == before + 1
    executed = [r for r in await second.audit.since(None) if r["outcome"] == "executed"]
    assert len(executed) == 1


async def test_messages_of_one_thread_on_two_replicas_are_both_answered_in_order(
    replicas: list[Agent], model_server: FakeModelServer
) -> None:
    first, second = replicas
    model_server.script(say("one"), say("two"))
    answers = await asyncio.gather(
        first.handle_message(SESSION, "first", requester=REQUESTER, mode=Mode.AGENT),
        second.handle_message(SESSION, "second", requester=REQUESTER, mode=Mode.AGENT),
    )
    assert sorted(a.text for a in answers if isinstance(a, Answer)) == ["one", "two"]
    session = await first.session(SESSION)
    assert session is not None
    users = [m["content"] for m in session.messages if m["role"] == "user"]
    assistants = [m["content"] for m in session.messages if m["role"] == "assistant"]
    assert sorted(users) == ["first", "second"] and assistants == ["one", "two"]
    # Whole turns, one after the other: neither run lost the other's exchange.
    assert [m["role"] for m in session.messages] == ["user", "assistant", "user", "assistant"]


async def test_workers_starting_at_once_report_a_cut_off_change_once(
    replicas: list[Agent],
) -> None:
    """`serve --workers N`: every worker runs recovery as it starts."""
    first, second = replicas
    await first.state.executions.begin(
        ExecutionRecord(
            id="cut-off",
            session_id=SESSION,
            database=STAGING,
            environment="staging",
            sql=BUMP_10,
            requester=REQUESTER.user_id,
            approver=APPROVER,
            grant_id="g1",
            transactional=True,
            started_at=time.time(),
            pending_id="p1",
        )
    )
    found = await asyncio.gather(first.recover(), second.recover())
    (item,) = [item for items in found for item in items]
    assert (item.execution_id, item.pending_id) == ("cut-off", "p1")
    unknown = [r for r in await first.audit.since(None) if r["outcome"].startswith("outcome unk")]
    assert len(unknown) == 1


async def test_workers_starting_at_once_take_up_a_cut_off_run_once(
    replicas: list[Agent], model_server: FakeModelServer
) -> None:
    first, second = replicas
    model_server.script(say("Hello."))
    await first.handle_message(SESSION, "hi", requester=REQUESTER, mode=Mode.AGENT)
    session = await first.session(SESSION)
    assert session is not None
    session.status = SessionStatus.RUNNING  # as a process killed while thinking leaves it
    await first.sessions.save(session)
    found = await asyncio.gather(first.recover(), second.recover())
    assert [type(item).__name__ for items in found for item in items] == ["RunResumable"]
