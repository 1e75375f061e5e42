"""An approval card Slack refuses (invalid_blocks) is posted with its buttons or not at all:
never as plain text nobody can approve. The approval is withdrawn (nothing runs, nothing
waits 24 h for a click that cannot come), the thread is told why, and the thread goes on."""

from __future__ import annotations

from bot.agent.sessions import SessionStatus
from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import refuse_block_id
from tests.slack.conftest import CHANNEL, SCHEMA, STAGING, SlackHarness, run_sql

MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"


async def status_of_11(harness: SlackHarness) -> object:
    rows = await run_sql(harness.shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = 11"])
    return rows[0][0]


async def test_a_card_slack_refuses_is_withdrawn_and_the_thread_is_told(
    harness: SlackHarness,
) -> None:
    assert harness.agent is not None and harness.state is not None
    slack = harness.slack
    refuse_block_id(slack, "approval")
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    told = await slack.wait_for(
        lambda: [t for t in harness.texts(thread_ts) if "could not be posted" in t]
    )
    await harness.idle()

    assert "invalid_blocks" in told[0] and "not run" in told[0]
    # No card without its buttons: nothing in the thread asks for an approval.
    assert not [t for t in harness.texts(thread_ts) if t.startswith("Approval needed")]
    assert harness.cards(thread_ts) == []
    assert await harness.agent.waiting_approvals() == []
    audit = await harness.state.audit.since(None)
    assert [line["outcome"] for line in audit if line["sql"] == MARK_PAID] == [
        "awaiting_approval",
        "withdrawn",
    ]
    assert await status_of_11(harness) == "pending"
    session = await harness.agent.session(f"T0TEAM:{CHANNEL}:{thread_ts}")
    assert session is not None and session.status is SessionStatus.IDLE
    assert session.pending_id is None

    # The thread goes on: the next message is answered.
    harness.model.script(say("Understood, nothing was changed."))
    await harness.mention("ok, thanks", thread_ts=thread_ts)
    await slack.wait_for(lambda: [t for t in harness.texts(thread_ts) if "Understood" in t])
    assert "could not be posted" in harness.model.tool_results()[-1]["content"]
