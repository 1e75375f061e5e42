"""The card tells the whole truth, through Slack against MariaDB: a cascade's rows are in its
number, a trigger's too, and a stored function that writes rows it cannot count gets no card
at all (or, allowed, a card that says so in words); no Undo is offered that does not come."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import Message
from tests.slack.conftest import APPROVER, CHANNEL, SCHEMA, STAGING, SlackHarness, run_sql

SETUP = [
    f"CREATE TABLE {SCHEMA}.cp (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.cp VALUES (1), (2)",
    f"CREATE TABLE {SCHEMA}.cc (id INT PRIMARY KEY, pid INT,"
    f" CONSTRAINT fk_cc FOREIGN KEY (pid) REFERENCES {SCHEMA}.cp (id) ON DELETE CASCADE)",
    f"INSERT INTO {SCHEMA}.cc SELECT seq, 1 FROM {SCHEMA}.seq_1_to_19",
    f"CREATE TABLE {SCHEMA}.cbig (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.cbig SELECT seq FROM {SCHEMA}.seq_1_to_2000",
    f"CREATE FUNCTION {SCHEMA}.f_big() RETURNS INT MODIFIES SQL DATA"
    f" BEGIN DELETE FROM {SCHEMA}.cbig; RETURN 1; END",
]
TEARDOWN = [
    f"DROP FUNCTION IF EXISTS {SCHEMA}.f_big",
    f"DROP TABLE IF EXISTS {SCHEMA}.cc",
    f"DROP TABLE IF EXISTS {SCHEMA}.cp",
    f"DROP TABLE IF EXISTS {SCHEMA}.cbig",
]


@pytest.fixture
async def tables(harness: SlackHarness) -> AsyncIterator[SlackHarness]:
    await run_sql(harness.shop_url, TEARDOWN + SETUP)
    yield harness
    await run_sql(harness.shop_url, TEARDOWN)


def shown(message: Message) -> str:
    return json.dumps(message.blocks, ensure_ascii=False)


async def count(harness: SlackHarness, table: str) -> int:
    rows = await run_sql(harness.shop_url, [f"SELECT COUNT(*) FROM {SCHEMA}.{table}"])
    return int(rows[0][0])


async def test_a_cascading_delete_shows_every_row_it_deletes(tables: SlackHarness) -> None:
    harness = tables
    sql = "DELETE FROM cp WHERE id = 1"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("Deleted.")
    )
    thread_ts, _ = await harness.mention("delete customer 1 and everything of theirs")
    card = await harness.wait_for_card(thread_ts)

    assert "20 rows" in card.text  # the notification: the total, in digits
    assert "*Rows:* 20 rows in all" in shown(card)
    assert f"19 rows of {SCHEMA}.cc via fk_cc (ON DELETE CASCADE)" in shown(card)
    assert "*Undo:* not available: foreign keys cascade from cp" in shown(card)

    await harness.click("approve_once", card, user=APPROVER)
    await harness.slack.wait_for(lambda: "Deleted." in harness.texts(thread_ts))
    await harness.idle()
    assert (await count(harness, "cp"), await count(harness, "cc")) == (1, 0)
    decided = harness.slack.message(CHANNEL, card.ts)
    assert not any(block.get("block_id") == "undo" for block in decided.blocks)


async def test_a_function_writing_rows_it_cannot_count_gets_no_card(tables: SlackHarness) -> None:
    harness = tables
    sql = "UPDATE orders SET total = total + f_big() WHERE id = 11"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("Refused.")
    )
    thread_ts, _ = await harness.mention("bump order 11")
    await harness.slack.wait_for(lambda: "Refused." in harness.texts(thread_ts))
    await harness.idle()

    assert not harness.cards(thread_ts, CHANNEL)
    (told,) = harness.model.new_tool_results()
    assert told.startswith("Blocked: not every row this change writes can be counted")
    assert f"the rows the stored function {SCHEMA}.f_big writes" in told
    assert await count(harness, "cbig") == 2000


async def test_allowed_uncounted_the_card_says_what_is_not_counted(tables: SlackHarness) -> None:
    harness = tables
    harness.settings.approvals.allow_uncounted = True
    sql = "UPDATE orders SET total = total + f_big() WHERE id = 11"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("Rolled back.")
    )
    thread_ts, _ = await harness.mention("bump order 11")
    card = await harness.wait_for_card(thread_ts)

    assert "*Rows:* 1 row + rows not counted" in shown(card)
    assert f"*Not counted:* the rows the stored function {SCHEMA}.f_big writes" in shown(card)
    assert "*Undo:* not available" in shown(card)

    await harness.click("approve_once", card, user=APPROVER)
    await harness.slack.wait_for(lambda: "Rolled back." in harness.texts(thread_ts))
    await harness.idle()
    assert await count(harness, "cbig") == 2000  # 2,001 rows is more than 1 + 1,000
