"""The card's number at its edges, through Slack against MariaDB: a stored function that
writes rows is refused wherever the statement calls it, a trigger's log rows are in the total
and hold the run to it, a table with an INVISIBLE column gets the Undo its card offers, a card
of 0 rows is bound at 0, and "up to N" of an upsert is bound at N, not 2N."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator

import pytest

from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import Message
from tests.slack.conftest import APPROVER, ASKER, CHANNEL, SCHEMA, STAGING, SlackHarness, run_sql

TABLES = ("et", "elog", "eshown", "esrc", "edst", "ebig")
SETUP = [
    f"CREATE TABLE {SCHEMA}.et (id INT PRIMARY KEY, a INT NOT NULL)",
    f"INSERT INTO {SCHEMA}.et VALUES (1, 0), (2, 0), (3, 0)",
    f"CREATE TABLE {SCHEMA}.elog (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
    f"CREATE TABLE {SCHEMA}.eshown (id INT PRIMARY KEY, a INT, s INT INVISIBLE DEFAULT 7)",
    f"INSERT INTO {SCHEMA}.eshown (id, a, s) VALUES (1, 0, 41), (2, 0, 42)",
    f"CREATE TABLE {SCHEMA}.esrc (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.esrc VALUES (1), (2), (3)",
    f"CREATE TABLE {SCHEMA}.edst (id INT PRIMARY KEY, n INT NOT NULL DEFAULT 0)",
    f"CREATE TABLE {SCHEMA}.ebig (id INT PRIMARY KEY)",
    f"INSERT INTO {SCHEMA}.ebig SELECT seq FROM {SCHEMA}.seq_1_to_2000",
    f"CREATE FUNCTION {SCHEMA}.f_ebig() RETURNS INT MODIFIES SQL DATA"
    f" BEGIN DELETE FROM {SCHEMA}.ebig; RETURN 1; END",
]
TEARDOWN = [f"DROP FUNCTION IF EXISTS {SCHEMA}.f_ebig"] + [
    f"DROP TABLE IF EXISTS {SCHEMA}.{name}" for name in TABLES
]
LOG_TRIGGER = (
    f"CREATE TRIGGER {SCHEMA}.et_log AFTER UPDATE ON {SCHEMA}.et FOR EACH ROW"
    f" INSERT INTO {SCHEMA}.elog (v) VALUES (NEW.a)"
)


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


async def card_for(harness: SlackHarness, sql: str, said: str) -> tuple[str, Message]:
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": sql})), say(said))
    thread_ts, _ = await harness.mention("please make this change")
    return thread_ts, await harness.wait_for_card(thread_ts)


async def approved(harness: SlackHarness, thread_ts: str, card: Message, said: str) -> Message:
    """Approve `card` and return it as decided, once the model has had its outcome."""
    await harness.click("approve_once", card, user=APPROVER)
    await harness.slack.wait_for(lambda: said in harness.texts(thread_ts))
    await harness.idle()
    return copy.deepcopy(harness.slack.message(CHANNEL, card.ts))


REFUSED = [
    # (sql, why)
    ("DO f_ebig()", "DO changes no row itself, the function 2,000"),
    ("INSERT INTO et VALUES (9, f_ebig())", "a VALUES that calls it"),
    ("DELETE FROM et WHERE id = 1 AND f_ebig() = 1", "a WHERE that calls it"),
]


@pytest.mark.parametrize(("sql", "why"), REFUSED, ids=[case[1] for case in REFUSED])
async def test_a_function_writing_rows_is_refused_wherever_it_is_called(
    tables: SlackHarness, sql: str, why: str
) -> None:
    harness = tables
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("No.")
    )
    thread_ts, _ = await harness.mention("run it")
    await harness.slack.wait_for(lambda: "No." in harness.texts(thread_ts))
    await harness.idle()

    assert not harness.cards(thread_ts, CHANNEL), why
    (told,) = harness.model.new_tool_results()
    assert told.startswith("Blocked: not every row this change writes can be counted"), why
    assert f"the rows the stored function {SCHEMA}.f_ebig writes" in told, why
    assert await count(harness, "ebig") == 2000, why


async def test_a_trigger_writing_a_log_is_in_the_cards_total(tables: SlackHarness) -> None:
    harness = tables
    await run_sql(harness.shop_url, [LOG_TRIGGER])
    thread_ts, card = await card_for(harness, "UPDATE et SET a = 5 WHERE id <= 2", "Set.")

    assert "4 rows" in card.text  # the notification: the total, in digits
    assert "*Rows:* 4 rows in all" in shown(card)
    assert f"2 rows by trigger {SCHEMA}.et_log (AFTER UPDATE on {SCHEMA}.et)" in shown(card)
    assert "*Undo:* not available: triggers fire" in shown(card)

    decided = await approved(harness, thread_ts, card, "Set.")
    assert "2 rows affected" in decided.text
    assert not any(block.get("block_id") == "undo" for block in decided.blocks)
    assert await count(harness, "elog") == 2


async def test_a_trigger_writing_more_than_its_card_said_is_rolled_back(
    tables: SlackHarness,
) -> None:
    harness = tables
    await run_sql(harness.shop_url, [LOG_TRIGGER])
    thread_ts, card = await card_for(harness, "UPDATE et SET a = 5 WHERE id <= 2", "Done.")
    assert "*Rows:* 4 rows in all" in shown(card)
    # Between card and click the trigger comes to write three log rows per row: 8 in all.
    await run_sql(
        harness.shop_url,
        [
            f"DROP TRIGGER {SCHEMA}.et_log",
            LOG_TRIGGER.replace("VALUES (NEW.a)", "VALUES (NEW.a), (NEW.a), (NEW.a)"),
        ],
    )

    decided = await approved(harness, thread_ts, card, "Done.")

    assert "rolled back" in decided.text and "nothing was changed" in decided.text
    assert await count(harness, "elog") == 0
    assert await run_sql(harness.shop_url, [f"SELECT SUM(a) FROM {SCHEMA}.et"]) == [(0,)]


async def test_a_table_with_an_invisible_column_gets_the_exact_undo_its_card_offers(
    tables: SlackHarness,
) -> None:
    harness = tables
    slack = harness.slack
    everything = f"SELECT id, a, s FROM {SCHEMA}.eshown ORDER BY id"
    before = await run_sql(harness.shop_url, [everything])
    thread_ts, card = await card_for(harness, "DELETE FROM eshown WHERE id = 2", "Deleted.")
    assert "*Undo:* available after it runs" in shown(card)

    decided = await approved(harness, thread_ts, card, "Deleted.")
    assert any(block.get("block_id") == "undo" for block in decided.blocks), decided.blocks
    assert await count(harness, "eshown") == 1

    await harness.press(decided, "undo", user=ASKER)
    cards = await slack.wait_for(
        lambda: len(harness.cards(thread_ts)) >= 2 and harness.cards(thread_ts)
    )
    await harness.idle()
    undo = copy.deepcopy(next(c for c in cards if c.ts != card.ts))
    await harness.click("approve_once", undo, user=APPROVER)
    await slack.wait_for(lambda: slack.message(CHANNEL, undo.ts).text.startswith("Approved"))
    await harness.idle()

    assert await run_sql(harness.shop_url, [everything]) == before  # s = 42 again, not 7


async def test_a_card_of_zero_rows_is_bound_at_zero(tables: SlackHarness) -> None:
    harness = tables
    thread_ts, card = await card_for(harness, "UPDATE et SET a = 1 WHERE id = 4", "Nothing.")
    assert "*Rows:* 0 rows" in shown(card)
    await run_sql(harness.shop_url, [f"INSERT INTO {SCHEMA}.et VALUES (4, 0)"])

    decided = await approved(harness, thread_ts, card, "Nothing.")

    assert "rolled back: changed 1 row, approved 0; nothing was changed" in decided.text
    assert await run_sql(harness.shop_url, [f"SELECT a FROM {SCHEMA}.et WHERE id = 4"]) == [(0,)]


async def test_an_upsert_up_to_n_is_bound_at_n_not_twice_n(tables: SlackHarness) -> None:
    harness = tables
    sql = "INSERT INTO edst (id) SELECT id FROM esrc ON DUPLICATE KEY UPDATE n = n + 1"
    thread_ts, card = await card_for(harness, sql, "Copied.")
    assert "*Rows:* up to 3 rows" in shown(card)
    # The source doubles between card and click: six new rows where the card said up to 3.
    await run_sql(harness.shop_url, [f"INSERT INTO {SCHEMA}.esrc VALUES (4), (5), (6)"])

    decided = await approved(harness, thread_ts, card, "Copied.")

    assert "rolled back: inserted 6 rows, approved 3" in decided.text
    assert await count(harness, "edst") == 0
