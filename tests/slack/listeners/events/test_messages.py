"""Events: mentions, DMs and thread replies become agent runs, answered in their thread."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.slack.app import services_of_app
from tests.fakes.model_server import Turn, call, calls, say
from tests.fakes.slack_server import BOT_USER_ID
from tests.slack.block_limits import assert_valid_message
from tests.slack.conftest import ASKER, CHANNEL, DM, STAGING, SlackHarness


def user_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "user"]


async def answered(harness: SlackHarness, thread_ts: str, text: str, channel: str = CHANNEL):
    await harness.slack.wait_for(lambda: any(text in t for t in harness.texts(thread_ts, channel)))
    await harness.idle()
    return harness.texts(thread_ts, channel)


async def test_a_mention_is_answered_in_its_thread(harness: SlackHarness) -> None:
    harness.model.script(
        calls(call("list_tables", {"database": STAGING})), say("There is one table: orders.")
    )
    thread_ts, sent = await harness.mention("which tables are there?")
    assert sent.status == 200
    texts = await answered(harness, thread_ts, "one table")
    # Only the answer is left in the thread: the status line was removed.
    assert texts == ["There is one table: orders."]
    assert user_messages(harness.model.requests[0]) == ["which tables are there?"]
    assert "execute_query" in harness.model.tools_offered(0)  # channels use agent mode


def status_lines(harness: SlackHarness) -> list[str]:
    return [
        c.args["text"]
        for c in harness.slack.calls
        if c.method in ("chat.postMessage", "chat.update") and "hourglass" in c.args["text"]
    ]


async def test_where_streaming_is_refused_a_slow_run_shows_progress_in_a_status_line(
    harness: SlackHarness,
) -> None:
    services_of_app(harness.app).status_grace_s = 0.1
    harness.slack.fail_next("chat.startStream", "unknown_method")
    # Each step outlasts the pace of progress calls (two a second), so each is shown.
    harness.model.script(
        Turn(tool_calls=(call("list_tables", {"database": STAGING}),), delay_s=0.8),
        Turn(text="Done.", delay_s=0.8),
    )
    thread_ts, _ = await harness.mention("tables?")
    await answered(harness, thread_ts, "Done.")
    lines = status_lines(harness)
    assert lines[0].endswith("Working on it…")
    assert any(f"Listing tables in {STAGING}" in line for line in lines)
    assert len(harness.slack.calls_to("chat.delete")) == 1
    assert harness.texts(thread_ts) == ["Done."]  # the status line is gone


async def test_a_quick_answer_shows_no_status_line(harness: SlackHarness) -> None:
    harness.model.script(calls(call("list_tables", {"database": STAGING})), say("Quick."))
    thread_ts, _ = await harness.mention("tables?")
    await answered(harness, thread_ts, "Quick.")
    assert status_lines(harness) == []
    assert harness.slack.calls_to("chat.delete") == []


async def test_a_dm_runs_in_ask_mode(harness: SlackHarness) -> None:
    harness.model.script(say("In ask mode I only read the catalogue."))
    thread_ts, _ = await harness.dm("can you delete stuff?")
    await answered(harness, thread_ts, "ask mode", channel=DM)
    offered = harness.model.tools_offered(0)
    assert "list_tables" in offered and "execute_query" not in offered


async def test_a_channel_configured_for_ask_mode_gets_ask_mode(harness: SlackHarness) -> None:
    harness.model.script(say("Asked."))
    thread_ts, _ = await harness.mention("hello", channel="C0ASKONLY")
    await answered(harness, thread_ts, "Asked.", channel="C0ASKONLY")
    assert "execute_query" not in harness.model.tools_offered(0)


async def test_a_reply_in_the_bots_thread_continues_without_a_mention(
    harness: SlackHarness,
) -> None:
    harness.model.script(say("First answer."), say("Second answer."))
    thread_ts, _ = await harness.mention("first question")
    await answered(harness, thread_ts, "First answer.")
    await harness.message("and a follow-up", thread_ts=thread_ts)
    texts = await answered(harness, thread_ts, "Second answer.")
    assert texts == ["First answer.", "Second answer."]
    assert user_messages(harness.model.last_request) == ["first question", "and a follow-up"]


async def test_chatter_the_bot_is_not_part_of_is_ignored(harness: SlackHarness) -> None:
    _, top_level = await harness.message("just chatting")
    other_thread = harness.new_ts()
    _, reply = await harness.message("a reply elsewhere", thread_ts=other_thread)
    assert top_level.status == reply.status == 200
    await harness.settled()
    assert harness.model.requests == []
    assert harness.slack.calls_to("chat.postMessage") == []


async def test_a_mention_delivered_twice_is_answered_once(harness: SlackHarness) -> None:
    # Slack sends a mention in a thread as app_mention and as message (two event ids).
    harness.model.script(say("First."), say("Once."), say("Never."))
    thread_ts, _ = await harness.mention("start")
    await answered(harness, thread_ts, "First.")
    ts = harness.new_ts()
    text = f"<@{BOT_USER_ID}> again"
    await asyncio.gather(
        harness.message(text, ts=ts, thread_ts=thread_ts),
        harness.mention("again", ts=ts, thread_ts=thread_ts),
    )
    await harness.settled()
    texts = await answered(harness, thread_ts, "Once.")
    assert texts == ["First.", "Once."]
    assert len(harness.model.requests) == 2


async def test_a_retried_delivery_is_processed_once(harness: SlackHarness) -> None:
    harness.model.script(say("Only once."), say("Twice!"))
    ts = harness.new_ts()
    thread_ts, first = await harness.mention("hi", ts=ts, event_id="Ev0RETRY")
    event = {
        "type": "app_mention",
        "user": ASKER,
        "text": f"<@{BOT_USER_ID}> hi",
        "ts": ts,
        "channel": CHANNEL,
    }
    retried = await harness.send_event(event, event_id="Ev0RETRY", retry=1)
    assert first.status == retried.status == 200
    await answered(harness, thread_ts, "Only once.")
    await harness.settled()
    assert harness.texts(thread_ts) == ["Only once."]


async def test_bot_messages_edits_deletions_and_other_subtypes_are_ignored(
    harness: SlackHarness,
) -> None:
    harness.model.script(say("Answer."))
    thread_ts, _ = await harness.mention("start")
    await answered(harness, thread_ts, "Answer.")
    ignored = [
        {"subtype": "bot_message", "bot_id": "B0OTHER"},
        {"bot_id": "B0OTHER"},
        {"subtype": "message_changed", "message": {"text": "edited"}},
        {"subtype": "message_deleted", "deleted_ts": thread_ts},
        {"subtype": "channel_join"},
    ]
    for extra in ignored:
        _, sent = await harness.message("noise", thread_ts=thread_ts, **extra)
        assert sent.status == 200, extra
    # Even in a DM.
    _, sent = await harness.dm("edited", subtype="message_changed")
    assert sent.status == 200
    await harness.settled()
    assert len(harness.model.requests) == 1


async def test_the_bots_own_messages_are_ignored(harness: SlackHarness) -> None:
    _, sent = await harness.dm("I said this", user=BOT_USER_ID, bot_id="BBOT")
    assert sent.status == 200
    await harness.settled()
    assert harness.model.requests == []


async def test_a_huge_message_is_refused_before_the_model(harness: SlackHarness) -> None:
    thread_ts, _ = await harness.mention("x" * 600)  # the harness allows 500 characters
    texts = await answered(harness, thread_ts, "too long")
    assert "600" in texts[0] and "500" in texts[0]
    assert harness.model.requests == []


async def test_an_empty_mention_gets_a_hint(harness: SlackHarness) -> None:
    thread_ts, _ = await harness.mention("")
    texts = await answered(harness, thread_ts, "Ask me")
    assert len(texts) == 1
    assert harness.model.requests == []


async def test_slack_escaping_is_undone_for_the_model(harness: SlackHarness) -> None:
    harness.model.script(say("ok"))
    thread_ts, _ = await harness.mention(
        "orders with total &gt; 10 &amp; status &lt;&gt; 'paid' see <https://x.io/a|x.io/a>"
    )
    await answered(harness, thread_ts, "ok")
    assert user_messages(harness.model.requests[0]) == [
        "orders with total > 10 & status <> 'paid' see https://x.io/a"
    ]


async def test_a_message_during_a_run_waits_for_it(harness: SlackHarness) -> None:
    harness.model.script(Turn(text="Slow first.", delay_s=0.5), say("Then second."))
    thread_ts, _ = await harness.mention("first")
    await harness.slack.wait_for(lambda: harness.model.requests)
    await harness.message("second", thread_ts=thread_ts)
    texts = await answered(harness, thread_ts, "Then second.")
    assert texts == ["Slow first.", "Then second."]
    assert user_messages(harness.model.requests[1]) == ["first", "second"]
    assert any("Queued" in c.args.get("text", "") for c in harness.slack.calls)


async def test_the_requesters_time_zone_comes_from_slack_once(harness: SlackHarness) -> None:
    harness.model.script(calls(call("get_current_time")), say("It is late."), say("Still late."))
    thread_ts, _ = await harness.mention("what time is it?")
    await answered(harness, thread_ts, "It is late.")
    assert "Europe/Paris" in harness.model.new_tool_results()[0]
    await harness.message("and now?", thread_ts=thread_ts)
    await answered(harness, thread_ts, "Still late.")
    assert len(harness.slack.calls_to("users.info")) == 1


async def test_the_answer_is_escaped_and_split_to_fit(harness: SlackHarness) -> None:
    code = "\n".join(f"SELECT {i} FROM orders WHERE total < {i};" for i in range(120))
    harness.model.script(say(f"<!channel> **Here**:\n```sql\n{code}\n```\nDone & dusted."))
    thread_ts, _ = await harness.mention("write me SQL")
    await answered(harness, thread_ts, "Done &amp; dusted.")
    messages = harness.thread(thread_ts)
    for message in messages:
        block = message.blocks[0]
        assert block["type"] == "markdown" and len(block["text"]) <= 12_000
        assert block["text"].count("```") % 2 == 0
        assert "<!channel>" not in message.text and "<!channel>" not in block["text"]
        assert_valid_message({"text": message.text, "blocks": message.blocks})
    assert messages[0].blocks[0]["text"].startswith("<\u200b!channel> **Here**:")


async def test_a_model_failure_is_a_short_message_in_the_thread(harness: SlackHarness) -> None:
    harness.model.fail_next(400, message="secret detail about the request")
    thread_ts, _ = await harness.mention("hello")
    await harness.slack.wait_for(lambda: harness.texts(thread_ts))
    await harness.idle()
    (text,) = harness.texts(thread_ts)
    assert text.startswith(":warning:")
    assert len(text) < 300


async def test_a_rate_limited_post_is_retried(harness: SlackHarness) -> None:
    harness.model.script(say("Worth the wait."))
    harness.slack.rate_limit_next("chat.postMessage", retry_after_s=0)
    thread_ts, _ = await harness.mention("hello")
    texts = await answered(harness, thread_ts, "Worth the wait.")
    assert texts == ["Worth the wait."]
    assert harness.slack.rate_limited == ["chat.postMessage"]


async def test_a_question_back_is_answered_by_replying_in_the_thread(
    harness: SlackHarness,
) -> None:
    harness.model.script(
        calls(call("ask_user", {"kind": "input", "question": "Which <month> do you mean?"})),
        say("March it is."),
    )
    thread_ts, _ = await harness.mention("orders last month?")
    (question,) = await harness.slack.wait_for(lambda: harness.texts(thread_ts))
    await harness.idle()
    assert question.startswith(f":question: <@{ASKER}> Which &lt;month&gt; do you mean?")
    assert "Reply in this thread" in question
    await harness.message("March", thread_ts=thread_ts)
    await answered(harness, thread_ts, "March it is.")
    assert '"March"' in harness.model.new_tool_results()[0]


async def test_a_message_taken_but_never_started_is_answered_when_redelivered_after_a_restart(
    harness: SlackHarness,
) -> None:
    services_of_app(harness.app).status_grace_s = 0.1
    release = asyncio.Event()

    async def slow(body: dict[str, Any]) -> Turn:
        await release.wait()  # until the test is done with it
        return say("Too slow to finish.")

    harness.model.responder = slow
    first_ts, _ = await harness.mention("a long question", event_id="Ev0FIRST")
    second_ts = harness.new_ts()
    await harness.mention("a second one", thread_ts=first_ts, ts=second_ts, event_id="Ev0SECOND")
    # The first is running (its status line shows), the second waits behind it.
    await harness.slack.wait_for(lambda: any("Working on it" in t for t in harness.texts(first_ts)))
    await harness.slack.wait_for(lambda: any("Queued" in t for t in harness.texts(first_ts)))

    # The bot stops before the second starts: both status lines go with it.
    await services_of_app(harness.app).queues.cancel(within_s=5.0)
    await harness.stop()
    assert harness.texts(first_ts) == []
    release.set()
    harness.model.responder = None

    # The first was cut off while the model thought: the restart resumes it in its thread.
    harness.model.script(
        say("The first, resumed after the restart."),
        say("The second, answered after the restart."),
    )
    await harness.start()
    # Slack delivers both again: the one never started is answered, the other is not rerun.
    await harness.mention("a second one", thread_ts=first_ts, ts=second_ts, event_id="Ev0SECOND")
    await harness.mention("a long question", ts=first_ts, event_id="Ev0FIRST")
    await answered(harness, first_ts, "answered after the restart")
    assert harness.texts(first_ts) == [
        "The first, resumed after the restart.",
        "The second, answered after the restart.",
    ]
    assert harness.model.remaining == 0
