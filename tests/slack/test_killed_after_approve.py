"""Killed right after an Approve click, before the change's write-ahead record: the bot served
as deployed (`python -m bot serve`, state in a redis-server of the test's own), SIGKILLed while
the approved run waits for a database connection — after its approval was taken and its run
marked running, before anything was recorded or sent. No record means nothing ran: the restart
does not say it "may or may not have been applied"; it takes the run up, and the approved
change runs, once.

The approved run waits for real: the bot may hold one connection (`[limits] pool_size = 1`),
and another thread's approved change holds it, waiting for a row the test has locked.

Killed earlier, at the first write after the click (the store's writes paused with `CLIENT
PAUSE … WRITE`, the bot seen waiting in `CLIENT LIST`), nothing of the decision was kept:
nothing is reported, the card still asks, and a click on it runs the change once."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from pathlib import Path

import asyncmy
import pytest
import redis.asyncio as redis

from bench.datasets import connect
from bot.agent.runs import outstanding_write
from bot.agent.sessions import Sessions, SessionStatus
from bot.config import Settings
from bot.slack.sessions import Thread
from bot.state import State, open_state
from bot.state.executions import call_execution_id
from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import TEAM_ID, FakeSlack, Message
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    SCHEMA,
    STAGING,
    SlackHarness,
    action_elements,
    run_sql,
)
from tests.slack.served import ServedBot, bot_environment, private_redis
from tests.waiting import until

DELETE_12 = "DELETE FROM orders WHERE id = 12"
CANCEL_11 = "UPDATE orders SET status = 'cancelled' WHERE id = 11"
DELETED = "Order 12 is deleted."
WAIT_S = 30.0


@contextlib.asynccontextmanager
async def served(env: dict[str, str]) -> AsyncIterator[ServedBot]:
    bot = await ServedBot(env).start()
    try:
        yield bot
    finally:
        bot.kill()
        await bot.stop()


@contextlib.asynccontextmanager
async def store_of(env: dict[str, str]) -> AsyncIterator[State]:
    """The served bot's store, read through the bot's own state API."""
    settings = Settings(
        dbagent_state_dir=Path(env["DBAGENT_STATE_DIR"]),
        dbagent_state_url=env.get("DBAGENT_STATE_URL"),
    )
    state = await open_state(settings, read_only=True)
    try:
        yield state
    finally:
        await state.close()


@pytest.fixture
async def row_11_locked(shop_url: str) -> AsyncIterator[asyncmy.Connection]:
    """Order 11 locked by another transaction: an approved change of it waits for the test."""
    connection = await connect(shop_url)
    async with connection.cursor() as cursor:
        await cursor.execute("START TRANSACTION")
        await cursor.execute("SELECT * FROM orders WHERE id = 11 FOR UPDATE")
        await cursor.fetchall()
    yield connection
    connection.close()


async def a_write_waits_for_row_11(shop_url: str) -> bool:
    """The approved change of order 11 holds the bot's connection, waiting for the row (its
    before-image read, `SELECT … FOR UPDATE`, comes first)."""
    sql = (
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
        f"WHERE DB = '{SCHEMA}' AND ID <> CONNECTION_ID() AND INFO LIKE '%orders%FOR UPDATE'"
    )
    return bool((await run_sql(shop_url, [sql]))[0][0])


async def approved_but_not_recorded(state: State, session_id: str) -> bool:
    """The approval was taken (its grant minted) and the run carries out the paused call, but
    the call's write-ahead record does not exist: the moment between the click and the record."""
    session = await Sessions(state.sessions).load(session_id)
    if session is None or session.status is not SessionStatus.RUNNING:
        return False
    write = outstanding_write(session)
    if write is None or not await state.grants.live(session_id, STAGING, DELETE_12):
        return False
    return await state.executions.get(call_execution_id(session_id, write.id)) is None


async def order_12_left(shop_url: str) -> int:
    return int(
        (await run_sql(shop_url, [f"SELECT COUNT(*) FROM {SCHEMA}.orders WHERE id = 12"]))[0][0]
    )


def with_one_connection(env: dict[str, str]) -> None:
    config = Path(env["DBAGENT_CONFIG"])
    config.write_text(config.read_text().replace("[limits]\n", "[limits]\npool_size = 1\n"))


async def card_of(slack: FakeSlack, sender: SlackHarness, thread_ts: str) -> Message:
    (card,) = await slack.wait_for(lambda: sender.cards(thread_ts), within_s=WAIT_S)
    return copy.deepcopy(card)


