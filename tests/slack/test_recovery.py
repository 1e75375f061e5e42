"""At start, each thread hears of the approved change the last process stopped while it
ran: what, where, that it may or may not have been applied — never re-run."""

from __future__ import annotations

from bot.agent.outcomes import Interrupted
from bot.slack.app import services_of_app
from bot.slack.recovery import tell_interrupted
from tests.fakes.slack_server import TEAM_ID
from tests.slack.conftest import APPROVER, ASKER, CHANNEL, STAGING, SlackHarness


def interrupted(thread_ts: str, text: str, session_id: str | None = None) -> Interrupted:
    return Interrupted(
        execution_id="x1",
        session_id=session_id or f"{TEAM_ID}:{CHANNEL}:{thread_ts}",
        database=STAGING,
        environment="staging",
        sql="UPDATE orders SET status = 'paid' WHERE id = 11",
        requester=ASKER,
        approver=APPROVER,
        started_at=1_700_000_000.0,
        applied=None,
        text=text,
    )


async def test_the_thread_is_told_what_was_running_when_the_bot_stopped(
    harness: SlackHarness,
) -> None:
    thread_ts = harness.new_ts()
    text = "The bot stopped while this change ran on <shop-staging>; it may or may not apply."
    told = await tell_interrupted(services_of_app(harness.app), [interrupted(thread_ts, text)])
    assert told == 1
    (message,) = harness.thread(thread_ts)
    assert message.text.startswith(":warning: The bot stopped while this change ran")
    assert "&lt;shop-staging&gt;" in message.text  # the agent's words, escaped


async def test_a_change_from_the_console_has_no_thread_to_tell(harness: SlackHarness) -> None:
    item = interrupted("1.1", "stopped", session_id="console-alice")
    assert await tell_interrupted(services_of_app(harness.app), [item]) == 0
