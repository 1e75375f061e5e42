"""Query results in the thread: a table block with the SQL and row count, a chart when
asked for, and the rows as a CSV attachment — each message valid for Slack."""

from __future__ import annotations

import csv
import io
import json

from tests.fakes.model_server import call, calls, failure, say
from tests.slack.block_limits import assert_valid_message
from tests.slack.conftest import CHANNEL, STAGING, SlackHarness


async def test_results_come_as_a_preview_and_a_csv_in_the_thread(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(
        calls(
            call("execute_query", {"database": STAGING, "sql": "SELECT * FROM orders ORDER BY id"})
        ),
        say("Four orders, see the table."),
    )
    thread_ts, _ = await harness.mention("show me the orders")
    await slack.wait_for(lambda: slack.files_in(CHANNEL, thread_ts))
    await harness.idle()
    answer, preview = harness.thread(thread_ts)
    assert answer.text == "Four orders, see the table."
    assert preview.blocks[0]["text"]["text"] == f"*{STAGING}* — 4 rows"
    (table,) = [block for block in preview.blocks if block["type"] == "table"]
    cells = [[cell.get("text") for cell in row] for row in table["rows"]]
    assert [cell["type"] for cell in table["rows"][0]] == ["rich_text"] * 4  # a bold header
    assert "customer" in json.dumps(table["rows"][0])
    assert cells[2] == ["11", "Ada & Co <ltd>", "pending", "5.50"]  # raw text, as it is
    assert [s["align"] for s in table["column_settings"]] == ["right", "left", "left", "right"]
    assert "SELECT * FROM orders ORDER BY id" in preview.blocks[-1]["elements"][0]["text"]
    assert_valid_message({"text": preview.text or "x", "blocks": preview.blocks})

    (attached,) = slack.files_in(CHANNEL, thread_ts)
    assert preview.files == [attached.id]  # one message: the table, with the CSV attached
    assert attached.title == f"{STAGING} — 4 rows"
    assert attached.filename.endswith(".csv")
    rows = list(csv.reader(io.StringIO(attached.text)))
    assert rows == [
        ["id", "customer", "status", "total"],
        ["10", "Ada", "paid", "20.00"],
        ["11", "Ada & Co <ltd>", "pending", "5.50"],
        ["12", "Linus", "pending", "12.00"],
        ["13", '\'=HYPERLINK("x")', "shipped", "99.99"],
    ]


async def test_a_truncated_result_is_marked(harness: SlackHarness) -> None:
    slack = harness.slack
    sql = "SELECT id FROM orders ORDER BY id"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql, "limit": 2})),
        say("Here are two."),
    )
    thread_ts, _ = await harness.mention("two orders")
    (attached,) = await slack.wait_for(lambda: slack.files_in(CHANNEL, thread_ts))
    await harness.idle()
    assert attached.title == f"{STAGING} — 2 rows (truncated)"
    assert attached.text.split() == ["id", "10", "11"]
    summary = harness.thread(thread_ts)[1].blocks[0]["text"]["text"]
    assert "first 2 rows (the query had more" in summary


async def test_rows_fetched_before_the_model_failed_are_still_posted_with_the_error(
    harness: SlackHarness,
) -> None:
    slack = harness.slack
    sql = "SELECT id FROM orders ORDER BY id"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})),
        failure(400, "the model gave up"),  # after the query ran
    )
    thread_ts, _ = await harness.mention("the order ids")
    (attached,) = await slack.wait_for(lambda: slack.files_in(CHANNEL, thread_ts))
    await harness.idle()
    assert attached.text.split() == ["id", "10", "11", "12", "13"]
    assert any(text.startswith(":warning:") for text in harness.texts(thread_ts))
