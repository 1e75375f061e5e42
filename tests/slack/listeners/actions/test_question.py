"""ask_user in Slack: buttons or a menu, only the person asked may answer, the first answer
wins, and the run resumes with {kind, answer, value}."""

from __future__ import annotations

import asyncio
import copy
import json

from bot.slack.blocks import question as question_blocks
from bot.slack.listeners.actions import question as questions
from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import Message
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    BYSTANDER,
    CHANNEL,
    STAGING,
    SlackHarness,
    action_elements,
)

CHOOSE = {
    "kind": "choose",
    "question": "Which database?",
    "options": [
        {"label": "Staging", "value": STAGING},
        {"label": "Production", "value": "shop-prod"},
    ],
}
FIRST_OPTION = f"{question_blocks.OPTION_PREFIX}0"


def ask_user(arguments: dict):
    return calls(call("ask_user", arguments))


async def asked(harness: SlackHarness, thread_ts: str) -> Message:
    """The question message as posted (a snapshot: clicks replay it after updates)."""
    (message,) = await harness.slack.wait_for(lambda: harness.thread(thread_ts))
    await harness.idle()
    return copy.deepcopy(message)


def tool_result(harness: SlackHarness) -> dict:
    (result,) = harness.model.new_tool_results()
    return json.loads(result)


async def answered(harness: SlackHarness, thread_ts: str, text: str) -> list[str]:
    await harness.slack.wait_for(lambda: any(text in t for t in harness.texts(thread_ts)))
    await harness.idle()
    return harness.texts(thread_ts)


async def test_a_choice_is_buttons_and_a_click_resumes_the_run_with_its_value(
    harness: SlackHarness,
) -> None:
    harness.model.script(ask_user(CHOOSE), say("Staging has 4 orders."))
    thread_ts, _ = await harness.mention("how many orders?")
    question = await asked(harness, thread_ts)
    assert [e["text"]["text"] for e in action_elements(question)] == ["Staging", "Production"]
    assert question.text.startswith(f":question: <@{ASKER}> Which database?")

    sent = await harness.click(FIRST_OPTION, question, user=ASKER)
    assert sent.status == 200
    texts = await answered(harness, thread_ts, "Staging has 4 orders.")
    assert tool_result(harness) == {"kind": "choose", "answer": "Staging", "value": STAGING}
    # The question now shows the answer; its buttons are gone.
    updated = harness.slack.message(CHANNEL, question.ts)
    assert action_elements(updated) == [] and "answered *Staging*" in json.dumps(updated.blocks)
    assert texts[-1] == "Staging has 4 orders."


async def test_someone_else_is_told_privately_and_nothing_changes(harness: SlackHarness) -> None:
    harness.model.script(ask_user(CHOOSE), say("Production it is."))
    thread_ts, _ = await harness.mention("how many orders?")
    question = await asked(harness, thread_ts)

    await harness.click(FIRST_OPTION, question, user=BYSTANDER)
    (note,) = await harness.slack.wait_for(lambda: harness.slack.ephemerals(BYSTANDER))
    assert note.text == f"Only <@{ASKER}> can answer this." and note.thread_ts == thread_ts
    await harness.idle()
    assert harness.slack.message(CHANNEL, question.ts).edits == 0
    assert len(harness.model.requests) == 1

    # The person asked still can.
    await harness.click(f"{question_blocks.OPTION_PREFIX}1", question, user=ASKER)
    await answered(harness, thread_ts, "Production it is.")
    assert tool_result(harness)["value"] == "shop-prod"


async def test_the_first_answer_wins(harness: SlackHarness) -> None:
    harness.model.script(ask_user(CHOOSE), say("Answered."), say("Twice?!"))
    thread_ts, _ = await harness.mention("how many orders?")
    question = await asked(harness, thread_ts)
    await asyncio.gather(
        harness.click(FIRST_OPTION, question, user=ASKER),
        harness.click(f"{question_blocks.OPTION_PREFIX}1", question, user=ASKER),
    )
    await answered(harness, thread_ts, "Answered.")
    (note,) = await harness.slack.wait_for(lambda: harness.slack.ephemerals(ASKER))
    await harness.idle()
    assert note.text == questions.ALREADY_ANSWERED
    assert len(harness.model.requests) == 2 and "Twice?!" not in harness.texts(thread_ts)
    assert tool_result(harness)["value"] in (STAGING, "shop-prod")
    assert harness.slack.message(CHANNEL, question.ts).edits == 1


