"""Through Slack's real entry point, on Redis: whoever can write the bot's Redis but lacks
DBAGENT_STATE_KEY can neither plant a grant that runs SQL without a click, nor change the SQL
of a card after it was shown. What fails its HMAC is treated as absent (bot.state.seal)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.slack.blocks import sql_actions as run_blocks
from bot.state import State, open_state
from bot.state.grants import Grants, GrantScope, RedisGrantTable
from bot.state.pending import PendingApprovals
from bot.state.records import RedisRecordTable
from bot.state.redis_db import RedisDb
from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import TEAM_ID, FakeSlack
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    CHANNEL,
    DM,
    SCHEMA,
    STAGING,
    SlackHarness,
    action_elements,
    run_sql,
)

DELETE = "DELETE FROM orders WHERE id = 13"
WRONG_KEY = "an-attackers-own-key-" + "f" * 32


@pytest.fixture
async def on_redis(
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    redis_url: str,
    redis_prefix: str,
) -> AsyncIterator[SlackHarness]:
    bot = SlackHarness(slack, model, shop_url, tmp_path / "bot", redis=(redis_url, redis_prefix))
    await bot.start()
    yield bot
    await bot.stop()


async def attacker(harness: SlackHarness, key: str | None) -> tuple[Grants, RedisDb | State]:
    """The bot's Redis, written with `key` (None: no key at all, records without a MAC)."""
    assert harness.redis is not None and harness.state is not None
    url, prefix = harness.redis
    if key is None:
        db = await RedisDb.open(url, prefix=prefix)
        return Grants(RedisGrantTable(db), harness.settings.limits), db
    settings = harness.settings.model_copy(
        update={"dbagent_state_url": url, "dbagent_state_key": SecretStr(key)}
    )
    state = await open_state(settings, redis_prefix=prefix)
    return state.grants, state


async def order_13(harness: SlackHarness) -> list[tuple[object, ...]]:
    return await run_sql(harness.shop_url, [f"SELECT id FROM {SCHEMA}.orders WHERE id = 13"])


@pytest.mark.parametrize("key", [None, WRONG_KEY], ids=["no key", "another key"])
async def test_a_planted_grant_runs_nothing_without_a_click(
    on_redis: SlackHarness, key: str | None
) -> None:
    thread_ts = on_redis.new_ts()
    grants, opened = await attacker(on_redis, key)
    try:
        await grants.mint(
            f"{TEAM_ID}:{CHANNEL}:{thread_ts}", STAGING, DELETE, GrantScope.THREAD, APPROVER
        )
    finally:
        await opened.close()
    on_redis.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": DELETE})), say("Deleted.")
    )
    await on_redis.mention("delete order 13", ts=thread_ts)
    await on_redis.wait_for_card(thread_ts)
    assert await order_13(on_redis) == [(13,)], "the planted grant ran the DELETE"


async def test_a_cards_sql_changed_in_the_store_is_not_run(on_redis: SlackHarness) -> None:
    # A Run button's card: what an approver's click runs is the pending record's own SQL.
    on_redis.model.script(say(f"On {STAGING}:\n```sql\nDELETE FROM orders WHERE id = 99\n```"))
    thread_ts, _ = await on_redis.dm("how would I delete order 99?")
    await on_redis.slack.wait_for(lambda: on_redis.thread(thread_ts, DM))
    await on_redis.idle()
    (answer,) = [m for m in on_redis.thread(thread_ts, DM) if action_elements(m)]
    await on_redis.press(answer, run_blocks.RUN, user=ASKER)
    card = await on_redis.wait_for_card(thread_ts, DM)
    assert on_redis.redis is not None
    url, prefix = on_redis.redis
    db = await RedisDb.open(url, prefix=prefix)
    try:  # the record as stored, its SQL rewritten (its MAC kept: no key to make a new one)
        raw = PendingApprovals(RedisRecordTable(db, "pending", None, indexed=True))
        (record,) = await raw.waiting()
        await raw.update(record["id"], lambda r: ({**r, "sql": DELETE}, None))
    finally:
        await db.close()
    await on_redis.click("approve_once", card, user=APPROVER)
    await on_redis.settled()
    assert await order_13(on_redis) == [(13,)], "the rewritten SQL ran"
