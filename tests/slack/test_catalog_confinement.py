"""Through Slack's real entry point (a signed event, the Bolt app, the agent, MariaDB): a
question about the catalog is answered from rows about the database's own schema only."""

from __future__ import annotations

import csv
import io

from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import CHANNEL, SCHEMA, STAGING, SlackHarness


async def test_the_catalog_shows_only_the_own_schema(harness: SlackHarness) -> None:
    slack = harness.slack
    sql = "SELECT DISTINCT TABLE_SCHEMA FROM information_schema.TABLES ORDER BY 1"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("One schema.")
    )
    thread_ts, _ = await harness.mention("which schemas are there?")
    (attached,) = await slack.wait_for(lambda: slack.files_in(CHANNEL, thread_ts))
    await harness.idle()
    assert list(csv.reader(io.StringIO(attached.text))) == [["TABLE_SCHEMA"], [SCHEMA]]


async def test_a_show_listing_every_schema_is_refused_with_what_to_ask_instead(
    harness: SlackHarness,
) -> None:
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": "SHOW DATABASES"})),
        say("I may not list them."),
    )
    thread_ts, _ = await harness.mention("list every database on the server")
    await harness.slack.wait_for(
        lambda: any(m.text == "I may not list them." for m in harness.thread(thread_ts))
    )
    await harness.idle()
    (result,) = harness.model.tool_results()
    assert result["content"].startswith("Blocked: SHOW DATABASES shows every schema")
    assert "information_schema.SCHEMATA" in result["content"]
    assert not harness.slack.files_in(CHANNEL, thread_ts)
