"""Delivery: what Slack refuses is posted plainer, never dropped; a card that cannot be
updated after its write ran is followed by a message that says what happened."""

from __future__ import annotations

from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import APPROVER, CHANNEL, SCHEMA, STAGING, SlackHarness, run_sql

MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"


async def settled(harness: SlackHarness, predicate) -> None:
    await harness.slack.wait_for(predicate)
    await harness.idle()


async def test_blocks_slack_refuses_fall_back_to_the_text_alone(harness: SlackHarness) -> None:
    harness.model.script(say("The *answer*, in blocks Slack will not take."))
    harness.slack.fail_next("chat.postMessage", "invalid_blocks")
    thread_ts, _ = await harness.mention("hello")
    await settled(harness, lambda: harness.thread(thread_ts))
    (message,) = harness.thread(thread_ts)
    assert message.blocks == []
    assert "in blocks Slack will not take" in message.text


async def test_text_slack_refuses_too_arrives_as_a_file(harness: SlackHarness) -> None:
    harness.model.script(say("An answer Slack calls too long, twice."))
    harness.slack.fail_next("chat.postMessage", "msg_too_long", times=2)
    thread_ts, _ = await harness.mention("hello")
    await settled(harness, lambda: harness.slack.files_in(CHANNEL, thread_ts))
    (shared,) = harness.slack.files_in(CHANNEL, thread_ts)
    assert "Slack calls too long" in shared.text


async def test_a_card_update_that_fails_once_is_retried(harness: SlackHarness) -> None:
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})), say("Paid.")
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    harness.slack.http_error_next("chat.update", 503)
    await harness.click("approve_once", card, user=APPROVER)
    await settled(harness, lambda: "Paid." in harness.texts(thread_ts))
    decided = harness.slack.message(CHANNEL, card.ts)
    assert decided.text.startswith("Approved")


async def test_a_card_that_cannot_be_updated_after_its_write_gets_a_message_in_the_thread(
    harness: SlackHarness,
) -> None:
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})), say("Paid.")
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    harness.slack.fail_next("chat.update", "cant_update_message", times=2)
    await harness.click("approve_once", card, user=APPROVER)
    await settled(harness, lambda: "Paid." in harness.texts(thread_ts))
    rows = await run_sql(harness.shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = 11"])
    assert rows == [("paid",)]
    texts = harness.texts(thread_ts)
    outcome = [t for t in texts if t.startswith("Approved by")]
    assert len(outcome) == 1 and "1 row" in outcome[0]
    assert texts.index(outcome[0]) < texts.index("Paid.")


async def test_a_long_answer_is_its_beginning_and_the_whole_text_as_a_file(
    harness: SlackHarness,
) -> None:
    paragraphs = [f"Paragraph {i}: " + "words of a long answer " * 20 for i in range(60)]
    text = "\n\n".join(paragraphs)
    assert len(text) > harness.settings.slack.max_answer_chars
    harness.model.script(say(text))
    thread_ts, _ = await harness.mention("tell me everything")
    await settled(harness, lambda: harness.slack.files_in(CHANNEL, thread_ts))
    posts = harness.thread(thread_ts)
    assert len(posts) == 2  # the beginning, and the message sharing the file
    assert posts[0].text.startswith("Paragraph 0:")
    assert "attached" in str(posts[0].blocks)
    (whole,) = harness.slack.files_in(CHANNEL, thread_ts)
    assert whole.text == text


async def test_an_answer_that_needs_more_than_three_messages_is_cut_the_same_way(
    harness: SlackHarness,
) -> None:
    # Allowed by a raised limit, but four messages' worth once laid out.
    harness.settings.slack.max_answer_chars = 60_000
    text = "\n".join(f"Line {i}: " + "words " * 20 for i in range(350))
    assert 36_000 < len(text) < 60_000
    harness.model.script(say(text))
    thread_ts, _ = await harness.mention("tell me a lot")
    await settled(harness, lambda: harness.slack.files_in(CHANNEL, thread_ts))
    assert len(harness.thread(thread_ts)) == 2
    (whole,) = harness.slack.files_in(CHANNEL, thread_ts)
    assert whole.text == text


async def test_a_long_answer_is_cut_at_the_configured_length(harness: SlackHarness) -> None:
    harness.settings.slack.max_answer_chars = 2_000
    text = "A paragraph of words. " * 200
    harness.model.script(say(text))
    thread_ts, _ = await harness.mention("tell me")
    await settled(harness, lambda: harness.slack.files_in(CHANNEL, thread_ts))
    assert len(harness.thread(thread_ts)) == 2
    (whole,) = harness.slack.files_in(CHANNEL, thread_ts)
    assert whole.text == text


async def test_a_short_answer_stays_a_message(harness: SlackHarness) -> None:
    harness.model.script(say("Short."))
    thread_ts, _ = await harness.mention("hi")
    await settled(harness, lambda: harness.thread(thread_ts))
    assert harness.texts(thread_ts) == ["Short."]
    assert harness.slack.files_in(CHANNEL, thread_ts) == []
