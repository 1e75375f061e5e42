"""Block Kit for questions back to the person: buttons, a menu beyond five, or a reply."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.agent.outcomes import Option, Question
from bot.slack.blocks import question as question_blocks
from bot.slack.blocks.question import option_value, parse_option_value

QID = "q0123456789abcdef"


def question(kind: str = "choose", options: int = 2, text: str = "Which one?") -> Question:
    return Question(
        id=QID,
        session_id="T1:C1:1.1",
        tool_call_id="call_1",
        kind=kind,
        text=text,
        options=tuple(Option(f"Option {i}", f"value-{i}") for i in range(options)),
        requester="U0ASKER",
        created_at=0.0,
    )


def actions(message: dict) -> list[dict]:
    return [
        element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def test_a_choice_of_few_options_is_one_button_each_carrying_only_id_and_index() -> None:
    message = question_blocks.question_message(question(options=3))
    elements = actions(message)
    assert [e["type"] for e in elements] == ["button"] * 3
    assert [e["value"] for e in elements] == [f"{QID}:{i}" for i in range(3)]
    assert len({e["action_id"] for e in elements}) == 3  # unique within the block
    assert "value-" not in json.dumps(elements)  # the option's value stays in the store


def test_more_than_five_options_become_a_select_menu() -> None:
    message = question_blocks.question_message(question(options=6))
    (menu,) = actions(message)
    assert menu["type"] == "static_select" and menu["action_id"] == question_blocks.OPTION_SELECT
    assert [o["value"] for o in menu["options"]] == [option_value(QID, i) for i in range(6)]
    assert [o["text"]["text"] for o in menu["options"]][-1] == "Option 5"


def test_five_options_are_still_buttons() -> None:
    assert {e["type"] for e in actions(question_blocks.question_message(question(options=5)))} == {
        "button"
    }


def test_a_confirmation_is_yes_and_no() -> None:
    confirm = replace(question("confirm"), options=(Option("Yes", "yes"), Option("No", "no")))
    yes, no = actions(question_blocks.question_message(confirm))
    assert (yes["text"]["text"], yes["style"]) == ("Yes", "primary")
    assert no["text"]["text"] == "No" and "style" not in no


def test_an_input_question_asks_for_a_reply_in_the_thread() -> None:
    message = question_blocks.question_message(question("input", options=0))
    assert actions(message) == []
    assert "Reply in this thread" in message["text"]
    assert "Reply in this thread" in json.dumps(message["blocks"])


def test_a_question_names_the_person_escapes_the_text_and_lists_choices_for_notifications() -> None:
    message = question_blocks.question_message(question(text="Which, <staging> or prod?"))
    assert message["text"].startswith(":question: <@U0ASKER> Which, &lt;staging&gt; or prod?")
    assert "• Option 0" in message["text"] and "• Option 1" in message["text"]
    assert "Only <@U0ASKER> can answer" in json.dumps(message["blocks"])


def test_an_answered_question_shows_the_answer_and_no_buttons() -> None:
    message = question_blocks.answered_question(question(), "Option <1>", "U0ASKER", at=1e9)
    assert actions(message) == []
    assert "<@U0ASKER> answered *Option &lt;1&gt;*" in json.dumps(message["blocks"])


def test_a_replaced_question_says_so_and_has_no_buttons() -> None:
    message = question_blocks.closed_question(question())
    assert actions(message) == [] and "No longer open" in message["text"]


VALUES = [
    # (button value, parsed, reason)
    ("q1:0", ("q1", 0), "id and index"),
    ("abc:def:2", ("abc:def", 2), "the index is after the last colon"),
    ("q1", None, "no index"),
    (":1", None, "no id"),
    ("q1:-1", None, "no negative index"),
    ("q1:x", None, "the index is a number"),
    ("q1:99999", None, "an absurd index is not an index"),
    (None, None, "a missing value"),
]


@pytest.mark.parametrize(("value", "parsed", "reason"), VALUES)
def test_button_values(value: object, parsed: object, reason: str) -> None:
    assert parse_option_value(value) == parsed, reason
