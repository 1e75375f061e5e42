"""While a run works, through the fake Slack: steps streamed as task updates into the
answer's message, the fallback to a status line remembered per workspace, the assistant
status line where it applies, and Stop — which kills a running statement on the server."""

from __future__ import annotations

import asyncio
import time

from slack_sdk.models.messages.chunk import Chunk

from bot.slack.app import services_of_app
from tests.fakes.model_server import Turn, call, calls, say
from tests.fakes.slack_server import TEAM_ID, Message, streams
from tests.slack.block_limits import assert_valid_message
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    BYSTANDER,
    DM,
    GROUP_MEMBER,
    STAGING,
    SlackHarness,
    run_sql,
)
from tests.waiting import until

SLEEP = "SELECT SLEEP(60) AS slept /* dbagent-stop-run */"


def quick_status(harness: SlackHarness) -> None:
    services_of_app(harness.app).status_grace_s = 0.05


def slow_tables_run(harness: SlackHarness, answer: str = "One table: orders.") -> None:
    harness.model.script(
        Turn(tool_calls=(call("list_tables", {"database": STAGING}),), delay_s=0.3),
        Turn(text=answer, delay_s=0.3),
    )


async def test_a_slow_run_streams_its_steps_and_its_answer_into_one_message(
    harness: SlackHarness,
) -> None:
    quick_status(harness)
    slow_tables_run(harness)
    thread_ts, _ = await harness.mention("tables?")
    await harness.slack.wait_for(lambda: any(s.stopped for s in streams(harness.slack)))
    await harness.idle()
    (stream,) = streams(harness.slack)
    assert (stream.recipient_user_id, stream.recipient_team_id) == (ASKER, TEAM_ID)
    for chunk in stream.chunks:  # every chunk is one slack_sdk knows, with its fields
        parsed = Chunk.parse(chunk)
        assert parsed is not None and parsed.to_dict() == chunk
    tasks = stream.tasks()
    assert [t["title"] for t in tasks.values()] == [f"Listing tables in {STAGING}"]
    assert all(t["status"] == "complete" for t in tasks.values())
    assert stream.text == "One table: orders."
    # The answer is that message, and the working message with its Stop button is gone.
    assert harness.texts(thread_ts) == ["One table: orders."]
    assert (
        harness.slack.calls_to("chat.postMessage")[0].args["blocks"][1]["elements"][0]["action_id"]
        == "stop_run"
    )
    for posted in harness.slack.calls_to("chat.postMessage"):
        assert_valid_message(posted.args)


async def test_a_workspace_that_refuses_streaming_is_not_asked_again(
    harness: SlackHarness,
) -> None:
    quick_status(harness)
    harness.slack.fail_next("chat.startStream", "not_allowed_token_type")
    slow_tables_run(harness, "First.")
    first, _ = await harness.mention("tables?")
    await harness.slack.wait_for(lambda: "First." in harness.texts(first))
    await harness.idle()
    slow_tables_run(harness, "Second.")
    second, _ = await harness.mention("tables again?")
    await harness.slack.wait_for(lambda: "Second." in harness.texts(second))
    await harness.idle()
    assert len(harness.slack.calls_to("chat.startStream")) == 1  # tried once, remembered
    assert harness.texts(second) == ["Second."]  # the status line came and went
    shown = [c.args["text"] for c in harness.slack.calls_to("chat.update")]
    assert any(f"Listing tables in {STAGING}" in text for text in shown)


async def test_the_assistant_status_is_tried_in_direct_messages_and_remembered_when_refused(
    harness: SlackHarness,
) -> None:
    quick_status(harness)
    slow_tables_run(harness, "First.")
    first, _ = await harness.dm("tables?")
    await harness.slack.wait_for(lambda: "First." in harness.texts(first, DM))
    await harness.idle()
    slow_tables_run(harness, "Second.")
    second, _ = await harness.dm("again?")
    await harness.slack.wait_for(lambda: "Second." in harness.texts(second, DM))
    await harness.idle()
    # The fake answers not_allowed_token_type, as Slack does outside assistant threads.
    (tried,) = harness.slack.calls_to("assistant.threads.setStatus")
    assert tried.args["channel_id"] == DM and tried.args["thread_ts"] == first


async def running_sleeps(harness: SlackHarness) -> list[tuple]:
    return await run_sql(
        harness.shop_url,
        [
            "SELECT id FROM information_schema.PROCESSLIST "
            "WHERE info LIKE '%dbagent-stop-run%' AND info NOT LIKE '%PROCESSLIST%'"
        ],
    )


async def start_sleeping(harness: SlackHarness) -> tuple[str, Message]:
    """A mention whose approved statement is SELECT SLEEP(60), running on the server."""
    quick_status(harness)
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": SLEEP})))
    thread_ts, _ = await harness.mention("sleep for a minute")
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    await until(lambda: running_sleeps(harness))  # SLEEP(60) started
    working = await harness.slack.wait_for(lambda: harness.working_message(thread_ts))
    return thread_ts, working