async def test_killed_after_the_approve_click_before_its_record_the_change_runs_once(
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    row_11_locked: asyncmy.Connection,
) -> None:
    sender = SlackHarness(slack, model, shop_url, tmp_path / "unused")
    model.script(
        calls(call("execute_query", {"database": STAGING, "sql": DELETE_12})),
        calls(call("execute_query", {"database": STAGING, "sql": CANCEL_11})),
        say(DELETED),  # asked once, by the run taken up after the restart
    )
    async with private_redis(tmp_path) as redis_url:
        env = bot_environment(tmp_path, slack, model, shop_url, state_url=redis_url)
        with_one_connection(env)
        async with served(env) as first:
            thread_ts, _ = await first.sender(sender).mention("delete order 12")
            card = await card_of(slack, sender, thread_ts)
            other_ts, _ = await sender.mention("cancel order 11")
            other_card = await card_of(slack, sender, other_ts)

            # The other change takes the bot's one connection and waits for row 11.
            assert (await sender.click("approve_once", other_card, user=APPROVER)).status == 200
            await until(lambda: a_write_waits_for_row_11(shop_url), within_s=WAIT_S)

            # Approve: the click is taken, its run started, and it waits for a connection.
            assert (await sender.click("approve_once", card, user=APPROVER)).status == 200
            session_id = Thread(TEAM_ID, CHANNEL, thread_ts).session_id
            async with store_of(env) as state:
                await until(lambda: approved_but_not_recorded(state, session_id), WAIT_S)
            first.kill()
        row_11_locked.close()  # the killed change of order 11 can never go on
        assert await order_12_left(shop_url) == 1  # nothing ran

        restarted = {**env, "PORT": str(free_port())}
        async with served(restarted):
            await slack.wait_for(lambda: DELETED in sender.texts(thread_ts), within_s=WAIT_S)
            # The change of order 11 was recorded and cut off: its thread is told.
            await slack.wait_for(
                lambda: any("not applied" in t for t in sender.texts(other_ts)), within_s=WAIT_S
            )
        texts = sender.texts(thread_ts)
        # The card clicked in the killed run asks for nothing any more: its buttons are gone.
        clicked = slack.message(CHANNEL, card.ts)
        assert clicked.text.startswith("No longer pending") and not action_elements(clicked)
        assert texts.count(DELETED) == 1
        assert not [t for t in texts if "may or may not" in t]
        assert await order_12_left(shop_url) == 0  # the approved change ran
        async with store_of(env) as state:
            executed = [r for r in await state.audit.since(None) if r["sql"] == DELETE_12]
        assert [r["outcome"] for r in executed].count("executed") == 1  # once
        (status,) = await run_sql(shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = 11"])
        assert status == ("pending",)


async def a_write_is_held(store: redis.Redis) -> bool:
    """A client of the store waits with a write the paused store holds back."""
    clients = await store.execute_command("CLIENT", "LIST")
    fields = [dict(part.split("=", 1) for part in line.split()) for line in clients.splitlines()]
    return any("b" in c["flags"] and c["cmd"] not in _BLOCKING_READS for c in fields)


_BLOCKING_READS = frozenset({"blpop", "brpop", "blmove", "xread", "xreadgroup", "wait"})


async def test_killed_while_the_store_holds_the_click_the_approval_still_waits_for_it(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    """Killed at the first write after the click, before anything of the decision was kept:
    nothing is reported, the card still asks, and a click on it runs the change once."""
    sender = SlackHarness(slack, model, shop_url, tmp_path / "unused")
    model.script(
        calls(call("execute_query", {"database": STAGING, "sql": DELETE_12})), say(DELETED)
    )
    async with private_redis(tmp_path) as redis_url:
        env = bot_environment(tmp_path, slack, model, shop_url, state_url=redis_url)
        store = redis.from_url(redis_url, decode_responses=True)
        try:
            async with served(env) as first:
                thread_ts, _ = await first.sender(sender).mention("delete order 12")
                card = await card_of(slack, sender, thread_ts)
                await store.execute_command("CLIENT", "PAUSE", "30000", "WRITE")
                try:
                    assert (await sender.click("approve_once", card, user=APPROVER)).status == 200
                    await until(lambda: a_write_is_held(store), WAIT_S)
                    first.kill()
                finally:
                    await store.execute_command("CLIENT", "UNPAUSE")
            assert await order_12_left(shop_url) == 1  # nothing ran

            restarted = {**env, "PORT": str(free_port())}
            async with served(restarted) as second:
                assert (
                    await second.sender(sender).click("approve_once", card, user=APPROVER)
                ).status == 200
                await slack.wait_for(lambda: DELETED in sender.texts(thread_ts), within_s=WAIT_S)
        finally:
            await store.aclose()
        texts = sender.texts(thread_ts)
        assert texts.count(DELETED) == 1
        assert not [t for t in texts if "restarted" in t or "may or may not" in t]
        assert slack.message(CHANNEL, card.ts).text.startswith("Approved")
        assert await order_12_left(shop_url) == 0
        async with store_of(env) as state:
            executed = [r for r in await state.audit.since(None) if r["sql"] == DELETE_12]
        assert [r["outcome"] for r in executed].count("executed") == 1
