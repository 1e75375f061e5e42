"""A run's progress stays within Slack's limits by construction, counted at the fake Slack:
each step change sent once, updates coalesced, at most two progress calls a second and
`CALLS_PER_TURN` in all, however many steps or however long the model thinks."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from bot.slack.app import services_of_app
from bot.slack.live import CALLS_PER_TURN, PROGRESS_INTERVAL_S, LiveProgress, Step
from bot.slack.sessions import Thread
from bot.slack.turns import Capabilities
from bot.slack.web_api import make_client
from tests.fakes.model_server import Turn, call, say
from tests.fakes.slack_server import TEAM_ID, Call, FakeSlack, streams
from tests.slack.conftest import ASKER, CHANNEL, STAGING, SlackHarness

# Slack methods a run's progress uses (the answer's own post is chat.postMessage too).
PROGRESS_METHODS = {
    "reactions.add",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "chat.postMessage",
    "chat.update",
    "chat.delete",
    "assistant.threads.setStatus",
}


def calls_of_thread(slack: FakeSlack, thread_ts: str) -> list[Call]:
    """Every call the bot made about one thread: into it, on its messages, on the mention."""
    in_thread = {m.ts for m in slack.messages if m.thread_ts == thread_ts} | {thread_ts}
    return [
        c
        for c in slack.calls
        if c.method in PROGRESS_METHODS
        and (
            c.args.get("thread_ts") == thread_ts
            or c.args.get("ts") in in_thread
            or c.args.get("timestamp") == thread_ts
        )
    ]


# Calls made once per run, outside the paced updates: the reaction, the end of the stream,
# the working message's removal (and the answer's post).
ONCE = {"reactions.add", "chat.stopStream", "chat.delete"}


def at_most_two_a_second(made: list[Call]) -> bool:
    """No three paced progress calls within one second (sent half a second apart at least;
    a busy machine may deliver one late, so their arrivals are allowed a little slack)."""
    times = sorted(c.at for c in made if c.method not in ONCE)
    return all(later - earlier >= 0.8 for earlier, later in zip(times, times[2:], strict=False))


async def test_a_three_step_turn_sends_each_step_change_once(harness: SlackHarness) -> None:
    services_of_app(harness.app).status_grace_s = 0.05
    select = "SELECT COUNT(*) AS n FROM orders"
    harness.model.script(
        Turn(tool_calls=(call("list_tables", {"database": STAGING}),), delay_s=0.6),
        Turn(tool_calls=(call("get_columns", {"database": STAGING, "table": "orders"}),)),
        Turn(tool_calls=(call("execute_query", {"database": STAGING, "sql": select}),)),
        Turn(text="Four orders.", delay_s=0.6),
    )
    thread_ts, _ = await harness.mention("how many orders?")
    await harness.slack.wait_for(lambda: any(s.stopped for s in streams(harness.slack)))
    await harness.idle()
    (stream,) = streams(harness.slack)
    assert len(stream.tasks()) == 3 and stream.text == "Four orders."
    # Each (step, status) went to Slack once: a step is not sent again unchanged.
    sent = Counter(
        (chunk["id"], chunk["status"]) for chunk in stream.chunks if chunk["type"] == "task_update"
    )
    assert set(sent.values()) == {1}, sent
    made = calls_of_thread(harness.slack, thread_ts)
    methods = Counter(c.method for c in made)
    assert methods["reactions.add"] == 1  # seen, at once
    assert methods["chat.startStream"] == methods["chat.stopStream"] == 1
    # Three steps coalesced into a handful of calls: well within the per-turn budget.
    assert len(made) <= 10, methods
    assert at_most_two_a_second(made)


async def test_a_turn_whose_model_thinks_for_thirty_seconds_makes_no_more_calls(
    harness: SlackHarness,
) -> None:
    services_of_app(harness.app).status_grace_s = 0.05
    harness.model.script(
        Turn(tool_calls=(call("list_tables", {"database": STAGING}),), delay_s=0.6),
        Turn(text="Thought it over.", delay_s=30.0),
    )
    started = time.monotonic()
    thread_ts, _ = await harness.mention("think hard")
    await harness.slack.wait_for(lambda: "Thought it over." in harness.texts(thread_ts), 45)
    await harness.idle()
    assert time.monotonic() - started >= 30.0
    made = calls_of_thread(harness.slack, thread_ts)
    # The reaction, the stream's start and its end, the working message (Stop) and its
    # removal: nothing while the model thinks.
    assert len(made) <= 7, Counter(c.method for c in made)
    thinking = [c for c in made if started + 2.0 < c.at < started + 30.0]
    assert thinking == []


async def test_a_flood_of_step_updates_is_coalesced_within_the_budget(
    slack: FakeSlack, harness: SlackHarness
) -> None:
    # A model that reports a step every few milliseconds for two seconds: the stream
    # takes the latest state at most twice a second, and never more than its budget.
    client = make_client(harness.settings, session=harness.session)
    thread = Thread(TEAM_ID, CHANNEL, harness.new_ts())
    live = LiveProgress(client, thread, Capabilities(), recipient=ASKER, grace_s=0.0)
    live.acknowledge(thread.thread_ts)
    started = time.monotonic()
    updates = 0
    while time.monotonic() - started < 2.0:
        updates += 1
        step = Step(f"step-{updates % 40}", f"Step {updates}", "in_progress", "")
        await live(step)
        await asyncio.sleep(0.002)
    assert await live.finish("Done.")
    await live.close()
    made = calls_of_thread(slack, thread.thread_ts)
    assert updates > 200
    assert len(made) == live.calls <= CALLS_PER_TURN
    most = 2.0 / PROGRESS_INTERVAL_S + 3  # the pace over two seconds, plus start and end
    assert len(made) <= most, Counter(c.method for c in made)
    assert at_most_two_a_second(made)
    (stream,) = [s for s in streams(slack) if s.thread_ts == thread.thread_ts]
    assert stream.stopped and stream.text == "Done."


async def test_every_question_is_acknowledged_at_once_unless_the_workspace_refuses_reactions(
    harness: SlackHarness,
) -> None:
    harness.model.script(say("First."), say("Second."), say("Third."))
    first, _ = await harness.mention("one")
    await harness.slack.wait_for(lambda: "First." in harness.texts(first))
    (seen,) = harness.slack.calls_to("reactions.add")
    assert seen.args == {"channel": CHANNEL, "timestamp": first, "name": "eyes"}
    # An install without reactions:write: refused once, then not asked again.
    harness.slack.fail_next("reactions.add", "missing_scope")
    second, _ = await harness.mention("two")
    await harness.slack.wait_for(lambda: "Second." in harness.texts(second))
    third, _ = await harness.mention("three")
    await harness.slack.wait_for(lambda: "Third." in harness.texts(third))
    await harness.idle()
    assert [c.args["timestamp"] for c in harness.slack.calls if c.method == "reactions.add"] == [
        first,
        second,
    ]