async def test_stop_during_a_sleep_kills_it_on_the_server_and_the_thread_says_who(
    harness: SlackHarness,
) -> None:
    thread_ts, working = await start_sleeping(harness)
    stopped_at = time.monotonic()
    await harness.press(working, "stop_run", user=ASKER)
    while await running_sleeps(harness):
        assert time.monotonic() - stopped_at < 2.0, "the statement still runs on the server"
        await asyncio.sleep(0.05)
    note = await harness.slack.wait_for(
        lambda: [t for t in harness.texts(thread_ts) if "Stopped by" in t]
    )
    assert note == [f":octagonal_sign: Stopped by <@{ASKER}>. " + note[0].split(". ", 1)[1]]
    await harness.idle()
    assert harness.working_message(thread_ts) is None  # the Stop button went with it
    (card,) = harness.cards(thread_ts)
    assert f"stopped by <@{ASKER}> while it ran" in str(card.blocks)
    assert not any(b["type"] == "actions" for b in card.blocks)  # nothing left to click

    # The session goes on: the model hears who stopped the last run.
    harness.model.script(say("Anything else?"))
    await harness.message("ok, thanks", thread_ts=thread_ts)
    await harness.slack.wait_for(lambda: "Anything else?" in harness.texts(thread_ts))
    heard = " ".join(str(m.get("content")) for m in harness.model.last_request["messages"])
    assert f"stopped by {ASKER}" in heard  # the user id: the agent knows no Slack mentions


async def test_only_the_asker_or_an_approver_may_stop_a_run(harness: SlackHarness) -> None:
    thread_ts, working = await start_sleeping(harness)
    await harness.press(working, "stop_run", user=BYSTANDER)
    (refusal,) = await harness.slack.wait_for(lambda: harness.slack.ephemerals(BYSTANDER))
    assert f"<@{ASKER}>" in refusal.text
    assert await running_sleeps(harness)  # still running
    await harness.press(working, "stop_run", user=GROUP_MEMBER)  # an approver, by group
    note = await harness.slack.wait_for(
        lambda: [t for t in harness.texts(thread_ts) if "Stopped by" in t]
    )
    assert f"<@{GROUP_MEMBER}>" in note[0]
    assert await running_sleeps(harness) == []


async def test_stop_after_the_run_ended_says_there_was_nothing_to_stop(
    harness: SlackHarness,
) -> None:
    quick_status(harness)
    slow_tables_run(harness)
    thread_ts, _ = await harness.mention("tables?")
    working = await harness.slack.wait_for(lambda: harness.working_message(thread_ts))
    kept = Message(working.channel, working.ts, working.text, working.blocks, working.thread_ts)
    await harness.slack.wait_for(lambda: "One table: orders." in harness.texts(thread_ts))
    await harness.idle()
    await harness.press(kept, "stop_run", user=ASKER)
    (note,) = await harness.slack.wait_for(lambda: harness.slack.ephemerals(ASKER))
    assert "Nothing was running" in note.text


async def test_a_run_that_waits_for_an_approver_ends_its_stream_with_that_step(
    harness: SlackHarness,
) -> None:
    quick_status(harness)
    change = "UPDATE orders SET status = 'paid' WHERE id = 11"
    harness.model.script(
        Turn(tool_calls=(call("list_tables", {"database": STAGING}),), delay_s=0.3),
        Turn(
            tool_calls=(call("execute_query", {"database": STAGING, "sql": change}),),
            delay_s=0.6,  # past the pace of progress calls: the stream has begun
        ),
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    await harness.wait_for_card(thread_ts)
    (stream,) = await harness.slack.wait_for(
        lambda: [s for s in streams(harness.slack) if s.stopped]
    )
    steps = list(stream.tasks().values())
    assert steps[-1]["title"] == "Waiting for approval" and steps[-1]["status"] == "pending"


async def test_a_queued_request_offers_stop_only_once_it_runs(harness: SlackHarness) -> None:
    quick_status(harness)
    harness.model.script(
        Turn(text="Slow first.", delay_s=0.5),
        Turn(text="Then second.", delay_s=0.8),  # past the pace of progress calls
    )
    thread_ts, _ = await harness.mention("first")
    await harness.slack.wait_for(lambda: harness.model.requests)
    await harness.message("second", thread_ts=thread_ts)
    await harness.slack.wait_for(lambda: "Then second." in harness.texts(thread_ts))
    await harness.idle()
    queued = next(
        c for c in harness.slack.calls_to("chat.postMessage") if "Queued" in c.args["text"]
    )
    assert [b["type"] for b in queued.args["blocks"]] == ["context"]  # no Stop while queued
    offered = [
        c
        for c in harness.slack.calls_to("chat.update")
        if c.at > queued.at and "stop_run" in str(c.args.get("blocks"))
    ]
    assert offered  # once its run had begun, the same message gained Stop
