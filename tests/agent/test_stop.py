"""Agent.stop: the running model run is cancelled, the statement it runs is killed on the
server, and the session says who stopped it the next time the model reads it."""

from __future__ import annotations

import asyncio
import time

from bot.agent import Agent, Failed, SessionStatus
from bot.config import Mode
from tests.agent.support import REQUESTER, SESSION, STAGING, AgentFactory, query
from tests.fakes.model_server import FakeModelServer, call, calls, say

# A read that takes minutes on MariaDB's sequence engine and needs no approval.
SLOW_READ = (
    "SELECT COUNT(*) AS n FROM seq_1_to_100000000000 WHERE MOD(seq, 7) = 3 /* dbagent-stop-test */"
)
STOPPER = "U0STOPPER"


async def running_on_server(shop_url: str) -> list[tuple]:
    return await query(
        shop_url,
        "SELECT id, info FROM information_schema.PROCESSLIST "
        "WHERE info LIKE '%dbagent-stop-test%' AND info NOT LIKE '%PROCESSLIST%'",
    )


async def wait_until_running(shop_url: str, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not await running_on_server(shop_url):
        assert time.monotonic() < deadline, "the slow read never started"
        await asyncio.sleep(0.05)


async def gone_from_server(shop_url: str, deadline: float) -> None:
    """The server acts on KILL QUERY at its next check: give it until `deadline`."""
    while await running_on_server(shop_url):
        assert time.monotonic() < deadline, "the statement still runs on the server"
        await asyncio.sleep(0.05)


async def test_stop_kills_the_running_statement_and_the_model_hears_who_stopped_it(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    agent: Agent = await make_agent()
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": SLOW_READ})))
    run = asyncio.create_task(
        agent.handle_message(SESSION, "sum it all", requester=REQUESTER, mode=Mode.AGENT)
    )
    await wait_until_running(shop_url)
    started = time.monotonic()
    assert await agent.stop(SESSION, by=STOPPER)
    outcome = await asyncio.wait_for(run, 5)
    assert isinstance(outcome, Failed) and f"<@{STOPPER}>" in outcome.message
    await gone_from_server(shop_url, started + 2.0)

    session = await agent.session(SESSION)
    assert session is not None and session.status is SessionStatus.IDLE
    model_server.script(say("Sorry about that."))
    await agent.handle_message(SESSION, "never mind", requester=REQUESTER, mode=Mode.AGENT)
    heard = " ".join(str(m.get("content")) for m in model_server.last_request["messages"])
    assert f"stopped by <@{STOPPER}>" in heard


async def test_stop_with_nothing_running_says_so(make_agent: AgentFactory) -> None:
    agent = await make_agent()
    assert await agent.stop(SESSION, by=STOPPER) is False