async def test_a_replayed_click_does_nothing(harness: SlackHarness) -> None:
    harness.model.script(ask_user(CHOOSE), say("Staging."))
    thread_ts, _ = await harness.mention("how many orders?")
    question = await asked(harness, thread_ts)
    button = action_elements(question)[0]
    payload = harness.action_payload(
        question, FIRST_OPTION, "question", {"value": button["value"]}, user=ASKER
    )
    for _ in range(2):
        assert (await harness.interact(payload)).status == 200
    await answered(harness, thread_ts, "Staging.")
    assert len(harness.model.requests) == 2
    assert harness.slack.ephemerals(ASKER) == []  # the replay was dropped, not answered
    assert harness.slack.message(CHANNEL, question.ts).edits == 1


async def test_more_than_five_options_become_a_menu(harness: SlackHarness) -> None:
    options = [{"label": f"Region {i}", "value": f"region-{i}"} for i in range(7)]
    harness.model.script(
        ask_user({"kind": "choose", "question": "Which region?", "options": options}),
        say("Region 5 then."),
    )
    thread_ts, _ = await harness.mention("orders per region?")
    question = await asked(harness, thread_ts)
    (menu,) = action_elements(question)
    assert menu["type"] == "static_select" and len(menu["options"]) == 7
    sixth = menu["options"][5]["value"]
    await harness.pick(question, question_blocks.OPTION_SELECT, sixth, user=ASKER)
    await answered(harness, thread_ts, "Region 5 then.")
    assert tool_result(harness) == {"kind": "choose", "answer": "Region 5", "value": "region-5"}


async def test_a_confirmation_is_yes_or_no(harness: SlackHarness) -> None:
    harness.model.script(
        ask_user({"kind": "confirm", "question": "Include cancelled orders?"}), say("Without.")
    )
    thread_ts, _ = await harness.mention("count orders")
    question = await asked(harness, thread_ts)
    assert [e["text"]["text"] for e in action_elements(question)] == ["Yes", "No"]
    await harness.click(f"{question_blocks.OPTION_PREFIX}1", question, user=ASKER)
    await answered(harness, thread_ts, "Without.")
    assert tool_result(harness) == {"kind": "confirm", "answer": "No", "value": "no"}


async def test_an_input_question_is_answered_by_a_reply_and_says_so(harness: SlackHarness) -> None:
    harness.model.script(
        ask_user({"kind": "input", "question": "Which customer?"}), say("Ada has 2 orders.")
    )
    thread_ts, _ = await harness.mention("orders of a customer")
    question = await asked(harness, thread_ts)
    assert action_elements(question) == [] and "Reply in this thread" in question.text
    await harness.message("Ada", thread_ts=thread_ts)
    await answered(harness, thread_ts, "Ada has 2 orders.")
    assert tool_result(harness)["answer"] == "Ada"
    updated = harness.slack.message(CHANNEL, question.ts)
    assert "answered in this thread" in json.dumps(updated.blocks)


async def test_a_new_message_replaces_the_question_and_a_late_click_is_told(
    harness: SlackHarness,
) -> None:
    harness.model.script(ask_user(CHOOSE), say("Never mind then."))
    thread_ts, _ = await harness.mention("how many orders?")
    question = await asked(harness, thread_ts)
    await harness.message("forget it", thread_ts=thread_ts)
    await answered(harness, thread_ts, "Never mind then.")
    replaced = harness.slack.message(CHANNEL, question.ts)
    assert action_elements(replaced) == [] and "No longer open" in replaced.text
    assert "superseded" in harness.model.new_tool_results()[0]

    await harness.click(FIRST_OPTION, question, user=ASKER)
    (note,) = await harness.slack.wait_for(lambda: harness.slack.ephemerals(ASKER))
    assert note.text == questions.ALREADY_ANSWERED
    await harness.idle()
    assert len(harness.model.requests) == 2


async def test_a_run_resumed_by_an_answer_may_end_in_an_approval_card(
    harness: SlackHarness,
) -> None:
    bump = "UPDATE orders SET total = total + 1 WHERE id = 12"
    harness.model.script(
        ask_user(CHOOSE),
        calls(call("execute_query", {"database": STAGING, "sql": bump})),
        say("Bumped."),
    )
    thread_ts, _ = await harness.mention("add one to order 12")
    question = await asked(harness, thread_ts)
    await harness.click(FIRST_OPTION, question, user=ASKER)
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    await answered(harness, thread_ts, "Bumped.")
