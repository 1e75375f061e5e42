"""Query results in the thread: a preview table and the rows as a CSV attachment."""

from __future__ import annotations

import asyncio
import csv
import io
import time

from bot.slack.sessions import Thread
from tests.fakes.model_server import call, calls, failure, say
from tests.fakes.slack_server import TEAM_ID
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
    table = preview.blocks[0]["text"]["text"]
    assert f"*{STAGING}* — 4 rows" in table and "Ada &amp; Co &lt;ltd&gt;" in table

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
    assert "truncated" in harness.thread(thread_ts)[1].blocks[0]["text"]["text"]


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


async def test_a_stopped_run_says_who_stopped_it_in_the_thread(harness: SlackHarness) -> None:
    slow = "SELECT COUNT(*) FROM orders AS a, seq_1_to_100000 AS b, seq_1_to_100000 AS c"
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": slow})))
    thread_ts, _ = await harness.mention("count a lot")
    session = Thread(TEAM_ID, CHANNEL, thread_ts).session_id
    agent = harness.agent
    assert agent is not None
    deadline = time.monotonic() + 10
    while not agent.is_running(session) or not harness.model.requests:  # the model was asked
        assert time.monotonic() < deadline, "the run never started"
        await asyncio.sleep(0.02)
    assert await agent.stop(session, by="U0STOPPER")
    await harness.slack.wait_for(lambda: "Stopped by <@U0STOPPER>." in harness.texts(thread_ts))
