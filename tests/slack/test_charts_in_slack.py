"""A chart the model asks for, end to end: drawn from the rows the query returned, posted
with the table and the CSV, and the table alone when Slack refuses the chart's block."""

from __future__ import annotations

from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import Message, refuse_block_type
from tests.slack.block_limits import assert_valid_message
from tests.slack.conftest import CHANNEL, STAGING, SlackHarness

BY_STATUS = (
    "SELECT status, SUM(total) AS revenue, MAX(total) AS biggest FROM orders GROUP BY status"
)
CHART = {"type": "bar", "x": "status", "y": ["revenue", "biggest"], "title": "Revenue by status"}


def script_chart(harness: SlackHarness, chart: dict | None = CHART) -> None:
    arguments = {"database": STAGING, "sql": BY_STATUS + " ORDER BY status"}
    if chart is not None:
        arguments["chart"] = chart
    harness.model.script(calls(call("execute_query", arguments)), say("Pending leads."))


def result_message(harness: SlackHarness, thread_ts: str) -> Message:
    return next(m for m in harness.thread(thread_ts) if any(b["type"] == "table" for b in m.blocks))


async def test_a_chart_is_drawn_from_the_result_rows(harness: SlackHarness) -> None:
    script_chart(harness)
    thread_ts, _ = await harness.mention("orders by status, as a chart")
    await harness.slack.wait_for(lambda: harness.slack.files_in(CHANNEL, thread_ts))
    await harness.idle()
    message = result_message(harness, thread_ts)
    assert_valid_message({"text": message.text or "x", "blocks": message.blocks})
    (chart,) = [b for b in message.blocks if b["type"] == "data_visualization"]
    assert chart["title"] == "Revenue by status"
    series = {s["name"]: [p["value"] for p in s["data"]] for s in chart["chart"]["series"]}
    # The shop has one paid (20.00), two pending (5.50 + 12.00), one shipped (99.99).
    assert chart["chart"]["axis_config"]["categories"] == ["paid", "pending", "shipped"]
    assert series == {"revenue": [20.0, 17.5, 99.99], "biggest": [20.0, 12.0, 99.99]}
    assert message.files  # the CSV is attached to the same message


async def test_when_slack_refuses_the_chart_the_table_is_posted_alone(
    harness: SlackHarness,
) -> None:
    refuse_block_type(harness.slack, "data_visualization")
    script_chart(harness)
    thread_ts, _ = await harness.mention("orders by status, as a chart")
    await harness.slack.wait_for(lambda: harness.slack.files_in(CHANNEL, thread_ts))
    await harness.idle()
    message = result_message(harness, thread_ts)
    kinds = [b["type"] for b in message.blocks]
    assert "data_visualization" not in kinds
    assert "the table is shown instead" in str(message.blocks)
    assert len(harness.slack.files_in(CHANNEL, thread_ts)) == 1  # the CSV still comes


async def test_a_chart_of_a_column_the_result_lacks_is_refused_to_the_model(
    harness: SlackHarness,
) -> None:
    script_chart(harness, {**CHART, "y": ["profit"]})
    thread_ts, _ = await harness.mention("orders by status, as a chart")
    await harness.slack.wait_for(lambda: harness.slack.files_in(CHANNEL, thread_ts))
    await harness.idle()
    assert "not drawn" in harness.model.new_tool_results()[0]
    message = result_message(harness, thread_ts)
    assert "data_visualization" not in [b["type"] for b in message.blocks]
    assert "No chart: the chart names columns the result does not have" in str(message.blocks)
